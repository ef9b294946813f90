"""The Elasticsearch-compatible proxy, driven by the official client pointed at a real service process."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlparse

import httpx
import pytest
from elasticsearch import BadRequestError, ConflictError, Elasticsearch, helpers
from support.ingest_driver import wait_spool_empty
from support.service import ServiceProcess
from support.tcp_forwarder import TcpForwarder

from fingerprint_indexer.documents import Document
from fingerprint_indexer.es.codec import SKETCH_FIELD, block_fields, result_fields
from fingerprint_indexer.es.mapping import ES_LAYOUT
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
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


def test_an_index_of_another_layout_is_written_in_its_own(
    proxied: Elasticsearch, es_client: Elasticsearch, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    """The proxy writes the block keys of the layout an existing index records (here the plain 4 x 16-bit
    blocks of an index made before permuted keys), not the layout it gives a new index."""
    from fingerprint_indexer.es.mapping import create_index
    from fingerprint_indexer.fingerprint.blocks import BlockLayout

    create_index(es_client, svc_index, BlockLayout(), replicas=0)
    a = zh_articles[12]
    proxied.index(index=svc_index, id="old-1", document={"title": a["title"], "content": a["content"]})
    es_client.indices.refresh(index=svc_index)
    src = es_client.get(index=svc_index, id="old-1")["_source"]
    res = Fingerprinter().fingerprint_document(Document(id="old-1", title=a["title"], content=a["content"]))
    want, plain = result_fields(res, BlockLayout()), block_fields(BlockLayout())
    assert {f: src.get(f) for f in plain} == {f: want[f] for f in plain}
    assert "block_4" not in src


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
    fpr, layout = Fingerprinter(), ES_LAYOUT
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


class _Relay(BaseHTTPRequestHandler):
    """A real HTTP relay to the real cluster that counts what the proxy asks of it."""

    upstream: ClassVar[str] = ""
    asked: ClassVar[list[tuple[str, str]]] = []

    def _relay(self) -> None:
        n = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(n) if n else None
        type(self).asked.append((self.command, self.path))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
        r = httpx.request(self.command, self.upstream + self.path, headers=headers, content=body, timeout=60)
        self.send_response(r.status_code)
        for k in ("content-type", "x-elastic-product"):
            if k in r.headers:
                self.send_header(k, r.headers[k])
        self.send_header("content-length", str(len(r.content)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(r.content)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _relay

    def log_message(self, *args: Any) -> None:
        pass


def test_a_bulk_into_a_new_index_asks_for_its_layout_once(
    es_url: str, es_client: Elasticsearch, zh_articles: list[dict[str, Any]], tmp_path: Path
) -> None:
    """The proxy reads an index's key layout from its mapping once per request, not once per document:
    an index that does not exist yet has no layout to remember until the request creates it."""
    _Relay.upstream, _Relay.asked = es_url, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Relay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    index = f"layout-once-{uuid.uuid4().hex[:8]}"
    try:
        with ServiceProcess(f"http://127.0.0.1:{server.server_port}", tmp_path / "data") as svc:
            client = Elasticsearch(svc.url, api_key=svc.api_key, request_timeout=60)
            actions = [{"_index": index, "_id": f"n{i}", "content": a["content"]}
                       for i, a in enumerate(zh_articles[100:130])]  # fmt: skip
            ok, errors = helpers.bulk(client, actions, chunk_size=len(actions))
            client.close()
        assert ok == len(actions) and not errors
        mappings = [p for m, p in _Relay.asked if m == "GET" and p.split("?")[0].endswith("/_mapping")]
        assert 1 <= len(mappings) <= 2, mappings
        es_client.indices.refresh(index=index)
        assert es_client.count(index=index)["count"] == len(actions)
    finally:
        server.shutdown()
        es_client.options(ignore_status=404).indices.delete(index=index)


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
        steps = _write_steps(svc)
    items = [it["index"] for it in resp["items"]]
    assert items[0]["status"] == 201 and items[1]["result"] == "noop"
    # the request's event-loop steps are counted, each in its own place
    assert set(steps) == {"read", "prepare", "apply", "encode", "answer"} and all(steps.values())
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


# ------------------------------------------------------------------------------------------ updates
FP_KEYS = ("fingerprint", "fingerprint_hex", "fingerprints", "content_digest", "fp_version", "decision",
           "duplicate_of", "cluster_id", SKETCH_FIELD, *block_fields(ES_LAYOUT))


def _fp_fields(src: dict[str, Any]) -> dict[str, Any]:
    return {k: src.get(k) for k in FP_KEYS}


def _expected(title: str, content: str) -> dict[str, Any]:
    """The fingerprint fields of a document with this title and content (absent ones as None)."""
    res = Fingerprinter().fingerprint_document(Document(id="x", title=title, content=content))
    fields = result_fields(res, ES_LAYOUT)
    return {k: fields.get(k) for k in ("fingerprint", "fingerprint_hex", "fingerprints", SKETCH_FIELD,
                                       *block_fields(ES_LAYOUT))}


def _write_steps(service: ServiceProcess) -> dict[str, float]:
    """The service's ``fpi_write_cpu_seconds_total`` by step."""
    return {line.split('step="', 1)[1].split('"', 1)[0]: float(line.split()[-1])
            for line in httpx.get(f"{service.url}/metrics").text.splitlines()
            if line.startswith("fpi_write_cpu_seconds_total{")}


