"""The proxy answers like Elasticsearch: each request goes to the real node directly and through the
service (support.differential), and status, headers, body shape and per-item results are compared."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest
from elasticsearch import Elasticsearch
from support.differential import JSON, NDJSON, Differential, ndjson
from support.service import ServiceProcess

from fingerprint_indexer.es.mapping import ES_LAYOUT, load_index_body

pytestmark = [pytest.mark.elasticsearch]

#: Ids clients send percent-encoded: a slash (every zh_news id has one), a space, non-ASCII, a plus.
ODD_IDS = ["news/2024/abc", "with space", "中文/新闻", "a+b%c"]
TEXT = ("市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温，"
        "最低气温将降至零下五度，请市民注意防寒保暖。")
OTHER = "本市地铁三号线延长线今天开通试运营，沿线新增八座车站，早晚高峰行车间隔缩短至四分钟，方便市民出行。"


@pytest.fixture
def diff(es_url: str, service: ServiceProcess) -> Iterator[Differential]:
    stem = uuid.uuid4().hex[:10]
    d = Differential(es_url, service.url, service.headers(), f"fpi-test-direct-{stem}",
                     f"fpi-test-proxy-{stem}")
    yield d
    d.close()


def _similar(service: ServiceProcess, index: str, doc_id: str) -> httpx.Response:
    return httpx.get(f"{service.url}/v1/similar/{quote(doc_id, safe='')}", params={"index": index},
                     headers=service.headers())


@pytest.mark.parametrize("doc_id", ODD_IDS)
def test_single_document_calls_with_odd_ids(diff: Differential, service: ServiceProcess,
                                            es_client: Elasticsearch, doc_id: str) -> None:
    """#16.1: index, create, update and delete reach the proxy's routes with any id, and answer alike."""
    path = quote(doc_id, safe="")
    doc = json.dumps({"title": "降温", "content": TEXT}, ensure_ascii=False)
    diff.same("PUT", f"/{{index}}/_doc/{path}", doc, JSON)
    diff.same("PUT", f"/{{index}}/_doc/{path}?op_type=create", doc, JSON)  # 409 on both sides
    diff.same("PUT", f"/{{index}}/_create/{path}", doc, JSON)  # 409
    src = es_client.get(index=diff.proxy_index, id=doc_id)["_source"]
    assert src["decision"] == "new" and len(src["fingerprint_hex"]) == 16
    assert _similar(service, diff.proxy_index, doc_id).status_code == 200
    before = src["fingerprint_hex"]
    update = json.dumps({"doc": {"content": OTHER}}, ensure_ascii=False)
    diff.same("POST", f"/{{index}}/_update/{path}", update, JSON)
    assert es_client.get(index=diff.proxy_index, id=doc_id)["_source"]["fingerprint_hex"] != before
    diff.same("GET", f"/{{index}}/_doc/{path}", masked=("_source",))
    diff.same("DELETE", f"/{{index}}/_doc/{path}")
    diff.same("DELETE", f"/{{index}}/_doc/{path}")  # 404 on both
    assert _similar(service, diff.proxy_index, doc_id).status_code == 404  # left the store too
    diff.same("PUT", f"/{{index}}/_create/{path}", doc, JSON)  # created again: new, not a duplicate
    assert es_client.get(index=diff.proxy_index, id=doc_id)["_source"]["decision"] == "new"


def test_literal_slash_in_the_path_is_not_an_id(diff: Differential) -> None:
    """An unencoded ``/`` makes another path for Elasticsearch (no such endpoint): the same answer."""
    diff.same("PUT", "/{index}/_doc/a/b", json.dumps({"content": TEXT}, ensure_ascii=False), JSON)


@pytest.mark.parametrize("bad", [b'{"content": "unterminated', b'{"content": "caf\xe9 latin-1"}',
                                 b'{"content": "x", "content": "duplicate key"}', b"[1, 2]", b"42"],
                         ids=["bad-json", "latin-1", "duplicate-key", "array", "number"])
def test_one_bad_source_line_fails_only_its_item(diff: Differential, es_client: Elasticsearch,
                                                 bad: bytes) -> None:
    """#16.2: the good items of the request are indexed (with fingerprints), the bad one fails alone
    with Elasticsearch's own error."""
    body = ndjson({"index": {"_index": "{index}", "_id": "good1"}}, {"content": TEXT},
                  {"index": {"_index": "{index}", "_id": "bad"}}, bad,
                  {"create": {"_index": "{index}", "_id": "good2"}}, {"content": OTHER})
    pair = diff.same("POST", "/_bulk", body, NDJSON)
    assert [next(iter(it.values()))["status"] for it in pair.proxied.body["items"]][0::2] == [201, 201]
    assert es_client.get(index=diff.proxy_index, id="good2")["_source"]["decision"] == "new"


