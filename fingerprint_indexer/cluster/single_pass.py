"""Single-Pass clustering of fingerprints.

Each new document joins the cluster whose centre is nearest within distance ``k`` (ties: smaller cluster
id), or founds a new cluster with itself as centre. A centre is the founder's fingerprint and never
moves: a moving centroid (bitwise majority of the members) would change which cluster later documents
join depending on arrival order and can drift until it chains unrelated stories, while a fixed centre
keeps every member within ``k`` of it and keeps assignments reproducible. Cluster ids are the founder's
doc id, so they are stable across runs on the same store, and a second run continues the clusters of the
first (the centre lookup is backed by the store).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.index.memory import MemoryIndex
from fingerprint_indexer.records.match import Match
from fingerprint_indexer.records.record import new_cluster_id

#: Finds cluster centres within k of a fingerprint, as (cluster id, distance) sorted nearest first.
CentreLookup = Callable[[int, int], list[Match]]


@dataclass(frozen=True)
class Assignment:
    cluster_id: str
    distance: int
    founded: bool


def assign(fp: int, k: int, centres_near: CentreLookup, founding_id: str) -> Assignment:
    """The Single-Pass step: nearest centre within ``k``, else a new cluster ``founding_id``."""
    hits = centres_near(fp, k)
    if hits:
        best = min(hits, key=lambda m: (m.distance, m.doc_id))
        return Assignment(best.doc_id, best.distance, False)
    return Assignment(founding_id, 0, True)


class SinglePassClusterer:
    """In-memory Single-Pass clustering over a stream of (doc id, fingerprint)."""

    def __init__(self, k: int = 3, layout: BlockLayout | None = None) -> None:
        self.k = k
        self.centres = MemoryIndex(layout or BlockLayout.for_k(k))
        self.centres.layout.check_k(k)
        self.sizes: dict[str, int] = {}

    def add(self, doc_id: str, fp: int) -> Assignment:
        a = assign(fp, self.k, self.centres.query, new_cluster_id(doc_id, self.sizes.__contains__))
        if a.founded:
            self.centres.add(a.cluster_id, fp)
            self.sizes[a.cluster_id] = 0
        self.sizes[a.cluster_id] += 1
        return a

    def add_many(self, items: Iterable[tuple[str, int]]) -> list[Assignment]:
        return [self.add(doc_id, fp) for doc_id, fp in items]
