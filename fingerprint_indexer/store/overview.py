"""What a store holds, as a reader browses it: clusters largest first, counts by decision, the most
recent near-duplicates, and a cluster's members.

An embedded store indexes documents by id, fingerprint, digest and band, not by cluster or time; one scan
of its records answers all of these, and :class:`OverviewCache` keeps that answer until the store's
generation (bumped by every commit) moves on, so a read-only store is scanned once and a store being
written is scanned again only when it changed and someone looks.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from fingerprint_indexer.records.record import DocRecord
from fingerprint_indexer.store.embedded import EmbeddedStore

#: Most recent duplicates an overview keeps (a page of them is asked for at a time).
RECENT_KEPT = 1000


@dataclass(frozen=True)
class ClusterSummary:
    """One cluster: its id, size, canonical (the document the others name) and latest member time."""

    id: str
    size: int
    canonical: str
    latest: float
    members: tuple[str, ...]  # canonical first, then by decision time


@dataclass
class Overview:
    """One scan's answer: every cluster (largest first), counts by decision, the latest duplicates."""

    generation: int
    documents: int
    counts: dict[str, int]
    clusters: list[ClusterSummary]
    recent: list[DocRecord] = field(default_factory=list)  # duplicates, most recent first
    duplicates: int = 0  # every duplicate the store holds (``recent`` keeps the latest of them)
    _by_id: dict[str, ClusterSummary] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {c.id: c for c in self.clusters}

    def cluster(self, cluster_id: str) -> ClusterSummary | None:
        return self._by_id.get(cluster_id)

    @classmethod
    def of(cls, records: Iterable[DocRecord], generation: int = 0) -> Overview:
        """The overview of these records (each document's current record). Only a few fields of each
        record are kept, and whole records only for the latest duplicates, so a store of millions of
        documents is scanned in the memory of its ids."""
        members: dict[str, list[tuple[bool, float, str, str]]] = defaultdict(list)
        counts: Counter[str] = Counter()
        dups: list[DocRecord] = []
        n = n_dups = 0

        def latest(recs: list[DocRecord]) -> list[DocRecord]:
            recs.sort(key=lambda r: (-r.time, r.id))
            return recs[:RECENT_KEPT]

        for rec in records:
            n += 1
            counts[rec.decision] += 1
            members[rec.cluster_id].append((rec.duplicate_of is not None, rec.time, rec.id, rec.root))
            if rec.duplicate_of is not None and rec.decision != "new":
                n_dups += 1
                dups.append(rec)
                if len(dups) >= 2 * RECENT_KEPT:
                    dups = latest(dups)
        clusters = []
        for cid, recs in members.items():
            recs.sort(key=lambda r: (r[0], r[1], r[2]))
            clusters.append(ClusterSummary(cid, len(recs), recs[0][3], max(r[1] for r in recs),
                                           tuple(r[2] for r in recs)))
        clusters.sort(key=lambda c: (-c.size, -c.latest, c.id))
        return cls(generation, n, dict(counts), clusters, latest(dups), n_dups)


def store_records(store: EmbeddedStore) -> Iterable[DocRecord]:
    """Every document record of ``store``, in id order."""
    for key, raw in store.db.iterator(prefix=b"s/d/"):
        yield DocRecord.from_bytes(key[4:].decode(), raw, store.algorithm)


class OverviewCache:
    """The overview of one store, scanned again only after the store committed something."""

    def __init__(self, store: EmbeddedStore) -> None:
        self.store = store
        self._overview: Overview | None = None

    def get(self) -> Overview:
        got = self._overview
        if got is None or got.generation != self.store.generation:
            got = self._overview = Overview.of(store_records(self.store), self.store.generation)
        return got
