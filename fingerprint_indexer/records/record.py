"""The one record type of a stored decision, and of a Single-Pass cluster, for every store.

The embedded store keeps :class:`DocRecord` in a compact binary form under ``s/d/<id>``
(:meth:`DocRecord.to_bytes`); the Elasticsearch store reads it
from (and writes it into) an index document
(:func:`fingerprint_indexer.elastic.es_ingest.record_from_source`).
Both hand the same type to the decision rules (:mod:`fingerprint_indexer.engine.rules`). A cluster is
named after the document that founds it (:func:`new_cluster_id`), by Single-Pass clustering, the engine
and both stores alike.
"""

from __future__ import annotations

import json
import re
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.fingerprint.native import record_decoder, record_encoder
from fingerprint_indexer.fingerprint.sketch import band_keys

#: fingerprint, time, length, distance (-1: none), flags, chunks, frames, facts, sketch bytes
_HEAD = struct.Struct("<Qdqb B HHHH")
_BINARY = 0x01  # first byte of a binary record; a JSON one (written before) starts with "{"
_F_DEGENERATE, _F_OWN_CLUSTER, _F_STORE_VERSION = 1, 2, 4
_F_DUPLICATE_OF, _F_PUBLISHED, _F_REPLACES = 8, 16, 32
_F_RAW_DIGESTS = 64  # the two digests kept as their bytes, not their lowercase hex digits
_HEX = re.compile("(?:[0-9a-f]{2})*")
_CLUSTER = struct.Struct("<BQI")  # form, centre, size; then the founder when it is not the cluster's id
_CLUSTER_OWN, _CLUSTER_NAMED = 0x01, 0x02


