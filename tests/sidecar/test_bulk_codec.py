"""The proxy's wire codec (pure, no server): how a bulk body is taken apart and put together again, how
requests are read, and the shapes of the answers and errors the proxy writes in Elasticsearch's format."""

from __future__ import annotations

import functools
import json
from typing import Any
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import Request

from fingerprint_indexer.es.codec import DecisionWrite, block_fields
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter
from fingerprint_indexer.sidecar.bulk_codec import (
    ANSWER_PARAMS,
    META_KEYS,
    OP_PARAMS,
    BulkParseError,
    _plain_json,
    answer_type,
    bulk_item,
    doc_location,
    es_error,
    es_json,
    filter_path,
    has_error,
    parse_bulk,
    path_segments,
    read_json,
    read_json_reference,
    readable,
    single_error,
)
from fingerprint_indexer.sidecar.delivery import BulkOp, encode_ops

ids = st.text(min_size=1, max_size=12).filter(lambda s: s.strip() != "")
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**18, 10**18), st.text(max_size=20),
                    st.floats(allow_nan=False, allow_infinity=False))
sources = st.dictionaries(st.text(min_size=1, max_size=8), scalars, max_size=5)
ops = st.lists(st.tuples(st.sampled_from(["index", "create", "update", "delete"]), ids, sources),
               min_size=1, max_size=8)


def _body(items: list[tuple[str, str, dict[str, Any]]], spacing: str) -> bytes:
    lines = []
    for action, doc_id, src in items:
        lines.append(json.dumps({action: {"_index": "news", "_id": doc_id}}, ensure_ascii=False))
        if action != "delete":
            lines.append(json.dumps({"doc": src} if action == "update" else src, ensure_ascii=False,
                                    separators=(",", spacing)))
    return ("\n".join(lines) + "\n").encode()


@settings(max_examples=200, deadline=None)
@given(ops, st.sampled_from([":", ": "]))
def test_unchanged_operations_are_relayed_byte_for_byte(items: list[tuple[str, str, dict[str, Any]]],
                                                        spacing: str) -> None:
    """Reading a bulk body and encoding its operations again gives the same source lines: a caller's
    ``_source`` reaches Elasticsearch exactly as sent (number formats, spacing, key order)."""
    body = _body(items, spacing)
    parsed = parse_bulk(body, None)
    assert [(op.action, op.id) for op in parsed] == [(a, i) for a, i, _ in items]
    lines = iter(body.split(b"\n"))
    sources_in = []  # by position, not by prefix: a source may itself begin with a key named "delete"
    for action, _, _ in items:
        next(lines)  # the action line
        if action != "delete":
            sources_in.append(next(lines))
    assert [op.source_line() for op in parsed if op.action != "delete"] == sources_in
    again = parse_bulk(encode_ops(parsed), None)
    assert [(op.action, op.meta, op.source) for op in again] == \
        [(op.action, op.meta, op.source) for op in parsed]


@functools.cache
def _writes() -> tuple[DecisionWrite, DecisionWrite]:
    """The fields added to a news text and to a degenerate one (no block keys)."""
    fpr, layout = Fingerprinter(), FingerprintConfig().layout
    texts = ["国务院常务会议今天在北京召开，部署进一步稳定就业的措施，会议要求各地抓好落实。" * 4, "好"]
    a, b = (DecisionWrite(fpr.fingerprint(text=t), layout, cluster_id="c1", duplicate_of=None, distance=None,
                          decision="new", text_length=len(t)) for t in texts)
    return a, b


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.one_of(st.text(min_size=1, max_size=8),
                                 st.sampled_from(["fingerprint", "decision", "block_0", "terms"])), scalars,
                       max_size=5),
       st.sampled_from([0, 1]), st.sampled_from([",", ", "]), st.integers(0, 2))
