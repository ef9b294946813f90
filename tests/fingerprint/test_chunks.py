"""Content-defined chunks: boundaries survive edits elsewhere, so untouched chunks fingerprint identically."""

from __future__ import annotations

import pytest

from fingerprint_indexer.fingerprint.chunks import chunk_fingerprints, chunk_text, sentences, weighted_simhash
from fingerprint_indexer.text.tokenize import Tokenizer
from fingerprint_indexer.text.weights import jieba_idf, top_terms

SENTS = [
    f"第{i}位球员在比赛中得到{i * 3}分并且抢下{i + 2}个篮板球,球队主教练对他的表现非常满意。"
    for i in range(40)
]
TEXT = "".join(SENTS)


def _weigh(counts: dict[str, int]) -> list[tuple[str, float]]:
    return top_terms(counts, jieba_idf(), len(counts))


def test_sentences_zh_and_en() -> None:
    assert sentences("你好。今天下雨!明天呢?") == ["你好。", "今天下雨!", "明天呢?"]
    assert sentences("He left. Then she came back.\nThe end") == [
        "He left.",
        "Then she came back.",
        "The end",
    ]


def test_chunks_cover_the_text_in_order() -> None:
    chunks = chunk_text(TEXT, every=4)
    assert "".join(c.replace(" ", "") for c in chunks) == TEXT
    assert all(len(sentences(c)) >= 2 for c in chunks[:-1])
    with pytest.raises(ValueError):
        chunk_text(TEXT, every=0)


def test_an_edit_changes_only_nearby_chunks() -> None:
    tok = Tokenizer()
    edited = "".join(SENTS[:20] + SENTS[21:])  # one sentence deleted in the middle
    a = chunk_fingerprints(TEXT, tok.count, _weigh)
    b = chunk_fingerprints(edited, tok.count, _weigh)
    shared = set(a) & set(b)
    assert len(shared) >= len(a) - 2
    assert len(a) >= 4


def test_short_chunks_are_skipped_and_duplicates_dropped() -> None:
    tok = Tokenizer()
    assert chunk_fingerprints("你好。再见。", tok.count, _weigh) == []
    fps = chunk_fingerprints(TEXT + TEXT, tok.count, _weigh)
    assert len(fps) == len(set(fps))


def test_weighted_simhash_empty() -> None:
    assert weighted_simhash([]) == 0
