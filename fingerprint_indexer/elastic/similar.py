"""``es similar``: the near-duplicates and exact copies of one document in an index, nearest first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from elasticsearch import Elasticsearch

from fingerprint_indexer.es.codec import VERIFY_FIELDS, hit_fingerprints
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.verification import Evidence, closest

#: Exact copies listed at most (documents sharing the content digest).
EXACT_LIMIT = 1000


@dataclass(frozen=True)
class Similar:
    """One stored document like the query: its distance, cluster and canonical."""

    id: str
    distance: int
    cluster_id: str | None
    duplicate_of: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "distance": self.distance, "cluster_id": self.cluster_id,
                "duplicate_of": self.duplicate_of}  # fmt: skip


def similar(
    client: Elasticsearch, index: ElasticsearchIndex, ev: Evidence, digest: str | None, k: int = 3,
    exclude: str | None = None,
) -> list[Similar]:  # fmt: skip
    """The documents of ``index`` within ``k`` of evidence ``ev`` that the verification rule accepts, and
    the exact copies (content ``digest``; also those too short to be in the block index), less
    ``exclude``, by (distance, id): one verified look-up, one digest search, one ``mget``."""
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
    ordered = sorted(hits.items(), key=lambda kv: (kv[1], kv[0]))
    docs = client.mget(index=index.index, ids=[i for i, _ in ordered],
                       source_includes=["cluster_id", "duplicate_of"])["docs"]  # fmt: skip
    out = []
    for (other_id, dist), d in zip(ordered, docs, strict=True):
        meta = d.get("_source") or {}
        out.append(Similar(other_id, dist, meta.get("cluster_id"), meta.get("duplicate_of")))
    return out
