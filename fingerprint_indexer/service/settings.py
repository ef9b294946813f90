"""Service settings: one frozen value built by the ``serve`` command (or by tests) and read everywhere.

Elasticsearch credentials and TLS come from explicit settings or from the same environment variables the
rest of the project uses (``ES_API_KEY``, ``ES_USERNAME``/``ES_PASSWORD``, ``ES_CA_CERTS``), so nothing
secret has to be written on a command line. ``ES_VERIFY_CERTS=false`` turns certificate verification off
(for a throw-away test cluster only: the connection is then open to interception).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fingerprint_indexer.env import env_flag
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig
from fingerprint_indexer.pipeline import Keep

OnDuplicate = Literal["tag", "skip"]
ON_DUPLICATE: tuple[OnDuplicate, ...] = ("tag", "skip")


@dataclass(frozen=True)
class EsSettings:
    """How the service reaches Elasticsearch (credentials are never logged)."""

    url: str
    api_key: str | None = None
    username: str | None = None
    password: str | None = None
    ca_certs: str | None = None
    verify_certs: bool = True
    timeout_s: float = 30.0

    @classmethod
    def from_env(cls, url: str, timeout_s: float = 30.0) -> EsSettings:
        return cls(
            url=url.rstrip("/"),
            api_key=os.environ.get("ES_API_KEY") or None,
            username=os.environ.get("ES_USERNAME") or None,
            password=os.environ.get("ES_PASSWORD") or None,
            ca_certs=os.environ.get("ES_CA_CERTS") or None,
            verify_certs=env_flag("ES_VERIFY_CERTS", True),
            timeout_s=timeout_s,
        )

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


@dataclass(frozen=True)
class ServiceSettings:
    """Everything the service needs; defaults are safe for a loopback sidecar."""

    es: EsSettings
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 9280
    api_key: str | None = field(default=None, repr=False)
    default_index: str = "news"
    on_duplicate: OnDuplicate = "tag"
    #: which copy of a duplicate group is the canonical (``longest``/``newest`` re-point the earlier one)
    keep: Keep = "first"
    k: int = 3
    processes: int = 2
    fingerprint: FingerprintConfig = field(default_factory=FingerprintConfig)
    max_body_bytes: int = 50 * 1024 * 1024
    max_batch: int = 1000
    max_bulk_actions: int = 10_000
    spool_limit_bytes: int = 512 * 1024 * 1024
    spool_segment_bytes: int = 16 * 1024 * 1024
    retry_after_s: int = 5
    max_open_indices: int = 64
    replay_backoff_max_s: float = 5.0
    #: replays of a write Elasticsearch keeps refusing (429/5xx for it alone) before it is parked
    replay_max_tries: int = 10
    #: seconds a connection may take to send a request's headers (slow or idle clients are closed)
    header_timeout_s: float = 10.0
    #: seconds a request body may pause between two chunks, and take in all
    body_idle_timeout_s: float = 30.0
    body_timeout_s: float = 300.0

    @property
    def store_root(self) -> Path:
        """One embedded store per Elasticsearch index lives under here."""
        return self.data_dir / "stores"

    @property
    def spool_dir(self) -> Path:
        return self.data_dir / "spool"
