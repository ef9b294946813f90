"""Errors of the Elasticsearch adapter: one category, mapped from the client libraries' errors at one
boundary.

:class:`EsError` is the category of everything a server did or failed to do; below it

- :class:`EsUnavailable`: the server could not take the request now (no connection, no answer in time,
  429 or 5xx after the client's retries): the request may be sent again later;
- :class:`EsRequestError`: the server refused the request itself (another 4xx), with its reason.

:func:`as_es_error` turns an error of the ``elasticsearch``/``elastic_transport`` client into one of these
(a caller may name its own subclasses, so its messages and exit codes stay its own), and
:func:`es_errors` does so around a block of requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from elasticsearch import ApiError, TransportError

from fingerprint_indexer.errors import FingerprintIndexerError

#: Statuses after which a request may succeed when sent again later (overloaded or failing server).
RETRY_STATUSES = frozenset({429}) | frozenset(range(500, 600))


class EsError(FingerprintIndexerError):
    """An Elasticsearch (or OpenSearch) server could not be used for a request."""


class EsUnavailable(EsError):
    """The server could not take the request now: no connection, no answer in time, or 429/5xx. The one
    class for it everywhere: the jobs and the CLI (exit code 2), the service's write path (the writes wait
    in the spool) and its decisions (503 ``decision_unavailable``) alike; which of them failed is the
    caller's context, not another class."""


class EsRequestError(EsError):
    """The server refused the request (a 4xx other than 429), with its reason."""


def as_es_error(
    exc: Exception, prefix: str, unavailable: type[EsError] = EsUnavailable,
    refused: type[EsError] = EsRequestError,
) -> EsError:  # fmt: skip
    """The adapter's error for a client error ``exc``, its message ``<prefix>: <exc>``: ``unavailable``
    for a failed connection or timeout (``TransportError``) or a 429/5xx answer, ``refused`` for any other
    answer (``ApiError``). An error that is no answer (an :class:`EsUnavailable` of the adapter, say) is
    ``unavailable`` too. Raise it ``from exc``."""
    if isinstance(exc, ApiError) and exc.meta.status not in RETRY_STATUSES:
        return refused(f"{prefix}: {exc}")
    return unavailable(f"{prefix}: {exc}")


@contextmanager
def es_errors(prefix: str, unavailable: type[EsError] = EsUnavailable,
              refused: type[EsError] = EsRequestError) -> Iterator[None]:  # fmt: skip
    """Raise :func:`as_es_error` of any client error of the block (``from`` it)."""
    try:
        yield
    except (ApiError, TransportError) as exc:
        raise as_es_error(exc, prefix, unavailable, refused) from exc


class ElasticsearchWriteError(EsError, RuntimeError):
    """Some documents of a bulk write failed; ``failures`` lists (doc id, reason) for each."""

    def __init__(self, failures: list[tuple[str, str]]) -> None:
        self.failures = failures
        shown = "; ".join(f"{i}: {r}" for i, r in failures[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        super().__init__(f"{len(failures)} document(s) failed to index: {shown}{more}")
