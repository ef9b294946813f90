"""The one record type of a stored decision, and of a Single-Pass cluster, for every store.

The embedded store keeps :class:`DocRecord` as JSON under ``s/d/<id>``; the Elasticsearch store reads it
from (and writes it into) an index document
(:func:`fingerprint_indexer.elastic.es_ingest.record_from_source`).
Both hand the same type to the decision rules (:mod:`fingerprint_indexer.engine.rules`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, fields
from typing import Any

from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.fingerprint.sketch import band_keys


@dataclass
class DocRecord:
    """What a store remembers about one document: its evidence and its decision."""

    id: str
    fingerprint: int
    content_digest: str
    keyword_digest: str
    cluster_id: str
    decision: str
    duplicate_of: str | None
    distance: int | None
    degenerate: bool
    length: int
    published_at: str | None
    version: str
    time: float
    chunks: list[int] = field(default_factory=list)  # chunk fingerprints (also indexed)
    sketch: str = ""  # hex of the MinHash sketch: the second-stage check on candidates
    facts: list[str] = field(default_factory=list)  # numbers, dates, names: the third-stage check
    frames: list[int] = field(default_factory=list)  # skeleton + filling of fact-bearing lines (same)
    replaces: str | None = None  # the canonical this document took over from (keep longest/newest)

    @property
    def fingerprints(self) -> list[int]:
        return [self.fingerprint, *self.chunks]

    @property
    def evidence(self) -> Evidence:
        """What verification compares (:func:`fingerprint_indexer.verify.check`)."""
        return Evidence(self.fingerprints, bytes.fromhex(self.sketch), self.facts, self.frames)

    @property
    def bands(self) -> list[str]:
        """The sketch band keys the document is found by (see :func:`band_keys`)."""
        return band_keys(bytes.fromhex(self.sketch))

    @property
    def root(self) -> str:
        """The document this one names as its group's canonical (itself when it names none)."""
        return self.duplicate_of or self.id

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON values (fingerprints as 16 hex digits)."""
        # a shallow dict: the fields are strings, numbers and flat lists, which asdict would deep-copy
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["fingerprint"] = f"{self.fingerprint:016x}"
        data["chunks"] = [f"{c:016x}" for c in self.chunks]
        data["frames"] = [f"{f:016x}" for f in self.frames]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DocRecord:
        """The inverse of :meth:`to_dict`."""
        data = {**data, "fingerprint": int(data["fingerprint"], 16),
                "chunks": [int(c, 16) for c in data.get("chunks", [])],
                "frames": [int(f, 16) for f in data.get("frames", [])]}  # fmt: skip
        return cls(**data)

    def to_json(self) -> bytes:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> DocRecord:
        return cls.from_dict(json.loads(raw))


@dataclass
class Cluster:
    """A Single-Pass cluster: its centre (the founder's fingerprint, never moved), founder and size."""

    id: str
    centre: int
    founder: str
    size: int

    def to_json(self) -> bytes:
        data = {"centre": f"{self.centre:016x}", "founder": self.founder, "size": self.size}
        return json.dumps(data).encode()

    @classmethod
    def from_json(cls, cid: str, raw: bytes) -> Cluster:
        data = json.loads(raw)
        return cls(cid, int(data["centre"], 16), data["founder"], int(data["size"]))


def record_now(**values: Any) -> DocRecord:
    """A record stamped with the current time."""
    return DocRecord(time=round(time.time(), 3), **values)
