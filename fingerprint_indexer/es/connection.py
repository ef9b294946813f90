"""A client for the configured Elasticsearch URL: settings, retries and one check that the server answers."""

from __future__ import annotations

from typing import Any

from elasticsearch import ApiError, Elasticsearch, TransportError

from fingerprint_indexer.env import EsSettingsError, es_settings
from fingerprint_indexer.es.errors import EsUnavailable, as_es_error
from fingerprint_indexer.es.servers import UnsupportedServer, client_for

#: How a client rides out a node that dies, restarts or is overloaded: a request that fails to connect or
#: times out, or is answered 429/502/503/504, is sent again (to the next node when ``ES_URL`` lists
#: several), waiting a little longer each time after a failed connection. The writes are safe to repeat:
#: bulk actions name their document ids, so a repeated write replaces the document rather than adding one.
RETRIES: dict[str, Any] = {"max_retries": 5, "retry_on_timeout": True,
                           "retry_on_status": (429, 502, 503, 504),
                           "retry_backoff_base": 0.5, "retry_backoff_cap": 8.0}  # fmt: skip


def connect(
    url: str | None = None,
    *,
    api_key: str | None = None,
    username: str | None = None,
    password: str | None = None,
    ca_certs: str | None = None,
    request_timeout: float = 60.0,
    check: bool = True,
) -> Elasticsearch:
    """A client for ``url`` (default ``ES_URL``; the URLs of several nodes of one cluster, comma-separated,
    are used together, see :data:`RETRIES`), speaking the wire format of the server found there
    (Elasticsearch 8/9 or OpenSearch 2/3, see :mod:`fingerprint_indexer.es.servers`); the URL, credentials
    and TLS settings are read and validated by :func:`fingerprint_indexer.env.es_settings`, as for the
    service (arguments given here take precedence).  With ``check`` the cluster is contacted
    once so that a wrong URL fails here, with one error naming it, rather than deep inside a command."""
    try:
        settings = es_settings(url)
    except EsSettingsError as exc:
        raise EsUnavailable(str(exc)) from exc
    url = settings.url
    kwargs: dict[str, Any] = {"request_timeout": request_timeout, **RETRIES}
    api_key = api_key or settings.api_key
    username = username or settings.username
    if api_key:
        kwargs["api_key"] = api_key
    elif username:
        kwargs["basic_auth"] = (username, password or settings.password or "")
    ca_certs = ca_certs or settings.ca_certs
    if ca_certs:
        kwargs["ca_certs"] = ca_certs
    if not settings.verify_certs:
        kwargs.update(verify_certs=False, ssl_show_warn=False)
    try:
        client, _server = client_for(url, check=check, **kwargs)  # the server's kind picks the wire format
    except UnsupportedServer as exc:
        raise EsUnavailable(f"{url}: {exc}") from exc
    except TransportError as exc:
        raise as_es_error(exc, f"cannot reach Elasticsearch at {url}") from exc
    if check:
        try:
            client.cluster.health(timeout="10s")
        except (TransportError, ApiError) as exc:
            client.close()
            raise as_es_error(exc, f"cannot reach Elasticsearch at {url}", refused=EsUnavailable) from exc
    return client

