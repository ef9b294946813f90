"""What the decision rules read and write: the protocol every store's batch implements.

It lives below the stores and the engine alike, so that the embedded store
(:class:`fingerprint_indexer.store.embedded.StoreBatch`) and the Elasticsearch index
(:class:`fingerprint_indexer.elastic.es_ingest.EsDecider`'s batch view) implement it without importing
the engine (:mod:`fingerprint_indexer.engine.rules`), which is written against it.
"""

from __future__ import annotations

from typing import Protocol

from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.records.match import Match
from fingerprint_indexer.records.record import Cluster, DocRecord


class RecordStore(Protocol):
    """What the rules read and write: one batch of a store, reading its own writes.

    Reads see the documents stored before and those written earlier through the same object.
    """

    def record(self, doc_id: str) -> DocRecord | None:
        """The stored record of ``doc_id`` (None when absent)."""

    def doc_with_digest(self, digest: str) -> str | None:
        """A stored document with this content digest (None when there is none)."""

    def near_docs(self, ev: Evidence, k: int) -> list[Match]:
        """Stored documents the verification rule accepts as near-duplicates of ``ev``, nearest first
        (distance, then id)."""

    def centres_near(self, fp: int, k: int) -> list[Match]:
        """Cluster centres within ``k`` of ``fp``, as (cluster id, distance)."""

    def cluster(self, cluster_id: str) -> Cluster | None:
        """The cluster of that id (None when there is none)."""

    def put_record(self, rec: DocRecord, index: bool, evidence: Evidence | None = None) -> None:
        """Store a decided document (``index``: findable as a near-duplicate; never for degenerate ones).
        ``evidence``: what ``rec`` was made from, when the caller holds it (its sketch's bytes and band keys,
        which a store need not then read again from the record's hex)."""

    def update_record(self, rec: DocRecord) -> None:
        """Rewrite a stored record (its ``duplicate_of`` and ``distance`` after the canonical changed)."""

    def remove_doc(self, doc_id: str) -> bool:
        """Remove a document before its id is stored again with other text."""

    def found_cluster(self, founder: str, centre: int) -> Cluster:
        """A new cluster founded by ``founder`` (its id, suffixed ``~2``, ``~3`` if that id is taken)."""

    def put_cluster(self, c: Cluster) -> None:
        """Store a cluster's new size."""

    def missing(self, doc_id: str) -> Exception:
        """The error for a document found through a key but without a record (a damaged store)."""
