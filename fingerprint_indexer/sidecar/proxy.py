"""The Elasticsearch-compatible front: ``_bulk`` and ``_doc``/``_create`` with fingerprints added, and a
byte-for-byte pass-through for every other request.

An existing indexer only changes its URL. For each ``index``/``create`` operation whose source has a
string ``content``, ``html`` or ``title``, the document is fingerprinted and decided, the fingerprint
fields are added to the source, and the duplicate policy applies (``tag``: index it with
``duplicate_of``; ``skip``: do not send it, and answer the item with ``result: noop``). An operation
without ``_id`` gets one here (a random UUID), so a spooled replay can never index it twice.

``update`` operations (bulk, and ``POST /{index}/_update/{id}``) whose partial ``doc`` or ``upsert`` sets a
text field are fingerprinted as the document will be after the update (:mod:`updates` says how); scripted
updates, and updates that set no text field, pass through unchanged.

Deletes and sources without text go through unchanged (sources byte for byte). Answers are in
Elasticsearch's own format, with each fingerprinted item carrying an extra ``fingerprint_indexer`` object.
Queued items (Elasticsearch unavailable, see :mod:`delivery`) are answered as applied and marked
``fingerprint_indexer.queued``.

Requests are read as Elasticsearch reads them (see :mod:`bulk_codec`, :func:`doc_target`); what the proxy
cannot read that way is passed through, so Elasticsearch answers it itself. Every write first makes sure
its index exists with the fingerprint mapping (:meth:`EsClient.ensure_index`, asked per request).

This module holds the routes and the pass-through. The rest is split by concern: :mod:`bulk_codec` reads
requests and writes answers in Elasticsearch's wire format, :mod:`updates` works out what updates (and
creates of known ids) will do to a document, and :mod:`writes` fingerprints, decides and delivers the
operations of a request (:func:`writes.process_ops`), creates and the ``keep`` policy's relinks included.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse
from starlette.background import BackgroundTask

from fingerprint_indexer.es.errors import EsError, EsUnavailable, es_errors
from fingerprint_indexer.sidecar.auth import KEY_HEADERS
from fingerprint_indexer.sidecar.bulk_codec import (
    ANSWER_PARAMS,
    OP_PARAMS,
    QUEUED_HEADER,
    BulkParseError,
    doc_location,
    es_error,
    es_json,
    has_error,
    parse_bulk,
    path_segments,
    read_json,
    readable,
    single_error,
)
from fingerprint_indexer.sidecar.context import svc
from fingerprint_indexer.sidecar.delivery import BulkOp, creates_documents, is_queued
from fingerprint_indexer.sidecar.es import BulkRejected
from fingerprint_indexer.sidecar.state import ServiceState
from fingerprint_indexer.sidecar.updates import is_scripted, update_wants_source
from fingerprint_indexer.sidecar.worker import valid_index_name
from fingerprint_indexer.sidecar.writes import process_ops

log = logging.getLogger("fingerprint_indexer.sidecar")
router = APIRouter()
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                        "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length"})
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]


async def _bulk(request: Request, index: str | None) -> Response:
    state = svc(request)
    if index is not None and not valid_index_name(index):
        return await passthrough(request)
    if not readable(request):
        return await write_through(request, index)
    started = time.perf_counter()
    body = await request.body()
    try:
        with state.metrics.write_step("read"):
            ops = parse_bulk(body, index)
    except BulkParseError as exc:
        return await passthrough(request, f"bulk request not fingerprinted ({exc})")
    if len(ops) > state.settings.max_bulk_actions:
        return es_error(413, "request_entity_too_large",
                        f"{len(ops)} operations in one bulk request; the limit is "
                        f"{state.settings.max_bulk_actions}")
    params = {k: v for k, v in request.query_params.items() if k not in ANSWER_PARAMS}
    extra: dict[str, Any] = {}
    try:
        items = await process_ops(state, ops, params, extra)
    except BulkRejected as exc:
        return es_json(exc.body, request, exc.status)
    with state.metrics.write_step("answer"):
        out = {"errors": any(has_error(it) for it in items),
               "took": round((time.perf_counter() - started) * 1000), **extra, "items": items}
        queued = sum(1 for it in items if is_queued(it))
        return es_json(out, request, headers={QUEUED_HEADER: str(queued)} if queued else None)


@router.post("/_bulk", tags=["proxy"], summary="Bulk write with fingerprints (Elasticsearch _bulk)")
@router.put("/_bulk", include_in_schema=False)
async def bulk_root(request: Request) -> Response:
    """NDJSON bulk body as for Elasticsearch; answered in Elasticsearch's bulk response format."""
    return await _bulk(request, None)


