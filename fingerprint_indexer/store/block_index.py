"""Persistent block index in LevelDB: one key per (block bucket, entry), read by prefix scan.

Keys (all under an optional namespace prefix, so the index can share a database with other records)::

    b/<block no, 1 byte><block value, big-endian bytes><~doc number, u32 BE><fingerprint, u64 BE> -> b""
    d/<doc id>                              -> "<fingerprint hex> <doc number>[ <meta JSON>]"
    n/<doc number, 8 hex>                   -> doc id
    meta/layout, meta/algorithm, meta/count, meta/next_number, meta/format

An insert is one ``put`` per block, a removal one ``delete`` per block: no bucket is ever read or written
whole, however hot it is. A query scans the k+1 bucket prefixes (keys only, fixed length, decoded as one
NumPy array), verifies all entries at once with XOR + popcount and looks up the ids of the matches only.
The document number is stored inverted, so a scan meets a bucket's newest entries first: a query reads at
most ``bucket_budget`` entries of each bucket, which bounds its work when a stock phrase or a formulaic
text has put tens of thousands of documents under one block value (docs/architecture.md).

The block layout (and, when given, the fingerprint algorithm version) is fixed when the index is created
and checked on every open: a mismatch raises :class:`StoreMismatchError`; so does an index of another
on-disk format (the packed-bucket layout of earlier versions), which must be rebuilt.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import plyvel

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import MASK64
from fingerprint_indexer.index.base import Match, Meta, NearDupIndex
from fingerprint_indexer.store.db import open_db
from fingerprint_indexer.store.errors import StoreMismatchError, rebuild_error

FORMAT = b"keyed-2"
NUM_MASK = 0xFFFFFFFF
#: Entries read per bucket and query, newest first. Far above any bucket of real news at 10^5
#: documents, so recall there is untouched; it caps the cost of a hot bucket at 10^7.
BUCKET_BUDGET = 4096


def _meta_value(fp: int, num: int, meta: Meta | None) -> bytes:
    value = b"%016x %d" % (fp, num)
    if meta:
        value += b" " + json.dumps(dict(meta), ensure_ascii=False, sort_keys=True).encode()
    return value


class IndexWrites:
    """Index changes staged into a LevelDB write batch that the caller may share with other records.

    Reads its own document writes (an id added then removed in one batch). Call :meth:`finish` before
    the batch is written and :meth:`committed` after.
    """

    def __init__(self, index: LevelDBIndex, wb: Any) -> None:
        self.index, self.wb = index, wb
        self._docs: dict[str, tuple[int, int] | None] = {}
        self._delta = 0
        self._next = index._next_number

    def _current(self, doc_id: str) -> tuple[int, int] | None:
        if doc_id in self._docs:
            return self._docs[doc_id]
        return self.index._lookup(doc_id)

    def add(self, doc_id: str, fingerprint: int, meta: Meta | None = None) -> None:
        fp = fingerprint & MASK64
        if self._current(doc_id) is not None:
            self.remove(doc_id)
        num = self._next
        self._next += 1
        ix = self.index
        for key in ix._entry_keys(fp, num):
            self.wb.put(key, b"")
        self.wb.put(ix._doc_key(doc_id), _meta_value(fp, num, meta))
        self.wb.put(ix._num_key(num), doc_id.encode())
        self._docs[doc_id] = (fp, num)
        self._delta += 1

    def remove(self, doc_id: str) -> bool:
        cur = self._current(doc_id)
        if cur is None:
            return False
        fp, num = cur
        ix = self.index
        for key in ix._entry_keys(fp, num):
            self.wb.delete(key)
        self.wb.delete(ix._doc_key(doc_id))
        self.wb.delete(ix._num_key(num))
        self._docs[doc_id] = None
        self._delta -= 1
        return True

    def finish(self) -> None:
        ix = self.index
        if self._next > NUM_MASK + 1:
            raise OverflowError(f"{ix.location}: more than 2^32 index entries were ever written; rebuild it")
        self.wb.put(ix._key(b"meta/count"), b"%d" % (ix._count + self._delta))
        self.wb.put(ix._key(b"meta/next_number"), b"%d" % self._next)

    def committed(self) -> None:
        self.index._count += self._delta
        self.index._next_number = self._next
        self._delta = 0
        self._docs.clear()


class LevelDBIndex(NearDupIndex):
    """Block index persisted in LevelDB (the embedded default backend).

    ``bucket_budget`` bounds the entries a query reads from each block bucket (newest first; None reads
    them all).
    """

    def __init__(
        self,
        path: str | Path | None = None,
        layout: BlockLayout | None = None,
        *,
        algorithm: str | None = None,
        db: plyvel.DB | None = None,
        prefix: bytes = b"",
        bucket_budget: int | None = BUCKET_BUDGET,
    ) -> None:
        if path is not None and db is None:
            self._db: plyvel.DB = open_db(path)
            self.location = str(path)
        elif db is not None and path is None:
            self._db = db
            self.location = str(Path(db.name).parent) if db.name else "<database>"
        else:
            raise ValueError("give exactly one of path or db")
        if bucket_budget is not None and bucket_budget < 1:
            raise ValueError(f"bucket_budget must be >= 1 or None, got {bucket_budget}")
        self.bucket_budget = bucket_budget
        self._owns_db = path is not None
        self._p = prefix
        try:
            self.layout, self.algorithm = self._check_meta(layout, algorithm)
            self._count = int(self._db.get(self._key(b"meta/count")) or b"0")
            self._next_number = int(self._db.get(self._key(b"meta/next_number")) or b"0")
        except BaseException:
            self.close()
            raise
        self._value_bytes = [(w + 7) // 8 for w in self.layout.widths]
        self._entry_dtypes = [
            np.dtype([("key", f"V{len(self._bucket_prefix(b, 0))}"), ("num", ">u4"), ("fp", ">u8")])
            for b in range(self.layout.n_blocks)
        ]

    # ------------------------------------------------------------------ meta
    def _key(self, suffix: bytes) -> bytes:
        return self._p + suffix

    def _check_meta(
        self, layout: BlockLayout | None, algorithm: str | None
    ) -> tuple[BlockLayout, str | None]:
        raw_layout = self._db.get(self._key(b"meta/layout"))
        raw_algo = self._db.get(self._key(b"meta/algorithm"))
        raw_format = self._db.get(self._key(b"meta/format"))
        has_docs = next(self._db.iterator(prefix=self._key(b"d/"), include_value=False), None) is not None
        if (raw_format is not None or has_docs) and raw_format != FORMAT:
            found = raw_format.decode() if raw_format else "unknown"
            raise rebuild_error(self.location, f"a block index of format {found!r}, not {FORMAT.decode()!r}")
        stored = BlockLayout.from_dict(json.loads(raw_layout)) if raw_layout else None
        if stored is not None and layout is not None and stored != layout:
            raise StoreMismatchError(
                f"{self.location} was built with block layout {stored}, not {layout}; "
                "use a new store directory or rebuild it"
            )
        stored_algo = raw_algo.decode() if raw_algo else None
        if algorithm is not None and stored_algo != algorithm and (stored_algo is not None or has_docs):
            raise rebuild_error(
                self.location, f"fingerprints of algorithm {stored_algo or 'unknown'!r}, not {algorithm!r}"
            )
        final = stored or layout or BlockLayout()
        with self._db.write_batch(transaction=True) as wb:
            if stored is None:
                wb.put(self._key(b"meta/layout"), json.dumps(final.to_dict()).encode())
            if stored_algo is None and algorithm is not None:
                wb.put(self._key(b"meta/algorithm"), algorithm.encode())
            if raw_format is None:
                wb.put(self._key(b"meta/format"), FORMAT)
        return final, stored_algo or algorithm

    # ------------------------------------------------------------------ keys
    def _doc_key(self, doc_id: str) -> bytes:
        return self._p + b"d/" + doc_id.encode()

    def _num_key(self, num: int) -> bytes:
        return self._p + b"n/%08x" % num

    def _bucket_prefix(self, block: int, value: int) -> bytes:
        width = (self.layout.widths[block] + 7) // 8
        return self._p + b"b/" + bytes((block,)) + value.to_bytes(width, "big")

    def _bucket_prefixes(self, fp: int) -> list[bytes]:
        return [self._bucket_prefix(b, v) for b, v in enumerate(self.layout.split(fp))]

    def _entry_keys(self, fp: int, num: int) -> list[bytes]:
        tail = (NUM_MASK - num).to_bytes(4, "big") + fp.to_bytes(8, "big")
        return [pfx + tail for pfx in self._bucket_prefixes(fp)]

    def _lookup(self, doc_id: str) -> tuple[int, int] | None:
        raw = self._db.get(self._doc_key(doc_id))
        if raw is None:
            return None
        parts = raw.split(b" ", 2)
        return int(parts[0], 16), int(parts[1])

    # ---------------------------------------------------------------- writes
    def writes(self, wb: Any) -> IndexWrites:
        """Stage index changes into ``wb`` (a plyvel write batch shared with the caller's records)."""
        return IndexWrites(self, wb)

    def add(self, doc_id: str, fingerprint: int, meta: Meta | None = None) -> None:
        self.add_many([(doc_id, fingerprint, meta)])

    def add_many(self, items: Iterable[tuple[str, int, Meta | None]], batch_size: int = 10_000) -> None:
        """Insert in atomic write batches of ``batch_size`` documents."""
        wb = self._db.write_batch(transaction=True)
        staged = self.writes(wb)
        for n, (doc_id, fp, meta) in enumerate(items, 1):
            staged.add(doc_id, fp, meta)
            if n % batch_size == 0:
                staged.finish()
                wb.write()
                staged.committed()
                wb = self._db.write_batch(transaction=True)
                staged = self.writes(wb)
        staged.finish()
        wb.write()
        staged.committed()

    def remove(self, doc_id: str) -> bool:
        wb = self._db.write_batch(transaction=True)
        staged = self.writes(wb)
        found = staged.remove(doc_id)
        if found:
            staged.finish()
            wb.write()
            staged.committed()
        return found

    # --------------------------------------------------------------- queries
    def get(self, doc_id: str) -> int | None:
        cur = self._lookup(doc_id)
        return None if cur is None else cur[0]

    def get_meta(self, doc_id: str) -> dict[str, Any] | None:
        """The meta stored with ``doc_id`` (empty dict when none), or None if absent."""
        raw = self._db.get(self._doc_key(doc_id))
        if raw is None:
            return None
        parts = raw.split(b" ", 2)
        return json.loads(parts[2]) if len(parts) > 2 else {}

    def __len__(self) -> int:
        return self._count

    def bucket_entries(
        self, block: int, value: int, limit: int | None = None, it: Any = None
    ) -> npt.NDArray[Any]:
        """Entries of one bucket, newest first (at most ``limit``): fields ``num`` (the entry's number,
        inverted; see :meth:`entry_numbers`) and ``fp``. ``it`` reuses a raw iterator of the database
        (one per query: seeking it costs what a ``get`` does, creating one costs several)."""
        pfx = self._bucket_prefix(block, value)
        it = it if it is not None else self._db.raw_iterator()
        it.seek(pfx)
        keys: list[bytes] = []
        cap = limit if limit is not None else -1
        while it.valid() and len(keys) != cap:
            key = it.key()
            if not key.startswith(pfx):
                break
            keys.append(key)
            it.next()
        return np.frombuffer(b"".join(keys), dtype=self._entry_dtypes[block])

    @staticmethod
    def entry_numbers(entries: npt.NDArray[Any]) -> npt.NDArray[np.uint32]:
        """Document numbers of :meth:`bucket_entries` (stored inverted so that the newest come first)."""
        return np.uint32(NUM_MASK) - entries["num"].astype(np.uint32)

    def _candidates(self, fp: int) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64]]:
        it = self._db.raw_iterator()
        try:
            parts = [self.bucket_entries(b, v, self.bucket_budget, it)
                     for b, v in enumerate(self.layout.split(fp))]
        finally:
            it.close()
        nums = np.concatenate([self.entry_numbers(p) for p in parts])
        fps = np.concatenate([p["fp"].astype(np.uint64) for p in parts])
        return nums, fps

    def bucket_sizes(self, fingerprint: int, limit: int | None = None) -> list[int]:
        """Number of entries in each block bucket of ``fingerprint``, each counted up to ``limit``
        (giant buckets slow queries; counting one costs a scan of it)."""
        out = []
        for pfx in self._bucket_prefixes(fingerprint & MASK64):
            keys = self._db.iterator(prefix=pfx, include_value=False)
            out.append(sum(1 for _ in (keys if limit is None else islice(keys, limit))))
        return out

    def query(self, fingerprint: int, k: int = 3) -> list[Match]:
        self.layout.check_k(k)
        fp = fingerprint & MASK64
        nums, fps = self._candidates(fp)
        if not len(nums):
            return []
        dist = np.bitwise_count(fps ^ np.uint64(fp))
        ok = dist <= k
        found = dict(zip(nums[ok].tolist(), dist[ok].tolist(), strict=True))  # dedupes tables
        get = self._db.get
        hits = []
        for num, d in found.items():
            doc_id = get(self._num_key(num))
            if doc_id is not None:
                hits.append(Match(doc_id.decode(), d))
        return sorted(hits, key=lambda m: (m.distance, m.doc_id))

    def query_many(self, fingerprints: Sequence[int], k: int = 3) -> list[list[Match]]:
        return [self.query(int(fp), k) for fp in fingerprints]

    def doc_ids(self) -> list[str]:
        """Every stored doc id, in key order."""
        pfx = self._doc_key("")
        return [k[len(pfx) :].decode() for k in self._db.iterator(prefix=pfx, include_value=False)]

    def compact(self) -> None:
        """Compact this index's key range (after a bulk load, so queries read few files)."""
        self._db.compact_range(start=self._p, stop=self._p + b"\xff")

    def close(self) -> None:
        if self._owns_db and not self._db.closed:
            self._db.close()
