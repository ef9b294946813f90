"""The Elasticsearch-compatible proxy, driven by the official client pointed at a real service process."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from elasticsearch import BadRequestError, Elasticsearch, helpers
from support.service import ServiceProcess

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter
from fingerprint_indexer.index.elasticsearch import result_fields
from fingerprint_indexer.pipeline import Pipeline

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]


@pytest.fixture
def proxied(service: ServiceProcess) -> Iterator[Elasticsearch]:
    """The official client, configured exactly as for Elasticsearch, but with the service's URL."""
    client = Elasticsearch(service.url, api_key=service.api_key, request_timeout=60)
    yield client
    client.close()


def test_index_and_create_through_the_proxy(
    proxied: Elasticsearch, es_client: Elasticsearch, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    a, b = zh_articles[10], zh_articles[11]
    r = proxied.index(index=svc_index, id="p1", document={"title": a["title"], "content": a["content"]})
    assert r["result"] == "created" and r["_id"] == "p1"
    r = proxied.create(index=svc_index, id="p2", document={"content": a["content"] + " 。"})
    assert r["result"] == "created"
    r = proxied.index(index=svc_index, document={"content": b["content"], "tags": ["x"]})  # id assigned
    auto_id = r["_id"]
    with pytest.raises(Exception) as conflict:  # create of an existing id: Elasticsearch's own 409
        proxied.create(index=svc_index, id="p1", document={"content": a["content"]})
    assert getattr(conflict.value, "status_code", None) == 409 or "409" in str(conflict.value)
    es_client.indices.refresh(index=svc_index)
    fpr = Fingerprinter()
    p1 = es_client.get(index=svc_index, id="p1")["_source"]
    assert p1["fingerprint_hex"] == fpr.fingerprint(text=a["content"]).hex
    assert p1["decision"] == "new" and p1["title"] == a["title"]
    p2 = es_client.get(index=svc_index, id="p2")["_source"]
    assert p2["decision"] in ("exact_duplicate", "near_duplicate") and p2["duplicate_of"] == "p1"
    assert es_client.get(index=svc_index, id=auto_id)["_source"]["tags"] == ["x"]


def test_helpers_bulk_through_the_proxy(
    proxied: Elasticsearch, es_client: Elasticsearch, zh_articles: list[dict[str, Any]], svc_index: str,
    tmp_path: Path,
) -> None:
    actions: list[dict[str, Any]] = []
    for i, a in enumerate(zh_articles[20:80]):
        actions.append({"_index": svc_index, "_id": f"b{i}", "title": a["title"], "content": a["content"],
                        "seq": i})
        if i % 4 == 0:  # a repost, without an id: the proxy assigns one
            actions.append({"_index": svc_index, "content": a["content"][:-30] + "（转载）", "seq": 1000 + i})
    ok, errors = helpers.bulk(proxied, actions, chunk_size=25)
    assert ok == len(actions) and not errors
    es_client.indices.refresh(index=svc_index)
    assert es_client.count(index=svc_index)["count"] == len(actions)
    keys = [a.get("_id") or f"seq{a['seq']}" for a in actions]
    docs = {k: Document.from_mapping({**a, "id": k}) for k, a in zip(keys, actions, strict=True)}
    with Pipeline(tmp_path / "ref") as pipe:  # the same documents decided in-process
        ref = {d.id: d for d in pipe.process_many(docs.values())}
    fpr, layout = Fingerprinter(), FingerprintConfig().layout
    hits = es_client.search(index=svc_index, size=200, query={"match_all": {}})["hits"]["hits"]
    assert any(r.decision == "near_duplicate" for r in ref.values())
    for h in hits:
        src = h["_source"]
        key = h["_id"] if src["seq"] < 1000 else f"seq{src['seq']}"
        want = ref[key]
        assert (src["decision"], src["duplicate_of"]) == (want.decision, want.duplicate_of), src["seq"]
        fields = result_fields(fpr.fingerprint_document(docs[key]), layout)
        assert src["fingerprint_hex"] == want.fingerprint
        assert {k: src.get(k) for k in fields} == fields, src["seq"]
    resp = proxied.bulk(operations=[{"delete": {"_index": svc_index, "_id": "b0"}},
                                    {"update": {"_index": svc_index, "_id": "b1"}}, {"doc": {"seq": -1}}])
    assert [next(iter(it.values()))["status"] for it in resp["items"]] == [200, 200]
    one = proxied.bulk(operations=[{"index": {"_index": svc_index, "_id": "z"}}, {"content": "新闻 内容"}])
    assert one["items"][0]["index"]["fingerprint_indexer"]["decision"] == "new"


def test_malformed_bulk_is_refused_like_elasticsearch(proxied: Elasticsearch, svc_index: str) -> None:
    with pytest.raises(BadRequestError) as exc:
        proxied.perform_request("POST", f"/{svc_index}/_bulk", body="{not json\n",
                                headers={"content-type": "application/x-ndjson"})
    assert exc.value.meta.status == 400
    assert exc.value.body["error"]["type"] == "illegal_argument_exception"


def test_pass_through_keeps_status_body_and_headers(
    service: ServiceProcess, proxied: Elasticsearch, es_url: str, svc_index: str
) -> None:
    proxied.indices.create(index=svc_index)
    assert proxied.indices.exists(index=svc_index)  # HEAD
    assert proxied.cluster.health(index=svc_index)["status"] in ("green", "yellow")
    assert proxied.search(index=svc_index, query={"match_all": {}})["hits"]["total"]["value"] == 0
    for path in (f"/{svc_index}/_mapping", "/_cat/indices?format=json&h=health", "/no-such-index/_search"):
        direct = httpx.get(es_url + path)
        via = httpx.get(service.url + path, headers=service.headers())
        assert via.status_code == direct.status_code, path
        assert via.headers.get("x-elastic-product") == direct.headers.get("x-elastic-product")
        assert via.headers.get("x-elastic-product") == "Elasticsearch"
        assert via.headers["content-type"] == direct.headers["content-type"]
        if path.endswith("_mapping"):
            assert via.json() == direct.json()


class _Recorder(BaseHTTPRequestHandler):
    """A real HTTP server standing in for the cluster only to show what the proxy sends upstream."""

    seen: ClassVar[list[dict[str, str]]] = []

    def _answer(self) -> None:
        n = int(self.headers.get("content-length") or 0)
        self.rfile.read(n)
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        body = json.dumps({"ok": True}).encode()
        self.send_response(200)
        self.send_header("X-Elastic-Product", "Elasticsearch")
        self.send_header("X-Custom", "kept")
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


def test_service_key_is_never_forwarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    key = "svc-" + uuid.uuid4().hex
    monkeypatch.setenv("ES_API_KEY", "cluster-credential")
    try:
        with ServiceProcess(f"http://127.0.0.1:{server.server_port}", tmp_path / "data", api_key=key) as svc:
            r = httpx.get(f"{svc.url}/_some/path?x=1", headers={"Authorization": f"ApiKey {key}",
                                                                "X-Trace": "t1"})
            assert r.status_code == 200 and r.headers["x-custom"] == "kept"
            httpx.post(f"{svc.url}/_search", headers={"X-API-Key": key}, json={})
    finally:
        server.shutdown()
    relayed = [h for h in _Recorder.seen if h.get("x-trace") == "t1"]
    assert relayed, _Recorder.seen
    for headers in _Recorder.seen:
        assert key not in json.dumps(headers)
        assert "x-api-key" not in headers
        assert headers.get("authorization") == "ApiKey cluster-credential"


def test_skip_policy_through_the_proxy(
    es_url: str, es_client: Elasticsearch, tmp_path: Path, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    with ServiceProcess(es_url, tmp_path / "data", "--on-duplicate", "skip") as svc:
        client = Elasticsearch(svc.url, request_timeout=60)
        a = zh_articles[90]["content"]
        ops = [{"index": {"_index": svc_index, "_id": "k1"}}, {"content": a},
               {"index": {"_index": svc_index, "_id": "k2"}}, {"content": a}]
        resp = client.bulk(operations=ops)
        client.close()
    items = [it["index"] for it in resp["items"]]
    assert items[0]["status"] == 201 and items[1]["result"] == "noop"
    assert items[1]["fingerprint_indexer"]["duplicate_of"] == "k1"
    es_client.indices.refresh(index=svc_index)
    assert es_client.count(index=svc_index)["count"] == 1


def test_deletes_through_the_proxy_reach_the_embedded_store(
    proxied: Elasticsearch, es_client: Elasticsearch, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    """A copy indexed after its original was deleted is new, not a duplicate of a deleted document."""
    a, b = zh_articles[30]["content"], zh_articles[31]["content"]
    proxied.index(index=svc_index, id="d1", document={"content": a})
    proxied.index(index=svc_index, id="e1", document={"content": b})
    again = proxied.index(index=svc_index, id="d2", document={"content": a})
    assert again["fingerprint_indexer"]["decision"] == "exact_duplicate"
    proxied.delete(index=svc_index, id="d1")
    proxied.delete(index=svc_index, id="d2")
    helpers.bulk(proxied, [{"_op_type": "delete", "_index": svc_index, "_id": "e1"}])
    es_client.indices.refresh(index=svc_index)
    assert es_client.count(index=svc_index)["count"] == 0
    copy_a = proxied.index(index=svc_index, id="d3", document={"content": a})
    copy_b = proxied.index(index=svc_index, id="e2", document={"content": b})
    assert copy_a["fingerprint_indexer"]["decision"] == "new"
    assert copy_b["fingerprint_indexer"]["decision"] == "new"
