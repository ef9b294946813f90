"""The service's own connection to Elasticsearch: one pooled ``httpx.AsyncClient``.

Raw HTTP rather than the official client, because the proxy must relay requests and responses byte for
byte (status, headers, body) and the ingest path only needs ``_bulk``. Credentials and the CA bundle come
from :class:`EsSettings`; the caller's own ``Authorization`` header is never passed on.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.index.elasticsearch import load_index_body
from fingerprint_indexer.service.settings import EsSettings

NDJSON = "application/x-ndjson"


class EsUnavailable(Exception):
    """Elasticsearch could not take the request now (connection failure, timeout, 429 or 5xx)."""


def auth_headers(es: EsSettings) -> dict[str, str]:
    if es.api_key:
        return {"authorization": f"ApiKey {es.api_key}"}
    if es.username:
        token = base64.b64encode(f"{es.username}:{es.password or ''}".encode()).decode()
        return {"authorization": f"Basic {token}"}
    return {}


class EsClient:
    """Bulk writes, index creation, health and raw relaying."""

    def __init__(self, settings: EsSettings, write_timeout_s: float = 10.0) -> None:
        self.settings = settings
        self.base = settings.url
        verify: Any = settings.ca_certs or True
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=32)
        self.http = httpx.AsyncClient(base_url=settings.url, headers=auth_headers(settings), verify=verify,
                                      timeout=httpx.Timeout(settings.timeout_s, connect=3.0), limits=limits)
        # no default Accept-Encoding/User-Agent: relayed requests carry exactly the caller's headers
        self.http.headers = httpx.Headers(auth_headers(settings))
        self.write_timeout = httpx.Timeout(write_timeout_s, connect=3.0)
        self._known_indices: set[str] = set()

    async def close(self) -> None:
        await self.http.aclose()

    async def ping(self, timeout_s: float = 2.0) -> bool:
        try:
            r = await self.http.get("/_cluster/health", timeout=timeout_s)
        except httpx.HTTPError:
            return False
        return r.status_code == 200

    async def bulk(self, body: bytes, params: dict[str, str] | None = None) -> dict[str, Any]:
        """POST /_bulk; a response that is not a per-item answer raises :class:`EsUnavailable`."""
        try:
            r = await self.http.post("/_bulk", content=body, params=params or {},
                                     headers={"content-type": NDJSON}, timeout=self.write_timeout)
        except httpx.HTTPError as exc:
            raise EsUnavailable(f"{type(exc).__name__} talking to Elasticsearch") from exc
        if r.status_code == 429 or r.status_code >= 500:
            raise EsUnavailable(f"Elasticsearch answered {r.status_code}")
        try:
            data: dict[str, Any] = r.json()
        except json.JSONDecodeError as exc:
            raise EsUnavailable(f"Elasticsearch answered {r.status_code} without JSON") from exc
        if r.status_code != 200 or "items" not in data:
            raise BulkRejected(r.status_code, data)
        return data

    async def ensure_index(self, index: str, layout: BlockLayout) -> None:
        """Create ``index`` with the fingerprint mapping when it does not exist (once per process).

        The mapping is made dynamic, so an indexer's own extra fields stay searchable as they would be
        without the proxy; the fingerprint fields keep their declared types.
        """
        if index in self._known_indices:
            return
        try:
            r = await self.http.head(f"/{index}", timeout=self.write_timeout)
            if r.status_code == 404:
                body = load_index_body(layout)
                body["mappings"]["dynamic"] = True
                r = await self.http.put(f"/{index}", json=body, timeout=self.write_timeout)
                if r.status_code >= 500:
                    raise EsUnavailable(f"creating index {index} answered {r.status_code}")
                # 400 resource_already_exists (a concurrent creator) is fine; other errors show per item
            elif r.status_code >= 500:
                raise EsUnavailable(f"HEAD {index} answered {r.status_code}")
        except httpx.HTTPError as exc:
            raise EsUnavailable(f"{type(exc).__name__} talking to Elasticsearch") from exc
        self._known_indices.add(index)


class BulkRejected(Exception):
    """Elasticsearch refused a whole bulk request with a 4xx (the body is its own error document)."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status, self.body = status, body
        super().__init__(f"bulk rejected with {status}")
