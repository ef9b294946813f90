"""Related articles on real news: topical neighbours with near-duplicate reports folded."""

from __future__ import annotations

import pytest
from support.corpus import ZH_NEWS, iter_records

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.fingerprint.hamming import hamming
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.services.es_ingest import EsDecider, pipelined
from fingerprint_indexer.services.related import related

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]


@pytest.fixture
def news_index(es_client, es_index):
    """300 real articles plus: A with a lightly edited and an exact copy; B = half of A + half of another
    article (a related but different story) with a lightly edited and an exact copy."""
    recs = [r for r in iter_records(ZH_NEWS) if len(r["content"]) > 1200][:300]
    a, other = recs[0], recs[1]
    half = min(len(a["content"]), len(other["content"])) // 2
    b_text = a["content"][:half] + other["content"][:half]
    planted = [
        {"id": "A-copy-1", "title": a["title"], "content": "【转载】" + a["content"]},
        {"id": "A-copy-2", "title": a["title"], "content": a["content"]},
        {"id": "B", "title": "B " + other["title"], "content": b_text},
        {"id": "B-copy-1", "title": "B1", "content": "【转载】" + b_text},
        {"id": "B-copy-2", "title": "B2", "content": b_text},
    ]
    fpr = Fingerprinter()
    docs = [Document.from_mapping(r) for r in [*recs, *planted]]
    items = [(d, fpr.fingerprint_document(d)) for d in docs]
    decider = EsDecider(ElasticsearchIndex(es_client, es_index))
    decisions = {
        d.id: d
        for res in pipelined(decider, [items[i : i + 100] for i in range(0, len(items), 100)])
        for d in res.decisions
    }
    fp = {d.id: r.fingerprint for d, r in items}
    for source in (a["id"], other["id"]):
        assert hamming(fp[source], fp["B"]) > 3, "B must be a story of its own, not a near-duplicate"
    return a["id"], decisions


def test_related_folds_near_duplicate_reports_and_lists_near_duplicates_apart(
    es_client, es_index, news_index
):
    a_id, decisions = news_index
    assert decisions["B-copy-1"].duplicate_of == "B" and decisions["B-copy-2"].duplicate_of == "B"
    result = related(es_client, es_index, a_id, size=5)
    near_ids = {n["id"] for n in result.near_duplicates}
    assert {"A-copy-1", "A-copy-2"} <= near_ids
    related_ids = [e.id for e in result.related]
    assert a_id not in related_ids and not near_ids & set(related_ids)
    assert len({e.cluster_id for e in result.related}) == len(result.related), "one entry per story"
    story_b = next(e for e in result.related if e.cluster_id == "B")
    assert story_b is result.related[0], "the half-shared story is the most related"
    assert story_b.similar_reports == 2
    assert set(story_b.folded) | {story_b.id} == {"B", "B-copy-1", "B-copy-2"}


def test_unknown_document_is_a_lookup_error(es_client, es_index, news_index):
    with pytest.raises(LookupError, match="no document"):
        related(es_client, es_index, "does-not-exist")
