"""The ASGI application factory.

``create_app(settings)`` wires the routes, error handlers and middleware; the lifespan starts the worker
pool, the Elasticsearch connection and the spool replayer, and on shutdown (after uvicorn has finished the
requests in flight) stops them in order. Pass ``state`` when the on-disk resources were opened already
(the ``serve`` command does, to report a locked store before binding a port).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from fingerprint_indexer import __version__
from fingerprint_indexer.collector import long_run
from fingerprint_indexer.sidecar import api, browse, copies_api, offline, proxy
from fingerprint_indexer.sidecar.errors import install_handlers
from fingerprint_indexer.sidecar.metrics import Metrics
from fingerprint_indexer.sidecar.middleware import ApiKeyMiddleware, BodyLimitMiddleware, MetricsMiddleware
from fingerprint_indexer.sidecar.settings import ServiceSettings
from fingerprint_indexer.sidecar.state import ServiceState

DESCRIPTION = """Near-duplicate detection beside Elasticsearch, or on the embedded store alone.

* `/v1/*`: fingerprint, ingest hook, similar and related look-ups.
* `/_bulk`, `/{index}/_bulk`, `/{index}/_doc/{id}`, `/{index}/_create/{id}`: an Elasticsearch-compatible
  proxy that adds fingerprint fields; every other path is passed through to Elasticsearch unchanged.
  Without Elasticsearch, these answer 501.

Send the API key as `Authorization: ApiKey <key>` or `X-API-Key: <key>` when the service has one."""


def create_app(settings: ServiceSettings, state: ServiceState | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        svc = state if state is not None else ServiceState.open(settings, metrics)
        app.state.svc = svc
        try:
            await svc.start()
            # what start-up loaded (modules, the fingerprinter's tables) kept out of the collector's passes,
            # and the youngest generation collected as an ingest's is: the service is the process, not a
            # guest in another's
            with long_run():
                yield
        finally:
            await svc.stop()

    app = FastAPI(title="fingerprint_indexer", version=__version__, description=DESCRIPTION,
                  lifespan=lifespan, redoc_url=None)
    install_handlers(app, settings.retry_after_s)
    app.include_router(api.router)
    app.include_router(browse.router)
    app.include_router(copies_api.router)  # before the proxy: its catch-all would take /ui
    # without Elasticsearch, its paths answer 501 naming --es rather than being passed on
    app.include_router(proxy.router if settings.es is not None else offline.router)
    metrics = state.metrics if state is not None else Metrics()
    # the last added middleware runs first: metrics, then the key check, then the body limit
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes,
                       idle_s=settings.body_idle_timeout_s, total_s=settings.body_timeout_s)
    app.add_middleware(ApiKeyMiddleware, api_key=settings.api_key)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app

