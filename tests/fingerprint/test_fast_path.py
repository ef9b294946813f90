"""The fingerprinter's array path computes exactly what the plainly written reference computes."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.corpus import DATA_DIR, load_records
from support.slow_fingerprint import SlowFingerprinter, slow_analyse, slow_top_terms

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.facts import analyse
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter
from fingerprint_indexer.text.weights import jieba_idf, top_terms

CONFIGS = {
    "default": FingerprintConfig(),
    "plain": FingerprintConfig(tf_power=1.0, max_term_share=1.0, top_k=7, facts=False, sketch_size=8),
    "whole": FingerprintConfig(chunk_every=0, lead_sentences=0, strip_boilerplate=False, sketch_size=3),
    "few-chunks": FingerprintConfig(chunk_every=2, max_chunks=1, lead_sentences=1, max_term_share=0.5),
    "cubic-cap": FingerprintConfig(tf_power=2.5, max_term_share=0.05, top_k=40),
}
PAIRS = {name: (Fingerprinter(cfg), SlowFingerprinter(cfg)) for name, cfg in CONFIGS.items()}

WORDS = ["北京", "上海", "会议", "第三十三次", "三月", "4日", "经济", "增长", "公司", "发布", "李明", "张伟",
         "人民大会堂", "北京人民大会堂", "一百二十七", "届", "两国", "元", "亿", "新冠", "covid-19", "u.s",
         "profits", "rose", "may", "march 5", "twenty", "3.5", "1,796,121", "82.\n7", "the", "and", "shr",
         "cts", "iphone", "15", "2024年", "14届", "神舟20号", "。", "!", "?", ";", ",", ". ", "\n", " ",
         "责任编辑:王", "来源:新华社", "copyright 2024", "https://x.cn/a.js", "“", "”", "a", "的", "了"]
texts = st.lists(st.sampled_from(WORDS) | st.text(alphabet="甲乙丙丁一二三十百第次号年月日ab1.,。 \n",
                                                   max_size=6), max_size=120).map("".join)


def _same(name: str, text: str) -> None:
    fast, slow = PAIRS[name]
    assert asdict(fast.fingerprint_text(text, "x")) == asdict(slow.fingerprint_text(text, "x"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, name=st.sampled_from(sorted(CONFIGS)))
def test_fast_path_equals_reference(text: str, name: str) -> None:
    _same(name, text)


@settings(max_examples=40, deadline=None)
@given(text=st.text(max_size=200))
def test_fast_path_equals_reference_on_any_text(text: str) -> None:
    _same("default", text)


@settings(max_examples=100, deadline=None)
@given(counts=st.dictionaries(st.sampled_from(WORDS + [f"t{i}" for i in range(30)]),
                              st.integers(1, 40), max_size=60),
       k=st.integers(0, 20), power=st.sampled_from([1.0, 2.0, 3.0, 0.5]),
       share=st.sampled_from([1.0, 0.5, 0.2, 0.05, 0.01]))
def test_top_terms_equal_the_plain_rule(counts: dict[str, int], k: int, power: float, share: float) -> None:
    c = Counter(counts)
    assert top_terms(c, jieba_idf(), k, power, share) == slow_top_terms(c, jieba_idf(), k, power, share)


def test_one_process_table_serves_many_documents() -> None:
    """Later documents reuse the cached terms of earlier ones and still fingerprint alike."""
    fast, slow = PAIRS["default"]
    texts_ = ["北京会议第三十三次。经济增长了。", "profits rose 3.5 in march 5. the u.s firm",
              "北京 profits 经济"]
    for text in texts_ * 2:
        assert asdict(fast.fingerprint_text(text)) == asdict(slow.fingerprint_text(text))


CORPORA = ["zh_news", "en_bbc", "zh_xwlb", "en_reuters", "zh_toutiao_titles"]


@pytest.mark.corpus
@pytest.mark.parametrize("corpus", CORPORA)
def test_fast_path_equals_reference_on_real_news(corpus: str) -> None:
    records = load_records(DATA_DIR / f"{corpus}.jsonl.gz", limit=240)
    fast = Fingerprinter()
    slow_sketch, fast_sketch = SlowFingerprinter(), SlowFingerprinter(sketch=False)
    for i, rec in enumerate(records):
        doc = Document(id=str(i), title=rec.get("title") or "", content=rec.get("content"),
                       published_at=rec.get("published_at") or rec.get("date"))
        # the shingle-by-shingle sketch is slow: on the first documents only
        slow = (slow_sketch if i < 12 else fast_sketch).fingerprint_document(doc)
        assert asdict(fast.fingerprint_document(doc)) == asdict(slow), (corpus, i)


FACT_BITS = ["第", "三", "十", "次", "届", "月", "日", "一", "两", "个", "12", "3.5", "1,000", ",", ".", "。",
             "!", " ", "\n", "march", "may", "twenty", "two", "5", "北京", "北京人民大会堂", "会议", "\u3000",
             "”"]


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.sampled_from(FACT_BITS), max_size=60), long_line=st.booleans())
def test_facts_scan_of_the_whole_text_equals_unit_by_unit(parts: list[str], long_line: bool) -> None:
    text = "".join(parts) + ("三" * 5000 if long_line else "")  # a unit cut for length too
    terms = ["北京", "北京人民大会堂", "会议"]
    assert analyse(text, terms) == slow_analyse(text, terms)
    assert analyse("profits in march\n5 apples, 第\n三次", terms) == slow_analyse(
        "profits in march\n5 apples, 第\n三次", terms)


def test_a_table_started_afresh_fingerprints_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its bound the term table starts afresh (bounded memory); nothing else changes."""
    import fingerprint_indexer.fingerprint.fingerprinter as module

    fast, slow = Fingerprinter(reference=True), PAIRS["default"][1]  # the reference's table
    monkeypatch.setattr(module, "MAX_ENTRIES", 5)
    texts_ = ["北京会议第三十三次。经济增长了。公司发布新冠", "profits rose 3.5 in march 5", "北京 profits"]
    tables = set()
    for text in texts_ * 2:
        assert asdict(fast.fingerprint_text(text)) == asdict(slow.fingerprint_text(text))
        tables.add(id(fast._table))
    assert len(tables) > 1
