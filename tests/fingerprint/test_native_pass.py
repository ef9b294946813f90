"""The compiled pass equals its Python reference: piece by piece on generated text, and whole results on
documents (fingerprint/native.py; scripts/check_native.py checks every document of every corpus)."""

from __future__ import annotations

import itertools
from dataclasses import asdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.corpus import DATA_DIR, iter_records

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.chunks import sentence_spans
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, fingerprint_many
from fingerprint_indexer.fingerprint.sketch import sketch, to_bytes
from fingerprint_indexer.text.boilerplate import strip_boilerplate
from fingerprint_indexer.text.clean import normalize
from fingerprint_indexer.text.weights import jieba_idf

pytestmark = pytest.mark.skipif(not native.AVAILABLE, reason="the compiled pass was not built (no Rust "
                                "toolchain at install time): the Python reference runs")


# characters news text is made of, and the ones where Python's and Rust's Unicode rules could part
_PIECES = [
    "新华社", "北京", "国务院", "总理", "会见", "人民大会堂", "第三十三次", "会议", "一百二十七", "两国",
    "（二）", "经济增长", "3.5%", "1,796,121", "2024年9月29日",
    "。", "！", "？", "；", "…", "，", "、", "“", "”", "「", "」",
    "The", "U.S.", "economy", "grew", "said", "march 5", "shr 29 cts vs 26 cts", "by laura roberts",
    "责任编辑:王", "来源:新华网", "copyright 2024", "news | sport | business | tech", "function(){var a=1;}",
    "http://x.cn/a.js", "div { color: red; }", " ", "  ", "\n", "\n\n", "\t", "\u3000", "\xa0", "\r\n", "\r",
    "ＡＢＣ１２３", "ﬁ", "Σ", "ΟΔΟΣ", "İ", "ß", "\u0301", "①", "\x1c", "\u2028", "٣", "x", ".", ":", " -",
    "\u209d", "\ua7f1",  # Unicode 17 letters: unassigned in Python 3.11's tables, Latin letters in NFKC here
]
texts = st.lists(st.sampled_from(_PIECES), max_size=60).map("".join)
raw = st.one_of(texts, st.text(max_size=200))


@pytest.fixture(scope="module")
def compiled() -> native.NativePass:
    got = Fingerprinter()._native_pass()
    assert got is not None
    return got


@settings(max_examples=300, deadline=None)
@given(text=raw, lower=st.booleans())
def test_normalize_equals_the_reference(text: str, lower: bool) -> None:
    got = native.NativePass.normalize(text, lower)
    assert got is None or got == normalize(text, lower)


def test_characters_unknown_to_pythons_tables_are_left_to_the_reference() -> None:
    """Characters Unicode assigned after Python's tables (Unicode 17's subscript letters, newer than the
    regex crate's age table too) fold to Latin letters in the compiled normalisation: it declines."""
    for c in ("\u209d", "\u209e", "\u209f", "\ua7f1", "\u0378"):
        for lower in (True, False):
            got = native.NativePass.normalize(f"a{c}b", lower)
            assert got is None or got == normalize(f"a{c}b", lower), hex(ord(c))


@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_strip_boilerplate_equals_the_reference(text: str) -> None:
    _strips_as_the_reference(text)


def _strips_as_the_reference(text: str) -> None:
    """The compiled stripper gives the reference's text, with the cased text and without, or declines."""
    cased = normalize(text, lower=False)
    lower = cased.lower()
    for c in (cased, ""):
        got = native.strip_boilerplate(lower, c)
        assert got is None or got == strip_boilerplate(lower, c)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_sentences_and_sketch_equal_the_reference(compiled: native.NativePass, text: str) -> None:
    flat = normalize(text).replace("\n", " ")
    assert compiled.sentence_spans(flat) == sentence_spans(flat)
    assert native.sketch_bytes(flat, 64) == to_bytes(sketch(flat, 64))


def test_the_tables_are_the_reference_tables(compiled: native.NativePass) -> None:
    table = jieba_idf()
    assert compiled.idf_summary() == (len(table.idf), table.default)


def test_the_segmenter_is_rjiebas(compiled: native.NativePass) -> None:
    import rjieba

    for text in ("新华社北京11月26日电 国务院总理今天在人民大会堂会见了外国客人。", "柴燃交替动力（一）", ""):
        assert compiled.cut(text) == rjieba.cut(text)


