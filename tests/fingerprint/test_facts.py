"""Facts and frames: what a text states, and lines of one template filled differently."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint.facts import (
    MAX_FACTS,
    MAX_TITLE_FACTS,
    analyse,
    chinese_number,
    fact_hash,
    headline_names,
    latin_body_names,
    publication_day,
    publication_time,
    title_facts,
)
from fingerprint_indexer.text.boilerplate import strip_boilerplate
from fingerprint_indexer.text.clean import clean, normalize


def extract_facts(text: str, terms: tuple[str, ...] | list[str] = ()) -> tuple[str, ...]:
    return analyse(text, terms)[0]


def frames(text: str) -> tuple[int, ...]:
    return analyse(text)[1]


def test_chinese_numerals() -> None:
    cases = {"三十三": 33, "一百二十七": 127, "十四": 14, "二十": 20, "二〇二二": 2022, "两千": 2000,
             "三万五千": 35000, "十": 10, "一亿": 100_000_000}  # fmt: skip
    for run, value in cases.items():
        assert chinese_number(run) == value, run


def test_numbers_dates_and_ordinals_are_normalised_and_kinded() -> None:
    text = "第三十三次会议6日举行,十四届。1,796,121 吨, 4.50 pct, 82.\n7m, 十分重要, 一个"
    facts = set(extract_facts(clean(text)))
    assert {"#第33次", "#6日", "#14届", "=1796121", "=4.5", "=82.7"} <= facts
    assert not any(f.endswith("10") for f in facts), "十分 (very) is not a number"
    en = set(extract_facts(clean("Qtly div five cts vs five cts. Pay April 30, record 15 May. It may rise.")))
    assert {"=5", "#april 30", "#may 15", "=april"} <= en
    assert "=may" not in en, "'may' alone is a verb"


def test_names_come_from_the_terms() -> None:
    facts = extract_facts("意大利总理访华", terms=["意大利", "总理", "访华"])
    assert "@意大利" in facts and "@总理" not in facts


def test_samples_are_bottom_k_by_hash() -> None:
    text = " ".join(str(n) for n in range(1000, 1300))
    facts = extract_facts(text)
    assert len(facts) == MAX_FACTS
    assert [fact_hash(f) for f in facts] == sorted(fact_hash(f) for f in facts)


def test_publication_day_reads_the_usual_formats() -> None:
    assert publication_day("2024-09-29") == "%2024-09-29"
    assert publication_day("2024-09-29T23:30:00+08:00") == "%2024-09-29"  # the day as written
    assert publication_day("2024-09-29T01:00:00Z") == "%2024-09-29"
    assert publication_day("1-APR-1987 11:19:44.38") == "%1987-04-01"
    assert publication_day("Wed, 01 Apr 1987 10:00:00 GMT") == "%1987-04-01"
    assert publication_day("2024/9/29") == publication_day("2024年9月29日") == "%2024-09-29"
    for unreadable in (None, "", "yesterday", "2024-13-01", "31-FEB-1987"):
        assert publication_day(unreadable) is None


def test_title_facts_keep_proper_names_and_ordinals_not_the_site() -> None:
    title = "全国政协十四届一次会议主席团举行第二次会议 - 新华网"
    facts = title_facts(title, ["全国政协", "主席团", "举行", "会议", "新华网"])
    assert "^#第2次" in facts and not any("新华网" in f for f in facts)
    assert all(f.startswith("^") for f in facts)


def test_brackets_number_the_parts_of_a_series() -> None:
    assert "#第1" in extract_facts(clean("为什么中国海军一直坚持使用柴燃交替动力（一）"))
    assert "#第12" in extract_facts(clean("改革开放四十年巡礼(十二)"))
    assert not any(f.startswith("#") for f in extract_facts(clean("他说(一定会来)")))


WIRE = ("Sankei Building Co Ltd said it is issuing a\n"
        "60 mln dlr equity warrant eurobond due May 7, 1992, lead manager\n"
        "Nomura International Ltd said.\n"
        "    The issue is guaranteed by Sumitomo Bank Ltd. Final terms will\n"
        "be fixed on April 15.\n")


def _latin(raw: str) -> set[str]:
    body = strip_boilerplate(clean(raw))
    return latin_body_names(normalize(raw, lower=False), body, frozenset({"the", "final"}))


def test_latin_names_are_capitalised_words_inside_sentences() -> None:
    names = _latin(WIRE)
    assert {"nomura", "international", "ltd", "sumitomo", "bank", "building", "co"} <= names
    assert "sankei" not in names  # the text's first word: any sentence may open with a capital
    assert "terms" not in names and "final" not in names  # "Final terms": a sentence opens there
    wrapped = _latin("Home > Business > Bonds\nBy Laura Roberts, Business Insider Weekly\n" + WIRE
                     + "Copyright 1987 Business Insider Weekly. All rights reserved.")
    assert wrapped == names  # a wrapper's bylines and section names are not the article's


SENTENCES = [
    "Shares of Nomura International rose on Monday in Tokyo.",
    "The bank said Sumitomo would lead the issue.",
    "Analysts at Daiwa Securities expect more deals.",
    "A spokesman for the ministry declined to comment.",
    "Final terms will be fixed on April 15 in London.",
]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(SENTENCES), min_size=2, max_size=8), st.data())
def test_an_excerpt_names_no_one_its_source_does_not(sentences: list[str], data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(sentences) - 1))
    end = data.draw(st.integers(start + 1, len(sentences)))
    source = " ".join(sentences)
    excerpt = " ".join(sentences[start:end])
    assert _latin(excerpt) <= _latin(source)


def test_table_row_labels_are_not_names() -> None:
    table = "Shr 29 cts vs loss six cts\nNet 1,234,000 vs 567,000\nRevs 12.3 mln vs 11.1 mln\nNote: Year."
    assert _latin(table) == set()
    # a long unclosed line runs on into the next; after a short one, a row or a sentence may open
    long_line = "Officials said on Monday that the ministers met in\nGeneva to discuss it."
    assert _latin(long_line) == {"monday", "geneva"}
    assert _latin("The ministers met in\nGeneva to discuss the accord.\n") == set()


_NUMBERISH = st.text(
    alphabet=st.sampled_from(list("0123456789.,第次届号月日个名一二两三十百千万亿〇零 \n\t\u3000\xa0ab二〇")),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(_NUMBERISH)
def test_number_facts_equal_a_plain_reading_of_each_match(text: str) -> None:
    """The per-match caches give what reading each match's groups directly gives."""
    from fingerprint_indexer.fingerprint.facts import (
        _ARABIC,
        _CN_NUMERAL,
        _arabic,
        _number_facts,
        _qualified,
    )

    plain: list[tuple[int, int, str]] = []
    for m in _ARABIC.finditer(text):
        plain.append((m.start(), m.end(), _qualified(m.group(1), _arabic(m.group(2)), m.group(3))))
    for m in _CN_NUMERAL.finditer(text):
        ordinal, run, classifier = m.group(1), m.group(2), m.group(3)
        if (ordinal or classifier) and not (run in ("一", "两") and not ordinal):
            value = chinese_number(run)
            if value is not None:
                plain.append((m.start(), max(m.end(), m.end(3)), _qualified(ordinal, str(value), classifier)))
    got = list(_number_facts(text))
    assert got[: len(plain)] == plain


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_skeleton_whitespace_removal_equals_the_pattern(text: str) -> None:
    """Frames drop whitespace with ``str.split``: the same characters as ``\\s+``."""
    import re

    assert "".join(text.split()) == re.sub(r"\s+", "", text)


