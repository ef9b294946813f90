"""The Elasticsearch-compatible front: ``_bulk`` and ``_doc``/``_create`` with fingerprints added, and a
byte-for-byte pass-through for every other request.

An existing indexer only changes its URL. For each ``index``/``create`` operation whose source has a
string ``content``, ``html`` or ``title``, the document is fingerprinted and decided, the fingerprint
fields are added to the source, and the duplicate policy applies (``tag``: index it with
``duplicate_of``; ``skip``: do not send it, and answer the item with ``result: noop``). An operation
without ``_id`` gets one here (a random UUID), so a spooled replay can never index it twice. Other
operations (``update``, ``delete``, sources without text) go through unchanged. Answers are in
Elasticsearch's own format, with each fingerprinted item carrying an extra ``fingerprint_indexer`` object.
Queued items (Elasticsearch unavailable, see :mod:`delivery`) answer ``status: 202, result: queued``.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.background import BackgroundTask

from fingerprint_indexer.documents import Document
from fingerprint_indexer.service.api import svc
from fingerprint_indexer.service.auth import KEY_HEADERS
from fingerprint_indexer.service.delivery import SOURCE_ACTIONS, BulkOp
from fingerprint_indexer.service.errors import error_body
from fingerprint_indexer.service.es import BulkRejected
from fingerprint_indexer.service.ingest import decide, es_fields
from fingerprint_indexer.service.state import ServiceState
from fingerprint_indexer.service.worker import valid_index_name

router = APIRouter()
PRODUCT = {"X-Elastic-Product": "Elasticsearch"}
ACTIONS = frozenset({"index", "create", "update", "delete"})
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                        "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length"})
#: Query parameters of a single-document write that are per-operation metadata in a bulk request.
OP_PARAMS = frozenset({"routing", "version", "version_type", "if_seq_no", "if_primary_term", "pipeline",
                       "require_alias"})
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]


class BulkParseError(ValueError):
    pass


def es_error(status: int, type_: str, reason: str, headers: dict[str, str] | None = None) -> JSONResponse:
    body = error_body(status, type_, reason)
    body["error"]["root_cause"] = [{"type": type_, "reason": reason}]
    return JSONResponse(body, status_code=status, headers=headers)


def _json_line(raw: bytes, n: int) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise BulkParseError(f"line [{n}] is not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise BulkParseError(f"line [{n}] is not valid JSON: {exc.msg}") from None


def parse_bulk(body: bytes, default_index: str | None) -> list[BulkOp]:
    """The operations of an NDJSON bulk body (each with ``_index`` filled in from the path)."""
    lines = [(n, line) for n, line in enumerate(body.split(b"\n"), 1) if line.strip()]
    ops: list[BulkOp] = []
    i = 0
    while i < len(lines):
        n, raw = lines[i]
        head = _json_line(raw, n)
        if not isinstance(head, dict) or len(head) != 1 or next(iter(head)) not in ACTIONS:
            raise BulkParseError(f"Malformed action/metadata line [{n}], expected one of "
                                 f"{sorted(ACTIONS)} as the only key of an object")
        action, meta = next(iter(head.items()))
        if not isinstance(meta, dict):
            raise BulkParseError(f"Malformed action/metadata line [{n}]: metadata must be an object")
        if "_index" not in meta:
            if default_index is None:
                raise BulkParseError(f"action on line [{n}] has no _index and the path names no index")
            meta["_index"] = default_index
        source = None
        if action in SOURCE_ACTIONS:
            if i + 1 >= len(lines):
                raise BulkParseError(f"action on line [{n}] has no source line after it")
            i += 1
            source = _json_line(lines[i][1], lines[i][0])
        ops.append(BulkOp(action, meta, source))
        i += 1
    if not ops:
        raise BulkParseError("request body is required")
    return ops


def _text_ok(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def source_document(doc_id: str, source: Any) -> Document | str | None:
    """The document to fingerprint, None when the source has no text to fingerprint, or a reason why the
    source cannot be used."""
    if not isinstance(source, dict):
        return None
    text = {f: source.get(f) for f in ("title", "content", "html", "url", "published_at")}
    if not any(isinstance(text[f], str) for f in ("title", "content", "html")):
        return None
    if any(v is not None and not isinstance(v, str) for v in text.values()):
        return None
    if not all(_text_ok(v) for v in text.values() if isinstance(v, str)):
        return "document text is not valid Unicode (lone surrogate)"
    return Document(id=doc_id, title=text["title"] or "", content=text["content"], html=text["html"],
                    url=text["url"], published_at=text["published_at"])


def _item(op: BulkOp, status: int, **fields: Any) -> dict[str, Any]:
    return {op.action: {"_index": op.index, "_id": op.id, "status": status, **fields}}


async def process_ops(state: ServiceState, ops: list[BulkOp], params: dict[str, str]) -> list[dict[str, Any]]:
    """Fingerprint, decide, apply the policy, deliver; one bulk item per operation, in order."""
    assert state.pool is not None and state.delivery is not None
    out: list[dict[str, Any] | None] = [None] * len(ops)
    todo: list[tuple[int, str, Document]] = []
    for pos, op in enumerate(ops):
        if op.action not in ("index", "create") or not valid_index_name(op.index):
            continue
        if op.meta.get("_id") is None:
            op.meta["_id"] = uuid.uuid4().hex
        doc = source_document(str(op.meta["_id"]), op.source)
        if isinstance(doc, str):
            out[pos] = _item(op, 400, error={"type": "illegal_argument_exception", "reason": doc})
        elif doc is not None:
            todo.append((pos, op.index, doc))
    t0 = time.perf_counter()
    decided = await decide(state.pool, state.stores, [(idx, doc) for _, idx, doc in todo])
    if todo:
        state.metrics.fingerprint_seconds.observe(time.perf_counter() - t0)
    policy = state.settings.on_duplicate
    for (pos, _, _), d in zip(todo, decided, strict=True):
        op = ops[pos]
        state.metrics.documents.labels(d.decision.decision).inc()
        summary = {k: v for k, v in d.decision.to_dict().items() if k != "id"}
        if policy == "skip" and d.is_duplicate:
            state.metrics.skipped.inc()
            out[pos] = _item(op, 200, result="noop", fingerprint_indexer=summary)
            continue
        op.source = {**op.source, **es_fields(d.result, d.decision, state.layout)}
        op.fingerprinted = True
        op.extra = summary
    forward = [pos for pos in range(len(ops)) if out[pos] is None]
    items = await state.delivery.submit([ops[p] for p in forward], params)
    for pos, item in zip(forward, items, strict=True):
        op = ops[pos]
        if op.fingerprinted:
            next(iter(item.values()))["fingerprint_indexer"] = op.extra
        elif op.action == "delete" and op.id and valid_index_name(op.index) and not _has_error(item):
            # deleted (or queued for deletion) in Elasticsearch: later copies must not point at it
            await state.stores.call(state.stores.forget, op.index, op.id)
        out[pos] = item
    return [it for it in out if it is not None]


def _has_error(item: dict[str, Any]) -> bool:
    return "error" in next(iter(item.values()))


async def _bulk(request: Request, index: str | None) -> Response:
    state = svc(request)
    if index is not None and not valid_index_name(index):
        return await passthrough(request)
    started = time.perf_counter()
    try:
        ops = parse_bulk(await request.body(), index)
    except BulkParseError as exc:
        return es_error(400, "illegal_argument_exception", str(exc))
    if len(ops) > state.settings.max_bulk_actions:
        return es_error(413, "request_entity_too_large",
                        f"{len(ops)} operations in one bulk request; the limit is "
                        f"{state.settings.max_bulk_actions}")
    params = {k: v for k, v in request.query_params.items() if k != "filter_path"}
    try:
        items = await process_ops(state, ops, params)
    except BulkRejected as exc:
        return JSONResponse(exc.body, status_code=exc.status, headers=PRODUCT)
    body = {"errors": any(_has_error(it) for it in items),
            "took": round((time.perf_counter() - started) * 1000), "items": items}
    return JSONResponse(body, headers=PRODUCT)


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


async def _single(request: Request, index: str, doc_id: str | None, action: str) -> Response:
    state = svc(request)
    if not valid_index_name(index):
        return await passthrough(request)
    raw = await request.body()
    try:
        source = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return es_error(400, "mapper_parsing_exception", "request body is not valid UTF-8 JSON")
    if not isinstance(source, dict):
        return es_error(400, "mapper_parsing_exception", "the document must be a JSON object")
    meta: dict[str, Any] = {"_index": index}
    if doc_id is not None:
        meta["_id"] = doc_id
    params: dict[str, str] = {}
    for k, v in request.query_params.items():
        if k == "op_type":
            action = "create" if v == "create" else action
        elif k in OP_PARAMS:
            meta[k] = v
        elif k != "filter_path":
            params[k] = v
    op = BulkOp(action, meta, source)
    try:
        item = next(iter((await process_ops(state, [op], params))[0].values()))
    except BulkRejected as exc:
        return JSONResponse(exc.body, status_code=exc.status, headers=PRODUCT)
    status = int(item.pop("status", 500))
    if "error" in item:
        return JSONResponse({"error": item["error"], "status": status}, status_code=status, headers=PRODUCT)
    headers = dict(PRODUCT)
    if status == 201:
        headers["Location"] = f"/{index}/_doc/{item.get('_id')}"
    return JSONResponse(item, status_code=status, headers=headers)


@router.put("/{index}/_doc/{doc_id}", tags=["proxy"], summary="Index one document with fingerprints")
@router.post("/{index}/_doc/{doc_id}", include_in_schema=False)
async def doc_with_id(index: str, doc_id: str, request: Request) -> Response:
    """As Elasticsearch's index API; the answer is Elasticsearch's."""
    return await _single(request, index, doc_id, "index")


@router.post("/{index}/_doc", tags=["proxy"], summary="Index one document (id assigned) with fingerprints")
async def doc_without_id(index: str, request: Request) -> Response:
    """As Elasticsearch's index API with an automatic id (assigned by the service)."""
    return await _single(request, index, None, "index")