@settings(max_examples=150, deadline=None)
@given(body=texts, title=st.sampled_from(["", "新华社：第三十三次会议", "RENT-A-CENTER <RENT> sets split"]),
       day=st.sampled_from([None, "2024-09-29", "1-APR-1987 11:19:44.38"]))
def test_whole_fingerprints_equal_the_reference(body: str, title: str, day: str | None) -> None:
    doc = Document(id="d", content=body, title=title or None, published_at=day)
    assert asdict(_COMPILED.fingerprint_document(doc)) == asdict(_REFERENCE.fingerprint_document(doc))


_COMPILED, _REFERENCE = Fingerprinter(), Fingerprinter(reference=True)


def test_threads_give_the_fingerprints_in_input_order() -> None:
    docs = [Document(id=str(i), content=f"第{i}次会议在北京举行。经济增长了{i}%。" * (1 + i % 5))
            for i in range(60)]
    one = list(fingerprint_many(docs, fingerprinter=_COMPILED))
    assert list(fingerprint_many(docs, fingerprinter=_COMPILED, threads=2, chunksize=4)) == one
    assert [r.id for r in one] == [d.id for d in docs]


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["zh_news", "en_reuters", "zh_xwlb", "en_bbc", "zh_toutiao_titles"])
def test_real_documents_fingerprint_alike(name: str) -> None:
    rows = itertools.islice(iter_records(DATA_DIR / f"{name}.jsonl.gz"), 0, 3000, 10)
    for row in rows:
        doc = Document.from_mapping(row)
        assert _COMPILED.fingerprint_document(doc) == _REFERENCE.fingerprint_document(doc), doc.id


def test_plain_news_takes_the_compiled_path(compiled: native.NativePass) -> None:
    """The equality tests above accept None (the reference ran); ordinary news must not need it."""
    text = "新华社北京11月26日电 国务院总理今天会见了来访的客人。\nthe u.s. economy grew 3.5% in 2024."
    assert native.NativePass.normalize(text) is not None
    assert native.strip_boilerplate(text, text) is not None
    got = compiled.fold(text, text)
    assert got is not None and got.fingerprint and got.sketch
    # a combining mark in prose is read alike; in a line whose code rules read words (\w, \b) it sends
    # the text to the reference, which gives the same answer
    assert native.strip_boilerplate("cafe\u0301 au lait", "") == strip_boilerplate("cafe\u0301 au lait", "")
    assert native.strip_boilerplate("var cafe\u0301 = 1;", "") is None


# combining marks and joiners (emoji variation selectors, ZWJ sequences, accents) and letter numbers (〇,
# ᛯ) next to what the stripper's word rules read: code words, file names, words a wrapped line runs on
# with, CSS braces
_MARKED = [
    "\ufe0f", "\u200d", "\u200c", "\u0301", "\u0903", "❤\ufe0f", "👨\u200d👩\u200d👧", "☀\ufe0f", "e\u0301",
    "var", " var x", "=1;", ".js", ".css", "a.png", "if (a) {", "for x {", "{", "}", "div { color: red; }",
    "p {a: b;}", " the", " said", " a", " of", "功能", "新华社北京电", "责任编辑:王", "。", "!", "\n", " ",
    ":",
    "$", "_", "function(){", "note: qtly div 7 cts vs 7 cts", "by laura roberts", "the", "said", "{a: b;}",
    " {x: y;}", "二〇二二年", "〇", "ᛯ", "〇{a: b;}", "var 〇=1", "a.js〇", "〇the", "ᛯsaid",
]
marked_texts = st.lists(st.sampled_from(_MARKED + _PIECES[:20]), max_size=40).map("".join)


@settings(max_examples=500, deadline=None)
@given(text=marked_texts)
def test_strip_boilerplate_with_marks_equals_the_reference(text: str) -> None:
    _strips_as_the_reference(text)


def test_emoji_news_is_stripped_compiled() -> None:
    """An emoji's variation selector or a ZWJ sequence in prose does not send the text to the
    reference; in a line that may be code it does."""
    for text in ("点赞❤\ufe0f 新华社北京电 今天天气很好。\n责任编辑:王",
                 "family 👨\u200d👩\u200d👧 said the"):
        got = native.strip_boilerplate(text, text)
        assert got is not None and got == strip_boilerplate(text, text)
    assert native.strip_boilerplate("var x\ufe0f=1;", "") is None
