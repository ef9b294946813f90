"""The near-duplicate look-up of one document in an index (``es similar`` and ``/v1/similar`` of a stateless
sidecar): every look-alike with the verification rule's verdict, the near-duplicates first."""

from __future__ import annotations

from typing import Any

from elasticsearch import Elasticsearch

from fingerprint_indexer.es.codec import IMAGE_KEYS_FIELD, IMAGES_FIELD, VERIFY_FIELDS, source_pictures
from fingerprint_indexer.es.scan import WHOLE
from fingerprint_indexer.fingerprint.image import ImageFingerprint, distance, key_text, query_keys, same_photo
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.records.neighbour import Neighbour, Neighbours, split_neighbours
from fingerprint_indexer.verification import Evidence

#: Exact copies listed at most (documents sharing the content digest).
EXACT_LIMIT = 1000
#: Documents whose pictures share a look-up key with the query picture, read at most.
PICTURE_CANDIDATES = 1000


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


def picture_query(fp: ImageFingerprint) -> dict[str, Any]:
    """The search for documents whose pictures share a look-up key with one of ``fp``'s windows."""
    return {"size": PICTURE_CANDIDATES, "_source": [IMAGES_FIELD],
            "query": {"terms": {IMAGE_KEYS_FIELD: [key_text(k) for k in query_keys(fp)]}}}


def matching_pictures(fp: ImageFingerprint, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pictures of the hits that the rule says show the same photo as ``fp``: one row each (document
    id, picture name, distance, exact, thumbnail), the same pixels first, then nearest."""
    found = []
    for hit in hits:
        for name, other, thumb in source_pictures(hit.get("_source") or {}):
            if same_photo(fp, other):
                exact = other.digest == fp.digest
                d = 0 if exact else distance(fp, other)
                found.append({"id": hit["_id"], "image": name, "distance": d, "exact": exact,
                              "thumbnail": thumb})
    return sorted(found, key=lambda f: (not f["exact"], f["distance"], str(f["id"]), str(f["image"])))


def similar_pictures(client: Elasticsearch, index: str, fp: ImageFingerprint) -> list[dict[str, Any]]:
    """The documents of ``index`` with a picture of the same photo as ``fp`` (:func:`matching_pictures`
    of :func:`picture_query`'s hits)."""
    q = picture_query(fp)
    res = client.search(index=index, size=q["size"], source=q["_source"], query=q["query"])
    return matching_pictures(fp, res["hits"]["hits"])
