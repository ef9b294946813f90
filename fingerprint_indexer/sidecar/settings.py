"""Service settings: one frozen value built by the ``serve`` command (or by tests) and read everywhere.

Elasticsearch credentials and TLS come from explicit settings or from the environment, read by the one
reader every command uses (:func:`fingerprint_indexer.env.es_settings`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fingerprint_indexer.env import EsSettings
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig
from fingerprint_indexer.pipeline import Keep

OnDuplicate = Literal["tag", "skip"]
ON_DUPLICATE: tuple[OnDuplicate, ...] = ("tag", "skip")
State = Literal["embedded", "elasticsearch"]
#: Where decisions are made: the sidecar's own embedded stores, or the cluster (stateless sidecars).
STATES: tuple[State, ...] = ("embedded", "elasticsearch")


@dataclass(frozen=True)
class ServiceSettings:
    """Everything the service needs; defaults are safe for a loopback sidecar."""

    #: None: no Elasticsearch; the service runs on its embedded stores alone (its routes that need a
    #: cluster answer 501, naming --es)
    es: EsSettings | None
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 9280
    api_key: str | None = field(default=None, repr=False)
    default_index: str = "news"
    on_duplicate: OnDuplicate = "tag"
    #: which copy of a duplicate group is the canonical (``longest``/``newest`` re-point the earlier one)
    keep: Keep = "first"
    state: State = "embedded"
    k: int = 3
    #: fingerprinting: worker processes (> 1), or else threads of the service process
    processes: int = 2
    threads: int = 2
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
    #: one store (as ``dedupe`` writes it) serving the default index, in place of a store per index
    store_path: Path | None = None
    #: serve the stores read-only: look-ups only, nothing decided or written (``explore``)
    readonly: bool = False
    #: input files to read stored documents' texts from (default: those the store recorded)
    sources: tuple[str, ...] | None = None

    @property
    def store_root(self) -> Path:
        """One embedded store per Elasticsearch index lives under here."""
        return self.data_dir / "stores"

    @property
    def spool_dir(self) -> Path:
        return self.data_dir / "spool"