def _pack_strings(head: list[bytes], items: list[str]) -> bytes:
    """``head`` then ``items`` (encoded), each prefixed by its length in the table before them."""
    raw = head + list(map(str.encode, items))
    lengths = list(map(len, raw))
    if lengths and max(lengths) > 0xFFFF:
        raise ValueError("a record string is longer than 65,535 bytes")
    return struct.pack(f"<{len(raw)}H", *lengths) + b"".join(raw)


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
        """What verification compares (:func:`fingerprint_indexer.verification.check`)."""
        return Evidence(self.fingerprints, bytes.fromhex(self.sketch), self.facts, self.frames)

    @property
    def bands(self) -> tuple[str, ...]:
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

    def to_bytes(self, store_version: str | None = None) -> bytes:
        """The compact form the embedded store keeps: fixed-width numbers, fingerprints as u64, the
        sketch as raw bytes, strings length-prefixed. The id (the record's key) is left out, and so are
        the cluster id when it is the id and the version when it is ``store_version`` (the store's).
        Encoded by the compiled core when it is built (:meth:`to_bytes_reference` otherwise, and for
        what it leaves to the reference)."""
        return record_bytes(self, store_version, record_encoder())

    def to_bytes_reference(self, store_version: str | None = None) -> bytes:
        """:meth:`to_bytes` in Python: the reference the compiled encoder must equal."""
        flags = ((_F_DEGENERATE if self.degenerate else 0)
                 | (_F_OWN_CLUSTER if self.cluster_id == self.id else 0)
                 | (_F_STORE_VERSION if self.version == store_version else 0)
                 | (_F_DUPLICATE_OF if self.duplicate_of is not None else 0)
                 | (_F_PUBLISHED if self.published_at is not None else 0)
                 | (_F_REPLACES if self.replaces is not None else 0)
                 | (_F_RAW_DIGESTS if _HEX.fullmatch(self.content_digest + self.keyword_digest)
                    and len(self.content_digest) % 2 == 0 else 0))
        sketch = bytes.fromhex(self.sketch)
        if flags & _F_RAW_DIGESTS:  # as the fingerprinter writes them: half the bytes
            digests = [bytes.fromhex(self.content_digest), bytes.fromhex(self.keyword_digest)]
        else:
            digests = [self.content_digest.encode(), self.keyword_digest.encode()]
        strings = [self.decision]
        strings += [] if flags & _F_OWN_CLUSTER else [self.cluster_id]
        strings += [] if flags & _F_STORE_VERSION else [self.version]
        strings += [s for s in (self.duplicate_of, self.published_at, self.replaces) if s is not None]
        strings += self.facts
        return (bytes((_BINARY,))
                + _HEAD.pack(self.fingerprint, self.time, self.length,
                             -1 if self.distance is None else self.distance, flags,
                             len(self.chunks), len(self.frames), len(self.facts), len(sketch))
                + struct.pack(f"<{len(self.chunks) + len(self.frames)}Q", *self.chunks, *self.frames)
                + sketch + _pack_strings(digests, strings))

    @classmethod
    def from_bytes(cls, doc_id: str, raw: bytes, store_version: str | None = None) -> DocRecord:
        """The inverse of :meth:`to_bytes` (a JSON record, as earlier stores wrote, is read too); a
        damaged record raises ValueError. Read by the compiled core when it is built
        (:meth:`from_bytes_reference` otherwise, and for what it leaves to the reference)."""
        return record_from_bytes(doc_id, raw, store_version, record_decoder())

    @classmethod
    def from_bytes_reference(cls, doc_id: str, raw: bytes, store_version: str | None = None) -> DocRecord:
        """:meth:`from_bytes` in Python: the reference the compiled decoder must equal."""
        if raw[:1] == b"{":
            return cls.from_json(raw)
        try:
            if raw[0] != _BINARY:
                raise ValueError(f"record of unknown form {raw[0]:#x}")
            fp, at, length, dist, flags, n_chunks, n_frames, n_facts, n_sketch = _HEAD.unpack_from(raw, 1)
            pos = 1 + _HEAD.size
            nums = struct.unpack_from(f"<{n_chunks + n_frames}Q", raw, pos)
            pos += 8 * (n_chunks + n_frames)
            sketch = raw[pos : pos + n_sketch]
            pos += n_sketch
            n_str = 3 + (not flags & _F_OWN_CLUSTER) + (not flags & _F_STORE_VERSION) + n_facts + sum(
                bool(flags & f) for f in (_F_DUPLICATE_OF, _F_PUBLISHED, _F_REPLACES))
            lengths = struct.unpack_from(f"<{n_str}H", raw, pos)
            pos += 2 * n_str
            strings = []
            for i, n in enumerate(lengths):
                part = raw[pos : pos + n]
                strings.append(part.hex() if i < 2 and flags & _F_RAW_DIGESTS else part.decode())
                pos += n
            if pos != len(raw) or len(sketch) != n_sketch:
                raise ValueError("record length does not match its contents")
        except (struct.error, IndexError, UnicodeDecodeError) as exc:
            raise ValueError(f"damaged record: {exc}") from None
        it = iter(strings)
        digest, kw, decision = next(it), next(it), next(it)
        cluster_id = doc_id if flags & _F_OWN_CLUSTER else next(it)
        version = store_version if flags & _F_STORE_VERSION else next(it)
        if version is None:
            raise ValueError("record of the store's version read without it")
        dup = next(it) if flags & _F_DUPLICATE_OF else None
        published = next(it) if flags & _F_PUBLISHED else None
        replaces = next(it) if flags & _F_REPLACES else None
        return cls(id=doc_id, fingerprint=fp, content_digest=digest, keyword_digest=kw, cluster_id=cluster_id,
                   decision=decision, duplicate_of=dup, distance=None if dist < 0 else dist,
                   degenerate=bool(flags & _F_DEGENERATE), length=length, published_at=published,
                   version=version, time=at, chunks=list(nums[:n_chunks]), sketch=sketch.hex(),
                   facts=list(it), frames=list(nums[n_chunks:]), replaces=replaces)


