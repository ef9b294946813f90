"""Error answers: always JSON, always a 4xx for the caller's mistakes, in Elasticsearch's own shape
(``{"error": {"root_cause", "type", "reason"}, "status"}``) so proxy clients and API clients parse the
same thing."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from fingerprint_indexer.errors import FingerprintIndexerError
from fingerprint_indexer.es.errors import SERVICE_RETRY_STATUSES, EsError, EsUnavailable, es_errors
from fingerprint_indexer.sidecar.spool import SpoolFull, SpoolUnavailable
from fingerprint_indexer.sidecar.worker import NoSuchIndex, WorkerUnavailable
from fingerprint_indexer.store.errors import StoreReadOnlyError

log = logging.getLogger("fingerprint_indexer.sidecar")


class ApiError(FingerprintIndexerError):
    """A failure with its HTTP status and a message that says what is wrong."""

    def __init__(self, status: int, type_: str, reason: str, headers: dict[str, str] | None = None,
                 details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(reason)
        self.status, self.type, self.reason = status, type_, reason
        self.headers, self.details = headers or {}, details


#: The flag that gives the service a cluster, named by every answer of a route that needs one.
ES_FLAG = "--es URL (or ES_URL)"


def needs_elasticsearch(what: str) -> ApiError:
    """The answer of a route that needs Elasticsearch, in a service running on its embedded store alone."""
    return ApiError(501, "elasticsearch_not_configured",
                    f"{what} needs Elasticsearch, and this service runs on its embedded store alone; "
                    f"start it with {ES_FLAG}")


def es_refusal(err: EsError) -> ApiError:
    """The answer for a failed request of the service to Elasticsearch (mapped by
    :func:`fingerprint_indexer.es.errors.es_errors`): no answer is a 503; a 4xx passes on with its status
    and error type (the request, the index or the credentials are at fault, retrying will not help); the
    service's own credentials refused, 429 or anything else is a 503 to retry after a second."""
    status = err.status
    if status is None:
        return ApiError(503, "unavailable", f"Elasticsearch unavailable ({err.client_error})")
    if isinstance(err, EsUnavailable) or not 400 <= status < 500:
        why = "Elasticsearch refused the service's credentials" if status in (401, 403) else "Elasticsearch"
        return ApiError(503, "unavailable", f"{why} answered {status}", {"Retry-After": "1"})
    if err.error is not None:
        return ApiError(status, str(err.error.get("type", "elasticsearch_exception")),
                        str(err.error.get("reason", "")))  # fmt: skip
    return ApiError(status, "elasticsearch_exception", f"Elasticsearch answered {status}")


@contextmanager
def es_answers(what: str) -> Iterator[None]:
    """Raise the answer (:func:`es_refusal`) for a failure of the service's requests in the block to
    Elasticsearch, ``what`` they were for."""
    try:
        with es_errors(what, retry=SERVICE_RETRY_STATUSES):
            yield
    except EsError as exc:
        raise es_refusal(exc) from exc


def error_body(status: int, type_: str, reason: str, details: list[dict[str, Any]] | None = None
               ) -> dict[str, Any]:
    err: dict[str, Any] = {"root_cause": [{"type": type_, "reason": reason}], "type": type_, "reason": reason}
    if details:
        err["details"] = details
    return {"error": err, "status": status}


def error_response(status: int, type_: str, reason: str, headers: dict[str, str] | None = None,
                   details: list[dict[str, Any]] | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, type_, reason, details), status_code=status, headers=headers)


def _validation_details(exc: RequestValidationError) -> list[dict[str, Any]]:
    """Where and what, without echoing the (possibly large) input back."""
    out = []
    for e in exc.errors():
        loc = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        out.append({"loc": loc, "msg": str(e.get("msg", "invalid")), "type": str(e.get("type", ""))})
    return out


def install_handlers(app: FastAPI, retry_after_s: int) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.type, exc.reason, exc.headers, exc.details)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        details = _validation_details(exc)
        ctype = request.headers.get("content-type", "")
        if request.method in ("POST", "PUT") and "json" not in ctype.lower():
            return error_response(415, "unsupported_media_type",
                                  f"send the body as JSON (Content-Type: application/json), not {ctype!r}")
        if any(d["type"] == "json_invalid" for d in details):
            return error_response(400, "parse_exception", "request body is not valid JSON", details=details)
        reason = "; ".join(f"{d['loc']}: {d['msg']}" for d in details[:5])
        return error_response(422, "validation_exception", reason, details=details)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        reason = str(exc.detail)
        if exc.status_code == 400 and "parsing the body" in reason:
            reason = "request body could not be decoded (it must be UTF-8 JSON)"
        return error_response(exc.status_code, "http_exception", reason, dict(exc.headers or {}))

    @app.exception_handler(SpoolFull)
    async def _full(_: Request, exc: SpoolFull) -> JSONResponse:
        return error_response(429, "spool_full", f"Elasticsearch is behind and the spool is full: {exc}",
                              {"Retry-After": str(retry_after_s)})

    @app.exception_handler(SpoolUnavailable)
    async def _spool_down(_: Request, exc: SpoolUnavailable) -> JSONResponse:
        return error_response(503, "spool_unavailable", f"the write could not be kept: {exc}",
                              {"Retry-After": str(retry_after_s)})

    @app.exception_handler(EsUnavailable)  # a write that must wait is spooled before it gets here
    async def _undecided(_: Request, exc: EsUnavailable) -> JSONResponse:
        return error_response(503, "decision_unavailable", f"nothing was decided or written: {exc}",
                              {"Retry-After": "1"})

    @app.exception_handler(NoSuchIndex)
    async def _no_index(_: Request, exc: NoSuchIndex) -> JSONResponse:
        return error_response(404, "index_not_found_exception", str(exc))

    @app.exception_handler(StoreReadOnlyError)
    async def _read_only(_: Request, exc: StoreReadOnlyError) -> JSONResponse:
        return error_response(403, "read_only", f"nothing was decided or written: {exc}")

    @app.exception_handler(WorkerUnavailable)
    async def _worker(_: Request, exc: WorkerUnavailable) -> JSONResponse:
        return error_response(503, "worker_unavailable", str(exc), {"Retry-After": "1"})
