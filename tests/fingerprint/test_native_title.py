"""The compiled title facts and publication day equal their Python reference (fingerprint/facts.py), piece
by piece on generated titles and dates, and in whole ``fingerprint_document`` results."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.digest import content_digest
from fingerprint_indexer.fingerprint.facts import latin_names, publication_day, title_facts
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter
from fingerprint_indexer.text.clean import normalize

pytestmark = pytest.mark.skipif(not native.FACTS, reason="the compiled pass was not built, or its character "
                                "tables are not of this Python's Unicode version: the reference runs")

# what headlines are made of: names jieba tags and ones it does not know, companies as wires mark them,
# figures in every script, ordinals, dates, and the separators before a site name
_PIECES = [
    "李亚鹏", "金庸", "唐嫣", "秦岚", "北京", "上海", "国务院", "新华社", "人民大会堂", "令狐冲",
    "机场", "现身", "会议", "举行", "法文版", "俄文版", "《", "》", "“", "”", "：", ":", "？", "！", "，",
    "第三十三次", "第一次", "一百二十七", "两国", "五个人", "十四届", "（二）", "(三)", "二〇二二年",
    "2024年9月29日", "3月4日", "1,796,121", "4.50", "82.", "7", "１２３", "ＲＥＮＴ", "第12期",
    "九千九百亿亿亿亿亿",  # beyond 128 bits: the reference's
    "<NTRS>", "<Sterling Bancorp>", "<a  b>", "<<X>", "RENT-A-CENTER", "<RENT>", "SHELDAHL",
    "Standard Oil",
    "march 5", "5 May", "April 30", "twenty", "two", "Shr 29 cts vs 26 cts", "U.S.", "sets split",
    " - ", "-", "_", "|", " | ", "｜", "—", "–", " ", "  ", "\u3000", "\n", "\t",
    "新浪网", "网易新闻", "Reuters", "BBC News", "凤凰网资讯", "a very long site name",
    "Σ", "İ", "ß", "ﬁ", "\u0301", "①", "٣",
]
titles = st.one_of(st.lists(st.sampled_from(_PIECES), max_size=14).map("".join), st.text(max_size=60))
_MONTHS = ["JAN", "Feb", "mar", "APR", "MAY", "Jun", "JUL", "aug", "SEP", "Oct", "NOV", "DEC", "FOO", "Sept"]
days = st.one_of(
    st.dates().map(dt.date.isoformat),
    st.tuples(st.integers(0, 10_000), st.integers(0, 13), st.integers(0, 32)).map(
        lambda t: f"{t[0]:04d}-{t[1]:02d}-{t[2]:02d}"),
    st.tuples(st.integers(0, 40), st.sampled_from(_MONTHS), st.sampled_from(["", "ruary", "RUARY"]),
              st.sampled_from(["-", " ", ", ", "--"]), st.integers(0, 10_000),
              st.sampled_from(["", " 11:19:44.38", "1", "_", ".5", " 25:00"]),
              st.sampled_from(["-", " "])).map(
        lambda t: f"{t[0]}{t[6]}{t[1]}{t[2]}{t[3]}{t[4]:04d}{t[5]}"),
    st.sampled_from(["", "  ", " 2024-09-29 ", "2024-09-29T19:00:00+08:00", "2024/09/29", "2024年9月29日",
                     "Sun, 29 Sep 2024 19:00:00 +0800", "1-APR-1987 11:19:44.38", "٢٠٢٤-٠٩-٢٩"]),
    st.text(max_size=30),
)

_COMPILED, _REFERENCE = Fingerprinter(), Fingerprinter(reference=True)


@pytest.fixture(scope="module")
def compiled() -> native.NativePass:
    got = _COMPILED._native_pass()
    assert got is not None
    return got


def reference_title_facts(raw: str) -> tuple[str, ...]:
    title = normalize(raw)
    return title_facts(title, _REFERENCE.tokenizer.terms(title), latin_names(raw))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(title=titles)
def test_title_facts_equal_the_reference(compiled: native.NativePass, title: str) -> None:
    got = compiled.title_facts(title)
    assert got is None or got == reference_title_facts(title)


@settings(max_examples=500, deadline=None)
@given(value=days)
def test_publication_day_equals_the_reference(value: str) -> None:
    read, day = native.publication_day(value)
    assert not read or day == publication_day(value)


def test_common_titles_and_days_are_read_compiled(compiled: native.NativePass) -> None:
    """The equality tests above accept None (the reference ran); ordinary titles and dates must not."""
    cases = {
        "李亚鹏忆金庸 第三十三次会议 - 新浪网": ("^#第33次", "^@李亚鹏", "^@金庸"),
        "STANDARD OIL <SRD> TO FORM FINANCIAL UNIT": ("^@<srd>",),
        "《习近平谈治国理政》法文版（二）| 人民网": None,
    }
    for raw, expected in cases.items():
        got = compiled.title_facts(raw)
        assert got is not None and got == reference_title_facts(raw), raw
        assert expected is None or sorted(got) == sorted(expected), got
    for value in ("2024-09-29", "26-FEB-1987 15:01:01.79", "2023-02-29", " 1-apr-1987"):
        assert native.publication_day(value) == (True, publication_day(value)), value


@settings(max_examples=150, deadline=None)
@given(body=st.lists(st.sampled_from([*_PIECES, "。", "经济增长了3.5%。", "The economy grew.\n"]),
                     max_size=40).map("".join),
       title=titles, day=st.one_of(st.none(), days))
def test_documents_with_titles_and_days_equal_the_reference(body: str, title: str, day: str | None) -> None:
    doc = Document(id="d", content=body, title=title, published_at=day)
    assert asdict(_COMPILED.fingerprint_document(doc)) == asdict(_REFERENCE.fingerprint_document(doc))


def test_a_document_takes_the_one_compiled_call(compiled: native.NativePass) -> None:
    """Title facts and the day come with the body's facts, in the order the reference appends them."""
    doc = Document(id="d", content="新华社北京9月29日电 国务院总理今天在人民大会堂会见了客人。",
                   title="李亚鹏忆金庸 - 新浪网", published_at="2024-09-29")
    got = compiled.document(doc.content or "", doc.title, doc.published_at)
    assert got is not None and got.day_read
    assert sorted(got.facts[-3:-1]) == ["^@李亚鹏", "^@金庸"] and got.facts[-1] == "%2024-09-29"
    assert _COMPILED.fingerprint_document(doc) == _REFERENCE.fingerprint_document(doc)


