"""``es similar``: the near-duplicates and exact copies of one document in an index, nearest first."""

from __future__ import annotations

from elasticsearch import Elasticsearch

from fingerprint_indexer.es.codec import (
    IMAGE_KEYS_FIELD,
    IMAGES_FIELD,
    VERIFY_FIELDS,
    hit_fingerprints,
    source_pictures,
)
from fingerprint_indexer.fingerprint.image import ImageFingerprint, distance, key_text, query_keys, same_photo
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.records.neighbour import Neighbour, split_neighbours
from fingerprint_indexer.verification import Evidence, closest

#: Exact copies listed at most (documents sharing the content digest).
EXACT_LIMIT = 1000
#: Documents whose pictures share a look-up key with the query picture, read at most.
PICTURE_CANDIDATES = 1000


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


def similar_pictures(client: Elasticsearch, index: str, fp: ImageFingerprint) -> list[dict[str, object]]:
    """The documents of ``index`` with a picture of the same photo as ``fp``: one line per such picture
    (document id, picture name, distance, exact), the same pixels first, then nearest. The candidates are
    the documents whose ``image_keys`` hold a key of one of ``fp``'s windows; the rule judges each of
    their pictures."""
    res = client.search(index=index, size=PICTURE_CANDIDATES, source_includes=[IMAGES_FIELD],
                        query={"terms": {IMAGE_KEYS_FIELD: [key_text(k) for k in query_keys(fp)]}})
    found = []
    for hit in res["hits"]["hits"]:
        for name, other in source_pictures(hit.get("_source") or {}):
            if same_photo(fp, other):
                exact = other.digest == fp.digest
                d = 0 if exact else distance(fp, other)
                found.append({"id": hit["_id"], "image": name, "distance": d, "exact": exact})
    return sorted(found, key=lambda f: (not f["exact"], f["distance"], str(f["id"]), str(f["image"])))
