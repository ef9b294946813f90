"""What answers in place of the Elasticsearch proxy when the service runs without Elasticsearch.

An Elasticsearch path (``/_bulk``, ``/{index}/_doc/...``, ``/{index}/_search``: a segment starting with
``_``) gets a 501 naming the flag that gives the service a cluster; any other unknown path a 404.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from fingerprint_indexer.sidecar.errors import ApiError, needs_elasticsearch

router = APIRouter()
ALL_METHODS = ["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH"]


@router.api_route("/{path:path}", methods=ALL_METHODS, include_in_schema=False)
async def elasticsearch_path(path: str, request: Request) -> None:
    if any(part.startswith("_") for part in path.split("/")):
        raise needs_elasticsearch(f"{request.method} /{path} (an Elasticsearch request)")
    raise ApiError(404, "not_found", f"no route /{path}")


__all__ = ["router"]
