"""The one abstraction every near-duplicate index backend implements.

Backends (in-memory NumPy tables, LevelDB, Elasticsearch) differ in where block buckets live; the
contract is the same: ``query(fp, k)`` returns every stored document whose fingerprint is within
Hamming distance ``k`` of ``fp``, and nothing farther, ordered by (distance, doc id).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.records.match import Match

Meta = Mapping[str, Any]


class NearDupIndex(ABC):
    """Stores (doc id, 64-bit fingerprint) pairs and finds those within a Hamming distance."""

    layout: BlockLayout

    @abstractmethod
    def add(self, doc_id: str, fingerprint: int, meta: Meta | None = None) -> None:
        """Insert or replace ``doc_id`` with ``fingerprint``."""

    def add_many(self, items: Iterable[tuple[str, int, Meta | None]]) -> None:
        """Insert many documents; backends override this to batch."""
        for doc_id, fp, meta in items:
            self.add(doc_id, fp, meta)

    @abstractmethod
    def remove(self, doc_id: str) -> bool:
        """Delete ``doc_id``; returns whether it was present."""

    @abstractmethod
    def query(self, fingerprint: int, k: int = 3) -> list[Match]:
        """All stored documents within distance ``k``, sorted by (distance, doc id)."""

    def query_many(self, fingerprints: Sequence[int], k: int = 3) -> list[list[Match]]:
        """:meth:`query` for each fingerprint; backends override this to batch."""
        return [self.query(fp, k) for fp in fingerprints]

    @abstractmethod
    def get(self, doc_id: str) -> int | None:
        """The fingerprint stored for ``doc_id``, or None."""

    @abstractmethod
    def __len__(self) -> int:
        """Number of stored documents."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release resources (files, connections). Idempotent."""

    def __enter__(self) -> NearDupIndex:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
