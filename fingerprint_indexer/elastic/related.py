"""Related articles: topical neighbours from ``more_like_this``, with near-duplicate reports folded.

A news site's "related articles" box should not list five copies of one wire story. Neighbours come from
``more_like_this`` over the jieba-segmented ``terms``, seeded with the article's own top TF-IDF terms (the
head of its ``terms`` field, weighted by our corpus-independent IDF). Seeding with the document itself
would let Elasticsearch pick the terms rarest in the index, which are exactly the ones only the article's
own copies share, so the copies would crowd out every other story. Hits of one cluster are folded into one
entry that says how many similar reports the story has (its whole cluster in the index, not only the hits
that made the page), and the article's own near-duplicates (its cluster, or verified near-duplicates: a
fingerprint pair within Hamming distance ``k`` confirmed by the sketch) are left out of the query and
returned separately instead of as "related".

The logic is pure: :func:`related_query` builds the search body from the article's source,
:func:`fold_hits` turns the search response into entries, :func:`cluster_sizes_query` and
:func:`with_cluster_sizes` count each story's reports. Two thin edges run the requests: :func:`related`
here over the official client (the ``es related`` command) and the ``/v1/related`` route of the HTTP
service over its own asynchronous client.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from elasticsearch import Elasticsearch

from fingerprint_indexer.es.codec import (
    FACTS_FIELD,
    FP_FIELD,
    FPS_FIELD,
    FRAMES_FIELD,
    SKETCH_FIELD,
    source_evidence,
)
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex

MLT_FIELDS = ("terms",)
QUERY_TERMS = 40
OVERFETCH = 4  # hits fetched per entry shown, so that folded copies do not leave the box short
SOURCE_FIELDS = ("cluster_id", "terms")  # what the query needs from the article itself
HIT_FIELDS = ("title", "cluster_id")  # what an entry shows of a hit


@dataclass
class RelatedEntry:
    """One story in the related box: its best-scoring report and how many similar reports it has."""

    id: str
    title: str | None
    score: float
    cluster_id: str | None
    similar_reports: int = 0
    folded: list[str] = field(default_factory=list)

    @property
    def members(self) -> list[str]:
        """The reports listed for this story, the leading one first."""
        return [self.id, *self.folded]


# ------------------------------------------------------------------------------------------ pure logic
def related_query(
    index: str,
    doc_id: str,
    source: Mapping[str, Any],
    exclude: Collection[str],
    size: int,
    fields: tuple[str, ...] = MLT_FIELDS,
) -> dict[str, Any]:
    """The search body for the topical neighbours of ``doc_id`` (whose ``source`` holds at least
    :data:`SOURCE_FIELDS`), leaving out the article, the ids in ``exclude`` and its own cluster.

    An article without ``terms`` (indexed by something else) is matched on its title and body instead.
    """
    must_not: list[dict[str, Any]] = [{"ids": {"values": [doc_id, *sorted(set(exclude) - {doc_id})]}}]
    own_cluster = source.get("cluster_id")
    if own_cluster:
        must_not.append({"term": {"cluster_id": own_cluster}})
    terms = str(source.get("terms") or "").split()[:QUERY_TERMS]
    like: Any = " ".join(terms) if terms else [{"_index": index, "_id": doc_id}]
    search_fields = list(fields) if terms else [*fields, "title", "content"]
    mlt = {"more_like_this": {"fields": search_fields, "like": like, "min_term_freq": 1, "min_doc_freq": 1,
                              "max_query_terms": QUERY_TERMS, "minimum_should_match": 3}}  # fmt: skip
    return {"query": {"bool": {"must": [mlt], "must_not": must_not}}, "size": size * OVERFETCH,
            "_source": list(HIT_FIELDS)}  # fmt: skip


def fold_hits(response: Mapping[str, Any], size: int) -> list[RelatedEntry]:
    """Up to ``size`` entries from a search response, best first: hits of one cluster become one entry led
    by the best-scoring one (later hits of a listed story are still folded into it)."""
    entries: dict[tuple[str, str], RelatedEntry] = {}
    for hit in response["hits"]["hits"]:
        hid = str(hit["_id"])
        src = hit.get("_source") or {}
        cluster = src.get("cluster_id")
        cluster = str(cluster) if cluster else None
        key = ("c", cluster) if cluster else ("d", hid)
        if key in entries:
            entries[key].folded.append(hid)
        elif len(entries) < size:
            title = src.get("title")
            entries[key] = RelatedEntry(hid, title if isinstance(title, str) else None,
                                        float(hit.get("_score") or 0.0), cluster)  # fmt: skip
    return [replace(e, similar_reports=len(e.folded)) for e in entries.values()]


def cluster_sizes_query(entries: list[RelatedEntry]) -> dict[str, Any] | None:
    """The search body that counts the reports of each entry's cluster; None when no entry has one. The
    counts come from the matching documents' values (``execution_hint: map``), not from global ordinals
    of ``cluster_id``, which has about one value per story and would be rebuilt after every refresh
    (:meth:`~fingerprint_indexer.index.elasticsearch.ElasticsearchIndex.hot_bands` says more)."""
    clusters = sorted({e.cluster_id for e in entries if e.cluster_id})
    if not clusters:
        return None
    return {"size": 0, "query": {"terms": {"cluster_id": clusters}},
            "aggs": {"c": {"terms": {"field": "cluster_id", "size": len(clusters), "execution_hint": "map"}}}}


def with_cluster_sizes(entries: list[RelatedEntry], response: Mapping[str, Any] | None) -> list[RelatedEntry]:
    """``entries`` with ``similar_reports`` = the other reports of the story in the index (at least the
    ones folded into the entry), from the response to :func:`cluster_sizes_query`."""
    buckets = response["aggregations"]["c"]["buckets"] if response else []
    sizes = {str(b["key"]): int(b["doc_count"]) for b in buckets}
    return [replace(e, similar_reports=max(sizes.get(e.cluster_id or "", 1) - 1, len(e.folded)))
            for e in entries]  # fmt: skip


# ------------------------------------------------------------------------------------- the sync edge
@dataclass
class RelatedResult:
    id: str
    cluster_id: str | None
    near_duplicates: list[dict[str, Any]]
    related: list[RelatedEntry]

    def to_dict(self) -> dict[str, Any]:
        """The ``es related`` output: an entry without a cluster is its own one (``cluster_id`` = its id)."""
        related = [{"id": e.id, "title": e.title or "", "score": e.score,
                    "cluster_id": e.cluster_id or e.id, "similar_reports": e.similar_reports,
                    "folded": e.folded} for e in self.related]  # fmt: skip
        return {"id": self.id, "cluster_id": self.cluster_id, "near_duplicates": self.near_duplicates,
                "related": related}  # fmt: skip


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
    doc = client.options(ignore_status=404).get(
        index=index, id=doc_id, source_includes=[FP_FIELD, FPS_FIELD, SKETCH_FIELD, FACTS_FIELD, FRAMES_FIELD,
                                                 *SOURCE_FIELDS])  # fmt: skip
    if doc.meta.status == 404:  # no such document, or no such index
        raise LookupError(f"no document {doc_id!r} in index {index!r}")
    src = doc.get("_source") or {}
    own_cluster = src.get("cluster_id")
    near: list[dict[str, Any]] = []
    if src.get(FP_FIELD) is not None:
        es_index = ElasticsearchIndex(client, index, create=False)
        matches = es_index.query_verified(source_evidence(src), k, exclude=doc_id)
        near = [{"id": m.doc_id, "distance": m.distance} for m in matches]
    if own_cluster:  # reports clustered with this one are near-duplicates too, even beyond k
        resp = client.search(
            index=index, query={"term": {"cluster_id": own_cluster}}, source=False, size=1000
        )
        listed = {n["id"] for n in near}
        near += [{"id": h["_id"], "distance": None} for h in resp["hits"]["hits"]
                 if h["_id"] != doc_id and h["_id"] not in listed]  # fmt: skip
    body = related_query(doc["_index"], doc_id, src, [n["id"] for n in near], size, fields)
    entries = fold_hits(client.search(index=index, body=body).body, size)
    sizes = cluster_sizes_query(entries)
    counted = with_cluster_sizes(entries, client.search(index=index, body=sizes).body if sizes else None)
    return RelatedResult(doc_id, own_cluster, near, counted)
