"""The compiled facts against the Python reference: ``analyse`` and ``latin_body_names`` give the same
answers on generated text that mixes what their patterns read (Chinese numerals, figures split over
lines, English number words and dates, names, odd digits and spaces), and whole fingerprints agree."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint import facts, native
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.text.boilerplate import SENTENCE_RE
from fingerprint_indexer.text.clean import normalize

pytestmark = pytest.mark.skipif(not native.FACTS, reason="the compiled pass is not built (or its Unicode "
                                "tables are not of this Python's version)")

# pieces the number, date and name patterns read, and the characters where Python's classes are subtle
_PIECES = [
    "第", "三十三", "一百二十七", "二〇二二", "两", "一", "十", "万", "亿", "零", "千", "四",
    "次", "届", "号", "月", "日", "个", "名", "例", "岁", "会议", "北京", "人民大会堂", "政协",
    "(", ")", "(二)", "(十一)",
    "0", "1", "7", "12", "007", "4.50", "1,796,121", "1,5", "1.2.3", "3", "2024",
    "\uff11", "\uff15", "\u0663", "\u0665", "\u0966", "\u00b2", "\u2460",
    ".", ",", ". ", ", ", ".\n", ",\n", " ", "  ", "\n", "\n\n", "\t", "\u001c", "\u001f", "\u00a0",
    "\u3000", "\u2028", "\u200b", "\u0085",
    "two", "twenty", "fourteen", "ninety", "may", "march", "june", "july", "december", "mayday", "twos",
    "two_", "_", "é", "\u0301", "\u24b6", "\u00aa", "x", "pct", "shr",
    "。", "!", "?", ";", "…", "」", "”", '"', "'", ":", "]",
]
_NAMES = ["北京", "北京人民大会堂", "人民大会堂", "政协", "会议", "二十", "十四届", "大会"]


def _text(pieces: list[str]) -> str:
    return "".join(pieces)


texts = st.lists(st.sampled_from(_PIECES), max_size=60).map(_text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, st.lists(st.sampled_from(_NAMES), max_size=4), st.lists(st.sampled_from(["shr", "bank"]),
       max_size=2), st.integers(1, 70), st.integers(1, 70))
def test_analyse_is_the_reference(text: str, names: list[str], latin: list[str], max_facts: int,
                                  max_frames: int) -> None:
    want = facts.analyse(text, names, max_facts, max_frames, latin=latin, terms_are_names=True)
    assert native.analyse(text, names, max_facts, max_frames, latin=latin) == want


_CASED = [
    "The", "Sumitomo", "Bank", "Ltd", "said", "lead", "manager", "Nomura", "International", "O'Neil-",
    "A", "AT&T", "x-Ray", "it", "Shr", "29", "cts", "vs", "\u0130stanbul", "\u03a3OS", "\u212aelvin",
    "\u00c9cole", "Stra\u00dfe", " ", " ", " ", "  ", "\u00a0", "\u001c", ". ", ".", "! ", "? ", ": ", "; ",
    '." ', "') ", "]", "。", "\n", "\n", "\u3000",
]
cased_texts = st.lists(st.sampled_from(_CASED), max_size=50).map(_text)


def _body(cased: str, choices: list[int]) -> str:
    """A boilerplate-stripped body of ``cased``: per line, kept whole, dropped, or some sentences kept."""
    out = []
    for n, line in enumerate(cased.lower().split("\n")):
        how = choices[n % len(choices)] if choices else 0
        if how == 0:
            out.append(line)
        elif how == 2:
            out.append("".join(p for i, p in enumerate(SENTENCE_RE.findall(line)) if i % 2 == 0).strip())
    return "\n".join(out)


@settings(max_examples=400, deadline=None)
@given(cased_texts, st.lists(st.integers(0, 2), max_size=5), st.sampled_from([frozenset(), frozenset({"the",
       "said", "ltd"})]))
def test_latin_body_names_is_the_reference(cased: str, choices: list[int], stopwords: frozenset[str]) -> None:
    body = _body(cased, choices)
    want = facts.latin_body_names(cased, body, stopwords)
    got = native.latin_body_names(cased, body, stopwords)
    if got is None:  # only a line whose lower-casing is not character for character, or has a capital sigma
        assert any(len(x.lower()) != len(x) or "\u03a3" in x for x in cased.split("\n"))
    else:
        assert got == want


def test_python_classes_are_the_tables() -> None:
    """Spot checks of the character classes behind the scanners, on characters where they are subtle."""
    for text, names in [
        ("二十\u0301two\u0301 two\u24b6 \u00aatwo \u0665 may\u001c\u0663\u0665 \uff11\uff12 march", []),
        ("5 \u00b2 \u2460 12\u00a0june 3 may_ 1,\u20282", []),
        ("政协会议(二)北京人民大会堂第十四届第\uff13次", ["北京", "人民大会堂", "政协会议"]),
    ]:
        assert native.analyse(text, names) == facts.analyse(text, names, terms_are_names=True), text


_DOCUMENTS = [
    "全国政协十四届三次会议将于3月4日在北京人民大会堂开幕。会期7天,共有2,169名委员出席。\n"
    "第一百二十七次常务会议审议了(二)号文件。",
    "The Sumitomo Bank Ltd said it raised its prime rate to 7.50 pct from 7.25 pct, effective May 15.\n"
    "Lead manager Nomura International said the five-year bonds pay 4.50 pct.\n"
    "Shr 29 cts vs 26 cts\nNet 1,796,121 vs 1,\n234,567\nRevs twenty mln vs nineteen mln",
    "国家统计局数据显示,10月份全国居民消费价格同比上涨0.\n2%。其中,城市上涨0.3%,农村持平。"
    "食品价格下降2.9%,非食品价格上涨0.7%。1—10月平均,全国居民消费价格比上年同期上涨0.4%。",
    "Reuters - On March 5 the board met for the twenty-second time. It may meet again in June.\n"
    "\u0130stanbul \u03a3ok\u00a0said: \u201cOK.\u201d Then the Board of Trade replied.",
]


@pytest.fixture(scope="module")
def fingerprinters() -> tuple[Fingerprinter, Fingerprinter]:
    return Fingerprinter(), Fingerprinter(reference=True)


@pytest.mark.parametrize("text", _DOCUMENTS)
def test_whole_fingerprints_are_the_reference(text: str, fingerprinters: tuple[Fingerprinter, Fingerprinter]
                                              ) -> None:
    compiled, reference = fingerprinters
    compiled_pass = compiled._native_pass()
    if compiled_pass is None:
        pytest.skip("the compiled pass is switched off (FPI_NATIVE=0) or not for this segmenter")
    assert compiled.fingerprint(text=text) == reference.fingerprint(text=text)
    cased = normalize(text, lower=False)
    got = compiled_pass.fold(cased.lower(), cased, facts=True)
    if native.strip_boilerplate(cased.lower(), cased) is None:  # a combining mark (İ lower-cased): the
        assert got is None  # stripper leaves the whole text to the reference
    else:
        assert got is not None and got.facts is not None, "the facts were compiled"
    assert compiled.fingerprint(text=re.sub("\n", "\n\n", text)) == reference.fingerprint(
        text=re.sub("\n", "\n\n", text))
