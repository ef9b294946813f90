"""Ids used again: with other text (item links must not follow the id to its new text), with the same text
(a re-run repeats the stored decisions, ``replaces`` included), and ids that look like chunk entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintResult
from fingerprint_indexer.pipeline import Pipeline
from fingerprint_indexer.store.check import check
from fingerprint_indexer.store.near import doc_of


def _run(pipe: Pipeline, *docs: tuple[str, str]) -> list[dict]:
    return [d.to_dict() for d in pipe.process_many(Document(id=i, content=t) for i, t in docs)]


@pytest.mark.corpus
def test_copy_of_a_reused_ids_old_text_is_not_its_duplicate(tmp_path: Path, zh_articles: list[dict]) -> None:
    old, other = zh_articles[0]["content"], zh_articles[1]["content"]
    with Pipeline(tmp_path, k=3) as p:
        _run(p, ("a", old), ("a2", old))  # a2 is an exact copy, duplicate_of a
        _run(p, ("a", other))  # id a now holds an unrelated article
        out = _run(p, ("c", old))
    assert out[0]["decision"] == "exact_duplicate"
    assert (out[0]["duplicate_of"], out[0]["distance"]) == ("a2", 0)
    assert check(tmp_path).ok


def _res(doc_id: str, fp: int, digest: str, version: str) -> FingerprintResult:
    return FingerprintResult(id=doc_id, fingerprint=fp, blocks=[], content_digest=digest, keyword_digest="k",
                             top_terms=[], degenerate=False, n_tokens=10, version=version)


@pytest.mark.parametrize("keep", ["longest", "newest"])
def test_keep_policy_reruns_repeat_replaces(tmp_path: Path, keep: str) -> None:
    first = [Document(id="r", content="x" * 10, published_at="2024-01-01"),
             Document(id="d", content="x" * 50, published_at="2024-02-01")]
    digests = {"r": "h1", "d": "h2"}

    def decide(pipe: Pipeline) -> list[dict]:
        v = pipe.fingerprinter.version
        batch = [(doc, _res(doc.id, {"r": 0, "d": 1}[doc.id], digests[doc.id], v)) for doc in first]
        return [d.to_dict() for d in pipe.decide_batch(batch)]

    with Pipeline(tmp_path, k=3, keep=keep) as p:  # type: ignore[arg-type]
        out = decide(p)
    assert out[1]["replaces"] == "r" and out[1]["duplicate_of"] is None
    for _ in range(2):
        with Pipeline(tmp_path, k=3, keep=keep) as p:  # type: ignore[arg-type]
            again = decide(p)
        assert again[1] == out[1]  # replaces repeated
        assert (again[0]["decision"], again[0]["duplicate_of"], again[0]["distance"]) == (
            "near_duplicate", "d", 1)  # never "new" with a duplicate_of
        assert "replaces" not in again[0]


@pytest.mark.corpus
def test_ids_holding_the_chunk_separator_do_not_collide(tmp_path: Path, zh_articles: list[dict]) -> None:
    a, b, c = (zh_articles[i]["content"] for i in (2, 3, 4))
    with Pipeline(tmp_path, k=3) as p:
        _run(p, ("a", a), ("a\x1f1", b), ("a\x1e\x1d1", c))
        assert len(p.store.record("a").chunks) >= 1  # "a" has a chunk entry a\x1f1 in the block index
        _run(p, ("a\x1f1", c + "补充。"))  # replacing that id must leave a's chunk entry alone
        for doc_id in ("a", "a\x1f1", "a\x1e\x1d1"):
            rec = p.store.record(doc_id)
            assert rec is not None
            for fp in rec.fingerprints:  # every fingerprint of every document is found, as its own
                assert doc_id in {doc_of(m.doc_id) for m in p.store.near(fp, 0)}, (doc_id, fp)
        out = _run(p, ("copy-a", a), ("copy-b", b), ("copy-c", c))
    assert [(o["decision"], o["duplicate_of"]) for o in out] == [
        ("exact_duplicate", "a"), ("new", None), ("exact_duplicate", "a\x1e\x1d1")]
    assert check(tmp_path).ok
