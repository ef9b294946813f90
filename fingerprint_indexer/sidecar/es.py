"""The service's own connection to Elasticsearch: one pooled ``httpx.AsyncClient``, and the one module of
the service that reads httpx's errors itself (to say why the write path waits: TLS, timeout, connection);
the routes that use :attr:`EsClient.http` map them with :func:`fingerprint_indexer.es.errors.es_errors`.

Raw HTTP rather than the official client, because the proxy must relay requests and responses byte for
byte (status, headers, body) and the ingest path only needs ``_bulk`` (and ``_mget`` for updates). These
requests are the same on every supported server (Elasticsearch 8/9, OpenSearch 2/3); the server is still
identified when it first answers (:attr:`EsClient.server`, :mod:`fingerprint_indexer.es.servers`), so an
unsupported one is reported by ``/readyz`` rather than failing on some later write.
Credentials and the CA bundle come from :class:`EsSettings`; the caller's own ``Authorization`` header is
never passed on.

TLS: the CA bundle (``ES_CA_CERTS``) is loaded into the client's SSL context at start. A bundle that cannot
be read does not stop the service: every connection then fails verification, writes are spooled, and
:attr:`EsClient.last_error` (shown by ``/readyz`` and logged) says why. Reasons never carry credentials.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
from collections.abc import Callable
from typing import Any

import httpx
import orjson

from fingerprint_indexer.errors import FingerprintIndexerError
from fingerprint_indexer.es.errors import SERVICE_RETRY_STATUSES, EsUnavailable
from fingerprint_indexer.es.mapping import ES_LAYOUT, index_creation, mapping_layout
from fingerprint_indexer.es.servers import (
    NODES_PATH,
    ROOT_PATH,
    Server,
    UnsupportedServer,
    from_nodes,
    from_root,
)
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.sidecar.settings import EsSettings

NDJSON = "application/x-ndjson"
log = logging.getLogger("fingerprint_indexer.sidecar")


def auth_headers(es: EsSettings) -> dict[str, str]:
    if es.api_key:
        return {"authorization": f"ApiKey {es.api_key}"}
    if es.username:
        token = base64.b64encode(f"{es.username}:{es.password or ''}".encode()).decode()
        return {"authorization": f"Basic {token}"}
    return {}


def ssl_context(es: EsSettings) -> tuple[ssl.SSLContext | bool, str | None]:
    """The ``verify`` value for httpx and, when the CA bundle cannot be used, why (the context then
    trusts no certificate at all, so nothing is sent to an unverified server)."""
    if not es.verify_certs:
        return False, None
    try:
        return ssl.create_default_context(cafile=es.ca_certs), None
    except (OSError, ssl.SSLError) as exc:
        reason = f"CA bundle {es.ca_certs} cannot be used ({type(exc).__name__}: {exc.strerror or exc})"
        nothing_trusted = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, but knows no CA
        return nothing_trusted, reason


def failure_reason(exc: BaseException) -> str:
    """A short, secret-free description of why a request to Elasticsearch failed."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return f"TLS certificate verification failed: {seen.verify_message or seen.reason}"
        if isinstance(seen, ssl.SSLError):
            return f"TLS handshake failed: {seen.reason or type(seen).__name__}"
        seen = seen.__cause__ or seen.__context__
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer in time ({type(exc).__name__})"
    if isinstance(exc, httpx.ConnectError):
        return f"connection failed: {exc}" if str(exc) else "connection failed"
    return f"{type(exc).__name__} talking to Elasticsearch"


def status_reason(status: int) -> str:
    if status == 401:
        return "Elasticsearch answered 401: check ES_API_KEY or ES_USERNAME/ES_PASSWORD"
    if status == 403:
        return "Elasticsearch answered 403: the service's credentials lack a privilege"
    return f"Elasticsearch answered {status}"


def not_now(status: int) -> bool:
    """A status after which a write must wait and be retried: the cluster refused the service's own
    credentials (401/403), is overloaded (429) or failing (5xx)
    (:data:`~fingerprint_indexer.es.errors.SERVICE_RETRY_STATUSES`)."""
    return status in SERVICE_RETRY_STATUSES


