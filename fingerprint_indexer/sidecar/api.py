"""The ``/v1`` endpoints and the probes."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import quote

import httpx
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from fingerprint_indexer.elastic.related import (
    SOURCE_FIELDS,
    RelatedEntry,
    cluster_sizes_query,
    fold_hits,
    related_query,
    with_cluster_sizes,
)
from fingerprint_indexer.elastic.similar import matching_pictures, picture_query
from fingerprint_indexer.es.codec import result_fields
from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.fingerprint.hamming import to_hex
from fingerprint_indexer.fingerprint.image import ImageError
from fingerprint_indexer.sidecar.context import ERRORS, index_name, svc
from fingerprint_indexer.sidecar.delivery import BulkOp, is_queued
from fingerprint_indexer.sidecar.errors import ApiError, es_answers, needs_elasticsearch
from fingerprint_indexer.sidecar.ingest import decide, es_fields, picture_fields, picture_of_base64, relink_op
from fingerprint_indexer.sidecar.models import (
    FingerprintRequest,
    FingerprintResponse,
    IngestRequest,
    IngestResponse,
    Probe,
    RelatedResponse,
    SimilarRequest,
    SimilarResponse,
)
from fingerprint_indexer.sidecar.state import ServiceState
from fingerprint_indexer.sidecar.worker import StoreOwner

router = APIRouter()


def _k(state: ServiceState, k: int | None) -> int:
    k = state.settings.k if k is None else k
    if not 0 <= k <= state.layout.max_k:
        raise ApiError(400, "illegal_argument_exception",
                       f"k must be between 0 and {state.layout.max_k} for this block layout ({state.layout})")
    return k


@router.post("/v1/fingerprint", response_model=FingerprintResponse, responses=ERRORS, tags=["v1"])
async def fingerprint(body: FingerprintRequest, request: Request) -> dict[str, Any]:
    """Fingerprint text or HTML: fingerprint, block keys, digests, top terms and the fields to index."""
    state = svc(request)
    assert state.pool is not None
    res = await state.pool.raw(body.text, body.html)
    out = res.to_dict(with_terms=body.with_terms)
    out.pop("id", None)
    out["fields"] = result_fields(res, await state.es_layout(state.settings.default_index))
    return out


@router.post("/v1/ingest", response_model=IngestResponse, responses={**ERRORS, 429: {
    "description": "Elasticsearch is behind and the spool is full (see Retry-After)"}}, tags=["v1"])
async def ingest(body: IngestRequest, request: Request) -> dict[str, Any]:
    """The ingest hook: decide new / exact / near duplicate for one document or a batch and return the
    fields to add; with ``index: true`` also write the documents into Elasticsearch (queued in the
    durable spool while Elasticsearch is unavailable). Under ``keep=longest|newest`` a document that
    becomes its group's canonical is reported with ``replaces``; with ``index: true`` the replaced
    document's ``duplicate_of`` and ``distance`` are updated in Elasticsearch as well."""
    state = svc(request)
    assert state.pool is not None
    if body.index and state.delivery is None:
        raise needs_elasticsearch("writing documents into an index (\"index\": true)")
    started = time.perf_counter()
    docs = body.docs()
    if len(docs) > state.settings.max_batch:
        raise ApiError(413, "batch_too_large",
                       f"{len(docs)} documents in one request; the limit is {state.settings.max_batch}")
    index = index_name(state, body.index_name)
    policy = body.on_duplicate or state.settings.on_duplicate
    t0 = time.perf_counter()
    decided = await decide(state.pool, state.stores, [(index, d.to_document()) for d in docs])
    state.metrics.fingerprint_seconds.observe(time.perf_counter() - t0)
    results: list[dict[str, Any]] = []
    ops: list[BulkOp] = []
    op_of: dict[int, int] = {}
    layout = await state.es_layout(index)
    for i, (doc_in, d) in enumerate(zip(docs, decided, strict=True)):
        state.metrics.documents.labels(d.decision.decision).inc()
        fields = es_fields(d.result, d.decision, layout, d.doc.length)
        if doc_in.images:  # decoding is CPU work: off the event loop
            fields.update(await asyncio.to_thread(picture_fields, doc_in.images))
        res = d.decision.to_dict()
        res.update(degenerate=d.result.degenerate, fields=fields, index=None)
        results.append(res)
        if body.index:
            if policy == "skip" and d.is_duplicate:
                state.metrics.skipped.inc()
                res["index"] = {"status": 200, "result": "skipped"}
            else:
                op_of[i] = len(ops)
                ops.append(BulkOp("index", {"_index": index, "_id": d.doc.id}, {**doc_in.source(), **fields},
                                  fingerprinted=True))
                if (relink := relink_op(index, d.decision)) is not None:
                    ops.append(relink)  # right after its write, in the same request (or spool frame)
    errors = False
    unwritten = [(d.doc.id, d.result.content_digest) for i, d in enumerate(decided) if i not in op_of]
    if unwritten:
        await state.stores.call(state.stores.discard, index, unwritten)
    if ops:
        assert state.delivery is not None
        items = await state.delivery.submit(ops, {})
        await state.stores.call(state.stores.settle, index, [str(op.id) for op in ops])
        for i, j in op_of.items():
            item = next(iter(items[j].values()))
            outcome = {"status": int(item.get("status", 500)), "result": item.get("result")}
            if is_queued(items[j]):  # this API's own answer for a write kept in the spool
                outcome = {"status": 202, "result": "queued"}
            if item.get("error") is not None:
                outcome["error"] = item["error"]
                errors = True
            results[i]["index"] = outcome
    return {"took_ms": round((time.perf_counter() - started) * 1000), "errors": errors, "results": results}