def _metric(service: ServiceProcess, outcome: str) -> float:
    text = httpx.get(f"{service.url}/metrics").text
    for line in text.splitlines():
        if line.startswith(f'fpi_update_operations_total{{outcome="{outcome}"}}'):
            return float(line.split()[-1])
    return 0.0


def test_update_of_content_refingerprints_the_merged_document(
    proxied: Elasticsearch, es_client: Elasticsearch, service: ServiceProcess,
    zh_articles: list[dict[str, Any]], svc_index: str,
) -> None:
    a, b, c = zh_articles[40], zh_articles[41], zh_articles[42]
    proxied.index(index=svc_index, id="u1", document={"title": a["title"], "content": a["content"], "n": 1})
    before = _metric(service, "fingerprinted")
    r = proxied.update(index=svc_index, id="u1", doc={"content": b["content"]}, refresh=True)
    assert r["result"] == "updated" and r["fingerprint_indexer"]["decision"] == "new"
    src = es_client.get(index=svc_index, id="u1")["_source"]
    assert (src["title"], src["content"], src["n"]) == (a["title"], b["content"], 1)
    want = _expected(a["title"], b["content"])  # the merged document: old title, new content
    assert {k: src.get(k) for k in want} == want
    assert want != _expected(a["title"], a["content"])
    assert _metric(service, "fingerprinted") == before + 1
    # the embedded store replaced u1's entry: the old text is new again, the new text is u1's
    http = httpx.Client(base_url=service.url, headers=service.headers(), timeout=60)
    stored = http.get(f"/v1/similar/u1?index={svc_index}").json()
    assert stored["fingerprint"] == want["fingerprint_hex"]
    old_copy = proxied.index(index=svc_index, id="u2", document={"content": a["content"]})
    assert old_copy["fingerprint_indexer"]["decision"] == "new"
    new_copy = proxied.index(index=svc_index, id="u3", document={"content": b["content"]})
    assert new_copy["fingerprint_indexer"]["duplicate_of"] == "u1"
    # a new title alone: the body still decides the fingerprint (the partial doc by itself would not)
    r = proxied.update(index=svc_index, id="u1", doc={"title": "新的标题"}, refresh=True)
    assert r["fingerprint_indexer"]["decision"] == "new"
    src = es_client.get(index=svc_index, id="u1")["_source"]
    assert src["title"] == "新的标题" and {k: src.get(k) for k in want} == want
    assert want != _expected("新的标题", "")
    # degenerate text keeps no block keys or sketch of the previous text
    proxied.update(index=svc_index, id="u1", doc={"title": "", "content": "短"}, refresh=True)
    src = es_client.get(index=svc_index, id="u1")["_source"]
    assert src["degenerate"] is True
    assert {k: src.get(k) for k in want} == _expected("", "短")
    # an upsert of a missing document is fingerprinted as the upsert document
    r = proxied.update(index=svc_index, id="u4", doc={"content": "无关"}, upsert={"content": c["content"]},
                       refresh=True)
    assert r["result"] == "created"
    src = es_client.get(index=svc_index, id="u4")["_source"]
    assert src["content"] == c["content"] and src["fingerprint_hex"] == _expected("", c["content"])[
        "fingerprint_hex"]
    http.close()