@router.put("/{index}/_create/{doc_id}", tags=["proxy"], summary="Create one document with fingerprints")
@router.post("/{index}/_create/{doc_id}", include_in_schema=False)
async def create_with_id(index: str, doc_id: str, request: Request) -> Response:
    """As Elasticsearch's create API; the answer is Elasticsearch's."""
    return await _single(request, index, doc_id, "create")


@router.delete("/{index}/_doc/{doc_id}", include_in_schema=False)
async def delete_doc(index: str, doc_id: str, request: Request) -> Response:
    """Elasticsearch's delete API, passed through; a document that is gone (or was never there) is
    also dropped from the embedded store, so later copies are not reported as duplicates of it."""
    resp = await passthrough(request)
    if valid_index_name(index) and (200 <= resp.status_code < 300 or resp.status_code == 404):
        state = svc(request)
        await state.stores.call(state.stores.forget, index, doc_id)
    return resp


async def passthrough(request: Request) -> Response:
    """Relay the request to Elasticsearch and its answer back, headers included (minus hop-by-hop ones
    and the service's own key)."""
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
    out = StreamingResponse(resp.aiter_raw(), status_code=resp.status_code,
                            background=BackgroundTask(resp.aclose))
    out.raw_headers = [(k.lower(), v) for k, v in resp.headers.raw
                       if k.decode("latin-1").lower() not in HOP_BY_HOP - {"content-length"}]
    return out


@router.api_route("/{path:path}", methods=ALL_METHODS, include_in_schema=False)
async def passthrough_route(path: str, request: Request) -> Response:
    return await passthrough(request)
