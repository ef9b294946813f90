"""Persistent block index in LevelDB: one key per (block, document), found by prefix scan.

Keys (all under an optional namespace prefix, so the index can share a database with other records)::

    b/<block no, 2 hex>/<block value, hex>/<fp, 16 hex>/<doc id>  -> b""
    d/<doc id>                                                 -> <fingerprint hex>[ <meta JSON>]
    meta/layout      -> {"widths": [...]}          meta/algorithm -> version string
    meta/count       -> number of documents

A query scans the k+1 bucket prefixes of the fingerprint and verifies the fingerprint held in each key,
so no value is read. The block layout (and, when given, the fingerprint algorithm version) is fixed when
the index is created and checked on every open: a mismatch raises :class:`StoreMismatchError`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import plyvel

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import MASK64
from fingerprint_indexer.index.base import Match, Meta, NearDupIndex
from fingerprint_indexer.store.db import open_db
from fingerprint_indexer.store.errors import StoreMismatchError


class IndexWrites:
    """Index changes staged into a LevelDB write batch that the caller may share with other records.

    Tracks the documents touched in this batch so a second change to the same id sees the first.
    Call :meth:`finish` before writing the batch and :meth:`committed` after it was written.
    """

    def __init__(self, index: LevelDBIndex, wb: Any, written: set[str] | None = None) -> None:
        self.index, self.wb = index, wb
        # bulk load into an empty index: only ids written earlier in the load can have a stored record
        self._written = written
        self._overlay: dict[str, int | None] = {}
        self._delta = 0

    def _current(self, doc_id: str) -> int | None:
        if doc_id in self._overlay:
            return self._overlay[doc_id]
        if self._written is not None and doc_id not in self._written:
            return None
        return self.index.get(doc_id)

    def add(self, doc_id: str, fingerprint: int, meta: Meta | None = None) -> None:
        fp = fingerprint & MASK64
        old = self._current(doc_id)
        if old is not None:
            self._delete_blocks(doc_id, old)
        else:
            self._delta += 1
        ix = self.index
        for key in ix._block_keys(doc_id, fp):
            self.wb.put(key, b"")
        value = f"{fp:016x}".encode()
        if meta:
            value += b" " + json.dumps(dict(meta), ensure_ascii=False, sort_keys=True).encode()
        self.wb.put(ix._doc_key(doc_id), value)
        self._overlay[doc_id] = fp
        if self._written is not None:
            self._written.add(doc_id)

    def remove(self, doc_id: str) -> bool:
        old = self._current(doc_id)
        if old is None:
            return False
        self._delete_blocks(doc_id, old)
        self.wb.delete(self.index._doc_key(doc_id))
        self._overlay[doc_id] = None
        self._delta -= 1
        return True

    def _delete_blocks(self, doc_id: str, fp: int) -> None:
        for key in self.index._block_keys(doc_id, fp):
            self.wb.delete(key)

    def finish(self) -> None:
        self.wb.put(self.index._key(b"meta/count"), str(self.index._count + self._delta).encode())

    def committed(self) -> None:
        self.index._count += self._delta
        self._delta = 0
        self._overlay.clear()


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
            count = self._db.get(self._key(b"meta/count"))
            self._count = int(count) if count else 0
        except BaseException:
            self.close()
            raise
        self._hex_widths = [(w + 3) // 4 for w in self.layout.widths]

    # ------------------------------------------------------------------ meta
    def _key(self, suffix: bytes) -> bytes:
        return self._p + suffix

    def _check_meta(
        self, layout: BlockLayout | None, algorithm: str | None
    ) -> tuple[BlockLayout, str | None]:
        raw_layout = self._db.get(self._key(b"meta/layout"))
        raw_algo = self._db.get(self._key(b"meta/algorithm"))
        has_docs = next(self._db.iterator(prefix=self._key(b"d/"), include_value=False), None) is not None
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
                f"not {algorithm!r}; use a new store directory or reindex"
            )
        final = stored or layout or BlockLayout()
        with self._db.write_batch(transaction=True) as wb:
            if stored is None:
                wb.put(self._key(b"meta/layout"), json.dumps(final.to_dict()).encode())
            if stored_algo is None and algorithm is not None:
                wb.put(self._key(b"meta/algorithm"), algorithm.encode())
        return final, stored_algo or algorithm

    # ------------------------------------------------------------------ keys
    def _doc_key(self, doc_id: str) -> bytes:
        return self._p + b"d/" + doc_id.encode()

    def _bucket_prefix(self, block: int, value: int) -> bytes:
        return self._p + b"b/%02x/%0*x/" % (block, self._hex_widths[block], value)

    def _block_keys(self, doc_id: str, fp: int) -> list[bytes]:
        tail = b"%016x/" % fp + doc_id.encode()
        return [self._bucket_prefix(b, v) + tail for b, v in enumerate(self.layout.split(fp))]

    # ---------------------------------------------------------------- writes
    def writes(self, wb: Any) -> IndexWrites:
        """Stage index changes into ``wb`` (a plyvel write batch shared with the caller's records)."""
        return IndexWrites(self, wb)

    def add(self, doc_id: str, fingerprint: int, meta: Meta | None = None) -> None:
        self.add_many([(doc_id, fingerprint, meta)])

    def add_many(self, items: Iterable[tuple[str, int, Meta | None]], batch_size: int = 50_000) -> None:
        """Insert in write batches of ``batch_size`` documents (each batch atomic).

        Loading into an empty index skips the per-document lookup of an old record, except for ids
        already written by this load.
        """
        written: set[str] | None = set() if self._count == 0 else None
        wb = self._db.write_batch(transaction=True)
        staged = IndexWrites(self, wb, written)
        for n, (doc_id, fp, meta) in enumerate(items, 1):
            staged.add(doc_id, fp, meta)
            if n % batch_size == 0:
                staged.finish()
                wb.write()
                staged.committed()
                wb = self._db.write_batch(transaction=True)
                staged = IndexWrites(self, wb, written)
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
        raw = self._db.get(self._doc_key(doc_id))
        return None if raw is None else int(raw[:16], 16)

    def get_meta(self, doc_id: str) -> dict[str, Any] | None:
        """The meta stored with ``doc_id`` (empty dict when none), or None if absent."""
        raw = self._db.get(self._doc_key(doc_id))
        if raw is None:
            return None
        return json.loads(raw[17:]) if len(raw) > 16 else {}

    def __len__(self) -> int:
        return self._count

    def query(self, fingerprint: int, k: int = 3) -> list[Match]:
        self.layout.check_k(k)
        fp = fingerprint & MASK64
        found: dict[str, int] = {}
        it = self._db.iterator
        for b, v in enumerate(self.layout.split(fp)):
            pfx = self._bucket_prefix(b, v)
            n = len(pfx)
            for key in it(prefix=pfx, include_value=False):
                if (d := (int(key[n : n + 16], 16) ^ fp).bit_count()) <= k:
                    found[key[n + 17 :].decode()] = d
        return sorted((Match(i, d) for i, d in found.items()), key=lambda m: (m.distance, m.doc_id))

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
