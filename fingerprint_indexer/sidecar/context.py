"""What every route module reads from a request: the service state, the index a request names, and the
error responses the ``/v1`` endpoints document. The endpoint modules (``api``, ``copies_api``) and the
``_bulk`` proxy import it rather than each other."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from fingerprint_indexer.sidecar.errors import ApiError
from fingerprint_indexer.sidecar.state import ServiceState
from fingerprint_indexer.sidecar.worker import valid_index_name

#: The error responses of every ``/v1`` endpoint (OpenAPI), which each adds its own to.
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Malformed request"}, 401: {"description": "Missing or wrong API key"},
    413: {"description": "Body or batch too large"}, 422: {"description": "Invalid fields"},
}


def svc(request: Request) -> ServiceState:
    """The state of the service handling ``request``."""
    state: ServiceState = request.app.state.svc
    return state


def index_name(state: ServiceState, name: str | None) -> str:
    """The index a request names (the service's default when it names none); a 400 when it is invalid."""
    index = name or state.settings.default_index
    if not valid_index_name(index):
        raise ApiError(400, "invalid_index_name_exception", f"invalid index name {index!r}")
    return index
