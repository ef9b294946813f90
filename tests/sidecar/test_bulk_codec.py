"""Invariants of how the proxy takes a bulk body apart and puts it together again (pure, no server)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.sidecar.bulk_codec import BulkParseError, filter_path, parse_bulk
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


@settings(max_examples=200, deadline=None)
@given(sources, st.dictionaries(st.sampled_from(["fingerprint", "decision", "block_0"]), scalars,
                                min_size=1))
def test_added_fields_are_spliced_into_the_callers_object(src: dict[str, Any], added: dict[str, Any]) -> None:
    raw = json.dumps(src, ensure_ascii=False, separators=(",", ": ")).encode()
    op = BulkOp("index", {"_index": "news", "_id": "1"}, src, raw=raw, added=added)
    assert json.loads(op.source_line()) == {**src, **added}
    if not src.keys() & added.keys():
        assert op.source_line().startswith(raw.rstrip()[:-1])


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
