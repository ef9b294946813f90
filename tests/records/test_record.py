"""DocRecord's binary store form: any record round-trips; damage is a ValueError; JSON records still read."""

from __future__ import annotations

import struct
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.records.record import DocRecord

_core = native._core

U64 = st.integers(0, 2**64 - 1)
TEXT = st.text(max_size=40)
HEX = st.binary(max_size=16).map(bytes.hex)  # digests as the fingerprinter writes them
STORE_VERSION = "simhash64-tfidf/5;topall"


@st.composite
def records(draw: st.DrawFn) -> DocRecord:
    doc_id = draw(st.text(min_size=1, max_size=30))
    return DocRecord(
        id=doc_id, fingerprint=draw(U64), content_digest=draw(HEX | TEXT), keyword_digest=draw(HEX | TEXT),
        cluster_id=draw(st.sampled_from([doc_id, doc_id + "~2"]) | TEXT),
        decision=draw(st.sampled_from(["new", "exact_duplicate", "near_duplicate"])),
        duplicate_of=draw(st.none() | TEXT), distance=draw(st.none() | st.integers(0, 64)),
        degenerate=draw(st.booleans()), length=draw(st.integers(0, 2**40)),
        published_at=draw(st.none() | TEXT), version=draw(st.sampled_from([STORE_VERSION, "other/1"])),
        time=draw(st.floats(allow_nan=False, allow_infinity=False)),
        chunks=draw(st.lists(U64, max_size=33)), sketch=draw(st.binary(max_size=256)).hex(),
        facts=draw(st.lists(TEXT, max_size=70)), frames=draw(st.lists(U64, max_size=70)),
        replaces=draw(st.none() | TEXT))


@settings(max_examples=300, deadline=None)
@given(rec=records(), known=st.booleans())
def test_binary_form_round_trips(rec: DocRecord, known: bool) -> None:
    version = STORE_VERSION if known else None
    raw = rec.to_bytes(version)
    assert DocRecord.from_bytes(rec.id, raw, version) == rec
    assert DocRecord.from_bytes(rec.id, rec.to_json(), version) == rec  # records of earlier stores
    hexes = [d for d in (rec.content_digest, rec.keyword_digest) if set(d) <= set("0123456789abcdef")]
    if len(hexes) == 2 and all(len(d) % 2 == 0 for d in hexes):  # kept as their bytes: half the length
        as_text = replace(rec, content_digest="x" + rec.content_digest).to_bytes(version)
        assert len(as_text) == len(raw) + 1 + (len(rec.content_digest) + len(rec.keyword_digest)) // 2


@settings(max_examples=200, deadline=None)
@given(rec=records(), cut=st.integers(1, 40))
def test_a_truncated_record_is_a_value_error(rec: DocRecord, cut: int) -> None:
    raw = rec.to_bytes(STORE_VERSION)
    with pytest.raises(ValueError):
        DocRecord.from_bytes(rec.id, raw[: max(len(raw) - cut, 1)], STORE_VERSION)
    with pytest.raises(ValueError):
        DocRecord.from_bytes(rec.id, raw + b"x", STORE_VERSION)


@settings(max_examples=200, deadline=None)
@given(cid=st.text(min_size=1, max_size=30), centre=U64, founder=st.none() | st.text(min_size=1, max_size=30),
       size=st.integers(1, 2**32 - 1))
def test_cluster_records_round_trip_and_json_still_reads(cid: str, centre: int, founder: str | None,
                                                         size: int) -> None:  # fmt: skip
    from fingerprint_indexer.records.record import Cluster

    c = Cluster(cid, centre, founder or cid, size)
    raw = c.to_bytes()
    assert Cluster.from_bytes(cid, raw) == c
    assert Cluster.from_bytes(cid, c.to_json()) == c  # cluster records of earlier stores
    assert len(raw) == 13 + (0 if founder in (None, cid) else len(founder.encode()))
    with pytest.raises(ValueError):
        Cluster.from_bytes(cid, raw[:-1] if founder in (None, cid) else raw[:5])


@pytest.mark.skipif(not native.AVAILABLE, reason="the compiled core is not built")
@settings(max_examples=400, deadline=None)
@given(rec=records(), known=st.booleans(), odd=st.sampled_from(
    [{}, {"sketch": "AB0f"}, {"sketch": "ab cd"}, {"sketch": "abc"}, {"content_digest": "ABCD"},
     {"distance": 300}, {"distance": -1}, {"length": 2**63}, {"fingerprint": -1}, {"time": 3},
     {"chunks": (1, 2)}, {"degenerate": 1}, {"facts": ["x" * 70_000]}]))
def test_compiled_encoding_equals_the_reference(rec: DocRecord, known: bool, odd: dict[str, Any]) -> None:
    """The compiled encoder gives the reference's bytes, and leaves to the reference what it does not
    take (spaces in a sketch's hex, numbers out of range, other types); the reference then encodes it or
    raises its own error."""
    rec = replace(rec, **odd)
    version = STORE_VERSION if known else None
    try:
        want: bytes | type[Exception] = rec.to_bytes_reference(version)
    except (struct.error, ValueError, OverflowError) as exc:
        want = type(exc)
    got = _core.encode_record(rec, version)
    assert got is not None or odd, "a plain record is encoded by the compiled core"
    if got is not None:
        assert got == want
        # given the sketch's bytes (a record made from a fingerprint), the same bytes without its hex
        assert _core.encode_record(rec, version, bytes.fromhex(rec.sketch)) == want
    if isinstance(want, bytes):
        assert rec.to_bytes(version) == want
    else:
        assert got is None
        with pytest.raises(want):
            rec.to_bytes(version)


@pytest.mark.skipif(not native.AVAILABLE, reason="the compiled core is not built")
@settings(max_examples=400, deadline=None)
@given(rec=records(), known=st.booleans(), read_known=st.booleans(),
       damage=st.sampled_from(["", "cut", "extra", "form", "utf8"]), at=st.integers(0, 10**6))
def test_compiled_decoding_equals_the_reference(rec: DocRecord, known: bool, read_known: bool, damage: str,
                                                at: int) -> None:  # fmt: skip
    """The compiled reader gives the reference's record, and leaves to the reference every record it
    would refuse (cut short, trailing bytes, of another form, text that is not UTF-8, the store's
    version read without it); the reference then raises its own error."""
    raw = rec.to_bytes(STORE_VERSION if known else None)
    if damage == "cut":
        raw = raw[: at % len(raw)]
    elif damage == "extra":
        raw += b"x"
    elif damage == "form":
        raw = b"\x02" + raw[1:]
    elif damage == "utf8":
        raw = raw[:-1] + b"\xff" if raw[-1:] != b"\xff" else raw
    version = STORE_VERSION if read_known else None
    try:
        want: DocRecord | type[Exception] = DocRecord.from_bytes_reference(rec.id, raw, version)
    except ValueError as exc:
        want = type(exc)
    got = _core.decode_record(raw, version)
    if isinstance(want, DocRecord):
        assert got is not None or raw[:1] == b"{", "a binary record is read by the compiled core"
        assert DocRecord.from_bytes(rec.id, raw, version) == want
    else:
        assert got is None
        with pytest.raises(ValueError):
            DocRecord.from_bytes(rec.id, raw, version)
