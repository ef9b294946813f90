"""The compiled copy marks equal their Python reference (``winnow.marked(...).to_bytes()``) on generated
text, every code point, long texts and real documents; the fingerprinter uses them only where the compiled
pass runs (fingerprint/native.py; scripts/check_native.py checks every document)."""

from __future__ import annotations

import itertools
import random
from dataclasses import asdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.corpus import DATA_DIR, iter_records

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint import winnow as wn
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter
from fingerprint_indexer.text.tokenize import CHUNK_CHARS

pytestmark = pytest.mark.skipif(not native.AVAILABLE, reason="the compiled pass was not built (no Rust "
                                "toolchain at install time): the Python reference runs")

# mixed CJK, Latin and digits, full-width forms, combining marks, characters whose NFKC or lower case is
# longer than they are (offsets then map several characters back to one), synonyms' and stopwords' kind
_PIECES = [
    "新华社", "北京", "国务院", "总理", "会见", "人民大会堂", "第三十三次", "会议", "一百二十七", "两国",
    "的", "了", "在", "是", "（二）", "经济增长", "3.5%", "1,796,121", "2024年9月29日", "。", "，", "、",
    "“", "”", "The", "U.S.", "economy", "grew", "said", "covid-19", "o'neil", "shr 29 cts vs 26 cts",
    "ＡＢＣ１２３", "Ｕ．Ｓ．", "ﬁnance", "㍻", "①", "Σ", "ΟΔΟΣ", "İstanbul", "ß", "e\u0301", "cafe\u0301",
    "\u0301", "豈", "⼀", "x", "-", ".", "'", " ", "  ", "\n", "\t", "\u3000", "\xa0", "\r\n",
]
texts = st.lists(st.sampled_from(_PIECES), max_size=80).map("".join)
raw = st.one_of(texts, st.text(max_size=300))
# repeated passages make equal block hashes within a window: robust winnowing's tie rule decides
repeated = st.tuples(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12).map("".join),
                     st.integers(2, 12), texts).map(lambda t: t[0] * t[1] + t[2])
params = st.sampled_from([wn.WinnowParams(), wn.WinnowParams(k=1, g=1), wn.WinnowParams(k=2, g=3),
                          wn.WinnowParams(k=3, g=3), wn.WinnowParams(k=4, g=20)])

_COMPILED = Fingerprinter()


@pytest.fixture(scope="module")
def compiled() -> native.NativePass:
    got = _COMPILED._native_pass()
    assert got is not None
    return got


def _reference(text: str, p: wn.WinnowParams) -> bytes:
    return wn.marked(text, _COMPILED.tokenizer, p).to_bytes()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=raw, p=params)
def test_marks_equal_the_reference(compiled: native.NativePass, text: str, p: wn.WinnowParams) -> None:
    got = compiled.marked(text, p)
    assert got is None or got == _reference(text, p)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=repeated, p=params)
def test_ties_are_broken_as_the_reference(compiled: native.NativePass, text: str, p: wn.WinnowParams) -> None:
    got = compiled.marked(text, p)
    assert got is not None and got == _reference(text, p)


def test_every_code_point_maps_as_the_reference(compiled: native.NativePass) -> None:
    """Each character alone in a Latin word, a Chinese word and before a digit: its normalisation decides
    the terms and their offsets. Characters newer than Python's tables are left to the reference."""
    p = wn.WinnowParams(k=1, g=1)
    chars = [chr(i) for i in range(0x110000) if not 0xD800 <= i < 0xE000]
    taken = 0
    for i in range(0, len(chars), 256):
        batch = chars[i : i + 256]
        text = " ".join(f"x{c}y 北{c}京 {c}9" for c in batch)
        got = compiled.marked(text, p)
        if got is not None:
            taken += len(batch)
            assert got == _reference(text, p), [hex(ord(c)) for c in batch[:1]]
            continue
        for c in batch:  # some character here is left to the reference: the others one by one
            one = f"x{c}y 北{c}京 {c}9"
            got = compiled.marked(one, p)
            taken += got is not None
            assert got is None or got == _reference(one, p), hex(ord(c))
    assert taken > 250_000  # every character Unicode 14 assigns