def test_terms_known_to_be_names_give_the_same_facts() -> None:
    from fingerprint_indexer.fingerprint.facts import names

    text = "新华社北京3月4日电 全国政协十四届二次会议在北京人民大会堂开幕,王沪宁主持。张三说。"
    terms = ["北京", "人民大会堂", "王沪宁", "会议", "开幕", "张三", "主持"]
    assert analyse(text, names(terms), terms_are_names=True) == analyse(text, terms)


@pytest.mark.parametrize(("value", "iso"), [
    ("3-MAR-1987 06:01:20.61", "1987-03-03T06:01:20.610000"),
    ("1-APR-1987", "1987-04-01"),
    ("2024-09-29", "2024-09-29"),
    ("2024-09-29T19:00:00+08:00", "2024-09-29T19:00:00+08:00"),
    ("2024-09-29 19:00", "2024-09-29T19:00:00"),
    ("Sun, 29 Sep 2024 19:00:00 +0800", "2024-09-29T19:00:00+08:00"),
    ("2024年9月29日", "2024-09-29"),
    ("yesterday", None),
    ("31-FEB-1987 10:00:00.00", None),
])
def test_publication_time_is_iso_for_every_form_the_day_is_read_from(value, iso):
    assert publication_time(value) == iso
    assert (publication_day(value) is None) == (iso is None)
    if iso is not None:
        assert publication_day(iso) == publication_day(value)  # read back, the same day fact


def test_headline_words_the_body_names_are_title_names() -> None:
    body = ("=6.5", "@massachusetts", "@insured", "@fund", "#april 30")
    got = headline_names("franklin massachusetts sets monthly payout", body)
    assert got == (*body, "^@massachusetts")  # "franklin" is no fact of the body; "sets" no name
    assert headline_names("sets monthly payout", body) == body  # nothing the body names
    assert headline_names("massachusetts fund", ("=1",)) == ("=1",)  # a body without names


@given(st.lists(st.sampled_from(["ohio", "fund", "bank", "trust", "x", "y-z", "tax-free"]), max_size=20),
       st.integers(0, MAX_TITLE_FACTS + 2))
@settings(max_examples=60, deadline=None)
def test_headline_names_only_add_and_keep_the_cap(words: list[str], held: int) -> None:
    facts = (*(f"@{w}" for w in dict.fromkeys(words)), *(f"^@t{i}" for i in range(held)))
    got = headline_names(" ".join(reversed(words)), facts)
    assert got[: len(facts)] == facts
    added = got[len(facts):]
    assert all(f.startswith("^@") and f"@{f[2:]}" in facts for f in added)
    assert sum(f.startswith("^") for f in got) <= max(held, MAX_TITLE_FACTS)