class EsClient:
    """Bulk writes, multi-get, index creation, health and raw relaying."""

    def __init__(self, settings: EsSettings) -> None:
        self.settings = settings
        self.base = settings.url
        #: the copy-marks setting (tag) recorded in the indexes this client creates (None: no marks)
        self.copy_marks: str | None = None
        verify, self.config_error = ssl_context(settings)
        if self.config_error:
            log.error("Elasticsearch TLS: %s; writes are spooled until this is fixed", self.config_error)
        elif not settings.verify_certs and settings.url.startswith("https:"):
            log.warning("Elasticsearch TLS certificates are not verified (ES_VERIFY_CERTS=false)")
        #: Why the last health check failed (None after a successful one); never holds credentials.
        self.last_error: str | None = self.config_error
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=32)
        self.http = httpx.AsyncClient(base_url=settings.url, headers=auth_headers(settings), verify=verify,
                                      timeout=httpx.Timeout(settings.timeout_s, connect=3.0), limits=limits)
        # no default Accept/Accept-Encoding/User-Agent: relayed requests carry exactly the caller's headers
        # (setting ``headers`` merges httpx's defaults back in, so they are removed one by one); without
        # this, an answer the caller did not ask to be compressed would come back gzip-encoded
        for name in ("accept", "accept-encoding", "user-agent", "connection"):
            self.http.headers.pop(name, None)
        # writes wait as long as ``--es-timeout`` says (a slow bulk is spooled, not cut short early)
        self.write_timeout = httpx.Timeout(settings.timeout_s, connect=3.0)
        self._layouts: dict[str, BlockLayout] = {}  # index -> the key layout its mapping records
        #: The server, once it has answered (see :meth:`detect`).
        self.server: Server | None = None

    async def close(self) -> None:
        await self.http.aclose()

    async def ping(self, timeout_s: float = 2.0) -> bool:
        """True when the cluster answers its health API; otherwise :attr:`last_error` says why (logged
        once per change, so a probe every few seconds does not flood the log)."""
        reason: str | None
        try:
            r = await self.http.get("/_cluster/health", timeout=timeout_s)
        except httpx.HTTPError as exc:
            reason = failure_reason(exc)
        else:
            reason = None if r.status_code == 200 else status_reason(r.status_code)
        if reason is None and self.server is None:
            reason = await self.detect(timeout_s)
        if reason is not None and self.config_error:
            reason = f"{self.config_error}; {reason}"
        if reason != self.last_error:
            if reason is None:
                log.info("Elasticsearch reachable again")
            else:
                log.warning("Elasticsearch unreachable: %s", reason)
        self.last_error = reason
        return reason is None

    async def detect(self, timeout_s: float = 2.0) -> str | None:
        """Identify the server (``GET /``, else the nodes info API) into :attr:`server`; why that failed,
        or None."""
        try:
            for path in (ROOT_PATH, NODES_PATH):
                r = await self.http.get(path, headers={"accept": "application/json"}, timeout=timeout_s)
                if r.status_code != 200:
                    continue
                body = r.json()
                found = from_root(body) if path == ROOT_PATH else from_nodes(body, dict(r.headers))
                if found is not None:
                    self.server = found
                    log.info("Elasticsearch endpoint is %s", found.title)
                    return None
        except UnsupportedServer as exc:
            return str(exc)
        except (httpx.HTTPError, ValueError) as exc:
            return failure_reason(exc)
        return "the server answered neither GET / nor the nodes info API with a version"

    async def mget(self, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """POST /_mget for ``docs`` (each with ``_index``, ``_id`` and optionally ``routing`` and
        ``_source``); one answer per doc, in order. Raises :class:`EsUnavailable` when the cluster does not
        answer and :class:`BulkRejected` when it refuses the request as a whole."""
        status, data = await self._post_json("/_mget", json={"docs": docs})
        if status != 200 or len(data.get("docs") or []) != len(docs):
            raise BulkRejected(status, data)
        return list(data["docs"])

    async def bulk(self, body: bytes, params: dict[str, str] | None = None) -> dict[str, Any]:
        """POST /_bulk; a response that is not a per-item answer raises :class:`EsUnavailable`."""
        status, data = await self._post_json("/_bulk", content=body, params=params or {},
                                             headers={"content-type": NDJSON}, parse=orjson.loads)
        if status != 200 or "items" not in data:
            raise BulkRejected(status, data)
        return data

    async def _post_json(self, path: str, parse: Callable[[bytes], Any] = json.loads, **kwargs: Any
                         ) -> tuple[int, dict[str, Any]]:  # fmt: skip
        """POST a write-path request; (status, JSON body). No answer, 401/403 (the service's own
        credentials), 429, 5xx or a body that is not JSON raise :class:`EsUnavailable` (retry later: the
        writes are spooled, and :attr:`last_error` says why); other statuses are the caller's to judge.
        ``parse`` reads the answer: orjson for answers that hold no document (it reads an integer beyond
        64 bits as a float), the standard library's otherwise."""
        try:
            r = await self.http.post(path, timeout=self.write_timeout, **kwargs)
        except httpx.HTTPError as exc:
            raise self._unavailable(failure_reason(exc)) from exc
        if not_now(r.status_code):
            raise self._unavailable(status_reason(r.status_code))
        try:
            data: dict[str, Any] = parse(r.content)
        except ValueError as exc:  # json.JSONDecodeError and orjson.JSONDecodeError both are
            raise EsUnavailable(f"Elasticsearch answered {r.status_code} without JSON") from exc
        return r.status_code, data

    def _unavailable(self, reason: str) -> EsUnavailable:
        """The exception for a write that must wait, with :attr:`last_error` set (``/readyz`` shows it)."""
        self.last_error = reason
        return EsUnavailable(reason)

    async def ensure_index(self, index: str) -> None:
        """Create ``index`` with the fingerprint mapping when it does not exist.

        Asked before every write request (one ``HEAD``), not once per process: an index deleted while the
        service runs is created again with this mapping by the next write, never by Elasticsearch's
        dynamic mapping. The index is what :func:`index_creation` says (the name itself, no alias; the
        key layout :data:`ES_LAYOUT`; the copy-marks tag of :attr:`copy_marks`; one replica when ``GET
        /_cluster/health``, asked once per creation, counts more than one data node). The mapping is made
        dynamic, so an indexer's own extra fields stay searchable as they would be without the proxy; the
        fingerprint fields keep their declared types. A 401/403 (the service's credentials) raises
        :class:`EsUnavailable` like an outage: the writes are spooled.
        """
        try:
            r = await self.http.head(f"/{index}", timeout=self.write_timeout)
            if r.status_code == 404:
                self._layouts.pop(index, None)
                concrete, body = index_creation(index, ES_LAYOUT, copy_marks=self.copy_marks,
                                                data_nodes=await self._data_nodes(), dynamic=True)
                r = await self.http.put(f"/{concrete}", json=body, timeout=self.write_timeout)
                if not_now(r.status_code):
                    raise self._unavailable(f"creating index {index}: {status_reason(r.status_code)}")
                # 400 resource_already_exists (a concurrent creator) is fine; other errors show per item
            elif not_now(r.status_code):
                raise self._unavailable(f"HEAD {index}: {status_reason(r.status_code)}")
        except httpx.HTTPError as exc:
            raise self._unavailable(failure_reason(exc)) from exc

    async def index_layout(self, index: str) -> BlockLayout:
        """The key layout the block fields of ``index`` are written in: the one its mapping records (asked
        once per index and remembered), else :data:`ES_LAYOUT`, the layout :meth:`ensure_index` creates a
        missing index with. When Elasticsearch cannot be asked, :data:`ES_LAYOUT` too, not remembered
        (the writes are being spooled then): only an index of another layout, first written to by this
        process during an outage, gets documents whose keys it cannot look up."""
        known = self._layouts.get(index)
        if known is not None:
            return known
        try:
            r = await self.http.get(f"/{index}/_mapping", headers={"accept": "application/json"},
                                    timeout=self.write_timeout)  # fmt: skip
        except httpx.HTTPError:
            return ES_LAYOUT
        if r.status_code != 200:
            return ES_LAYOUT
        try:
            layouts = {mapping_layout(m) for m in r.json().values()} - {None}
        except (ValueError, KeyError, TypeError, AttributeError):
            return ES_LAYOUT
        if len(layouts) != 1:  # no fingerprint mapping, or indices behind an alias that disagree
            return ES_LAYOUT
        layout = layouts.pop()
        assert layout is not None
        self._layouts[index] = layout
        return layout

    async def _data_nodes(self) -> int:
        """The cluster's number of data nodes (``GET /_cluster/health``); an answer without it raises
        :class:`EsUnavailable`, so the index is created later with the right replicas rather than now
        with a guess."""
        r = await self.http.get("/_cluster/health", headers={"accept": "application/json"},
                                timeout=self.write_timeout)
        if r.status_code != 200:
            raise self._unavailable(f"cluster health, to create an index: {status_reason(r.status_code)}")
        try:
            return int(r.json()["number_of_data_nodes"])
        except (ValueError, KeyError, TypeError) as exc:
            raise self._unavailable("cluster health answered without number_of_data_nodes") from exc


class BulkRejected(FingerprintIndexerError):
    """Elasticsearch refused a whole bulk request with a 4xx (the body is its own error document)."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status, self.body = status, body
        super().__init__(f"bulk rejected with {status}")
