"""The decision engine: the rules (:mod:`.rules`) over one record type
(:mod:`fingerprint_indexer.records.record`), for every store."""

from fingerprint_indexer.engine.rules import (
    KEEP_POLICIES,
    MAX_HOPS,
    Decision,
    Engine,
    Keep,
    prefer,
    root,
)

__all__ = ["KEEP_POLICIES", "MAX_HOPS", "Decision", "Engine", "Keep", "prefer", "root"]
