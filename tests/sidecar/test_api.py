"""The /v1 API of a real service process: answers match the in-process library, auth, bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from elasticsearch import Elasticsearch
from support.service import ServiceProcess
from support.templates import DAY_1, DAY_2

from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.related import related
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.pipeline import Pipeline

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]


def _docs(articles: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Real articles plus, for every third one, a lightly edited repost under a new id."""
    out = []
    for i, a in enumerate(articles[:n]):
        out.append({"id": f"d{i}", "title": a.get("title") or "", "content": a["content"]})
        if i % 3 == 0:
            edited = a["content"][:-20] + "（来源：网络）"
            out.append({"id": f"d{i}-repost", "title": "转载", "content": edited})
    return out


def test_fingerprint_matches_library(http: httpx.Client, zh_articles: list[dict[str, Any]]) -> None:
    fpr = Fingerprinter()
    for a in zh_articles[:5]:
        r = http.post("/v1/fingerprint", json={"text": a["content"]})
        assert r.status_code == 200, r.text
        want = fpr.fingerprint(text=a["content"]).to_dict()
        got = r.json()
        for key in ("fingerprint", "blocks", "content_digest", "keyword_digest", "degenerate", "version"):
            assert got[key] == want[key], key
        assert got["fields"]["fingerprint_hex"] == want["fingerprint"]
    html = http.post("/v1/fingerprint", json={"html": "<p>" + zh_articles[0]["content"] + "</p>"}).json()
    assert html["fingerprint"] == fpr.fingerprint(html="<p>" + zh_articles[0]["content"] + "</p>").hex


def test_ingest_decisions_equal_in_process_pipeline(
    http: httpx.Client, zh_articles: list[dict[str, Any]], tmp_path: Path, svc_index: str
) -> None:
    docs = _docs(zh_articles, 60)
    got = []
    for start in range(0, len(docs), 25):  # batches, and one single-document request
        r = http.post("/v1/ingest", json={"documents": docs[start : start + 25], "index_name": svc_index})
        assert r.status_code == 200, r.text
        got += r.json()["results"]
    with Pipeline(tmp_path / "ref") as pipe:
        want = [d.to_dict() for d in pipe.process_many(Document.from_mapping(d) for d in docs)]
    assert [{k: g[k] for k in w} for g, w in zip(got, want, strict=True)] == want
    assert any(w["decision"] == "near_duplicate" for w in want)
    single = http.post("/v1/ingest", json={"document": docs[1], "index_name": svc_index}).json()
    assert single["results"][0]["decision"] == want[1]["decision"]  # repeated: same stored decision


