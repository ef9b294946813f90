"""The Elasticsearch-compatible front: ``_bulk`` and ``_doc``/``_create`` with fingerprints added, and a
byte-for-byte pass-through for every other request.

An existing indexer only changes its URL. For each ``index``/``create`` operation whose source has a
string ``content``, ``html`` or ``title``, the document is fingerprinted and decided, the fingerprint
fields are added to the source, and the duplicate policy applies (``tag``: index it with
``duplicate_of``; ``skip``: do not send it, and answer the item with ``result: noop``). An operation
without ``_id`` gets one here (a random UUID), so a spooled replay can never index it twice.

A ``create`` only enters the embedded store when Elasticsearch will accept it: for creates of ids the store
already holds, the same ``_mget`` as for updates asks whether they exist (earlier operations of the request
followed), and a create of an existing id is passed on unchanged, so Elasticsearch answers its own 409 and
the stored entry keeps describing the text Elasticsearch has. When Elasticsearch cannot be asked, such a
create is passed on unchanged too (the entry is kept; the id almost surely exists). Any fingerprinted
operation that Elasticsearch still refuses (a 409 for a document written behind the proxy's back, a
mapping error, an update of a missing document) leaves the store.

``update`` operations (bulk, and ``POST /{index}/_update/{id}``) whose partial ``doc`` or ``upsert`` sets a
text field are fingerprinted as the document will be after the update (:mod:`updates` says how); scripted
updates, and updates that set no text field, pass through unchanged.

Under ``keep=longest|newest`` a document that becomes its group's canonical (``replaces`` in its
``fingerprint_indexer`` summary) is followed, in the same bulk request to Elasticsearch (or the same spool
frame), by an update that points the previous canonical at it; that update's item is not part of the
answer, which keeps one item per operation of the request. Under ``skip`` such a document is indexed (it
is the one kept), and the replaced canonical stays in Elasticsearch, tagged.

Deletes and sources without text go through unchanged (sources byte for byte). Answers are in
Elasticsearch's own format, with each fingerprinted item carrying an extra ``fingerprint_indexer`` object.
Queued items (Elasticsearch unavailable, see :mod:`delivery`) are answered as applied and marked
``fingerprint_indexer.queued``.

Requests are read as Elasticsearch reads them (see :mod:`bulk_codec`, :func:`doc_target`); what the proxy
cannot read that way is passed through, so Elasticsearch answers it itself. Every write first makes sure
its index exists with the fingerprint mapping (:meth:`EsClient.ensure_index`, asked per request).
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from typing import Any
from urllib.parse import quote_plus

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse
from starlette.background import BackgroundTask

from fingerprint_indexer.documents import Document, source_document
from fingerprint_indexer.index.elasticsearch import SKETCH_FIELD, block_fields
from fingerprint_indexer.sidecar.api import svc
from fingerprint_indexer.sidecar.auth import KEY_HEADERS
from fingerprint_indexer.sidecar.bulk_codec import (
    ANSWER_PARAMS,
    OP_PARAMS,
    QUEUED_HEADER,
    BulkParseError,
    bulk_item,
    es_error,
    es_json,
    has_error,
    parse_bulk,
    path_segments,
    read_json,
    readable,
)
from fingerprint_indexer.sidecar.delivery import BulkOp, creates_documents, is_queued
from fingerprint_indexer.sidecar.es import BulkRejected, EsUnavailable
from fingerprint_indexer.sidecar.es_state import Stores
from fingerprint_indexer.sidecar.ingest import Decided, decide, es_fields, relink_op
from fingerprint_indexer.sidecar.state import ServiceState
from fingerprint_indexer.sidecar.updates import (
    current_sources,
    is_scripted,
    plan_updates,
    update_wants_source,
)
from fingerprint_indexer.sidecar.worker import valid_index_name

log = logging.getLogger("fingerprint_indexer.sidecar")
router = APIRouter()
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                        "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length"})
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]


def _stored_ids(stores: Stores, keys: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """The ``(index, id)`` pairs the embedded stores hold an entry for (runs on the store thread)."""
    return {key for key in keys if stores.record(*key) is not None}


def _fingerprint_nulls(layout: Any) -> dict[str, None]:
    """Fingerprint fields a result may leave out (block keys of degenerate documents, the sketch): set to
    null in a partial doc, so no stale value of the previous text survives the merge."""
    return dict.fromkeys([*block_fields(layout), SKETCH_FIELD])



async def process_ops(state: ServiceState, ops: list[BulkOp], params: dict[str, str],
                      answer: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Fingerprint, decide, apply the policy, deliver; one bulk item per operation, in order (``answer``
    gets Elasticsearch's other top-level answer fields, see :meth:`Delivery.submit`)."""
    assert state.pool is not None and state.delivery is not None
    out: list[dict[str, Any] | None] = [None] * len(ops)
    todo: list[tuple[int, str, Document]] = []
    named: list[tuple[str, str]] = []  # creates with the caller's own id (an assigned one is new)
    for op in ops:
        if op.action in ("index", "create") and valid_index_name(op.index) and op.meta.get("_id") is None \
                and op.source is not None:
            op.meta["_id"] = uuid.uuid4().hex
        elif op.action == "create" and valid_index_name(op.index):
            named.append((op.index, str(op.id)))
    # A create of an id the embedded store holds would replace that entry before Elasticsearch answers,
    # and Elasticsearch refuses a create of an existing id (409): so whether those ids exist is asked in
    # the same _mget as the updates' sources, and a create of an existing id is passed on unchanged.
    # When Elasticsearch cannot be asked (unreachable, writes being spooled), such a create is passed on
    # unchanged too and the stored entry is kept: it describes a document written through the proxy, so
    # the create almost surely meets that document and is refused (on replay, a 409 counts as applied).
    # Were the document in fact gone, it is created without fingerprint fields; index it again.
    stored = await state.stores.call(_stored_ids, state.stores, named) if named else set()
    current, why = await current_sources(state, ops, frozenset(stored))
    plans, outcomes, held = plan_updates(ops, current)
    for pos, op in enumerate(ops):
        if op.action in ("index", "create") and valid_index_name(op.index):
            doc = source_document(str(op.meta["_id"]), op.source)
        elif pos in plans:
            doc = plans[pos].document
        else:
            continue
        if isinstance(doc, str):
            out[pos] = bulk_item(op, 400, error={"type": "illegal_argument_exception", "reason": doc})
        elif doc is not None and pos not in held:
            todo.append((pos, op.index, doc))
    for outcome in outcomes.values():
        state.metrics.updates.labels(outcome).inc()
    stale = [pos for pos, outcome in outcomes.items() if outcome == "unknown_source"]
    if stale:
        log.warning("%d update(s) passed on without fingerprints (%s); their entries leave the embedded "
                    "store", len(stale), why)
    unsure = sum(1 for reason in held.values() if reason == "unknown")
    if unsure:
        log.warning("%d create(s) of ids in the embedded store passed on without fingerprints (%s); their "
                    "entries are kept", unsure, why)
    t0 = time.perf_counter()
    decided = await decide_in_order(state, ops, todo)
    if todo:
        state.metrics.fingerprint_seconds.observe(time.perf_counter() - t0)
    policy = state.settings.on_duplicate
    relinks: dict[int, BulkOp] = {}  # updates of replaced canonicals, sent right after their operation
    # once per index and request: an index that does not exist yet has no layout to remember, and asking
    # per document would send one GET per document of the request that creates it
    layouts = {ix: await state.es_layout(ix) for ix in dict.fromkeys(ops[pos].index for pos, _, _ in todo)}
    for (pos, _, _), d in zip(todo, decided, strict=True):
        op = ops[pos]
        state.metrics.documents.labels(d.decision.decision).inc()
        summary = {k: v for k, v in d.decision.to_dict().items() if k != "id"}
        layout = layouts[op.index]
        fields = es_fields(d.result, d.decision, layout, d.doc.length)
        plan = plans.get(pos)
        if plan is not None:  # an update: the fields go into the part of the body that gets applied
            extra = _fingerprint_nulls(layout) if plan.target == "doc" else {}
            op.source = {**op.source, plan.target: {**op.source[plan.target], **extra, **fields}}
            op.raw = None  # re-encoded with the fields inside doc/upsert
        elif policy == "skip" and d.is_duplicate:
            state.metrics.skipped.inc()
            out[pos] = bulk_item(op, 200, result="noop", fingerprint_indexer=summary)
            await state.stores.call(state.stores.discard, op.index, [(d.doc.id, d.result.content_digest)])
            continue
        else:
            op.added = fields
        op.fingerprinted = True
        op.extra = summary
        if (relink := relink_op(op.index, d.decision)) is not None:
            relinks[pos] = relink
    # the last operation of the request decided into the store, per id: an entry it wrote is not
    # forgotten because of an earlier operation on the same id (delete X, then create X again)
    last_decided = {(idx, doc.id): pos for pos, idx, doc in todo}

    def superseded(pos: int, op: BulkOp) -> bool:
        return last_decided.get((op.index, str(op.id)), -1) > pos

    forward = [pos for pos in range(len(ops)) if out[pos] is None]
    sent = [o for pos in forward for o in (ops[pos], relinks.get(pos)) if o is not None]
    answered = await state.delivery.submit(sent, params, answer)
    written: dict[str, list[str]] = {}
    for o in sent:
        if (o.fingerprinted or o.relink) and o.id is not None:
            written.setdefault(o.index, []).append(o.id)
    for name, ids in written.items():
        await state.stores.call(state.stores.settle, name, ids)
    # the client sees one item per operation it sent: the relinks' items are left out (their failures
    # are logged by the delivery)
    items = [it for o, it in zip(sent, answered, strict=True) if not o.relink]
    for pos, item in zip(forward, items, strict=True):
        op = ops[pos]
        if op.fingerprinted and has_error(item):
            # Elasticsearch refused the operation (a create whose id existed after all, a mapping error, an
            # update of a missing document): the entry just decided describes text it does not hold
            if not superseded(pos, op):
                await state.stores.call(state.stores.forget, op.index, str(op.id))
        elif op.fingerprinted:
            body = next(iter(item.values()))
            body["fingerprint_indexer"] = {**op.extra, **body.get("fingerprint_indexer", {})}
        elif (op.action == "delete" or outcomes.get(pos) == "unknown_source") and op.id \
                and valid_index_name(op.index) and not has_error(item) and not superseded(pos, op):
            # deleted (or queued for deletion) in Elasticsearch, or its text changed in a way we could not
            # follow: later copies must not point at it
            await state.stores.call(state.stores.forget, op.index, op.id)
        out[pos] = item
    return [it for it in out if it is not None]


