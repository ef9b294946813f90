"""Pure ASGI middleware: API key check, request body limit, latency metrics.

Pure ASGI (not ``BaseHTTPMiddleware``) so that streamed proxy responses pass through untouched.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fingerprint_indexer.sidecar.auth import key_matches, needs_key, presented_key
from fingerprint_indexer.sidecar.errors import error_body
from fingerprint_indexer.sidecar.metrics import Metrics


async def send_json(send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
                    ) -> None:
    raw = json.dumps(body).encode()
    hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    hdrs += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": raw})


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def product_header(scope: Scope) -> dict[str, str]:
    """On the Elasticsearch-compatible paths (everything but ``/v1``), the service's own answers carry
    ``X-Elastic-Product`` as Elasticsearch's do."""
    return {} if scope.get("path", "").startswith("/v1/") else {"X-Elastic-Product": "Elasticsearch"}


class ApiKeyMiddleware:
    """Every path except probes and the API description needs the key (when one is configured)."""

    def __init__(self, app: ASGIApp, api_key: str | None) -> None:
        self.app, self.api_key = app, api_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] == "http" and self.api_key is not None and needs_key(scope["path"])
                and not key_matches(self.api_key, presented_key(_headers(scope)))):
            body = error_body(401, "security_exception",
                              "missing or wrong API key (send 'Authorization: ApiKey <key>' or 'X-API-Key')")
            await send_json(send, 401, body, {"WWW-Authenticate": "ApiKey", **product_header(scope)})
            return
        await self.app(scope, receive, send)


class BodyLimitMiddleware:
    """Reads the request body up to ``limit`` bytes before the app sees it; beyond that, 413. A body that
    pauses longer than ``idle_s`` between chunks, or takes longer than ``total_s`` in all, is answered
    408 and its connection closed (a slow client cannot hold a connection and a worker for ever)."""

    def __init__(self, app: ASGIApp, limit: int, idle_s: float = 30.0, total_s: float = 300.0) -> None:
        self.app, self.limit, self.idle_s, self.total_s = app, limit, idle_s, total_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _headers(scope).get("content-length")
        too_big = error_body(413, "request_entity_too_large",
                             f"request body is larger than the limit of {self.limit} bytes")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await send_json(send, 413, too_big, product_header(scope))
            return
        chunks: list[bytes] = []
        size = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.total_s
        while True:
            try:
                msg = await asyncio.wait_for(receive(), max(0.0, min(self.idle_s, deadline - loop.time())))
            except TimeoutError:
                slow = error_body(408, "request_timeout", f"the request body did not arrive in time (at most "
                                  f"{self.idle_s:g} s between chunks, {self.total_s:g} s in all)")
                await send_json(send, 408, slow, {"Connection": "close", **product_header(scope)})
                return
            if msg["type"] == "http.disconnect":
                return
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await send_json(send, 413, too_big, product_header(scope))
                return
            chunks.append(chunk)
            if not msg.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class MetricsMiddleware:
    """Latency histogram by route template (the pass-through counts as one route)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            route = scope.get("route")
            name = getattr(route, "path", None) or "unmatched"
            self.metrics.requests.labels(name, scope.get("method", "")).observe(time.perf_counter() - start)