def test_long_texts_are_sliced_and_cut_as_the_reference(compiled: native.NativePass) -> None:
    """Beyond ``CHUNK_CHARS`` characters the text is read in slices, and beyond ``MAX_STORED_BLOCKS``
    blocks only the winnowed ones are kept."""
    rng = random.Random(30)
    words = [p for p in _PIECES if p.strip()]
    text = "".join(rng.choice(words) + rng.choice(["", " ", "", "\n"]) for _ in range(150_000))
    assert len(text) > 4 * CHUNK_CHARS
    p = wn.WinnowParams(k=1, g=2)
    got = compiled.marked(text, p)
    assert got is not None and got == _reference(text, p)
    cut = wn.Marks.from_bytes(got)
    assert cut.kept is None and int(cut.pos[-1]) > wn.MAX_STORED_BLOCKS  # the winnowed ones only
    one_line = text.replace("\n", "").replace(" ", "")  # no place to cut a slice at
    assert compiled.marked(one_line, wn.WinnowParams()) == _reference(one_line, wn.WinnowParams())


def test_the_cut_follows_max_stored_blocks(
    compiled: native.NativePass, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "新华社北京电 国务院总理今天在人民大会堂会见了来访的客人, the u.s. economy grew 3.5% in 2024. " * 8
    monkeypatch.setattr(wn, "MAX_STORED_BLOCKS", 20)
    monkeypatch.setattr(native, "MAX_STORED_BLOCKS", 20)
    p = wn.WinnowParams()
    got = compiled.marked(text, p)
    assert got is not None and got == _reference(text, p)
    assert wn.Marks.from_bytes(got).kept is None


def test_plain_news_takes_the_compiled_path(compiled: native.NativePass) -> None:
    """The equality tests accept None (the reference ran); ordinary news must not need it."""
    text = "新华社北京11月26日电 国务院总理今天会见了来访的客人。\nThe U.S. economy grew 3.5%, ＡＢＣ said."
    got = compiled.marked(text, wn.WinnowParams())
    assert got is not None and len(wn.Marks.from_bytes(got)) > 0
    assert compiled.marked("", wn.WinnowParams()) == b"" == _reference("", wn.WinnowParams())


_CONFIG = FingerprintConfig(winnow=wn.WinnowParams())
_WITH_MARKS, _REFERENCE = Fingerprinter(_CONFIG), Fingerprinter(_CONFIG, reference=True)


@settings(max_examples=100, deadline=None)
@given(body=texts, title=st.sampled_from(["", "新华社：第三十三次会议"]))
def test_fingerprints_with_marks_equal_the_reference(body: str, title: str) -> None:
    doc = Document(id="d", content=body, title=title)
    assert asdict(_WITH_MARKS.fingerprint_document(doc)) == asdict(_REFERENCE.fingerprint_document(doc))
    assert _WITH_MARKS.fingerprint(body) == _REFERENCE.fingerprint(body)


def test_the_reference_never_asks_the_compiled_marks(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> bytes:
        raise AssertionError("the compiled marks ran")

    monkeypatch.setattr(native.NativePass, "marked", refuse)
    text = "新华社北京电 国务院总理今天会见了来访的客人。the u.s. economy grew."
    assert Fingerprinter(_CONFIG, reference=True).fingerprint(text).marks
    monkeypatch.setenv("FPI_NATIVE", "0")
    assert Fingerprinter(_CONFIG).fingerprint(text).marks
    monkeypatch.delenv("FPI_NATIVE")
    with pytest.raises(AssertionError, match="compiled marks ran"):
        Fingerprinter(_CONFIG).fingerprint(text)


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["zh_news", "en_reuters", "zh_xwlb", "en_bbc", "zh_toutiao_titles"])
def test_real_documents_mark_alike(compiled: native.NativePass, name: str) -> None:
    p = wn.WinnowParams()
    n = taken = 0
    for row in itertools.islice(iter_records(DATA_DIR / f"{name}.jsonl.gz"), 0, 3000, 10):
        text = wn.document_text(Document.from_mapping(row))
        got = compiled.marked(text, p)
        n, taken = n + 1, taken + (got is not None)
        assert got is None or got == _reference(text, p), row.get("id")
    assert taken >= 0.95 * n > 0
