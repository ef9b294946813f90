"""The decision engine: the rules (:mod:`.rules`) over one record type (:mod:`.records`), for every store."""

from fingerprint_indexer.engine.records import Cluster, DocRecord, record_now
from fingerprint_indexer.engine.rules import (
    KEEP_POLICIES,
    MAX_HOPS,
    Decision,
    Engine,
    Keep,
    RecordStore,
    prefer,
    root,
)

__all__ = ["KEEP_POLICIES", "MAX_HOPS", "Cluster", "Decision", "DocRecord", "Engine", "Keep", "RecordStore",
           "prefer", "record_now", "root"]  # fmt: skip