def test_bom_source_line_is_read_as_elasticsearch_reads_it(diff: Differential,
                                                            es_client: Elasticsearch) -> None:
    body = ndjson({"index": {"_id": "bom"}}, b"\xef\xbb\xbf" + json.dumps({"content": TEXT}).encode())
    diff.same("POST", "/{index}/_bulk", body, NDJSON)
    assert es_client.get(index=diff.proxy_index, id="bom")["_source"]["decision"] == "new"


@pytest.mark.parametrize("body", [
    b'{"index":{"_id":"1"}}\n{"content":"x"}',  # no final newline
    b'\n{"index":{"_id":"1"}}\n\n{"content":"x"}\n\n',  # blank lines
    b'{"index":{"_id":"1"}\n{"content":"x"}\n',  # malformed action line
    b'{"explode":{"_id":"1"}}\n{"content":"x"}\n',  # unknown action
    b'{"index":{"_id":"1","_type":"doc"}}\n{"content":"x"}\n',  # unknown metadata
    b'{"index":{"_id":"1"}}\n\n',  # empty source line
    b"",  # no body
    b'{"index":{"_id":"1"}}\n{"content":"x"}\n{"index":{"_id":"2"}}\n',  # dangling last action: ignored
    b'{"delete":{"_id":"1"}}\n{"index":{"_id":"1"}}\n{"content":"y"}\n',
], ids=["no-final-newline", "blank-lines", "malformed-action", "unknown-action", "unknown-meta",
        "empty-source", "empty-body", "dangling-action", "delete-then-index"])
def test_leniency_and_errors_match(diff: Differential, body: bytes) -> None:
    """#16.8: what Elasticsearch refuses the proxy refuses with the same status and error body; what it
    tolerates the proxy tolerates."""
    diff.same("POST", "/{index}/_bulk", body, NDJSON)


def test_versioned_media_types_as_the_official_clients_send_them(diff: Differential) -> None:
    """The official clients send ``compatible-with`` media types; the answer's Content-Type follows."""
    for version in ("8", "9"):
        bulk = {"content-type": f"application/vnd.elasticsearch+x-ndjson; compatible-with={version}",
                "accept": f"application/vnd.elasticsearch+json; compatible-with={version}"}
        diff.same("POST", "/{index}/_bulk", ndjson({"index": {"_id": "1"}}, {"content": TEXT}), bulk)
        one = {"content-type": f"application/vnd.elasticsearch+json; compatible-with={version}",
               "accept": f"application/vnd.elasticsearch+json; compatible-with={version}"}
        diff.same("PUT", "/{index}/_doc/2", json.dumps({"content": OTHER}, ensure_ascii=False), one)
        diff.same("PUT", "/{index}/_create/2", json.dumps({"content": OTHER}, ensure_ascii=False), one)


def test_no_content_type_is_answered_like_elasticsearch(diff: Differential) -> None:
    diff.same("POST", "/{index}/_bulk", b'{"index":{"_id":"1"}}\n{"content":"x"}\n')
    diff.same("PUT", "/{index}/_doc/1", b'{"content":"x"}')


def test_update_of_a_missing_index_matches(diff: Differential, es_client: Elasticsearch) -> None:
    """Elasticsearch creates a missing index for an update, even one without upsert (which then fails
    with document_missing_exception): the proxy creates it first, with the fingerprint mapping."""
    diff.same("POST", "/{index}/_update/u", json.dumps({"doc": {"n": 1}}), JSON)
    got = es_client.indices.get_mapping(index=diff.proxy_index)[diff.proxy_index]["mappings"]["properties"]
    assert got["sketch"]["type"] == "binary"
    diff.same("POST", "/{index}/_bulk", ndjson({"update": {"_id": "u"}}, {"doc": {"n": 1}}), NDJSON)
    diff.same("POST", "/{index}/_update/u", json.dumps({"doc": {"n": 1}, "doc_as_upsert": True}), JSON)


def test_single_document_errors_match(diff: Differential) -> None:
    diff.same("PUT", "/{index}/_doc/1", b'{"content": "unterminated', JSON)
    diff.same("PUT", "/{index}/_doc/1", b"[1]", JSON)
    diff.same("POST", "/{index}/_update/missing", json.dumps({"doc": {"content": TEXT}}), JSON)  # 404
    diff.same("PUT", "/{index}/_doc/v?version=3&version_type=external", json.dumps({"content": TEXT}), JSON)
    diff.same("PUT", "/{index}/_doc/v?version=2&version_type=external", json.dumps({"content": TEXT}), JSON)


