"""``es similar``: the near-duplicates and exact copies of one document in an index, nearest first."""

from __future__ import annotations

from elasticsearch import Elasticsearch

from fingerprint_indexer.es.codec import VERIFY_FIELDS, hit_fingerprints
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.records.neighbour import Neighbour, split_neighbours
from fingerprint_indexer.verification import Evidence, closest

#: Exact copies listed at most (documents sharing the content digest).
EXACT_LIMIT = 1000


def similar(
    client: Elasticsearch, index: ElasticsearchIndex, ev: Evidence, digest: str | None, k: int = 3,
    exclude: str | None = None,
) -> list[Neighbour]:  # fmt: skip
    """The documents of ``index`` within ``k`` of evidence ``ev`` that the verification rule accepts, and
    the exact copies (content ``digest``; also those too short to be in the block index), less
    ``exclude``, by (distance, id): one verified look-up, one digest search, one ``mget``.

    The candidates the rule rejects are not reported (the verified look-up drops them on its way), so
    the neighbours carry no verdict."""
    fps = list(ev.fingerprints)
    hits = {m.doc_id: m.distance for m in index.query_verified(ev, k)}
    if digest:
        same = client.search(index=index.index, query={"term": {"content_digest": digest}}, size=EXACT_LIMIT,
                             source=False, docvalue_fields=VERIFY_FIELDS)  # fmt: skip
        for h in same["hits"]["hits"]:
            hits.setdefault(h["_id"], closest(fps, hit_fingerprints(h["fields"]))[0])
    hits.pop(exclude or "", None)
    if not hits:
        return []
    found = []
    docs = client.mget(index=index.index, ids=list(hits),
                       source_includes=["cluster_id", "duplicate_of"])["docs"]  # fmt: skip
    for (other_id, dist), d in zip(hits.items(), docs, strict=True):
        meta = d.get("_source") or {}
        found.append(Neighbour(other_id, dist, meta.get("cluster_id"), meta.get("duplicate_of")))
    return split_neighbours(found).matches
