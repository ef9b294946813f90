"""API-key protection of the service.

The key comes from ``FPI_API_KEY`` or a key file (first line). Clients send it as
``Authorization: ApiKey <key>`` (what the official Elasticsearch client sends when given ``api_key=``) or as
``X-API-Key: <key>``. Comparison is constant-time. Both headers are removed before anything is forwarded to
Elasticsearch, which gets the service's own credentials instead. Binding a non-loopback address without a
key is refused: an open ingest hook in front of a cluster is a write hole.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from pathlib import Path

from fingerprint_indexer.errors import FingerprintIndexerError

#: Request headers that carry the service key and must never reach Elasticsearch.
KEY_HEADERS = frozenset({"authorization", "x-api-key"})
#: Paths served without a key: probes and the description of the API.
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/docs/oauth2-redirect"})


class AuthConfigError(FingerprintIndexerError, ValueError):
    """The key settings are unusable (empty key file, non-loopback bind without a key)."""


def load_api_key(key_file: str | Path | None = None, env: str = "FPI_API_KEY") -> str | None:
    """The service key: the key file when given, else the environment variable, else None."""
    if key_file is not None:
        text = Path(key_file).read_text(encoding="utf-8").strip()
        key = text.splitlines()[0].strip() if text else ""
        if not key:
            raise AuthConfigError(f"key file {key_file} is empty")
        return key
    key = os.environ.get(env, "").strip()
    return key or None


def is_loopback(host: str) -> bool:
    """True for loopback addresses and ``localhost``; anything else (including 0.0.0.0) is exposed."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, api_key: str | None) -> None:
    """Refuse to listen beyond loopback without a key."""
    if not is_loopback(host) and not api_key:
        raise AuthConfigError(
            f"refusing to bind {host} without an API key: set FPI_API_KEY or pass --api-key-file "
            "(only loopback addresses may run without one)"
        )
    if api_key is not None and len(api_key) < 16:
        raise AuthConfigError("the API key must be at least 16 characters")


def presented_key(headers: dict[str, str]) -> str | None:
    """The key a request carries (``headers`` with lower-case names), or None."""
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "apikey" and value.strip():
        return value.strip()
    x = headers.get("x-api-key", "").strip()
    return x or None


def key_matches(expected: str, presented: str | None) -> bool:
    """Constant-time comparison (of UTF-8 bytes, so non-ASCII input cannot raise)."""
    if presented is None:
        return False
    return hmac.compare_digest(expected.encode(), presented.encode("utf-8", "surrogatepass"))


def needs_key(path: str) -> bool:
    # the explorer page's static files hold no data; its API calls send the key
    return path not in OPEN_PATHS and path != "/ui" and not path.startswith("/ui/")
