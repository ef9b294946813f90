"""Browsing an embedded store (the explorer page's first view): clusters largest first, paged; counts by
decision; the most recent near-duplicates with the verification rule's reason; a cluster's members; a
stored document with its text (read from the inputs the store recorded: it keeps none itself).

These read the service's embedded stores (:class:`~fingerprint_indexer.sidecar.worker.StoreOwner`), with
or without Elasticsearch; a stateless service (``--state elasticsearch``) keeps none and answers 501.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request

from fingerprint_indexer.fingerprint.winnow import document_text
from fingerprint_indexer.records.record import DocRecord
from fingerprint_indexer.sidecar.context import ERRORS, index_name, svc
from fingerprint_indexer.sidecar.errors import ApiError
from fingerprint_indexer.sidecar.state import ServiceState
from fingerprint_indexer.sidecar.worker import StoreOwner
from fingerprint_indexer.store.overview import Overview
from fingerprint_indexer.verification import check

router = APIRouter()
MAX_PAGE = 200


def embedded(state: ServiceState) -> StoreOwner:
    """The service's embedded stores; a 501 for a stateless service, which keeps none."""
    if not isinstance(state.stores, StoreOwner):
        raise ApiError(501, "no_embedded_store", "this service decides against Elasticsearch "
                       "(--state elasticsearch) and keeps no embedded store to browse")
    return state.stores


async def _overview(state: ServiceState, index: str) -> Overview:
    stores = embedded(state)
    got = await stores.call(stores.overview, index)
    if got is None:
        raise ApiError(404, "index_not_found_exception", f"no store for index {index!r}")
    return got


def record_fields(rec: DocRecord) -> dict[str, Any]:
    """What the page shows of a stored decision."""
    return {"id": rec.id, "decision": rec.decision, "duplicate_of": rec.duplicate_of,
            "distance": rec.distance, "cluster_id": rec.cluster_id, "published_at": rec.published_at,
            "decided_at": rec.time}


@router.get("/v1/overview", responses=ERRORS, tags=["browse"])
async def overview(request: Request, index: str | None = None, offset: int = Query(0, ge=0),
                   limit: int = Query(20, ge=1, le=MAX_PAGE)) -> dict[str, Any]:
    """What the store holds: documents, clusters, counts by decision, and a page of the most recent
    near and exact duplicates, each with its canonical, the distance and the verification rule's verdict
    on the pair (``why``: as ``similar --explain`` gives it)."""
    state = svc(request)
    name = index_name(state, index)
    ov = await _overview(state, name)
    stores = embedded(state)
    page = ov.recent[offset : offset + limit]
    k = state.settings.k

    def judge() -> list[dict[str, Any]]:
        out = []
        for rec in page:
            row = record_fields(rec)
            other = stores.record(name, rec.duplicate_of) if rec.duplicate_of else None
            if other is not None:
                row["why"] = check(rec.evidence, other.evidence, k).to_dict()
            out.append(row)
        return out

    rows = await stores.call(judge)
    named = [i for r in rows for i in (r["id"], r["duplicate_of"]) if i]
    titles = await stores.call(stores.titles, name, named)
    for r in rows:
        r["title"] = titles.get(r["id"], "")
        r["duplicate_title"] = titles.get(r["duplicate_of"] or "", "")
    texts = await stores.call(stores.texts, name)
    return {"index": name, "documents": ov.documents, "clusters": len(ov.clusters), "counts": ov.counts,
            "read_only": state.settings.readonly, "elasticsearch": state.es is not None,
            "texts": None if texts.available else texts.why_missing(),
            "recent_total": len(ov.recent), "duplicates": ov.duplicates, "offset": offset, "recent": rows}


@router.get("/v1/clusters", responses=ERRORS, tags=["browse"])
async def clusters(request: Request, index: str | None = None, offset: int = Query(0, ge=0),
                   limit: int = Query(20, ge=1, le=MAX_PAGE), min_size: int = Query(1, ge=1)
                   ) -> dict[str, Any]:  # fmt: skip
    """A page of the store's clusters, largest first (then most recently grown): id, size, canonical and
    its title. ``total`` counts the clusters of at least ``min_size`` documents."""
    state = svc(request)
    name = index_name(state, index)
    ov = await _overview(state, name)
    wanted = [c for c in ov.clusters if c.size >= min_size] if min_size > 1 else ov.clusters
    page = wanted[offset : offset + limit]
    stores = embedded(state)
    titles = await stores.call(stores.titles, name, [c.canonical for c in page])
    rows = [{"id": c.id, "size": c.size, "canonical": c.canonical, "title": titles.get(c.canonical, ""),
             "latest": c.latest} for c in page]  # fmt: skip
    return {"index": name, "total": len(wanted), "offset": offset, "limit": limit, "clusters": rows}


async def store_cluster(state: ServiceState, index: str, cluster_id: str, size: int) -> dict[str, Any]:
    """A cluster's members from the embedded store (``/v1/clusters/{id}`` without Elasticsearch)."""
    ov = await _overview(state, index)
    c = ov.cluster(cluster_id)
    if c is None:
        return {"index": index, "cluster_id": cluster_id, "size": 0, "members": []}
    stores = embedded(state)
    ids = list(c.members[:size])
    recs = await stores.call(lambda: [stores.record(index, i) for i in ids])
    titles = await stores.call(stores.titles, index, ids)
    members = [{**record_fields(r), "title": titles.get(r.id, "")} for r in recs if r is not None]
    return {"index": index, "cluster_id": cluster_id, "size": c.size, "members": members}


async def store_document(state: ServiceState, index: str, doc_id: str) -> dict[str, Any]:
    """A stored document's decision and, when its input can be read, its title and text."""
    stores = embedded(state)
    rec, doc = await stores.call(stores.document, index, doc_id)
    if rec is None:
        raise ApiError(404, "document_missing_exception", f"no document {doc_id!r} in index {index!r}")
    out: dict[str, Any] = {"index": index, **record_fields(rec), "title": "", "text": "", "url": None}
    if doc is not None:
        out.update(title=doc.title, text=document_text(doc), url=doc.url)
    else:
        texts = await stores.call(stores.texts, index)
        out["text_missing"] = ("its input was not found" if texts.available
                               else f"no text: {texts.why_missing()}")
    return out


async def store_text(state: ServiceState, index: str, doc_id: str) -> str:
    """A stored document's text, as passage offsets refer to it; a 404 without its record, a 409 when
    its input cannot be read."""
    got = await store_document(state, index, doc_id)
    if "text_missing" in got:
        raise ApiError(409, "text_unavailable",
                       f"the store keeps no text of {doc_id!r} ({got['text_missing']})")
    return str(got["text"])


__all__ = ["router"]