async def _judged(state: ServiceState, index: str, ev: Evidence, digest: str, k: int,
                  exclude: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(near-duplicates, candidates the verification rule rejected with the reason), nearest first."""
    found = await state.stores.call(state.stores.neighbours, index, ev, digest, k, exclude)
    return [n.to_dict() for n in found.matches], [n.to_dict() for n in found.rejected]


async def _similar(state: ServiceState, index: str, ev: Evidence, digest: str, k: int,
                   exclude: str | None) -> list[dict[str, Any]]:
    return (await _judged(state, index, ev, digest, k, exclude))[0]


@router.get("/v1/similar/{doc_id:path}", response_model=SimilarResponse, responses={**ERRORS, 404: {
    "description": "No such document in the store"}}, tags=["v1"])
async def similar_by_id(doc_id: str, request: Request, index: str | None = None,
                        k: int | None = Query(None, ge=0, le=63)) -> dict[str, Any]:
    """Near-duplicates of a stored document, nearest first (the id may contain ``/``)."""
    state = svc(request)
    name, kk = index_name(state, index), _k(state, k)
    rec = await state.stores.call(state.stores.record, name, doc_id)
    if rec is None:
        raise ApiError(404, "document_missing_exception", f"no document {doc_id!r} in index {name!r}")
    matches, rejected = await _judged(state, name, rec.evidence, rec.content_digest, kk, doc_id)
    return {"index": name, "id": doc_id, "fingerprint": to_hex(rec.fingerprint), "k": kk, "matches": matches,
            "rejected": rejected}


@router.post("/v1/similar", response_model=SimilarResponse, responses=ERRORS, tags=["v1"])
async def similar_by_text(body: SimilarRequest, request: Request) -> dict[str, Any]:
    """Stored near-duplicates of raw text or HTML, nearest first; or, for a picture, the documents with a
    picture of the same photo (``images``: the same pixels first, then nearest)."""
    state = svc(request)
    assert state.pool is not None
    name, kk = index_name(state, body.index_name), _k(state, body.k)
    if body.image is not None:
        try:
            _, fp, _ = await asyncio.to_thread(picture_of_base64, body.image, "image")
        except ImageError as exc:
            raise ApiError(400, "image_error", str(exc)) from None
        if state.es is None:
            raise needs_elasticsearch("looking up pictures")
        with es_answers(f"pictures like the one given, in {name!r}"):
            r = await state.es.http.post(f"/{name}/_search", json=picture_query(fp))
            if r.status_code != 404:  # 404: no index yet, so no document has a picture
                r.raise_for_status()
        hits: list[dict[str, Any]] = [] if r.status_code == 404 else r.json()["hits"]["hits"]
        return {"index": name, "fingerprint": f"{fp.phash:016x}", "k": kk, "matches": [],
                "images": matching_pictures(fp, hits)}
    res = await state.pool.raw(body.text, body.html)
    matches, rejected = await _judged(state, name, res.evidence, res.content_digest, kk, None)
    return {"index": name, "fingerprint": res.hex, "k": kk, "matches": matches, "rejected": rejected}


async def _related_entries(http: httpx.AsyncClient, index: str, doc_id: str, size: int,
                           exclude: set[str]) -> list[RelatedEntry] | None:
    """The related-articles requests over the service's client; None when the document does not exist."""
    r = await http.get(f"/{index}/_doc/{quote(doc_id, safe='')}",
                       params={"_source_includes": ",".join(SOURCE_FIELDS)})
    if r.status_code == 404:
        return None
    r.raise_for_status()
    doc = r.json()
    body = related_query(doc["_index"], doc_id, doc.get("_source") or {}, exclude, size)
    r = await http.post(f"/{index}/_search", json=body)
    r.raise_for_status()
    entries = fold_hits(r.json(), size)
    sizes = None
    if (count := cluster_sizes_query(entries)) is not None:
        r = await http.post(f"/{index}/_search", json=count)
        r.raise_for_status()
        sizes = r.json()
    return with_cluster_sizes(entries, sizes)


@router.get("/v1/related/{doc_id:path}", response_model=RelatedResponse, responses={**ERRORS, 404: {
    "description": "No such document"}, 503: {"description": "Elasticsearch unavailable"}}, tags=["v1"])
async def related(doc_id: str, request: Request, index: str | None = None,
                  size: int = Query(10, ge=1, le=100)) -> dict[str, Any]:
    """Related articles: topical neighbours from Elasticsearch (more_like_this) with near-duplicates of
    one story folded into one entry, and this document's own near-duplicates listed separately. Without
    Elasticsearch, the near-duplicates alone (``related`` is empty: topics are the cluster's to find)."""
    state = svc(request)
    name = index_name(state, index)
    rec = await state.stores.call(state.stores.record, name, doc_id)
    dups: list[dict[str, Any]] = []
    if rec is not None:
        dups = await _similar(state, name, rec.evidence, rec.content_digest, state.settings.k, doc_id)
    if state.es is None:
        if rec is None:
            raise ApiError(404, "document_missing_exception", f"no document {doc_id!r} in index {name!r}")
        return {"index": name, "id": doc_id, "related": [], "duplicates": dups}
    with es_answers(f"related articles of {doc_id!r}"):
        entries = await _related_entries(state.es.http, name, doc_id, size, exclude={d["id"] for d in dups})
    if entries is None:
        raise ApiError(404, "document_missing_exception", f"no document {doc_id!r} in index {name!r}")
    shown = [{"id": e.id, "title": e.title, "score": e.score, "cluster_id": e.cluster_id,
              "similar_reports": e.similar_reports, "members": e.members} for e in entries]  # fmt: skip
    return {"index": name, "id": doc_id, "related": shown, "duplicates": dups}


@router.get("/healthz", response_model=Probe, tags=["probes"])
async def healthz() -> dict[str, Any]:
    """The process is up and serving."""
    return {"status": "ok", "checks": {}}


@router.get("/readyz", response_model=Probe, responses={503: {"model": Probe}}, tags=["probes"])
async def readyz(request: Request) -> Response:
    """Ready: store open, worker pool started, Elasticsearch reachable; also reports the spool depth."""
    state = svc(request)
    if isinstance(state.stores, StoreOwner):
        store_ok = await state.stores.call(state.stores.store, state.settings.default_index) is not None
    else:
        store_ok = await state.stores.call(state.stores.pipeline, state.settings.default_index) is not None
    if state.es is None or state.spool is None:  # the embedded store alone
        ok = store_ok and state.pool is not None
        alone = {"store": store_ok, "workers": state.pool is not None, "elasticsearch": "not configured",
                 "read_only": state.settings.readonly}
        return JSONResponse({"status": "ready" if ok else "not_ready", "checks": alone},
                            status_code=200 if ok else 503)
    es_ok = await state.es.ping()
    checks: dict[str, Any] = {"store": store_ok, "workers": state.pool is not None, "elasticsearch": es_ok,
                              "spool_depth": state.spool.depth}
    if not es_ok:  # why, without credentials or URLs: what an operator needs first
        checks["elasticsearch_reason"] = state.es.last_error
    replayer = state.replayer
    if replayer is not None:
        if replayer.waiting and state.spool.depth:
            checks["spool_waiting"] = replayer.waiting
        if replayer.parked:  # writes Elasticsearch kept refusing: listed in rejected.ndjson
            checks["parked"] = replayer.parked
            checks["last_parked"] = replayer.last_parked
    ok = store_ok and es_ok and state.pool is not None
    return JSONResponse({"status": "ready" if ok else "not_ready", "checks": checks},
                        status_code=200 if ok else 503)


@router.get("/metrics", tags=["probes"], response_class=Response)
async def metrics(request: Request) -> Response:
    """Prometheus metrics."""
    body, ctype = svc(request).metrics.render()
    return Response(body, media_type=ctype)
