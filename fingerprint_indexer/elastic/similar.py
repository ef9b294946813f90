"""The near-duplicate look-up of one document in an index (``es similar`` and ``/v1/similar`` of a stateless
sidecar): every look-alike with the verification rule's verdict, the near-duplicates first."""

from __future__ import annotations

from elasticsearch import Elasticsearch

from fingerprint_indexer.es.codec import VERIFY_FIELDS
from fingerprint_indexer.es.scan import WHOLE
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.records.neighbour import Neighbour, Neighbours, split_neighbours
from fingerprint_indexer.verification import Evidence

#: Exact copies listed at most (documents sharing the content digest).
EXACT_LIMIT = 1000


def similar(
    client: Elasticsearch, index: ElasticsearchIndex, ev: Evidence, digest: str | None, k: int = 3,
    exclude: str | None = None,
) -> Neighbours:  # fmt: skip
    """The documents of ``index`` like evidence ``ev``, less ``exclude``, judged by the verification rule:
    the candidates of :meth:`ElasticsearchIndex.query_judged` (accepted and rejected) and the exact copies
    (content ``digest``; also those too short to be in the block index, always accepted), in the order of
    :func:`split_neighbours`: one judged look-up, one digest search, one ``mget`` of their clusters."""
    judged = dict(index.query_judged(ev, k, exclude))
    exact: set[str] = set()
    if digest:
        resp = client.search(index=index.index, query={"term": {"content_digest": digest}}, size=EXACT_LIMIT,
                             source=False, docvalue_fields=VERIFY_FIELDS, **WHOLE)  # fmt: skip
        same = resp["hits"]["hits"]
        exact = {str(h["_id"]) for h in same}
        judged.update(index.judge_hits(ev, [h for h in same if str(h["_id"]) not in judged], k, exclude))
    if not judged:
        return Neighbours([], [])
    docs = client.mget(index=index.index, ids=list(judged),
                       source_includes=["cluster_id", "duplicate_of"])["docs"]  # fmt: skip
    found = []
    for (doc_id, verdict), d in zip(judged.items(), docs, strict=True):
        meta = d.get("_source") or {}
        found.append(Neighbour.of(doc_id, meta.get("cluster_id"), meta.get("duplicate_of"), verdict,
                                  exact=doc_id in exact))  # fmt: skip
    return split_neighbours(found)
