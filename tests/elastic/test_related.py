"""Related articles: the pure query and folding logic, and the whole lookup on real news in a real node."""

from __future__ import annotations

from typing import Any

import pytest
from support.corpus import ZH_NEWS, iter_records

from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.es_ingest import EsDecider, pipelined
from fingerprint_indexer.elastic.related import (
    OVERFETCH,
    QUERY_TERMS,
    RelatedEntry,
    RelatedResult,
    cluster_sizes_query,
    fold_hits,
    related,
    related_query,
    with_cluster_sizes,
)
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.fingerprint.hamming import hamming
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex


# ------------------------------------------------------------------------------------------ pure logic
def _hit(doc_id: str, score: float, cluster: str | None = None, title: object = "t") -> dict[str, Any]:
    src: dict[str, Any] = {"title": title}
    if cluster is not None:
        src["cluster_id"] = cluster
    return {"_id": doc_id, "_score": score, "_source": src}


def _search(*hits: dict[str, Any]) -> dict[str, Any]:
    return {"hits": {"hits": list(hits)}}


def test_query_seeds_with_the_head_of_the_terms_and_leaves_out_the_story_itself() -> None:
    terms = " ".join(f"w{i}" for i in range(QUERY_TERMS + 10))
    body = related_query("news-v2", "a", {"cluster_id": "c-a", "terms": terms}, {"a-copy", "a"}, size=5)
    mlt = body["query"]["bool"]["must"][0]["more_like_this"]
    assert mlt["like"] == " ".join(f"w{i}" for i in range(QUERY_TERMS))
    assert mlt["fields"] == ["terms"]
    assert body["query"]["bool"]["must_not"] == [{"ids": {"values": ["a", "a-copy"]}},
                                                 {"term": {"cluster_id": "c-a"}}]
    assert body["size"] == 5 * OVERFETCH
    assert set(body["_source"]) == {"title", "cluster_id"}


def test_query_without_terms_is_seeded_with_the_document_and_its_text_fields() -> None:
    body = related_query("news-v2", "a", {}, (), size=3)
    mlt = body["query"]["bool"]["must"][0]["more_like_this"]
    assert mlt["like"] == [{"_index": "news-v2", "_id": "a"}]
    assert mlt["fields"] == ["terms", "title", "content"]
    assert body["query"]["bool"]["must_not"] == [{"ids": {"values": ["a"]}}]


def test_fold_one_entry_per_story_led_by_its_best_hit() -> None:
    resp = _search(_hit("b1", 9.0, "B", "story b"), _hit("c1", 8.0, "C"), _hit("b2", 7.0, "B"),
                   _hit("u", 6.0, title=None), _hit("d1", 5.0, "D"), _hit("b3", 4.0, "B"),
                   _hit("c2", 3.0, "C"))
    entries = fold_hits(resp, size=3)
    assert [(e.id, e.cluster_id, e.folded) for e in entries] == [
        ("b1", "B", ["b2", "b3"]), ("c1", "C", ["c2"]), ("u", None, [])]  # d1 is a fourth story: cut
    assert [e.similar_reports for e in entries] == [2, 1, 0]
    assert entries[0].title == "story b" and entries[2].title is None
    assert entries[0].members == ["b1", "b2", "b3"] and entries[0].score == 9.0


def test_fold_keeps_an_unclustered_hit_apart_from_a_cluster_of_the_same_name() -> None:
    entries = fold_hits(_search(_hit("x", 2.0, "x"), _hit("y", 1.0), _hit("x-copy", 0.5, "x")), size=5)
    assert [e.members for e in entries] == [["x", "x-copy"], ["y"]]
    assert fold_hits(_search(), size=5) == []


def test_similar_reports_count_the_whole_cluster_not_only_the_hits() -> None:
    entries = fold_hits(_search(_hit("b1", 3.0, "B"), _hit("b2", 2.0, "B"), _hit("u", 1.0)), size=5)
    body = cluster_sizes_query(entries)
    assert body is not None and body["query"] == {"terms": {"cluster_id": ["B"]}}
    count = {"aggregations": {"c": {"buckets": [{"key": "B", "doc_count": 7}]}}}
    counted = with_cluster_sizes(entries, count)
    assert [e.similar_reports for e in counted] == [6, 0]
    # a cluster the count does not see (e.g. written meanwhile) still counts the reports that were folded
    assert [e.similar_reports for e in with_cluster_sizes(entries, None)] == [1, 0]
    assert cluster_sizes_query(fold_hits(_search(_hit("u", 1.0)), size=5)) is None


def test_cli_output_names_an_unclustered_entry_by_its_own_id() -> None:
    result = RelatedResult("a", None, [], [RelatedEntry("u", None, 1.5, None),
                                          RelatedEntry("b1", "B", 2.0, "B", 1, ["b2"])])
    assert result.to_dict()["related"] == [
        {"id": "u", "title": "", "score": 1.5, "cluster_id": "u", "similar_reports": 0, "folded": []},
        {"id": "b1", "title": "B", "score": 2.0, "cluster_id": "B", "similar_reports": 1, "folded": ["b2"]},
    ]


# ------------------------------------------------------------------------------------------ real node


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


@pytest.mark.elasticsearch
@pytest.mark.corpus
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


@pytest.mark.elasticsearch
@pytest.mark.corpus
def test_unknown_document_is_a_lookup_error(es_client, es_index, news_index):
    with pytest.raises(LookupError, match="no document"):
        related(es_client, es_index, "does-not-exist")