def test_update_of_other_fields_keeps_the_fingerprint(
    proxied: Elasticsearch, es_client: Elasticsearch, service: ServiceProcess,
    zh_articles: list[dict[str, Any]], svc_index: str,
) -> None:
    a = zh_articles[43]
    proxied.index(index=svc_index, id="v1", document={"title": a["title"], "content": a["content"]},
                  refresh=True)
    stored = _fp_fields(es_client.get(index=svc_index, id="v1")["_source"])
    before = _metric(service, "no_text")
    r = proxied.update(index=svc_index, id="v1", doc={"views": 7, "tags": ["a"]}, refresh=True)
    assert r["result"] == "updated" and "fingerprint_indexer" not in r
    assert _metric(service, "no_text") == before + 1
    src = es_client.get(index=svc_index, id="v1")["_source"]
    assert src["views"] == 7 and _fp_fields(src) == stored
    again = proxied.update(index=svc_index, id="v1", doc={"views": 7})
    assert again["result"] == "noop"  # Elasticsearch's own noop detection still works


def test_scripted_update_passes_through_unchanged(
    proxied: Elasticsearch, es_client: Elasticsearch, service: ServiceProcess,
    zh_articles: list[dict[str, Any]], svc_index: str,
) -> None:
    """The test node has no script engine, so Elasticsearch's own error shows the script reached it as
    sent; a scripted upsert of a missing document is stored exactly as sent (no fingerprint fields)."""
    a = zh_articles[44]
    proxied.index(index=svc_index, id="s1", document={"content": a["content"]}, refresh=True)
    script = {"source": "ctx._source.content = params.c", "params": {"c": "新"}}
    before = _metric(service, "scripted")
    for client in (proxied, es_client):
        with pytest.raises(BadRequestError) as exc:
            client.update(index=svc_index, id="s1", script=script)
        assert "painless" in json.dumps(exc.value.body)
    assert _metric(service, "scripted") == before + 1
    ops = [{"update": {"_index": svc_index, "_id": "s2"}},
           {"script": script, "upsert": {"content": a["content"], "n": 1}}]
    resp = proxied.bulk(operations=ops, refresh=True)
    item = resp["items"][0]["update"]
    assert item["status"] == 201 and "fingerprint_indexer" not in item
    assert es_client.get(index=svc_index, id="s2")["_source"] == {"content": a["content"], "n": 1}
    assert _metric(service, "scripted") == before + 2


def _summary(resp: Any) -> list[tuple[str, int, str | None, str | None]]:
    out = []
    for it in resp["items"]:
        action, body = next(iter(it.items()))
        out.append((action, body["status"], body.get("result"), (body.get("error") or {}).get("type")))
    return out


