"""Persistent block index in LevelDB: one packed value per block bucket, read with one ``get``.

Keys (all under an optional namespace prefix, so the index can share a database with other records)::

    b/<block no, 2 hex>/<block value, hex>  -> packed records: fingerprint (u64 BE) + doc number (u32 BE)
    d/<doc id>                              -> "<fingerprint hex> <doc number>[ <meta JSON>]"
    n/<doc number, 8 hex>                   -> doc id
    meta/layout, meta/algorithm, meta/count, meta/next_number, meta/format

A query reads the k+1 buckets of the fingerprint (one ``get`` each), verifies all records at once with
XOR + popcount in NumPy and looks up the ids of the matches only. A key per (block, document) scanned by
prefix would cost a Python step per candidate (about 600 per query at 10M fingerprints); packing keeps a
query at a few reads however full the buckets are, at the price of rewriting a bucket (about 2 KB at
10M) when a document in it is added or removed.

The block layout (and, when given, the fingerprint algorithm version) is fixed when the index is created
and checked on every open: a mismatch raises :class:`StoreMismatchError`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import plyvel

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import MASK64
from fingerprint_indexer.index.base import Match, Meta, NearDupIndex
from fingerprint_indexer.store.db import open_db
from fingerprint_indexer.store.errors import StoreMismatchError

RECORD = np.dtype([("fp", ">u8"), ("num", ">u4")])
FORMAT = b"packed-1"


class IndexWrites:
    """Index changes staged into a LevelDB write batch that the caller may share with other records.

    Reads its own writes (documents and buckets touched in this batch). Call :meth:`finish` before the
    batch is written and :meth:`committed` after.
    """

    def __init__(self, index: LevelDBIndex, wb: Any) -> None:
        self.index, self.wb = index, wb
        self._docs: dict[str, tuple[int, int] | None] = {}
        self._buckets: dict[bytes, bytes] = {}
        self._delta = 0
        self._next = index._next_number

    def _current(self, doc_id: str) -> tuple[int, int] | None:
        if doc_id in self._docs:
            return self._docs[doc_id]
        return self.index._lookup(doc_id)

    def _bucket(self, key: bytes) -> bytes:
        got = self._buckets.get(key)
        if got is None:
            got = self.index._db.get(key) or b""
        return got

    def add(self, doc_id: str, fingerprint: int, meta: Meta | None = None) -> None:
        fp = fingerprint & MASK64
        if self._current(doc_id) is not None:
            self.remove(doc_id)
        num = self._next
        self._next += 1
        ix = self.index
        rec = np.array([(fp, num)], dtype=RECORD).tobytes()
        for key in ix._bucket_keys(fp):
            self._buckets[key] = self._bucket(key) + rec
        value = b"%016x %d" % (fp, num)
        if meta:
            value += b" " + json.dumps(dict(meta), ensure_ascii=False, sort_keys=True).encode()
        self.wb.put(ix._doc_key(doc_id), value)
        self.wb.put(ix._num_key(num), doc_id.encode())
        self._docs[doc_id] = (fp, num)
        self._delta += 1

    def remove(self, doc_id: str) -> bool:
        cur = self._current(doc_id)
        if cur is None:
            return False
        fp, num = cur
        ix = self.index
        for key in ix._bucket_keys(fp):
            recs = np.frombuffer(self._bucket(key), dtype=RECORD)
            self._buckets[key] = recs[recs["num"] != num].tobytes()
        self.wb.delete(ix._doc_key(doc_id))
        self.wb.delete(ix._num_key(num))
        self._docs[doc_id] = None
        self._delta -= 1
        return True

    def finish(self) -> None:
        for key, value in self._buckets.items():
            if value:
                self.wb.put(key, value)
            else:
                self.wb.delete(key)
        ix = self.index
        self.wb.put(ix._key(b"meta/count"), b"%d" % (ix._count + self._delta))
        self.wb.put(ix._key(b"meta/next_number"), b"%d" % self._next)

    def committed(self) -> None:
        self.index._count += self._delta
        self.index._next_number = self._next
        self._delta = 0
        self._docs.clear()
        self._buckets.clear()


class LevelDBIndex(NearDupIndex):
    """Block index persisted in LevelDB (the embedded default backend)."""

    def __init__(
        self,
        path: str | Path | None = None,
        layout: BlockLayout | None = None,
        *,
        algorithm: str | None = None,
        db: plyvel.DB | None = None,
        prefix: bytes = b"",
    ) -> None:
        if path is not None and db is None:
            self._db: plyvel.DB = open_db(path)
            self.location = str(path)
        elif db is not None and path is None:
            self._db = db
            self.location = str(Path(db.name).parent) if db.name else "<database>"
        else:
            raise ValueError("give exactly one of path or db")
        self._owns_db = path is not None
        self._p = prefix
        try:
            self.layout, self.algorithm = self._check_meta(layout, algorithm)
            self._count = int(self._db.get(self._key(b"meta/count")) or b"0")
            self._next_number = int(self._db.get(self._key(b"meta/next_number")) or b"0")
        except BaseException:
            self.close()
            raise
        self._hex_widths = [(w + 3) // 4 for w in self.layout.widths]
        self._shifts = np.array(self.layout.shifts, dtype=np.uint64)

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
            raise StoreMismatchError(
                f"{self.location} holds an index of format {found!r}, not {FORMAT.decode()!r}; rebuild it"
            )
        stored = BlockLayout.from_dict(json.loads(raw_layout)) if raw_layout else None
        if stored is not None and layout is not None and stored != layout:
            raise StoreMismatchError(
                f"{self.location} was built with block layout {stored}, not {layout}; "
                "use a new store directory or rebuild it"
            )
        stored_algo = raw_algo.decode() if raw_algo else None
        if algorithm is not None and stored_algo != algorithm and (stored_algo is not None or has_docs):
            raise StoreMismatchError(
                f"{self.location} holds fingerprints of algorithm {stored_algo or 'unknown'!r}, "
                f"not {algorithm!r}; rebuild it: deduplicate the input again into a new store directory"
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

    def _bucket_key(self, block: int, value: int) -> bytes:
        return self._p + b"b/%02x/%0*x" % (block, self._hex_widths[block], value)

    def _bucket_keys(self, fp: int) -> list[bytes]:
        return [self._bucket_key(b, v) for b, v in enumerate(self.layout.split(fp))]

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
        """Insert in atomic write batches of ``batch_size`` documents; an empty index is bulk-loaded."""
        if self._count == 0 and self._next_number == 0:
            self._bulk_load(items)
            return
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

    def _bulk_load(self, items: Iterable[tuple[str, int, Meta | None]]) -> None:
        """Fill an empty index: buckets built with NumPy sorts and written once each, in one batch."""
        latest: dict[str, tuple[int, Meta | None]] = {}
        for doc_id, fp, meta in items:
            latest.pop(doc_id, None)  # a repeated id counts where it was last given
            latest[doc_id] = (fp & MASK64, meta)
        if not latest:
            return
        fps = np.fromiter((v[0] for v in latest.values()), dtype=np.uint64, count=len(latest))
        recs = np.empty(len(fps), dtype=RECORD)
        recs["fp"] = fps
        recs["num"] = np.arange(len(fps), dtype=np.uint32)
        with self._db.write_batch(transaction=True) as wb:
            for num, (doc_id, (fp, meta)) in enumerate(latest.items()):
                value = b"%016x %d" % (fp, num)
                if meta:
                    value += b" " + json.dumps(dict(meta), ensure_ascii=False, sort_keys=True).encode()
                wb.put(self._doc_key(doc_id), value)
                wb.put(self._num_key(num), doc_id.encode())
            blocks = self.layout.split_many(fps)
            for b in range(self.layout.n_blocks):
                order = np.argsort(blocks[:, b], kind="stable")
                values = blocks[order, b]
                sorted_recs = recs[order]
                starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
                ends = np.r_[starts[1:], len(values)]
                for s, e, v in zip(starts.tolist(), ends.tolist(), values[starts].tolist(), strict=True):
                    wb.put(self._bucket_key(b, v), sorted_recs[s:e].tobytes())
            wb.put(self._key(b"meta/count"), b"%d" % len(latest))
            wb.put(self._key(b"meta/next_number"), b"%d" % len(latest))
        self._count = self._next_number = len(latest)

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

    def _candidates(self, fp: int) -> npt.NDArray[Any]:
        get = self._db.get
        raw = b"".join(get(k) or b"" for k in self._bucket_keys(fp))
        return np.frombuffer(raw, dtype=RECORD)

    def bucket_sizes(self, fingerprint: int) -> list[int]:
        """Number of documents in each block bucket of ``fingerprint`` (giant buckets slow queries)."""
        get = self._db.get
        return [len(get(k) or b"") // RECORD.itemsize for k in self._bucket_keys(fingerprint & MASK64)]

    def query(self, fingerprint: int, k: int = 3) -> list[Match]:
        self.layout.check_k(k)
        fp = fingerprint & MASK64
        recs = self._candidates(fp)
        if not len(recs):
            return []
        dist = np.bitwise_count(recs["fp"].astype(np.uint64) ^ np.uint64(fp))
        ok = dist <= k
        found = dict(zip(recs["num"][ok].tolist(), dist[ok].tolist(), strict=True))  # dedupes tables
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
