"""Second-stage verification and match explanations."""

from __future__ import annotations

import pytest

from fingerprint_indexer.fingerprint.sketch import sketch
from fingerprint_indexer.verify import closest, document_distance, verify

A = "国际学校的教师通常来自国外,他们希望通过教书的方式体验其他国家。" * 4
B = "火箭在客场以96-88战胜芝加哥公牛,哈登第三节两分钟内连得11分。" * 4


def test_closest_finds_the_chunk_pair() -> None:
    d, where = closest([0xFFFF_0000_0000_0000, 0x1234], [0x0F0F, 0x1235])
    assert (d, where) == (1, (1, 1))
    with pytest.raises(ValueError):
        closest([], [1])


def test_verify_accepts_similar_and_rejects_different_text() -> None:
    ok = verify([1], [3], sketch(A), sketch(A + "责任编辑"), k=3, terms_a=["教师", "国外"], terms_b=["教师"])
    assert ok.accepted and ok.distance == 1 and ok.shared_terms == ("教师",)
    assert ok.to_dict()["matched"] == "document"
    bad = verify([1], [1], sketch(A), sketch(B), k=3)
    assert not bad.accepted and bad.similarity < 0.3
    far = verify([0], [0xFFFF], sketch(A), sketch(A), k=3)
    assert not far.accepted


def test_document_distance() -> None:
    assert document_distance(0b1011, 0b0001) == 2
