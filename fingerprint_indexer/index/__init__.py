"""Near-duplicate index backends behind one interface (:class:`NearDupIndex`)."""

from fingerprint_indexer.index.base import NearDupIndex

__all__ = ["NearDupIndex"]
