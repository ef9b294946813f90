"""Related articles: topical neighbours from ``more_like_this``, with near-duplicate reports folded.

A news site's "related articles" box should not list five copies of one wire story. Neighbours come from
``more_like_this`` over the jieba-segmented ``terms``, seeded with the article's own top TF-IDF terms (the
head of its ``terms`` field, weighted by our corpus-independent IDF). Seeding with the document itself
would let Elasticsearch pick the terms rarest in the index, which are exactly the ones only the article's
own copies share, so the copies would crowd out every other story. Hits of one cluster are folded into one
entry that says how many similar reports the story has, and the article's own near-duplicates (its
cluster, or verified near-duplicates: a fingerprint pair within Hamming distance ``k`` confirmed by the
sketch, see :meth:`ElasticsearchIndex.query_verified`) are returned separately instead of as "related".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError

from fingerprint_indexer.index.elasticsearch import (
    FP_FIELD,
    FPS_FIELD,
    SKETCH_FIELD,
    ElasticsearchIndex,
    source_fingerprints,
)

MLT_FIELDS = ("terms",)
QUERY_TERMS = 40


@dataclass
class RelatedEntry:
    """One story in the related box: its best-scoring report and how many similar reports it has."""

    id: str
    title: str
    score: float
    cluster_id: str
    similar_reports: int = 0
    folded: list[str] = field(default_factory=list)


@dataclass
class RelatedResult:
    id: str
    cluster_id: str | None
    near_duplicates: list[dict[str, Any]]
    related: list[RelatedEntry]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cluster_sizes(client: Elasticsearch, index: str, clusters: list[str]) -> dict[str, int]:
    if not clusters:
        return {}
    resp = client.search(index=index, size=0, query={"terms": {"cluster_id": clusters}},
                         aggs={"c": {"terms": {"field": "cluster_id", "size": len(clusters)}}})  # fmt: skip
    return {b["key"]: int(b["doc_count"]) for b in resp["aggregations"]["c"]["buckets"]}


def related(
    client: Elasticsearch,
    index: str,
    doc_id: str,
    size: int = 10,
    k: int = 3,
    fields: tuple[str, ...] = MLT_FIELDS,
) -> RelatedResult:
    """Related stories for ``doc_id`` (near-duplicates folded) and its own near-duplicates.

    Raises LookupError when the document is not in the index.
    """
    try:
        doc = client.get(index=index, id=doc_id,
                         source_includes=[FP_FIELD, FPS_FIELD, SKETCH_FIELD, "cluster_id", "title", "terms"])
    except NotFoundError as exc:
        raise LookupError(f"no document {doc_id!r} in index {index!r}") from exc
    src = doc.get("_source") or {}
    own_cluster = src.get("cluster_id")
    near: list[dict[str, Any]] = []
    if src.get(FP_FIELD) is not None:
        fps, sketch = source_fingerprints(src)
        es_index = ElasticsearchIndex(client, index, create=False)
        matches = es_index.query_verified(fps, sketch, k, exclude=doc_id)
        near = [{"id": m.doc_id, "distance": m.distance} for m in matches]
    if own_cluster:  # reports clustered with this one are near-duplicates too, even beyond k
        resp = client.search(
            index=index, query={"term": {"cluster_id": own_cluster}}, source=False, size=1000
        )
        listed = {n["id"] for n in near}
        near += [{"id": h["_id"], "distance": None} for h in resp["hits"]["hits"]
                 if h["_id"] != doc_id and h["_id"] not in listed]  # fmt: skip

    must_not: list[dict[str, Any]] = [{"ids": {"values": [doc_id, *(n["id"] for n in near)]}}]
    if own_cluster:
        must_not.append({"term": {"cluster_id": own_cluster}})
    terms = str(src.get("terms") or "").split()[:QUERY_TERMS]
    like: Any = " ".join(terms) if terms else [{"_index": doc["_index"], "_id": doc_id}]
    search_fields = list(fields) if terms else [*fields, "title", "content"]
    mlt = {"more_like_this": {"fields": search_fields, "like": like, "min_term_freq": 1, "min_doc_freq": 1,
                              "max_query_terms": QUERY_TERMS, "minimum_should_match": 3}}  # fmt: skip
    resp = client.search(index=index, query={"bool": {"must": [mlt], "must_not": must_not}}, size=size * 4,
                         source_includes=["title", "cluster_id"])  # fmt: skip
    entries: dict[str, RelatedEntry] = {}
    for hit in resp["hits"]["hits"]:
        hs = hit.get("_source") or {}
        cluster = str(hs.get("cluster_id") or hit["_id"])
        if cluster in entries:
            entries[cluster].folded.append(hit["_id"])
        elif len(entries) < size:
            entries[cluster] = RelatedEntry(
                hit["_id"], str(hs.get("title") or ""), float(hit["_score"]), cluster
            )
    sizes = _cluster_sizes(client, index, list(entries))
    for cluster, entry in entries.items():
        entry.similar_reports = max(sizes.get(cluster, 1) - 1, len(entry.folded))
    return RelatedResult(doc_id, own_cluster, near, list(entries.values()))
