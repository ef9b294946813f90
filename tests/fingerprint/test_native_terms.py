"""The compiled ``top_terms`` (``Terms``: items made when they are read) behaves as the list of pairs the
reference gives: indexing, slicing, iteration, equality, copying and pickling."""

from __future__ import annotations

import copy
import pickle
from dataclasses import asdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter

pytestmark = pytest.mark.skipif(not native.FACTS, reason="the compiled pass is not built")

TEXT = ("本报讯 市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温，最低气温可能跌破零度。"
        "气象专家提醒市民注意防寒保暖，出行注意交通安全。"
        "The Met Office said on Friday that London may see snow.")
_FPR: list[Fingerprinter] = []


def _terms() -> tuple[object, list[tuple[str, float]]]:
    if not _FPR:
        _FPR.append(Fingerprinter())
    got = _FPR[0].fingerprint_document(Document(id="1", title="降温", content=TEXT)).top_terms
    assert type(got).__name__ == "Terms"
    return got, [(t, w) for t, w in got]


@given(st.integers(0, 60), st.sampled_from([" ", "", ", "]))
@settings(max_examples=100, deadline=None)
def test_joined_is_the_lists_join(limit: int, sep: str) -> None:
    terms, plain = _terms()
    assert terms.joined(limit, sep) == sep.join(t for t, _ in plain[:limit])  # type: ignore[attr-defined]


@given(st.one_of(st.none(), st.integers(-40, 40)), st.one_of(st.none(), st.integers(-40, 40)),
       st.one_of(st.none(), st.integers(-5, 5).filter(bool)))
@settings(max_examples=200, deadline=None)
def test_slices_are_the_lists_slices(start: int | None, stop: int | None, step: int | None) -> None:
    terms, plain = _terms()
    assert terms[start:stop:step] == plain[start:stop:step]  # type: ignore[index]


@given(st.integers(-60, 60))
@settings(max_examples=100, deadline=None)
def test_items_are_the_lists_items(i: int) -> None:
    terms, plain = _terms()
    if -len(plain) <= i < len(plain):
        assert terms[i] == plain[i]  # type: ignore[index]
    else:
        with pytest.raises(IndexError):
            terms[i]  # type: ignore[index]


def test_equal_copied_and_pickled_as_the_list() -> None:
    terms, plain = _terms()
    assert len(terms) == len(plain) > 10  # type: ignore[arg-type]
    assert terms == plain and plain == terms and terms == terms
    assert terms != plain[:-1] and terms != plain[::-1] and terms != "x"
    unpickled = pickle.loads(pickle.dumps(terms))  # packed: a result crossing processes stays compact
    assert unpickled == plain and type(unpickled) is type(terms)
    assert unpickled.joined(5, " ") == terms.joined(5, " ")  # type: ignore[attr-defined]
    assert copy.deepcopy(terms) == plain and type(copy.deepcopy(terms)) is list
    assert copy.copy(terms) == plain and type(copy.copy(terms)) is list
    res = _FPR[0].fingerprint_document(Document(id="1", title="降温", content=TEXT))
    assert asdict(res)["top_terms"] == plain
    assert asdict(Fingerprinter(reference=True).fingerprint_document(Document(id="1", title="降温",
                                                                                content=TEXT))) == asdict(res)


def test_packed_terms_out_of_their_text_are_refused() -> None:
    """A damaged pickle (spans past the text, or inside a character) is a ValueError, not a bad slice."""
    make, (text, spans, weights) = _terms()[0].__reduce__()  # type: ignore[attr-defined]
    assert make(text, spans, weights) == _terms()[1]
    inside = (1).to_bytes(4, "little") + (2).to_bytes(4, "little") + spans[8:]  # within "中"'s bytes
    for bad in ((text[:1], spans, weights), (text, spans[:-1], weights), (text, spans, weights[:-8]),
                ("中" + text[1:], inside, weights)):
        with pytest.raises(ValueError, match="packed terms"):
            make(*bad)


@pytest.mark.parametrize("sep", [" ", "", ", "])
def test_terms_packed_any_way_join_as_the_list(sep: str) -> None:
    """The pass packs its terms one space apart, so the first ones joined by a space are a slice of its
    text; terms laid out otherwise (an older pickle: no space between them, or a gap) join one by one."""
    make = _terms()[0].__reduce__()[0]  # type: ignore[attr-defined]

    def packed(text: str, spans: list[tuple[int, int]]) -> object:
        raw = b"".join(a.to_bytes(4, "little") + b.to_bytes(4, "little") for a, b in spans)
        return make(text, raw, bytes(8 * len(spans)))  # weights 0.0

    for text, spans, words in (("甲乙丙", [(0, 3), (3, 6), (6, 9)], ["甲", "乙", "丙"]),
                               ("甲 乙  丙", [(0, 3), (4, 7), (9, 12)], ["甲", "乙", "丙"]),
                               ("x甲 乙", [(1, 4), (5, 8)], ["甲", "乙"]),
                               ("甲 乙", [(0, 3), (4, 7)], ["甲", "乙"])):  # fmt: skip
        terms = packed(text, spans)
        for limit in range(len(words) + 2):
            assert terms.joined(limit, sep) == sep.join(words[:limit])  # type: ignore[attr-defined]