def record_bytes(rec: DocRecord, store_version: str | None, encode: Any, sketch: bytes | None = None
                 ) -> bytes:  # fmt: skip
    """``rec.to_bytes(store_version)`` through ``encode`` (``native.record_encoder()``, resolved once by a
    caller that encodes many records; None: the reference); ``sketch``: the bytes ``rec.sketch`` is the
    hex of, when the caller holds them (the compiled encoder then does not decode the hex)."""
    got = encode(rec, store_version, sketch) if encode is not None else None
    return got if got is not None else rec.to_bytes_reference(store_version)


def record_from_bytes(doc_id: str, raw: bytes, store_version: str | None, decode: Any) -> DocRecord:
    """``DocRecord.from_bytes(doc_id, raw, store_version)`` through ``decode``
    (``native.record_decoder()``, resolved once by a caller that reads many records; None: the
    reference), which reads a binary record's fields or leaves the record to the reference."""
    got = decode(raw, store_version) if decode is not None else None
    if got is None:
        return DocRecord.from_bytes_reference(doc_id, raw, store_version)
    (fp, at, length, distance, degenerate, chunks, frames, sketch, digest, kw, decision, cluster_id, version,
     duplicate_of, published, replaces, facts) = got  # fmt: skip
    return DocRecord(id=doc_id, fingerprint=fp, content_digest=digest, keyword_digest=kw,
                     cluster_id=doc_id if cluster_id is None else cluster_id, decision=decision,
                     duplicate_of=duplicate_of, distance=distance, degenerate=degenerate, length=length,
                     published_at=published, version=version, time=at, chunks=chunks, sketch=sketch,
                     facts=facts, frames=frames, replaces=replaces)  # fmt: skip


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

    def to_bytes(self) -> bytes:
        """The compact form the embedded store keeps: centre and size fixed-width, the founder only when
        it is not the cluster's id (a cluster is named after its founder unless it was renamed)."""
        own = self.founder == self.id
        return _CLUSTER.pack(_CLUSTER_OWN if own else _CLUSTER_NAMED, self.centre, self.size) + (
            b"" if own else self.founder.encode())

    @classmethod
    def from_bytes(cls, cid: str, raw: bytes) -> Cluster:
        """The inverse of :meth:`to_bytes` (JSON, as earlier stores wrote, is read too); a damaged record
        raises ValueError."""
        if raw[:1] == b"{":
            return cls.from_json(cid, raw)
        try:
            form, centre, size = _CLUSTER.unpack_from(raw)
            if form not in (_CLUSTER_OWN, _CLUSTER_NAMED) or (form == _CLUSTER_OWN) != (
                    len(raw) == _CLUSTER.size):
                raise ValueError(f"cluster record of unknown form {raw[:1]!r}")
            founder = cid if form == _CLUSTER_OWN else raw[_CLUSTER.size :].decode()
        except (struct.error, UnicodeDecodeError) as exc:
            raise ValueError(f"damaged cluster record: {exc}") from None
        return cls(cid, centre, founder, size)


def new_cluster_id(founder: str, taken: Callable[[str], bool]) -> str:
    """The id of a cluster ``founder`` founds: its doc id, suffixed ``~2``, ``~3`` ... while ``taken``
    says that id names a cluster already (a document re-sent under an id that founded one before)."""
    cid, n = founder, 1
    while taken(cid):
        n += 1
        cid = f"{founder}~{n}"
    return cid


def founded_by(cluster_id: str, doc_id: str) -> bool:
    """Whether ``cluster_id`` is a cluster that document ``doc_id`` founded (:func:`new_cluster_id`)."""
    return cluster_id == doc_id or cluster_id.startswith(doc_id + "~")


def stamp() -> float:
    """The current time as records keep it (seconds, to the millisecond)."""
    return round(time.time(), 3)


def record_now(**values: Any) -> DocRecord:
    """A record stamped with the current time (:func:`stamp`)."""
    return DocRecord(time=stamp(), **values)