def test_bulk_mixing_index_update_delete_answers_like_elasticsearch(
    proxied: Elasticsearch, es_client: Elasticsearch, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    a, b, c, d = (zh_articles[i] for i in (45, 46, 47, 48))

    def ops(index: str) -> list[dict[str, Any]]:
        return [{"index": {"_index": index, "_id": "m1"}}, {"title": a["title"], "content": a["content"]},
                {"index": {"_index": index, "_id": "m2"}}, {"content": b["content"], "n": 1},
                {"update": {"_index": index, "_id": "m1"}}, {"doc": {"content": c["content"]}},
                {"update": {"_index": index, "_id": "m1"}}, {"doc": {"title": "新标题"}},
                {"update": {"_index": index, "_id": "m2"}}, {"doc": {"n": 2}},
                {"delete": {"_index": index, "_id": "m2"}},
                {"update": {"_index": index, "_id": "m3"}}, {"doc": {"content": d["content"]}},
                {"update": {"_index": index, "_id": "m4"}},
                {"doc": {"content": "x"}, "upsert": {"content": d["content"]}},
                {"update": {"_index": index, "_id": "m1"}}, {"script": {"source": "ctx._source.n = 1"}},
                {"create": {"_index": index, "_id": "m1"}}, {"content": b["content"]},
                {"delete": {"_index": index, "_id": "nothing"}}]

    direct_index = svc_index + "-direct"
    try:
        direct = es_client.bulk(operations=ops(direct_index), refresh=True)
    finally:
        es_client.indices.delete(index=direct_index, ignore_unavailable=True)
    via = proxied.bulk(operations=ops(svc_index), refresh=True)
    assert via["errors"] is direct["errors"] is True
    assert _summary(via) == _summary(direct)
    assert [s for _, s, _, _ in _summary(via)] == [201, 201, 200, 200, 200, 200, 404, 201, 400, 409, 404]
    m1 = es_client.get(index=svc_index, id="m1")["_source"]
    want = _expected("新标题", c["content"])  # m1 after the request: indexed, new content, new title
    assert {k: m1.get(k) for k in want} == want and m1["decision"] == "new"
    assert (m1["title"], m1["content"]) == ("新标题", c["content"])
    m4 = es_client.get(index=svc_index, id="m4")["_source"]
    assert m4["content"] == d["content"] and m4["fingerprint_hex"] == _expected("", d["content"])[
        "fingerprint_hex"]
    assert not es_client.exists(index=svc_index, id="m2")
    fi = [next(iter(it.values())).get("fingerprint_indexer") for it in via["items"]]
    # the create of m1 (which the request has just indexed) is left to Elasticsearch's 409, unfingerprinted
    assert [x is not None for x in fi] == [True, True, True, True, False, False, False, True, False, False,
                                           False]


def test_update_while_elasticsearch_is_away_is_spooled_not_lost(
    es_url: str, es_client: Elasticsearch, tmp_path: Path, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    """The _mget fails (a real TCP cut): the update is queued unchanged, applied on replay, and the stale
    entry leaves the embedded store."""
    u = urlparse(es_url)
    fwd = TcpForwarder(u.hostname or "127.0.0.1", u.port or 9200)
    a, b = zh_articles[50]["content"], zh_articles[51]["content"]
    try:
        with ServiceProcess(fwd.url, tmp_path / "data") as svc:
            client = Elasticsearch(svc.url, request_timeout=60)
            client.index(index=svc_index, id="w1", document={"content": a, "n": 1})
            assert httpx.get(f"{svc.url}/v1/similar/w1?index={svc_index}").status_code == 200
            fwd.cut()
            resp = client.bulk(operations=[{"update": {"_index": svc_index, "_id": "w1"}},
                                           {"doc": {"content": b}}])
            item = resp["items"][0]["update"]  # queued: answered as applied, marked queued
            assert (item["status"], item["result"], item["fingerprint_indexer"]) == (200, "updated",
                                                                                    {"queued": True})
            assert _metric(svc, "unknown_source") == 1
            assert httpx.get(f"{svc.url}/v1/similar/w1?index={svc_index}").status_code == 404
            assert b[:40] not in svc.log_text()  # no document bodies in the log
            fwd.restore()
            wait_spool_empty(svc.url, {}, timeout=120)
            client.close()
    finally:
        fwd.cut()
    es_client.indices.refresh(index=svc_index)
    src = es_client.get(index=svc_index, id="w1")["_source"]
    assert (src["content"], src["n"]) == (b, 1)


# ------------------------------------------------------------------------------------------ creates
def _stored_hex(service: ServiceProcess, index: str, doc_id: str) -> str | None:
    """The fingerprint the embedded store holds for ``doc_id`` (None when it holds no entry)."""
    r = httpx.get(f"{service.url}/v1/similar/{doc_id}?index={index}", headers=service.headers(), timeout=60)
    return str(r.json()["fingerprint"]) if r.status_code == 200 else None


def _assert_not_stored(
    proxied: Elasticsearch, service: ServiceProcess, index: str, doc_id: str, text: str, copy_id: str
) -> None:
    """The embedded store holds no entry for ``doc_id``, so ``text`` indexed again as ``copy_id`` is new."""
    assert _stored_hex(service, index, doc_id) is None
    copy = proxied.index(index=index, id=copy_id, document={"content": text})["fingerprint_indexer"]
    assert copy["decision"] == "new"


def test_create_of_an_existing_id_keeps_the_stored_text(
    proxied: Elasticsearch, es_client: Elasticsearch, service: ServiceProcess,
    zh_articles: list[dict[str, Any]], svc_index: str,
) -> None:
    """Elasticsearch refuses the second create with its own 409, and the embedded store still describes
    the text Elasticsearch holds: a copy of it is a duplicate of the id, a copy of the refused text is new."""
    a, b = zh_articles[60]["content"], zh_articles[61]["content"]
    assert proxied.create(index=svc_index, id="c1", document={"content": a})["result"] == "created"
    with pytest.raises(ConflictError) as via:
        proxied.create(index=svc_index, id="c1", document={"content": b})
    with pytest.raises(ConflictError) as direct:
        es_client.create(index=svc_index, id="c1", document={"content": b})
    assert via.value.meta.status == direct.value.meta.status == 409
    assert via.value.body["error"]["type"] == direct.value.body["error"]["type"] \
        == "version_conflict_engine_exception"
    with pytest.raises(ConflictError):  # the index API with op_type=create takes the same path
        proxied.index(index=svc_index, id="c1", document={"content": b}, op_type="create")
    assert es_client.get(index=svc_index, id="c1")["_source"]["content"] == a
    assert _stored_hex(service, svc_index, "c1") == Fingerprinter().fingerprint(text=a).hex
    copy_a = proxied.index(index=svc_index, id="c2", document={"content": a})["fingerprint_indexer"]
    assert (copy_a["decision"], copy_a["duplicate_of"]) == ("exact_duplicate", "c1")
    copy_b = proxied.index(index=svc_index, id="c3", document={"content": b})["fingerprint_indexer"]
    assert copy_b["decision"] == "new"


def test_create_refused_for_a_document_the_store_never_saw_leaves_no_entry(
    proxied: Elasticsearch, es_client: Elasticsearch, service: ServiceProcess,
    zh_articles: list[dict[str, Any]], svc_index: str,
) -> None:
    """A document written straight into Elasticsearch: a create of its id through the proxy is refused,
    and the refused text does not stay in the embedded store."""
    a, b = zh_articles[62]["content"], zh_articles[63]["content"]
    es_client.index(index=svc_index, id="x1", document={"content": a}, refresh=True)
    with pytest.raises(ConflictError):
        proxied.create(index=svc_index, id="x1", document={"content": b})
    _assert_not_stored(proxied, service, svc_index, "x1", b, copy_id="x2")


def test_document_refused_by_the_mapping_leaves_no_entry(
    proxied: Elasticsearch, es_client: Elasticsearch, service: ServiceProcess,
    zh_articles: list[dict[str, Any]], svc_index: str,
) -> None:
    """Elasticsearch refuses a source its mapping cannot parse (text for an integer field): the answer
    is its own 400, and the refused text does not stay in the embedded store to be matched later."""
    es_client.indices.create(index=svc_index, mappings={"properties": {"views": {"type": "integer"}}})
    a = zh_articles[64]["content"]
    bad = {"content": a, "views": "many"}
    with pytest.raises(BadRequestError) as via:
        proxied.index(index=svc_index, id="m1", document=bad)
    with pytest.raises(BadRequestError) as direct:
        es_client.index(index=svc_index, id="m1", document=bad)
    assert via.value.body["error"]["type"] == direct.value.body["error"]["type"]
    _assert_not_stored(proxied, service, svc_index, "m1", a, copy_id="m2")


def test_bulk_with_create_conflicts_answers_like_elasticsearch(
    proxied: Elasticsearch, es_client: Elasticsearch, service: ServiceProcess,
    zh_articles: list[dict[str, Any]], svc_index: str,
) -> None:
    a, b, c, d = (zh_articles[i]["content"] for i in (64, 65, 66, 67))

    def ops(index: str) -> list[dict[str, Any]]:
        return [{"create": {"_index": index, "_id": "n0"}}, {"content": b},       # exists: 409
                {"create": {"_index": index, "_id": "n1"}}, {"content": c},       # 201
                {"create": {"_index": index, "_id": "n1"}}, {"content": d},       # created just now: 409
                {"index": {"_index": index, "_id": "n2"}}, {"content": d},        # 201
                {"create": {"_index": index, "_id": "n2"}}, {"content": a},       # 409
                {"delete": {"_index": index, "_id": "n0"}},                       # 200
                {"create": {"_index": index, "_id": "n0"}}, {"content": a + "。"}]  # gone again: 201

    direct_index = svc_index + "-direct"
    try:
        es_client.index(index=direct_index, id="n0", document={"content": a})
        direct = es_client.bulk(operations=ops(direct_index), refresh=True)
    finally:
        es_client.indices.delete(index=direct_index, ignore_unavailable=True)
    proxied.create(index=svc_index, id="n0", document={"content": a})
    via = proxied.bulk(operations=ops(svc_index), refresh=True)
    assert via["errors"] is direct["errors"] is True
    assert _summary(via) == _summary(direct)
    assert [s for _, s, _, _ in _summary(via)] == [409, 201, 409, 201, 409, 200, 201]
    fi = [next(iter(it.values())).get("fingerprint_indexer") for it in via["items"]]
    assert [x is not None for x in fi] == [False, True, False, True, False, False, True]
    fpr = Fingerprinter()
    for doc_id, text in (("n0", a + "。"), ("n1", c), ("n2", d)):
        assert es_client.get(index=svc_index, id=doc_id)["_source"]["content"] == text
        assert _stored_hex(service, svc_index, doc_id) == fpr.fingerprint(text=text).hex, doc_id


def test_create_while_elasticsearch_is_away_keeps_the_stored_entry(
    es_url: str, es_client: Elasticsearch, tmp_path: Path, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    """Whether the id exists cannot be asked (a real TCP cut): the create of a stored id is queued
    unchanged, the stored entry stays, and the replay meets Elasticsearch's 409."""
    u = urlparse(es_url)
    fwd = TcpForwarder(u.hostname or "127.0.0.1", u.port or 9200)
    a, b = zh_articles[68]["content"], zh_articles[69]["content"]
    want = Fingerprinter().fingerprint(text=a).hex
    try:
        with ServiceProcess(fwd.url, tmp_path / "data") as svc:
            client = Elasticsearch(svc.url, request_timeout=60)
            client.create(index=svc_index, id="q1", document={"content": a})
            fwd.cut()
            resp = client.bulk(operations=[{"create": {"_index": svc_index, "_id": "q1"}}, {"content": b}])
            item = resp["items"][0]["create"]
            assert (item["status"], item["result"]) == (201, "created")
            assert item["fingerprint_indexer"] == {"queued": True}
            assert _stored_hex(svc, svc_index, "q1") == want
            assert b[:40] not in svc.log_text()
            fwd.restore()
            wait_spool_empty(svc.url, {}, timeout=120)
            assert _stored_hex(svc, svc_index, "q1") == want
            copy_a = client.index(index=svc_index, id="q2", document={"content": a})["fingerprint_indexer"]
            assert copy_a["duplicate_of"] == "q1"
            client.close()
    finally:
        fwd.cut()
    assert es_client.get(index=svc_index, id="q1")["_source"]["content"] == a
