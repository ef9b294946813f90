"""The fields an indexed document carries beside its text, as the codec writes them."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.documents import Document
from fingerprint_indexer.es import codec
from fingerprint_indexer.es.codec import (
    _source_json,
    block_clauses,
    bulk_lines,
    candidates_clause,
    candidates_json,
    decision_fields,
    decision_source,
    index_lines,
    index_lines_many,
    searches_json,
    terms_text,
)
from fingerprint_indexer.es.mapping import ES_LAYOUT
from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, FingerprintResult
from fingerprint_indexer.fingerprint.sketch import band_keys
from fingerprint_indexer.verification import Evidence

TEXT = ("本报讯 市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温，最低气温可能跌破零度。"
        "气象专家提醒市民注意防寒保暖，出行注意交通安全。"
        "The Met Office said on Friday that London may see snow.")


def test_terms_field_is_the_terms_joined_whatever_holds_them() -> None:
    """The compiled pass's terms (joined without a Python pair each) and a plain list of pairs give the same
    ``terms`` field, cut at the limit."""
    res = Fingerprinter().fingerprint_document(Document(id="1", title="降温", content=TEXT))
    plain = [(t, w) for t, w in res.top_terms]
    assert len(plain) > 5
    as_list = replace(res, top_terms=plain)
    for limit in (0, 1, 5, len(plain), len(plain) + 10):
        want = " ".join(t for t, _ in plain[:limit])
        assert terms_text(res, limit) == want and terms_text(as_list, limit) == want


@functools.cache
def fingerprinted() -> FingerprintResult:
    return Fingerprinter().fingerprint_document(Document(id="1", title="", content=TEXT))


TERM = st.text(st.characters(codec="utf-8"), min_size=1, max_size=6)  # control characters, quotes, any plane


#: A decision's fields, as every writer passes them.
DECIDED = {"cluster_id": "c1", "duplicate_of": None, "distance": None, "decision": "new", "text_length": 1,
           "replaces": None, "decided_at": 1_700_000_000_000}  # fmt: skip


def written_as_reference(body: dict[str, Any], res: FingerprintResult, layout: BlockLayout = ES_LAYOUT,
                         **decided: Any) -> None:  # fmt: skip
    """The document as the compiled writer gives it is the merged dict as orjson writes it (the
    reference), byte for byte, and the compiled writer is the one that wrote it."""
    decided = {**DECIDED, **decided}
    assert hasattr(res.top_terms, "joined") and not res.marks  # what the compiled writer takes
    assert _source_json(layout) is not None
    want = orjson.dumps({**body, **decision_fields(res, layout, **decided)})
    assert decision_source(body, res, layout, **decided) == want


@settings(max_examples=200, deadline=None)
@given(terms=st.lists(TERM, max_size=12))
def test_terms_in_json_text_are_the_terms_field_serialised(terms):
    """The compiled terms in a written document are the ``terms`` field as orjson writes it: the same
    escapes (quotes, backslashes, control characters by name or as ``\\u00xx``), every other character as
    it is."""
    compiled_core()
    from fingerprint_indexer.fingerprint import _core

    spans, at = b"", 0
    for t in terms:
        end = at + len(t.encode())
        spans += at.to_bytes(4, "little") + end.to_bytes(4, "little")
        at = end
    packed = _core.terms_from_packed("".join(terms), spans, b"\0" * 8 * len(terms))
    res = replace(fingerprinted(), top_terms=packed)
    assert terms_text(res) == " ".join(terms)
    written_as_reference({"title": "t"}, res)


LAYOUTS = st.sampled_from([ES_LAYOUT, BlockLayout.even(4), BlockLayout((8, 24, 16, 16), per_key=2),
                           BlockLayout((64,))])  # fmt: skip
FPS = st.lists(st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 2**63, 2**64 - 1])), min_size=1,
               max_size=40)  # fmt: skip


def compiled_core() -> None:
    if not native.enabled():
        pytest.skip("the compiled core is not built (the reference writes the JSON text itself)")


@settings(max_examples=150, deadline=None)
@given(fps=FPS, layout=LAYOUTS, with_blocks=st.booleans())
def test_key_fields_in_json_text_equal_the_fields_serialised(fps, layout, with_blocks):
    """The compiled writer's key fields are the reference dict as orjson writes it, byte for byte: signed
    longs, the hex form, one key as a string and more as an array in first-seen order; none for a
    degenerate document."""
    compiled_core()
    res = replace(fingerprinted(), fingerprint=fps[0], chunks=tuple(fps[1:]), degenerate=not with_blocks)
    written_as_reference({}, res, layout)


BAND_KEYS = st.lists(st.text(max_size=20), max_size=8)


@settings(max_examples=150, deadline=None)
@given(fps=FPS, layout=LAYOUTS, bands=BAND_KEYS, head=st.binary(max_size=8), tail=st.binary(max_size=8))
def test_candidates_as_json_text_equal_the_query_serialised(fps, layout, bands, head, tail):
    """A candidate search: every key's distinct keys sorted, always as an array, the band keys (any text,
    escaped as orjson escapes it) last when there are any; between the given head and tail."""
    compiled_core()
    want = head + orjson.dumps(candidates_clause(layout, fps, bands)) + tail
    assert candidates_json(layout, fps, bands, head, tail) == want
    if not bands:
        assert orjson.loads(candidates_json(layout, fps))["bool"]["filter"][0]["bool"]["should"] == \
            block_clauses(layout, fps)  # fmt: skip


def test_compiled_writers_refuse_what_they_cannot_write() -> None:
    compiled_core()
    res = fingerprinted()
    source = _source_json(ES_LAYOUT)
    args = (res.sketch, b"[]", [], "d", "k", res.top_terms, 8, " ", "v", "p", "c", None, None, "new", False,
            1, None, 1)  # fmt: skip
    with pytest.raises(ValueError, match="at least one fingerprint"):
        source.source(b"{", 1, [], *args)
    with pytest.raises(ValueError, match="end beyond its text"):
        source.source(b"{}", 3, [1], *args)
    with pytest.raises(ValueError, match="at least one fingerprint"):
        candidates_json(ES_LAYOUT, [])
    with pytest.raises(ValueError, match="letters, digits and _"):
        native.es_key_json(ES_LAYOUT.key_blocks, ES_LAYOUT.key_digits, ['block"0'] * ES_LAYOUT.n_keys,
                           ("fingerprint", "fingerprint_hex", "fingerprints"))  # fmt: skip


DOCS = [Document(id="a", title="降温", content=TEXT),
        Document(id="b", title="", content="短"),  # degenerate: no block keys, no bands
        Document(id="c", title="quote \" and \\ and \n", content=TEXT + " 第二版" * 30)]  # fmt: skip


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.id)
def test_a_document_as_json_text_is_its_fields_serialised(doc: Document) -> None:
    """What ``es index`` sends for a document is its body then the decision fields, exactly as the merged
    dict serialised; a body field of ours is written once, ours winning, as the dict merge does."""
    res = Fingerprinter().fingerprint_document(doc)
    decided = {"cluster_id": "c1", "duplicate_of": "x", "distance": 2, "decision": "near_duplicate",
               "text_length": 7, "replaces": None, "decided_at": 1_700_000_000_000}  # fmt: skip
    fields = decision_fields(res, ES_LAYOUT, **decided)
    for body in ({"title": doc.title, "content": doc.content, "url": "https://x/ä"}, {},
                 {"title": doc.title, "fingerprint": 1, "decision": "mine", "block_3": "f"}):  # fmt: skip
        got = decision_source(body, res, ES_LAYOUT, **decided)
        assert got == orjson.dumps({**body, **fields})
        assert len(orjson.loads(got)) == len({**body, **fields})  # no member twice


OPTIONAL_TEXT = st.one_of(st.none(), TERM)


@functools.cache
def _fingerprinted_doc(which: int) -> FingerprintResult:
    return Fingerprinter().fingerprint_document(DOCS[which])


@settings(max_examples=300, deadline=None)
@given(which=st.sampled_from(range(len(DOCS))), facts=st.one_of(st.none(), st.lists(TERM, max_size=4)),
       frames=st.one_of(st.none(), st.lists(st.integers(0, 2**64 - 1), max_size=5)),
       fingerprints=st.one_of(st.none(), st.lists(st.integers(-(2**63), 2**64 - 1), min_size=1, max_size=6)),
       sketch=st.sampled_from(["own", "none"]), cluster_id=TERM, duplicate_of=OPTIONAL_TEXT,
       distance=st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), decision=TERM,
       text_length=st.integers(0, 2**62), replaces=OPTIONAL_TEXT, decided_at=st.integers(0, 2**62))
def test_the_fields_after_the_keys_as_json_text_are_them_serialised(
    which, facts, frames, fingerprints, sketch, cluster_id, duplicate_of, distance, decision, text_length,
    replaces, decided_at,
):
    """The compiled writer of the key, evidence and decision fields gives what orjson writes of them: ids
    and facts with quotes, control characters and any plane; frames with the top bit set (written signed);
    fingerprints given signed (read as unsigned, as the reference masks them); degenerate documents (no
    bands) and documents without a sketch."""
    compiled_core()
    res = _fingerprinted_doc(which)
    if fingerprints is not None:
        res = replace(res, fingerprint=fingerprints[0], chunks=tuple(fingerprints[1:]))
    if facts is not None:
        res = replace(res, facts=tuple(facts))
    if frames is not None:
        res = replace(res, frames=tuple(frames))
    if sketch == "none":
        res = replace(res, sketch=b"")
    decided = {"cluster_id": cluster_id, "duplicate_of": duplicate_of, "distance": distance,
               "decision": decision, "text_length": text_length, "replaces": replaces,
               "decided_at": decided_at}  # fmt: skip
    written_as_reference({"title": DOCS[which].title}, res, **decided)


#: Texts of a few characters, each of them plain, escaped or several bytes long in UTF-8.
ESCAPES_ANYWHERE = st.text(st.sampled_from(["a", "Z", " ", "中", "é", "😀", '"', "\\", "\n", "\x00", "\x1f",
                                            "\x7f"]), max_size=64)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(cluster_id=ESCAPES_ANYWHERE, duplicate_of=ESCAPES_ANYWHERE)
def test_long_strings_with_escapes_anywhere_are_written_as_orjson_writes_them(cluster_id, duplicate_of):
    """The compiled JSON strings copy eight bytes at a time where nothing needs escaping: a character to
    escape at any place of a long string, first, last or beside several-byte characters, is still
    escaped as orjson escapes it."""
    compiled_core()
    res = _fingerprinted_doc(0)
    decided = {"cluster_id": cluster_id, "duplicate_of": duplicate_of, "distance": None, "decision": "new",
               "text_length": 1, "replaces": None, "decided_at": 1}  # fmt: skip
    written_as_reference({"content": cluster_id + duplicate_of}, res, **decided)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "reference"])
def test_index_lines_are_the_bulk_helpers_lines_of_the_document(compiled: bool) -> None:
    """An index action written at once is what the bulk helper's expansion of the same action gives: the
    action line, the document, each on its line; by the compiled writer and by the reference (terms held
    in a plain list)."""
    res = fingerprinted() if compiled else replace(fingerprinted(), top_terms=list(fingerprinted().top_terms))
    body = {"title": "t", "content": TEXT}
    source = decision_source(body, res, ES_LAYOUT, **DECIDED)
    want = bulk_lines({"_op_type": "index", "_index": "news", "_id": 'a"b', "_source": source})
    assert index_lines("news", 'a"b', body, res, ES_LAYOUT, **DECIDED) == want


def test_a_batch_of_index_lines_is_each_documents_index_lines(monkeypatch) -> None:
    """The batch writer gives each document's id and :func:`index_lines` (the reference), whichever path a
    document takes: the compiled writer; terms in a plain list, a body holding a field of ours, copy
    marks (the reference); an empty body; ids and values that need escapes."""
    monkeypatch.setattr(codec, "now_millis", lambda: 1_700_000_000_123)  # decided now: the same now
    results = [_fingerprinted_doc(n) for n in range(len(DOCS))]
    results += [replace(results[0], top_terms=list(results[0].top_terms)),
                replace(results[2], marks=bytes(range(21)) * 2)]  # two copy marks
    bodies = [{"title": "降温", "content": TEXT, "url": "https://x/ä"}, {},
              {"content": TEXT, "decision": "mine"}, {"title": 'q"\\'}, {"content": "x"}]
    pairs = [(body, res) for body in bodies for res in results]
    docs = [(f'id-{n}"\\é', body, res, f"c{n}", None if n % 2 else 'd"1', None if n % 3 else n, "new", n * 7,
             None if n % 4 else "r") for n, (body, res) in enumerate(pairs)]
    want = [(d[0], index_lines("news-1", d[0], d[1], d[2], ES_LAYOUT, cluster_id=d[3], duplicate_of=d[4],
                               distance=d[5], decision=d[6], text_length=d[7], replaces=d[8]))
            for d in docs]  # fmt: skip
    assert index_lines_many("news-1", ES_LAYOUT, docs) == want
    assert index_lines_many("news-1", ES_LAYOUT, []) == []


SKETCHES = st.one_of(st.binary(min_size=128, max_size=160), st.just(b""), st.just(b"\xff" * 128))


@settings(max_examples=150, deadline=None)
@given(queries=st.lists(st.tuples(FPS, SKETCHES), min_size=1, max_size=5), layout=LAYOUTS,
       hot_share=st.integers(0, 3), signed=st.booleans(), head=st.binary(max_size=8),
       tail=st.binary(max_size=8))  # fmt: skip
def test_a_multi_search_is_each_query_candidates_on_its_line(queries, layout, hot_share, signed, head, tail):
    """Every query's candidate search, with the band keys of its sketch less the hot ones, after the
    header line and between head and tail, each on its line: by the compiled writer, and by the
    reference for fingerprints held signed (as a hit's doc values hold them)."""
    evidence = [Evidence([f - 2**64 if signed and f >= 2**63 else f for f in fps], sketch)
                for fps, sketch in queries]  # fmt: skip
    keys = [key for ev in evidence for key in band_keys(ev.sketch)]
    hot = set(keys[::hot_share + 1]) if hot_share else set()
    want = b"".join(b"".join((b"H\n", candidates_json(layout, [f % 2**64 for f in ev.fingerprints],
                                                      [b for b in band_keys(ev.sketch) if b not in hot],
                                                      head, tail), b"\n")) for ev in evidence)  # fmt: skip
    assert searches_json(layout, evidence, hot, b"H\n", head, tail) == want
