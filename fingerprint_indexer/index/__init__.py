"""Near-duplicate index backends behind one interface (:class:`NearDupIndex`)."""

from fingerprint_indexer.index.base import Match, NearDupIndex

__all__ = ["Match", "NearDupIndex"]