def test_first_write_without_text_gets_the_fingerprint_mapping(
    diff: Differential, es_client: Elasticsearch
) -> None:
    """#16.3: an index first written with no text field is created by the proxy with its mapping, so
    the fingerprint fields written later keep their types."""
    diff.same("POST", "/{index}/_bulk", ndjson({"index": {"_id": "c"}}, {"category": "sport"}), NDJSON)
    want = load_index_body(ES_LAYOUT)["mappings"]["properties"]
    got = es_client.indices.get_mapping(index=diff.proxy_index)[diff.proxy_index]["mappings"]["properties"]
    for name in ("sketch", "block_0", "published_at", "fingerprint"):
        assert got[name]["type"] == want[name]["type"], name
    diff.same("PUT", "/{index}/_doc/t", json.dumps({"content": TEXT}, ensure_ascii=False), JSON)


def test_deleted_index_is_recreated_with_the_fingerprint_mapping(
    diff: Differential, es_client: Elasticsearch
) -> None:
    """#17.15: an index deleted (behind the proxy's back) while the service runs is created again with
    the fingerprint mapping by the next write, never with a dynamic one."""
    diff.same("PUT", "/{index}/_doc/1", json.dumps({"content": TEXT}, ensure_ascii=False), JSON)
    es_client.indices.delete(index=diff.proxy_index)
    diff.es.delete(f"/{diff.es_index}")
    diff.create_direct()
    diff.same("POST", "/{index}/_bulk", ndjson({"index": {"_id": "c"}}, {"category": "sport"}), NDJSON)
    got = es_client.indices.get_mapping(index=diff.proxy_index)[diff.proxy_index]["mappings"]["properties"]
    assert got["sketch"]["type"] == "binary" and got["block_0"]["type"] == "keyword"


def test_delete_earlier_in_the_request_counts_when_deciding(diff: Differential) -> None:
    """#16.4: a copy of a document deleted earlier in the same bulk request is new, not its duplicate;
    a copy before the delete still is its duplicate."""
    diff.same("PUT", "/{index}/_doc/orig", json.dumps({"content": TEXT}, ensure_ascii=False), JSON)
    body = ndjson({"index": {"_id": "before"}}, {"content": TEXT}, {"delete": {"_id": "orig"}},
                  {"index": {"_id": "after"}}, {"content": TEXT})
    pair = diff.same("POST", "/{index}/_bulk", body, NDJSON)
    decisions = [next(iter(it.values())).get("fingerprint_indexer", {}) for it in pair.proxied.body["items"]]
    assert (decisions[0]["decision"], decisions[0]["duplicate_of"]) == ("exact_duplicate", "orig")
    assert decisions[2]["duplicate_of"] != "orig"
    assert decisions[2]["duplicate_of"] == "before"


def test_pass_through_is_not_compressed_unless_asked(diff: Differential) -> None:
    """#16.5: without Accept-Encoding the answer is plain, with it as Elasticsearch sends it."""
    # refresh=true: the search below must see the document on both sides, whatever the refresh timer did
    diff.same("PUT", "/{index}/_doc/1?refresh=true", json.dumps({"content": TEXT}, ensure_ascii=False), JSON)
    for headers in ({}, {"accept-encoding": "gzip"}, {"accept-encoding": "identity"}):
        pair = diff.same("GET", "/{index}/_doc/1", headers=headers, masked=("_source",))
        if not headers:
            assert "content-encoding" not in pair.proxied.headers
    diff.same("GET", "/{index}/_search?q=*:*", masked=("_source", "max_score", "_score"))


@pytest.mark.parametrize("spec", ["items.*.error", "items.*._id", "errors,items.*.index.status", "-took",
                                  "-items.*._shards,-took", "took", "items.**.status", "it*",
                                  "items.*.error,-items.*.index._id", "nothing", "**._id"])
def test_filter_path_on_bulk(diff: Differential, spec: str) -> None:
    """#16.7: filter_path shapes the proxy's bulk answer as it shapes Elasticsearch's."""
    body = ndjson({"index": {"_id": "1"}}, {"content": TEXT}, {"create": {"_id": "1"}}, {"content": TEXT},
                  {"delete": {"_id": "zz"}})
    diff.same("POST", f"/{{index}}/_bulk?filter_path={quote(spec)}", body, NDJSON)


@pytest.mark.parametrize("spec", ["_id,result", "-_shards", "error.type", "nothing"])
def test_filter_path_on_single_writes(diff: Differential, spec: str) -> None:
    doc = json.dumps({"content": TEXT}, ensure_ascii=False)
    diff.same("PUT", f"/{{index}}/_doc/7?filter_path={quote(spec)}", doc, JSON)
    diff.same("PUT", f"/{{index}}/_create/7?filter_path={quote(spec)}", doc, JSON)  # errors: not filtered


def test_pretty_answers(diff: Differential) -> None:
    body = ndjson({"index": {"_id": "1"}}, {"content": TEXT})
    pair = diff.same("POST", "/{index}/_bulk?pretty", body, NDJSON)
    assert pair.proxied.raw.startswith(b"{\n")