async def decide_in_order(state: ServiceState, ops: list[BulkOp], todo: list[tuple[int, str, Document]]
                          ) -> list[Decided]:
    """Decide the ``todo`` documents as if the request's operations ran one after the other: a ``delete``
    leaves the embedded store before the documents after it are decided, so a copy of a document
    deleted earlier in the same request is not called its duplicate. (Should Elasticsearch then refuse
    that delete, which it does only for a version conflict or a missing routing, the entry stays out of
    the store: later copies of it count as new rather than pointing at it.)"""
    assert state.pool is not None
    deletes = [pos for pos, op in enumerate(ops)
               if op.action == "delete" and op.id is not None and valid_index_name(op.index)]
    if not deletes or not todo:
        return await decide(state.pool, state.stores, [(idx, doc) for _, idx, doc in todo])
    out: list[Decided] = []
    start = 0
    for cut in [*deletes, len(ops)]:
        run = [t for t in todo if start <= t[0] < cut]
        if run:
            out += await decide(state.pool, state.stores, [(idx, doc) for _, idx, doc in run])
        if cut < len(ops):
            await state.stores.call(state.stores.forget, ops[cut].index, str(ops[cut].id))
        start = cut
    return out



async def _bulk(request: Request, index: str | None) -> Response:
    state = svc(request)
    if index is not None and not valid_index_name(index):
        return await passthrough(request)
    if not readable(request):
        return await write_through(request, index)
    started = time.perf_counter()
    body = await request.body()
    try:
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
        err = dict(item["error"])
        err.setdefault("root_cause", [{k: v for k, v in err.items() if k != "caused_by"}])
        # Elasticsearch puts root_cause first
        err = {"root_cause": err.pop("root_cause"), **err}
        return es_json({"error": err, "status": status}, request, status)
    headers: dict[str, str] = {}
    if status == 201:
        # as Elasticsearch writes it (Java's URLEncoder: form encoding, a space as '+')
        encoded = quote_plus(str(item.get("_id")), safe="*").replace("~", "%7E")
        headers["Location"] = f"/{index}/_doc/{encoded}"
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
    return state.spool.depth > 0 or (state.delivery is not None and state.delivery.es_down)


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
        resp = await http.send(req, stream=True)
    except httpx.HTTPError as exc:
        return es_error(502, "proxy_exception",
                        f"Elasticsearch did not answer ({type(exc).__name__})", {"Retry-After": "1"})
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
