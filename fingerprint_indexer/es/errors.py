"""Errors of the Elasticsearch adapter."""

from __future__ import annotations

from fingerprint_indexer.errors import FingerprintIndexerError


class ElasticsearchUnavailable(FingerprintIndexerError, RuntimeError):
    """The cluster at a URL could not be reached or refused the request."""


class ElasticsearchWriteError(FingerprintIndexerError, RuntimeError):
    """Some documents of a bulk write failed; ``failures`` lists (doc id, reason) for each."""

    def __init__(self, failures: list[tuple[str, str]]) -> None:
        self.failures = failures
        shown = "; ".join(f"{i}: {r}" for i, r in failures[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        super().__init__(f"{len(failures)} document(s) failed to index: {shown}{more}")