def test_ingest_with_index_writes_fields(
    http: httpx.Client, es_client: Elasticsearch, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    docs = _docs(zh_articles[100:], 9)
    docs[0]["section"] = "economy"  # a field of the caller's own is kept
    r = http.post("/v1/ingest", json={"documents": docs, "index": True, "index_name": svc_index})
    assert r.status_code == 200, r.text
    body = r.json()
    assert not body["errors"]
    assert {res["index"]["status"] for res in body["results"]} == {201}
    es_client.indices.refresh(index=svc_index)
    assert es_client.count(index=svc_index)["count"] == len(docs)
    for res in body["results"]:
        src = es_client.get(index=svc_index, id=res["id"])["_source"]
        assert src["fingerprint_hex"] == res["fingerprint"]
        assert src["decision"] == res["decision"] and src["duplicate_of"] == res["duplicate_of"]
    assert es_client.get(index=svc_index, id="d0")["_source"]["section"] == "economy"
    mapping = es_client.indices.get_mapping(index=svc_index)[svc_index]["mappings"]
    assert mapping["properties"]["fingerprint"]["type"] == "long"  # created with the project's mapping


def test_ingest_skip_policy_leaves_duplicates_out(
    http: httpx.Client, es_client: Elasticsearch, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    a = zh_articles[200]["content"]
    docs = [{"id": "orig", "content": a}, {"id": "copy", "content": a},
            {"id": "other", "content": zh_articles[201]["content"]}]
    r = http.post("/v1/ingest", json={"documents": docs, "index": True, "index_name": svc_index,
                                      "on_duplicate": "skip"})
    res = {x["id"]: x for x in r.json()["results"]}
    assert res["copy"]["decision"] == "exact_duplicate" and res["copy"]["index"]["result"] == "skipped"
    es_client.indices.refresh(index=svc_index)
    ids = {h["_id"] for h in es_client.search(index=svc_index, size=10)["hits"]["hits"]}
    assert ids == {"orig", "other"}


def test_related_answers_as_the_library_does(
    http: httpx.Client, es_client: Elasticsearch, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    """The route and ``es related`` share one query and one folding: same stories, scores and counts
    wherever they leave out the same near-duplicates (the route takes them from the embedded store, the
    command from Elasticsearch)."""
    x, y = zh_articles[340]["content"], zh_articles[343]["content"]
    # every third article has a repost; "mix" takes a quarter of two: a topical neighbour of both
    mix = {"id": "mix", "title": "mix", "content": x[: len(x) // 4] + y[: len(y) // 4]}
    docs = [*_docs(zh_articles[340:], 40), mix]
    r = http.post("/v1/ingest", json={"documents": docs, "index": True, "index_name": svc_index})
    assert r.status_code == 200 and not r.json()["errors"], r.text
    es_client.indices.refresh(index=svc_index)
    compared: dict[str, list[dict[str, Any]]] = {}
    for doc_id in ["mix", *(d["id"] for d in docs[:20])]:
        got = http.get(f"/v1/related/{doc_id}", params={"index": svc_index, "size": 5}).json()
        want = related(es_client, svc_index, doc_id, size=5)
        if {d["id"] for d in got["duplicates"]} != {n["id"] for n in want.near_duplicates}:
            continue
        assert [(e["id"], e["members"], e["similar_reports"]) for e in got["related"]] == [
            (e.id, e.members, e.similar_reports) for e in want.related], doc_id
        assert [e["score"] for e in got["related"]] == pytest.approx([e.score for e in want.related])
        compared[doc_id] = got["related"]
    assert len(compared) >= 10, sorted(compared)
    folded = [e for entries in compared.values() for e in entries if e["similar_reports"]]
    assert folded and all(len(e["members"]) >= 2 for e in folded), compared  # copies were folded


def test_api_key_is_required_and_accepted_both_ways(service: ServiceProcess) -> None:
    body = {"text": "some text to fingerprint here"}
    url = f"{service.url}/v1/fingerprint"
    assert httpx.post(url, json=body).status_code == 401
    wrong = httpx.post(url, json=body, headers={"X-API-Key": "nope"})
    assert wrong.status_code == 401 and wrong.json()["error"]["type"] == "security_exception"
    assert httpx.post(url, json=body, headers={"X-API-Key": service.api_key}).status_code == 200
    auth = {"Authorization": f"ApiKey {service.api_key}"}
    assert httpx.post(url, json=body, headers=auth).status_code == 200
    assert httpx.get(f"{service.url}/_cluster/health").status_code == 401  # the proxy too
    assert httpx.get(f"{service.url}/healthz").status_code == 200


BAD_INPUTS = [
    # (description, raw body, content type, expected status)
    ("invalid JSON", b'{"documents": [', "application/json", 400),
    ("undecodable bytes", b'{"document": {"id": "x", "content": "\xff\xfe"}}', "application/json", 400),
    ("not an object", b"[1, 2]", "application/json", 422),
    ("missing document", b'{"index": true}', "application/json", 422),
    ("both document and documents", b'{"document": {"id": "a", "content": "x"}, "documents": []}',
     "application/json", 422),
    ("id missing", b'{"document": {"content": "text"}}', "application/json", 422),
    ("id of the wrong type", b'{"document": {"id": [1], "content": "text"}}', "application/json", 422),
    ("id empty", b'{"document": {"id": "", "content": "text"}}', "application/json", 422),
    ("content of the wrong type", b'{"document": {"id": "a", "content": 5}}', "application/json", 422),
    ("no text at all", b'{"document": {"id": "a", "url": "http://x"}}', "application/json", 422),
    ("lone surrogate", b'{"document": {"id": "a", "content": "\\ud800"}}', "application/json", 422),
    ("lone surrogate in an extra field", b'{"document": {"id": "a", "content": "t", "x": ["\\udc00"]}}',
     "application/json", 422),
    ("index flag not a boolean", b'{"document": {"id": "a", "content": "t"}, "index": "yes"}',
     "application/json", 422),
    ("bad index name", b'{"document": {"id": "a", "content": "t"}, "index_name": "Bad*Name"}',
     "application/json", 422),
    ("unknown field", b'{"document": {"id": "a", "content": "t"}, "indx": true}', "application/json", 422),
    ("form body", b"document=1", "application/x-www-form-urlencoded", 415),
]


@pytest.mark.parametrize(("what", "raw", "ctype", "status"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_a_4xx_json_error(http: httpx.Client, what: str, raw: bytes, ctype: str, status: int
                                       ) -> None:
    r = http.post("/v1/ingest", content=raw, headers={"content-type": ctype})
    assert r.status_code == status, (what, r.text)
    err = r.json()["error"]
    assert err["type"] and err["reason"], what


def test_oversize_body_and_batch(http: httpx.Client, service: ServiceProcess) -> None:
    huge = b'{"document": {"id": "a", "content": "' + b"x" * (51 << 20) + b'"}}'
    r = http.post("/v1/ingest", content=huge, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["type"] == "request_entity_too_large"
    many = {"documents": [{"id": str(i), "content": "word " * 3} for i in range(1001)]}
    r = http.post("/v1/ingest", json=many)
    assert r.status_code == 413 and "limit is 1000" in r.json()["error"]["reason"]


def test_similar_by_id_and_text(
    http: httpx.Client, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    a = zh_articles[300]["content"]
    docs = [{"id": "s1", "content": a}, {"id": "s2", "content": a[:-15] + "。记者报道"},
            {"id": "s3", "content": zh_articles[301]["content"]}]
    http.post("/v1/ingest", json={"documents": docs, "index_name": svc_index}).raise_for_status()
    by_id = http.get(f"/v1/similar/s1?index={svc_index}").json()
    assert [m["id"] for m in by_id["matches"]] == ["s2"]
    by_text = http.post("/v1/similar", json={"text": a, "index_name": svc_index}).json()
    assert [m["id"] for m in by_text["matches"]][:2] == ["s1", "s2"]
    assert by_text["matches"][0]["distance"] == 0
    assert http.get(f"/v1/similar/nope?index={svc_index}").status_code == 404
    assert http.get(f"/v1/similar/s1?index={svc_index}&k=9").status_code == 400  # 4 blocks serve k <= 3


def test_similar_says_why_a_look_alike_is_not_a_duplicate(http: httpx.Client, svc_index: str) -> None:
    docs = [{"id": "nov7", "content": DAY_1}, {"id": "nov2", "content": DAY_2}]
    got = http.post("/v1/ingest", json={"documents": docs, "index_name": svc_index}).json()
    assert [r["decision"] for r in got["results"]] == ["new", "new"]
    by_id = http.get(f"/v1/similar/nov2?index={svc_index}").json()
    assert by_id["matches"] == []
    assert [r["id"] for r in by_id["rejected"]] == ["nov7"]
    assert "differ" in by_id["rejected"][0]["rejected_because"] or "same template" in by_id["rejected"][0][
        "rejected_because"]
    by_text = http.post("/v1/similar", json={"text": DAY_2, "index_name": svc_index}).json()
    assert [m["id"] for m in by_text["matches"]] == ["nov2"]
    assert [r["id"] for r in by_text["rejected"]] == ["nov7"]


def test_serve_refuses_public_bind_without_key(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "fingerprint_indexer.cli.main", "serve", "--es", "http://127.0.0.1:1",
                        "--host", "0.0.0.0", "--store", str(tmp_path)], capture_output=True, text=True,
                       timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode != 0 and "without an API key" in r.stderr


def test_second_service_on_same_data_dir_is_refused(service: ServiceProcess) -> None:
    r = subprocess.run([sys.executable, "-m", "fingerprint_indexer.cli.main", "serve", "--es", service.es_url,
                        "--store", str(service.data_dir), "--port", "1"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0 and "in use by another process" in r.stderr, r.stderr