def test_added_fields_are_spliced_into_the_callers_object(src: dict[str, Any], which: int, comma: str,
                                                          bom: int) -> None:
    """The caller's source line is kept as sent, our fields appended inside it; a field of ours the caller
    sent too is written once, ours winning, as the dict merge does."""
    write = _writes()[which]
    raw = (b"\xef\xbb\xbf" if bom == 1 else b"") + json.dumps(
        src, ensure_ascii=False, separators=(comma, ": ")).encode() + (b" \r" if bom == 2 else b"")
    op = BulkOp("index", {"_index": "news", "_id": "1"}, src, raw=raw, added=write)
    line = op.source_line()
    assert json.loads(line) == {**src, **write.fields()}
    ours = {*write.fields(), *block_fields(write.layout)}  # a degenerate document's too: it writes no keys
    if src and src.keys().isdisjoint(ours):  # none of ours given: the caller's text is kept
        assert line.startswith(raw.strip().removeprefix(b"\xef\xbb\xbf")[:-1] + b",")


def test_a_source_with_a_huge_integer_is_written_too() -> None:
    """An integer beyond 64 bits (valid JSON, read by the standard library) in a source that must be
    re-encoded (it holds a field of ours) does not fail the write."""
    src = {"n": 2**70, "decision": "mine"}
    write = _writes()[0]
    op = BulkOp("index", {"_index": "news", "_id": "1"}, src, raw=json.dumps(src).encode(), added=write)
    assert json.loads(op.source_line()) == {**src, **write.fields()}


@pytest.mark.parametrize("body", [b"", b'{"index":{}}\n{"a":1}', b'\n{"index":{}}\n{"a":1}\n',
                                  b'{"index":{"_id":"1","bogus":1}}\n{"a":1}\n', b'{"explode":{}}\n',
                                  b'{"index":{}}\n\n'])
def test_bodies_elasticsearch_would_refuse_are_not_taken_apart(body: bytes) -> None:
    with pytest.raises(BulkParseError):
        parse_bulk(body, "news")


def test_unreadable_source_lines_are_kept_as_received() -> None:
    lines = [b'{"index":{"_id":"1"}}', b'{"a": "caf\xe9"}', b'{"index":{"_id":"2"}}', b'{"a":1,"a":2}',
             b'{"index":{"_id":"3"}}', b'\xef\xbb\xbf{"a": 3}', b'{"index":{"_id":"4"}}']  # dangling: ignored
    parsed = parse_bulk(b"\n".join(lines) + b"\n", "news")
    assert [op.id for op in parsed] == ["1", "2", "3"]
    assert [op.source for op in parsed] == [None, None, {"a": 3}]
    assert [op.source_line() for op in parsed] == [lines[1], lines[3], lines[5]]


@settings(max_examples=200, deadline=None)
@given(st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(st.sampled_from("abc"), kids, max_size=3)), max_leaves=12))
def test_filter_path_include_and_exclude_split_a_document(doc: Any) -> None:
    """Whatever ``a`` keeps, ``-a`` removes, and the two never overlap at the top level."""
    if not isinstance(doc, dict):
        doc = {"a": doc}
    kept, rest = filter_path(doc, "a"), filter_path(doc, "-a")
    assert "a" not in rest and set(kept) <= {"a"}
    assert {k: v for k, v in doc.items() if k != "a"} == rest


