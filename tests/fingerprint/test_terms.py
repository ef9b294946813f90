"""The term table: a document's tokens per sentence from one pass over the whole text."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint.chunks import iter_sentences, sentence_spans
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter

# Chinese words, Latin words, figures, and every kind of sentence end and space between them.
_PIECES = st.sampled_from([
    "我们", "在北京", "召开", "会议", "新华社", "记者", "中国", "经济", "的", "了", "abc", "Reuters", "u.s.",
    "3.5", "1,200", "亿元", "e-mail", "it's", "。", "！", "？", ";", "…", ".", ". ", "”", "」", ")", " ",
    "\n", "\t", "，", "：", "—", "-", "'", "a", "x1",
])  # fmt: skip
_FINGERPRINTERS = {name: Fingerprinter(FingerprintConfig(segmenter=name)) for name in ("auto", "jieba")}


@settings(max_examples=150, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join), st.sampled_from(sorted(_FINGERPRINTERS)))
def test_whole_text_pass_equals_sentence_by_sentence(text: str, segmenter: str) -> None:
    """``text_ids`` gives what segmenting each sentence on its own gives, or declines."""
    table = _FINGERPRINTERS[segmenter]._terms()
    flat = text.replace("\n", " ")
    spans = sentence_spans(flat)
    got = table.text_ids(flat, spans) if spans else None
    if got is None:
        return
    ids, ends = table.sentence_ids(list(iter_sentences(text)))
    assert np.array_equal(got[0], ids)
    assert got[1] == ends


def test_a_word_across_a_sentence_edge_sends_the_text_sentence_by_sentence() -> None:
    table = _FINGERPRINTERS["auto"]._terms()
    flat = "新闻发布会在北京召开。记者会"
    assert table.text_ids(flat, [(0, 4), (4, len(flat))]) is None  # 发布会 would be cut in two
    assert table.text_ids(flat, sentence_spans(flat) or []) is not None