@pytest.mark.parametrize("config", [
    FingerprintConfig(layout=BlockLayout.permuted(3)), FingerprintConfig(layout=BlockLayout.even(7)),
    FingerprintConfig(facts=False, keyword_digest_n=3, strip_boilerplate=False),
], ids=["permuted", "seven-blocks", "no-facts"])
def test_other_configurations_equal_the_reference(config: FingerprintConfig) -> None:
    """Block keys of every layout, the keyword digest of other lengths, no facts, no stripping."""
    compiled, reference = Fingerprinter(config), Fingerprinter(config, reference=True)
    for i in range(30):
        body = f"第{i}次会议在北京举行。经济增长了{i}%。The Economy grew {i}." * (1 + i % 4)
        doc = Document(id=str(i), content=body, title=f"李亚鹏忆金庸 第{i}次 - 新浪网",
                       published_at=f"2024-09-{1 + i:02d}")
        assert compiled.fingerprint_document(doc) == reference.fingerprint_document(doc)


def test_content_digests_of_every_length_across_blocks(compiled: native.NativePass) -> None:
    """The compiled BLAKE2b over 0 to 3 blocks of 128 bytes, each boundary included."""
    for n in range(1, 400, 1):
        text = "ab" * (n // 2) + "c" * (n % 2)
        got = compiled.document(text)
        assert got is not None and got.content_digest == content_digest(normalize(text)), n