def _request(path: str = "/news/_bulk", query: str = "", **headers: str) -> Request:
    raw_path = path.encode("latin-1")
    return Request({"type": "http", "method": "POST", "path": unquote(path), "raw_path": raw_path,
                    "query_string": query.encode(), "root_path": "",
                    "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]})


def test_action_lines_get_the_paths_index_and_keep_their_metadata() -> None:
    body = (b'{"index":{"_id":"1","routing":"r"}}\n{"content":"a"}\n'
            b'{"create":{"_index":"other","_id":"2"}}\n{"content":"b"}\n'
            b'{"update":{"_id":"3","retry_on_conflict":2}}\n{"doc":{"content":"c"}}\n'
            b'{"delete":{"_id":"4"}}\n')
    ops = parse_bulk(body, "news")
    assert [(op.action, op.index, op.id) for op in ops] == \
        [("index", "news", "1"), ("create", "other", "2"), ("update", "news", "3"), ("delete", "news", "4")]
    assert ops[0].meta["routing"] == "r" and ops[2].meta["retry_on_conflict"] == 2
    assert ops[3].source is None and ops[3].raw is None  # a delete has no source line
    assert ops[2].source == {"doc": {"content": "c"}}


@pytest.mark.parametrize("body", [b'{"index":{"_id":"1"}}\n{"a":1}\n',  # no _index, none in the path
                                  b'{"index":{"_index":"n","_id":""}}\n{"a":1}\n',  # empty id
                                  b'{"index":{"_index":"n"},"delete":{}}\n{"a":1}\n',  # two actions
                                  b'{"index":[]}\n{"a":1}\n', b'[]\n', b'{"index":{"_index":"n"}}\n \n'])
def test_action_lines_elasticsearch_would_refuse(body: bytes) -> None:
    with pytest.raises(BulkParseError):
        parse_bulk(body, None)


def test_every_metadata_key_and_op_param_elasticsearch_knows_is_read() -> None:
    assert OP_PARAMS <= META_KEYS  # a single-document write's op params become bulk metadata
    assert not ANSWER_PARAMS & (OP_PARAMS | META_KEYS)
    meta = {k: 1 for k in META_KEYS - {"_index", "_id"}}
    line = json.dumps({"index": {"_index": "n", "_id": "1", **meta}}).encode()
    assert parse_bulk(line + b'\n{"a":1}\n', None)[0].meta == {"_index": "n", "_id": "1", **meta}


def test_read_json_skips_a_bom_and_refuses_duplicate_keys() -> None:
    assert read_json(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}
    with pytest.raises(ValueError):
        read_json(b'{"a": 1, "a": 2}')
    with pytest.raises(ValueError):
        read_json(b'{"a": "\xe9"}')


@pytest.mark.parametrize(("ctype", "ok"), [
    ("application/json", True), ("application/x-ndjson; charset=UTF-8", True),
    ("Application/JSON", True), ("application/vnd.elasticsearch+x-ndjson;compatible-with=8", True),
    ("application/vnd.elasticsearch+json; compatible-with=9", True), ("text/plain", False), ("", False)])
def test_only_json_and_ndjson_bodies_are_read(ctype: str, ok: bool) -> None:
    assert readable(_request(**({"content_type": ctype} if ctype else {}))) is ok


def test_path_segments_are_decoded_one_by_one() -> None:
    assert path_segments(_request("/news/_doc/a%2Fb%20c%C3%A9")) == ["news", "_doc", "a/b cé"]
    assert path_segments(_request("/news/_doc/")) == ["news", "_doc", ""]
    with pytest.raises(UnicodeDecodeError):  # not UTF-8: the route passes it through
        path_segments(_request("/news/_doc/%ff"))


@pytest.mark.parametrize(("headers", "media"), [
    ({}, "application/json"),
    ({"content_type": "application/json"}, "application/json"),
    ({"content_type": "application/vnd.elasticsearch+x-ndjson; compatible-with=8"},
     "application/vnd.elasticsearch+json;compatible-with=8"),
    ({"accept": "application/vnd.elasticsearch+json;compatible-with=9",
      "content_type": "application/vnd.elasticsearch+x-ndjson;compatible-with=8"},
     "application/vnd.elasticsearch+json;compatible-with=9")])
def test_answers_take_the_media_type_the_client_asked_for(headers: dict[str, str], media: str) -> None:
    assert answer_type(_request(**headers)) == media
    resp = es_json({"a": 1}, _request(**headers))
    assert resp.headers["content-type"] == media
    assert resp.headers["x-elastic-product"] == "Elasticsearch"


def test_answers_are_compact_or_pretty_and_filtered_unless_an_error() -> None:
    body = {"took": 3, "errors": False, "items": [{"index": {"_id": "1", "status": 201}}]}
    compact = b'{"took":3,"errors":false,"items":[{"index":{"_id":"1","status":201}}]}'
    assert es_json(body, _request()).body == compact
    pretty = es_json(body, _request(query="pretty")).body
    assert pretty.endswith(b"}\n") and json.loads(pretty) == body and b"\n  " in pretty
    assert es_json(body, _request(query="pretty=false")).body.count(b"\n") == 0
    filtered = es_json(body, _request(query="filter_path=items.*._id"))
    assert json.loads(filtered.body) == {"items": [{"index": {"_id": "1"}}]}
    error = {"error": {"type": "x", "reason": "y"}, "status": 409}
    assert json.loads(es_json(error, _request(query="filter_path=took"), 409).body) == error


@pytest.mark.parametrize(("spec", "out"), [
    ("took", {"took": 3}),
    ("items.*.status", {"items": [{"index": {"status": 201}}, {"delete": {"status": 404}}]}),
    ("items.**.status", {"items": [{"index": {"status": 201}}, {"delete": {"status": 404}}]}),
    ("**._id", {"items": [{"index": {"_id": "1"}}, {"delete": {"_id": "2"}}]}),
    ("it*", {"items": [{"index": {"_id": "1", "status": 201}}, {"delete": {"_id": "2", "status": 404}}]}),
    ("-took", {"errors": False, "items": [{"index": {"_id": "1", "status": 201}},
                                          {"delete": {"_id": "2", "status": 404}}]}),
    ("-items.*.status,-took", {"errors": False,
                               "items": [{"index": {"_id": "1"}}, {"delete": {"_id": "2"}}]}),
    ("errors,items.*.index.status", {"errors": False}),  # arrays are transparent: * is the action already
    ("items.index.status,errors", {"errors": False, "items": [{"index": {"status": 201}}]}),
    ("nothing", {})])
def test_filter_path_selects_as_elasticsearch_does(spec: str, out: dict[str, Any]) -> None:
    """The kinds of spec test_differential.py checks against a node, on a bulk answer's shape."""
    body = {"took": 3, "errors": False,
            "items": [{"index": {"_id": "1", "status": 201}}, {"delete": {"_id": "2", "status": 404}}]}
    assert filter_path(body, spec) == out


def test_errors_the_proxy_answers_itself_have_elasticsearchs_shape() -> None:
    resp = es_error(413, "request_entity_too_large", "too many", {"Retry-After": "1"})
    assert resp.status_code == 413 and resp.headers["x-elastic-product"] == "Elasticsearch"
    assert resp.headers["retry-after"] == "1"
    assert json.loads(resp.body) == {"error": {"root_cause": [{"type": "request_entity_too_large",
                                                               "reason": "too many"}],
                                               "type": "request_entity_too_large", "reason": "too many"},
                                     "status": 413}


def test_items_the_proxy_answers_itself() -> None:
    op = BulkOp("create", {"_index": "news", "_id": "7"}, {"content": "x"})
    item = bulk_item(op, 200, result="noop")
    assert item == {"create": {"_index": "news", "_id": "7", "status": 200, "result": "noop"}}
    assert not has_error(item)
    assert has_error(bulk_item(op, 400, error={"type": "illegal_argument_exception", "reason": "r"}))


def test_a_single_document_error_puts_its_root_cause_first() -> None:
    cause = {"type": "json_parse_exception", "reason": "bad"}
    item_error = {"type": "mapper_parsing_exception", "reason": "failed", "caused_by": cause}
    err = single_error(item_error)
    assert list(err) == ["root_cause", "type", "reason", "caused_by"]
    assert err["root_cause"] == [{"type": "mapper_parsing_exception", "reason": "failed"}]
    given = {"type": "t", "reason": "r", "root_cause": [{"type": "u", "reason": "v"}]}
    assert single_error(given) == {"root_cause": [{"type": "u", "reason": "v"}], "type": "t", "reason": "r"}
    assert "root_cause" not in item_error  # the item's own error is not changed


@pytest.mark.parametrize(("doc_id", "location"), [
    ("1", "/news/_doc/1"), ("a b", "/news/_doc/a+b"), ("a/b", "/news/_doc/a%2Fb"),
    ("x~*y", "/news/_doc/x%7E*y"), ("é", "/news/_doc/%C3%A9"), ("a+b&c", "/news/_doc/a%2Bb%26c")])
def test_location_of_a_created_document_is_encoded_as_elasticsearch_encodes_it(doc_id: str, location: str
                                                                                 ) -> None:
    assert doc_location("news", doc_id) == location


# ------------------------------------------------------------------ reading JSON: orjson where plain
_ODD = ["null", "true", "false", "NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e-400", "-0", "-0.0",
        "01", "1.", ".5", "1e", '"\\ud800"', '"\\udfff"', '"\\ud83d\\ude00"', '"\\u0061"', '"\\x"',
        '"\x01"', '"\\/"', "18446744073709551615", "18446744073709551616", "-9223372036854775809"]
_numbers = st.from_regex(r"-?[0-9]{1,25}(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,4})?", fullmatch=True)
_scalar_texts = st.one_of(st.sampled_from(_ODD), _numbers, st.integers().map(str),
                          st.floats(allow_nan=False, allow_infinity=False).map(repr),
                          st.text(max_size=30).map(json.dumps),
                          st.text(max_size=30).map(lambda t: json.dumps(t, ensure_ascii=False)))
_keys = st.one_of(st.sampled_from(['"a"', '"b"', '"\\u0061"', '""', '"content"']),
                  st.text(max_size=6).map(lambda t: json.dumps(t, ensure_ascii=False)))
_json_texts = st.recursive(
    _scalar_texts,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.lists(st.tuples(_keys, inner), max_size=5).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}")),
    max_leaves=24)
#: a text, with some white space around it, sometimes a byte that is not UTF-8 or a trailing token
_raw_lines = st.tuples(st.sampled_from(["", " ", "\t\n", "\ufeff"]), _json_texts,
                       st.sampled_from(["", " ", "\r", " x", ",", "\xff"])).map(
    lambda t: (t[0] + t[1] + t[2]).encode("utf-8").replace(b"\xc3\xbf", b"\xff"))


def _read(read: Any, raw: bytes) -> tuple[str, str]:
    try:
        return "value", repr(read(raw))  # repr tells 1 from 1.0 and -0.0 from 0.0, and keeps key order
    except ValueError:
        return "refused", ""


@settings(max_examples=1500, deadline=None)
@given(_raw_lines)
def test_a_json_line_reads_as_the_reference_reads_it(raw: bytes) -> None:
    assert _read(read_json, raw) == _read(read_json_reference, raw)


def _members(keys: list[str]) -> str:
    return "{" + ",".join(f'"{k}": {n}' for n, k in enumerate(keys)) + "}"


_MANY = [f"k{n}" for n in range(20)]  # more keys than the scan compares one by one (a set takes over)


@pytest.mark.parametrize("text", [_members(_MANY), _members([*_MANY, "k3"]), _members([*_MANY[:16], "k0"]),
                                  _members([*_MANY, "k19"])])
def test_an_object_of_many_keys_is_checked_for_a_key_given_twice(text: str) -> None:
    assert _read(read_json, text.encode()) == _read(read_json_reference, text.encode())


@pytest.mark.parametrize("text", [*_ODD, '{"a": 1, "a": 2}', '{"a": 1, "\\u0061": 2}', "[" * 300 + "]" * 300,
                                  '{"t": "\xed\xa0\x80"}', '"\xe9"', "12345678901234567.5"])
def test_the_texts_orjson_reads_otherwise_read_as_the_reference_reads_them(text: str) -> None:
    raw = text.encode("utf-8", "surrogatepass") if "\xed" not in text else text.encode("latin-1")
    assert _read(read_json, raw) == _read(read_json_reference, raw)


def test_a_news_source_line_is_read_by_orjson() -> None:
    """The fast path is taken for what the proxy is sent most (else the tests above could not fail)."""
    plain = _plain_json()
    if plain is None:
        pytest.skip("no compiled core (not built, or FPI_NATIVE=0): every line is read the reference's way")
    line = json.dumps({"id": 7, "title": "标题 \"引\"", "content": "正文\n第二段。" * 300, "url": None,
                       "tags": ["a", "b"], "score": 0.25, "n": -12}, ensure_ascii=False).encode()
    assert plain(line) and plain(b'{"index":{"_index":"news","_id":"x1"}}')
    assert not plain(b'{"index":{"_index":"news","_index":"other"}}')
    assert read_json(line) == json.loads(line)
