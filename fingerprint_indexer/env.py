"""Reading settings from the environment, shared by the CLI commands and the service.

:func:`es_settings` is the one reader of the Elasticsearch connection settings, for every command (``es
...``, ``index``, ``reindex``, ``serve``) and the service: ``ES_URL`` (or ``--es``), ``ES_API_KEY`` or
``ES_USERNAME``/``ES_PASSWORD``, ``ES_CA_CERTS`` and ``ES_VERIFY_CERTS``, validated the same way
everywhere, so nothing secret has to be written on a command line. ``ES_VERIFY_CERTS=false`` turns
certificate verification off (for a throw-away test cluster only: the connection is then open to
interception).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from fingerprint_indexer.errors import FingerprintIndexerError

URL_HINT = "expected an http:// or https:// URL with a host, e.g. https://es:9200"


class EsSettingsError(FingerprintIndexerError, ValueError):
    """An Elasticsearch setting that cannot be used; ``setting`` names it (``--es / ES_URL`` for the URL)."""

    def __init__(self, message: str, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


def env_flag(name: str, default: bool) -> bool:
    """A yes/no environment variable (``1/true/yes/on`` or ``0/false/no/off``; unset or empty: default)."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be true or false, not {raw!r}")


@dataclass(frozen=True)
class EsSettings:
    """How to reach Elasticsearch (credentials are never logged)."""

    url: str
    api_key: str | None = None
    username: str | None = None
    password: str | None = None
    ca_certs: str | None = None
    verify_certs: bool = True
    timeout_s: float = 30.0

    @classmethod
    def from_env(cls, url: str | None = None, timeout_s: float = 30.0) -> EsSettings:
        """:func:`es_settings` (kept as the constructor the service's callers know)."""
        return es_settings(url, timeout_s)

    def __repr__(self) -> str:  # keep secrets out of tracebacks and logs
        return (f"EsSettings(url={redact_url(self.url)!r}, "
                f"auth={'yes' if self.api_key or self.username else 'no'}, "
                f"ca_certs={self.ca_certs!r}, verify_certs={self.verify_certs})")


def redact_url(url: str) -> str:
    """``url`` without a password in its user-info part (``https://user:***@host``)."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    if sep and "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:***@{host}"
    return f"{scheme}{sep}{netloc}{slash}{path}"


def es_url(url: str | None = None) -> str | None:
    """``url`` when given, else ``ES_URL`` (what ``--es`` defaults to)."""
    return url or os.environ.get("ES_URL") or None


def es_settings(url: str | None = None, timeout_s: float = 30.0) -> EsSettings:
    """The Elasticsearch settings from ``url`` (default ``ES_URL``; several nodes of one cluster
    comma-separated) and the ``ES_*`` environment, or :class:`EsSettingsError` saying in one line which
    one is wrong: no URL, a URL that is not ``http(s)://host[:port]``, ``ES_PASSWORD`` without
    ``ES_USERNAME``, ``ES_VERIFY_CERTS`` other than true/false."""
    url = es_url(url)
    if not url:
        raise EsSettingsError("no Elasticsearch URL given (pass --es URL or set ES_URL)", "--es / ES_URL")
    nodes = [u.strip().rstrip("/") for u in url.split(",")]
    for node in nodes:
        try:
            parts = urlsplit(node)
            valid_url = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
        except ValueError:  # e.g. a port that is not a number
            valid_url = False
        if not valid_url:
            raise EsSettingsError(f"{URL_HINT}, not {redact_url(node)!r}", "--es / ES_URL")
    url = ",".join(nodes)
    if os.environ.get("ES_PASSWORD") and not os.environ.get("ES_USERNAME"):
        raise EsSettingsError("ES_PASSWORD is set but ES_USERNAME is not", "ES_USERNAME")
    try:
        verify = env_flag("ES_VERIFY_CERTS", True)
    except ValueError as exc:
        raise EsSettingsError(str(exc), "ES_VERIFY_CERTS") from None
    return EsSettings(
        url=url.rstrip("/"),
        api_key=os.environ.get("ES_API_KEY") or None,
        username=os.environ.get("ES_USERNAME") or None,
        password=os.environ.get("ES_PASSWORD") or None,
        ca_certs=os.environ.get("ES_CA_CERTS") or None,
        verify_certs=verify,
        timeout_s=timeout_s,
    )
