"""Errors of the Elasticsearch adapter: one category, mapped from the client libraries' errors at one
boundary.

:class:`EsError` is the category of everything a server did or failed to do; below it

- :class:`EsUnavailable`: the server could not take the request now (no connection, no answer in time,
  429 or 5xx after the client's retries): the request may be sent again later;
- :class:`EsRequestError`: the server refused the request itself (another 4xx), with its reason.

:func:`as_es_error` is the one mapping of a client error to these, for both clients the package speaks
through: the official ``elasticsearch``/``elastic_transport`` client (the jobs, the CLI, the stateless
service's decisions) and ``httpx`` (the service's own client); :func:`es_errors` does so around a block of
requests. The mapped error keeps what callers answer from: the ``status`` of the server's answer (None
when there was none), its ``error`` document and the client's class name (``client_error``), so no module
above needs the client libraries' exception classes to say what went wrong.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from elasticsearch import ApiError, TransportError

from fingerprint_indexer.errors import FingerprintIndexerError

#: Statuses after which a request may succeed when sent again later (overloaded or failing server).
RETRY_STATUSES = frozenset({429}) | frozenset(range(500, 600))
#: What the service waits out for its own requests: its own credentials refused (401/403) too, which an
#: operator fixes while the writes wait in the spool and which a caller of the service cannot fix.
SERVICE_RETRY_STATUSES = RETRY_STATUSES | frozenset({401, 403})
#: The client libraries' errors :func:`as_es_error` maps.
CLIENT_ERRORS: tuple[type[Exception], ...] = (ApiError, TransportError, httpx.HTTPError)


class EsError(FingerprintIndexerError):
    """An Elasticsearch (or OpenSearch) server could not be used for a request."""

    #: The status of the server's answer (None: no answer, or not mapped from a client error).
    status: int | None = None
    #: The server's error document (``type``, ``reason``, ...) when its answer carried one.
    error: dict[str, Any] | None = None
    #: The class name of the client error this was mapped from ("" when none).
    client_error: str = ""


class EsUnavailable(EsError):
    """The server could not take the request now: no connection, no answer in time, or 429/5xx. The one
    class for it everywhere: the jobs and the CLI (exit code 2), the service's write path (the writes wait
    in the spool) and its decisions (503 ``decision_unavailable``) alike; which of them failed is the
    caller's context, not another class."""


class EsRequestError(EsError):
    """The server refused the request (a 4xx other than 429), with its reason."""


def _answer(exc: Exception) -> tuple[int | None, dict[str, Any] | None]:
    """The status and error document of the server's answer behind a client error ((None, None): the
    server did not answer)."""
    body: Any
    if isinstance(exc, ApiError):
        status, body = exc.meta.status, exc.body
    elif isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        try:
            body = exc.response.json()
        except (ValueError, httpx.StreamError):  # not JSON, or a streamed body not read
            body = None
    else:
        return None, None
    error = body.get("error") if isinstance(body, dict) else None
    return status, error if isinstance(error, dict) else None


def as_es_error(
    exc: Exception, prefix: str, unavailable: type[EsError] = EsUnavailable,
    refused: type[EsError] = EsRequestError, retry: Collection[int] = RETRY_STATUSES,
) -> EsError:  # fmt: skip
    """The adapter's error for a client error ``exc`` (of either client), its message ``<prefix>: <exc>``
    (``exc``'s own when ``prefix`` is empty): ``unavailable`` when the server did not answer (a failed
    connection or timeout) or answered with a status in ``retry``, ``refused`` for any other answer. An
    error that is no answer (an :class:`EsUnavailable` of the adapter, say) is ``unavailable`` too. Raise
    it ``from exc``."""
    status, error = _answer(exc)
    cls = refused if status is not None and status not in retry else unavailable
    out = cls(f"{prefix}: {exc}" if prefix else str(exc))
    out.status, out.error, out.client_error = status, error, type(exc).__name__
    return out


@contextmanager
def es_errors(
    prefix: str, unavailable: type[EsError] = EsUnavailable, refused: type[EsError] = EsRequestError,
    retry: Collection[int] = RETRY_STATUSES,
) -> Iterator[None]:  # fmt: skip
    """Raise :func:`as_es_error` of any client error of the block (``from`` it)."""
    try:
        yield
    except CLIENT_ERRORS as exc:
        raise as_es_error(exc, prefix, unavailable, refused, retry) from exc


class ElasticsearchWriteError(EsError, RuntimeError):
    """Some documents of a bulk write failed; ``failures`` lists (doc id, reason) for each."""

    def __init__(self, failures: list[tuple[str, str]]) -> None:
        self.failures = failures
        shown = "; ".join(f"{i}: {r}" for i, r in failures[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        super().__init__(f"{len(failures)} document(s) failed to index: {shown}{more}")