@router.post("/{index}/_bulk", tags=["proxy"], summary="Bulk write into an index with fingerprints")
@router.put("/{index}/_bulk", include_in_schema=False)
async def bulk_index(index: str, request: Request) -> Response:
    """NDJSON bulk body as for Elasticsearch; answered in Elasticsearch's bulk response format."""
    return await _bulk(request, index)


def doc_target(request: Request, endpoint: str) -> tuple[str, str | None] | None:
    """``(index, id)`` of a single-document request ``/{index}/{endpoint}[/{id}]`` read from the raw
    path (an id may hold ``/`` as ``%2F``, spaces, non-ASCII); None when the path has another shape or
    the index is not one the proxy keeps a store for (then it is passed through)."""
    try:
        segs = path_segments(request)
    except UnicodeDecodeError:
        return None
    if len(segs) not in (2, 3) or segs[1] != endpoint or not valid_index_name(segs[0]):
        return None
    if len(segs) == 3 and segs[2] == "":
        return None
    return segs[0], (segs[2] if len(segs) == 3 else None)


async def _single(request: Request, endpoint: str, action: str) -> Response:
    state = svc(request)
    target = doc_target(request, endpoint)
    if target is None:
        return await passthrough(request)
    index, doc_id = target
    raw, source = b"", None
    if action != "delete":
        if not readable(request):
            return await write_through(request, index)
        raw = await request.body()
        with contextlib.suppress(ValueError):
            source = read_json(raw)
        if not isinstance(source, dict):  # Elasticsearch answers with its own parsing error
            return await write_through(request, index)
    meta: dict[str, Any] = {"_index": index}
    if doc_id is not None:
        meta["_id"] = doc_id
    params: dict[str, str] = {}
    for k, v in request.query_params.items():
        if k == "op_type" and action != "update":
            action = "create" if v == "create" else action
        elif k in OP_PARAMS:
            meta[k] = v
        elif k not in ANSWER_PARAMS:
            params[k] = v
    if action == "update" and not update_wants_source(BulkOp("update", meta, source)):
        op_ = BulkOp("update", meta, source)
        if not spooling(state):  # Elasticsearch applies and answers it itself
            state.metrics.updates.labels("scripted" if is_scripted(op_) else "no_text").inc()
            return await write_through(request, index if creates_documents(op_) else None)
        # else it queues behind the spooled writes like any other (order; an acknowledged answer)
    op = BulkOp(action, meta, source, raw=raw.strip() if action in ("index", "create") else None)
    try:
        item = next(iter((await process_ops(state, [op], params))[0].values()))
    except BulkRejected as exc:
        return es_json(exc.body, request, exc.status)
    status = int(item.pop("status", 500))
    if "error" in item:
        return es_json({"error": single_error(item["error"]), "status": status}, request, status)
    headers: dict[str, str] = {}
    if status == 201:
        headers["Location"] = doc_location(index, item.get("_id"))
    if is_queued({action: item}):
        headers[QUEUED_HEADER] = "1"
    return es_json(item, request, status, headers)


@router.put("/{index}/_doc/{doc_id:path}", tags=["proxy"], summary="Index one document with fingerprints")
@router.post("/{index}/_doc/{doc_id:path}", include_in_schema=False)
async def doc_with_id(index: str, doc_id: str, request: Request) -> Response:
    """As Elasticsearch's index API; the answer is Elasticsearch's. Ids may contain any character
    (percent-encoded in the path, ``/`` as ``%2F``)."""
    return await _single(request, "_doc", "index")


@router.post("/{index}/_doc", tags=["proxy"], summary="Index one document (id assigned) with fingerprints")
async def doc_without_id(index: str, request: Request) -> Response:
    """As Elasticsearch's index API with an automatic id (assigned by the service)."""
    return await _single(request, "_doc", "index")


