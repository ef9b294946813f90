"""Ingest decisions against a real Elasticsearch node, held against an in-memory oracle on real news."""

from __future__ import annotations

import itertools
from collections import defaultdict

import pytest
from support.corpus import ZH_NEWS, iter_records

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, FingerprintResult
from fingerprint_indexer.fingerprint.sketch import from_bytes, similarity
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.services.es_ingest import EsDecider, pipelined
from fingerprint_indexer.services.es_setup import setup_index
from fingerprint_indexer.verify import MIN_SIMILARITY, closest

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]
K = 3


@pytest.fixture(scope="module")
def fingerprinted() -> list[tuple[Document, FingerprintResult]]:
    """Real Chinese news with its natural exact copies, plus planted edits (near duplicates)."""
    by_content: dict[str, list[dict]] = defaultdict(list)
    singles: list[dict] = []
    for rec in itertools.islice(iter_records(ZH_NEWS), 4000):
        by_content[rec["content"]].append(rec)
    groups = [g for c, g in by_content.items() if len(g) > 1 and len(c) > 300][:15]
    singles = [g[0] for c, g in by_content.items() if len(g) == 1 and len(c) > 600][:150]
    edits = [
        dict(r, id=f"{r['id']}-edit", content=r["content"][:-40] + "（本文有删改）") for r in singles[::10]
    ]
    tiny = [{"id": "tiny-1", "content": "短"}, {"id": "tiny-2", "content": "短"}]
    records = [*singles, *[r for g in groups for r in g], *edits, *tiny]
    fpr = Fingerprinter()
    docs = [Document.from_mapping(r) for r in records]
    return [(d, fpr.fingerprint_document(d)) for d in docs]


def _verified_distance(a: FingerprintResult, b: FingerprintResult) -> int | None:
    """Smallest Hamming distance over all fingerprint pairs when within K and the sketches agree."""
    d, _ = closest(a.fingerprints, b.fingerprints)
    if d > K:
        return None
    if a.sketch and b.sketch and similarity(from_bytes(a.sketch), from_bytes(b.sketch)) < MIN_SIMILARITY:
        return None
    return d


def oracle(batch: list[tuple[Document, FingerprintResult]]) -> dict[str, tuple[str, str | None]]:
    """(decision, duplicate_of) by the documented rules (any document or chunk fingerprint within K,
    confirmed by the sketch; nearest first), computed by brute force in memory."""
    seen: list[tuple[str, FingerprintResult, str | None]] = []  # (id, result, root)
    out = {}
    for doc, res in batch:
        kind, match = "new", None
        exact = [s for s in seen if s[1].content_digest == res.content_digest]
        if exact:
            kind, match = "exact_duplicate", exact[0]
        elif not res.degenerate:
            near = [(d, s[0], s) for s in seen if not s[1].degenerate
                    and (d := _verified_distance(s[1], res)) is not None]  # fmt: skip
            if near:
                kind, match = "near_duplicate", min(near, key=lambda n: (n[0], n[1]))[2]
        root = None if match is None else (match[2] or match[0])
        seen.append((doc.id, res, root))
        out[doc.id] = (kind, root)
    return out


def _run(decider: EsDecider, items, size: int, overlap: bool = False):
    decisions, failures = [], []
    batches = [items[start : start + size] for start in range(0, len(items), size)]
    results = pipelined(decider, batches, refresh_every=2) if overlap else map(decider.index_batch, batches)
    for result in results:
        decisions += result.decisions
        failures += result.failures
    return decisions, failures


@pytest.mark.parametrize("overlap", [False, True], ids=["sync", "pipelined"])
def test_decisions_match_the_oracle_and_rerun_is_idempotent(es_client, es_index, fingerprinted, overlap):
    setup_index(es_client, es_index)
    decider = EsDecider(ElasticsearchIndex(es_client, es_index), k=K)
    decisions, failures = _run(decider, fingerprinted, 37, overlap)  # batches split duplicate groups
    assert failures == []
    want = oracle(fingerprinted)
    got = {d.id: (d.decision, d.duplicate_of) for d in decisions}
    assert got == want
    kinds = {d.decision for d in decisions}
    assert kinds == {"new", "exact_duplicate", "near_duplicate"}
    for d in decisions:  # a duplicate joins its canonical's cluster; a new story founds its own
        assert d.cluster_id == (d.id if d.decision == "new" else got_cluster(decisions, d.duplicate_of))
    es_client.indices.refresh(index=es_index)
    assert es_client.count(index=es_index)["count"] == len(fingerprinted)
    stored = es_client.get(index=es_index, id=decisions[-1].id)["_source"]
    assert stored["decision"] == decisions[-1].decision and stored["degenerate"] is True
    assert "block_0" not in stored  # degenerate documents stay out of the buckets

    again, _ = _run(decider, fingerprinted, 50, overlap)
    assert [d.to_dict() | {"indexed": False} for d in decisions] == [d.to_dict() for d in again]


def got_cluster(decisions, doc_id):
    return next(d.cluster_id for d in decisions if d.id == doc_id)


def test_skip_leaves_duplicates_out_of_the_index(es_client, es_index, fingerprinted):
    decider = EsDecider(ElasticsearchIndex(es_client, es_index), k=K, on_duplicate="skip")
    decisions, _ = _run(decider, fingerprinted, 64)
    es_client.indices.refresh(index=es_index)
    new = [d.id for d in decisions if d.decision == "new"]
    assert es_client.count(index=es_index)["count"] == len(new) < len(decisions)
    assert all(not d.to_dict().get("indexed", True) for d in decisions if d.decision != "new")


def test_bulk_failures_are_reported_with_ids_and_the_rest_is_written(es_client, es_index, fingerprinted):
    decider = EsDecider(ElasticsearchIndex(es_client, es_index), k=K)
    bad = Document(
        id="bad-date", content="完全不同的一篇文章，讲的是天气和交通。" * 5, published_at="yesterday"
    )
    batch = [*fingerprinted[:5], (bad, Fingerprinter().fingerprint_document(bad))]
    result = decider.index_batch(batch)
    assert [i for i, _ in result.failures] == ["bad-date"]
    assert "published_at" in result.failures[0][1]
    es_client.indices.refresh(index=es_index)
    assert es_client.count(index=es_index)["count"] == 5