@router.put("/{index}/_create/{doc_id:path}", tags=["proxy"], summary="Create one document with fingerprints")
@router.post("/{index}/_create/{doc_id:path}", include_in_schema=False)
async def create_with_id(index: str, doc_id: str, request: Request) -> Response:
    """As Elasticsearch's create API; the answer is Elasticsearch's."""
    return await _single(request, "_create", "create")


@router.post("/{index}/_update/{doc_id:path}", tags=["proxy"],
             summary="Update one document (fingerprints follow)")
async def update_doc(index: str, doc_id: str, request: Request) -> Response:
    """As Elasticsearch's update API. A partial ``doc`` (or ``upsert``) that sets a text field is
    fingerprinted as merged over the current document; every other update is passed through unchanged."""
    return await _single(request, "_update", "update")


@router.delete("/{index}/_doc/{doc_id:path}", include_in_schema=False)
async def delete_doc(index: str, doc_id: str, request: Request) -> Response:
    """Elasticsearch's delete API, passed through; a document that is gone (or was never there) is
    also dropped from the embedded store, so later copies are not reported as duplicates of it. While
    writes are being spooled, the delete is spooled behind them (else it could overtake an earlier
    spooled write of the same document, which the replay would then bring back)."""
    target = doc_target(request, "_doc")
    if target is not None and target[1] is not None and spooling(svc(request)):
        return await _single(request, "_doc", "delete")
    resp = await passthrough(request)
    if target is not None and target[1] is not None \
            and (200 <= resp.status_code < 300 or resp.status_code == 404):
        state = svc(request)
        await state.stores.call(state.stores.forget, target[0], target[1])
    return resp


def spooling(state: ServiceState) -> bool:
    """Writes are being queued (Elasticsearch down, or the spool not drained yet): a write passed
    through now could overtake them, so writes go through the delivery (and the spool) instead."""
    return (state.spool is not None and state.spool.depth > 0) or (
        state.delivery is not None and state.delivery.es_down)


async def write_through(request: Request, index: str | None) -> Response:
    """Pass a write the proxy does not fingerprint through, after making sure its index exists with the
    fingerprint mapping (else Elasticsearch would create it with a dynamic one)."""
    state = svc(request)
    if index is not None and valid_index_name(index) and state.es is not None:
        with contextlib.suppress(EsUnavailable):  # then the pass-through says what is wrong
            await state.es.ensure_index(index)
    return await passthrough(request)


async def passthrough(request: Request, why: str | None = None) -> Response:
    """Relay the request to Elasticsearch and its answer back, headers included (minus hop-by-hop ones
    and the service's own key). ``why``: a write the proxy could not read; should Elasticsearch apply it
    after all, that is logged (its documents carry no fingerprint fields)."""
    state = svc(request)
    assert state.es is not None
    http = state.es.http
    headers = [(k, v) for k, v in request.headers.raw
               if k.decode("latin-1").lower() not in HOP_BY_HOP | KEY_HEADERS]
    raw_path = request.scope.get("raw_path") or request.url.path.encode()
    target = raw_path.decode("latin-1")
    if request.url.query:
        target += "?" + request.url.query
    req = http.build_request(request.method, target, headers=headers, content=await request.body())
    try:
        with es_errors(f"relaying {request.method} {request.url.path}"):
            resp = await http.send(req, stream=True)
    except EsError as exc:  # no answer: a relayed answer, whatever its status, is the caller's
        return es_error(502, "proxy_exception",
                        f"Elasticsearch did not answer ({exc.client_error})", {"Retry-After": "1"})
    if why is not None and resp.status_code < 300:
        log.warning("%s, but Elasticsearch applied it: its documents have no fingerprint fields", why)
    out = StreamingResponse(resp.aiter_raw(), status_code=resp.status_code,
                            background=BackgroundTask(resp.aclose))
    out.raw_headers = [(k.lower(), v) for k, v in resp.headers.raw
                       if k.decode("latin-1").lower() not in HOP_BY_HOP - {"content-length"}]
    return out


@router.api_route("/{path:path}", methods=ALL_METHODS, include_in_schema=False)
async def passthrough_route(path: str, request: Request) -> Response:
    return await passthrough(request)
