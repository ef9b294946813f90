"""Embedded block index: entries persisted in LevelDB, block tables held in memory.

A document holds one fingerprint or several (its document, lead and chunk fingerprints); its entries are
numbered one after the other and kept under two keys, whatever their number (all under an optional
namespace prefix, so the index can share a database with other records)::

    d/<doc id>                -> <first number, u32 BE><count, u16 BE><fingerprints, u64 BE each>[<meta JSON>]
    n/<first number, u32 BE>  -> doc id
    meta/layout, meta/algorithm, meta/count, meta/next_number, meta/format

LevelDB holds each document once and is the truth. The block buckets are NumPy tables over entry numbers
(:class:`fingerprint_indexer.index.memory.NumberedTables`), beside each number's place in its document
(so a matched number leads to its document's ``n/`` key): an insert is two ``put``s and an append to the
tables' buffer, a removal two ``delete``s and tombstones, a query a few binary searches and one XOR +
popcount pass, then an id look-up per document matched. A document's first fingerprint matches under its
id, its ``n``-th under the id, :data:`~fingerprint_indexer.store.near.CHUNK_SEP` and ``n`` (the entry
:func:`~fingerprint_indexer.store.near.entry_id` names when the id given is ``entry_id(doc, 0)``). No
bucket is read or written whole, on disk or in memory. The tables are rebuilt at open from what the
owner saved beside the store (``tables``, checked by it against the store's generation: see
EmbeddedStore) or else from one scan of the ``d/`` keys.

A query reads at most ``bucket_budget`` entries of each bucket, the newest first, which bounds its work
when a stock phrase or a formulaic text has put tens of thousands of documents under one block value
(docs/architecture.md).

The block layout (and, when given, the fingerprint algorithm version) is fixed when the index is created
and checked on every open: a mismatch raises :class:`StoreMismatchError`; so does an index of another
on-disk format, which must be rebuilt (``upgrade`` opens one of :data:`UPGRADABLE` empty, for its owner
to :meth:`LevelDBIndex.clear` and fill again).
"""

from __future__ import annotations

import array
import functools
import io
import json
import struct
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import plyvel

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import MASK64
from fingerprint_indexer.index.base import Meta, NearDupIndex
from fingerprint_indexer.index.memory import CompiledNumberedTables, NumberedTables, numbered_tables
from fingerprint_indexer.records.match import Match
from fingerprint_indexer.store.db import open_db
from fingerprint_indexer.store.errors import StoreMismatchError, rebuild_error
from fingerprint_indexer.store.near import CHUNK_SEP, listed
from fingerprint_indexer.store.sidefile import load_side, save_side

FORMAT = b"entries-4"  # entries-3 kept two keys per entry; keyed-2 one per (bucket, entry); packed before
UPGRADABLE = (b"entries-3",)  # formats opened empty with ``upgrade``, for their owner to rebuild
NUM_MASK = 0xFFFFFFFF
#: Fingerprints one document may hold (its entries' places are kept in 16 bits).
MAX_ENTRIES = 0xFFFF
#: Entries read per bucket and query, newest first. Far above any bucket of real news at 10^5
#: documents, so recall there is untouched; it caps the cost of a hot bucket at 10^7.
BUCKET_BUDGET = 4096
_HEAD = struct.Struct(">IH")  # first entry number, fingerprint count
#: (fingerprint, alive, place in its document) by entry number: what the tables are rebuilt from.
TableArrays = tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_], npt.NDArray[np.uint16]]
_PARTS = ("fps", "alive", "places")


@functools.lru_cache(maxsize=64)
def _doc_struct(count: int) -> struct.Struct:
    """The head and ``count`` fingerprints of a document's value, packed in one call."""
    return struct.Struct(f"{_HEAD.format}{count}Q")


def _doc_value(first: int, fps: Sequence[int], meta: Meta | None) -> bytes:
    value = _doc_struct(len(fps)).pack(first, len(fps), *fps)
    if meta:
        value += json.dumps(dict(meta), ensure_ascii=False, sort_keys=True).encode()
    return value


def _held(raw: bytes) -> tuple[int, int]:
    """(first entry number, fingerprint count) of a document's value."""
    return _HEAD.unpack_from(raw)


def _fingerprints_of(raw: bytes) -> tuple[int, ...]:
    """The fingerprints of a document's value, in entry order."""
    return _doc_struct(_held(raw)[1]).unpack_from(raw)[2:]


def _entry(doc_id: str, place: int) -> str:
    """The entry id of a document's fingerprint at ``place`` (its id for the first)."""
    return f"{doc_id}{CHUNK_SEP}{place}" if place else doc_id


def _found_matches(queries: list[int], nums: list[int], dist: list[int], place_of: Callable[[int], int],
                   doc_at: Callable[[int], str | None]) -> dict[int, list[Match]]:  # fmt: skip
    """The matches of the queries that found any, by query index, from (query index, entry number,
    distance) lists: an entry's id from its place in its document (``place_of``) and the document under
    its first number (``doc_at``, asked once per document; None: gone, no match), nearest first
    (distance, then id). A batch's queries mostly find nothing: none of them costs a list."""
    out: dict[int, list[Match]] = {}
    ids: dict[int, str | None] = {}  # first number -> doc id
    for q, num, d in zip(queries, nums, dist, strict=True):
        place = place_of(num)
        first = num - place
        doc_id = ids[first] if first in ids else ids.setdefault(first, doc_at(first))
        if doc_id is not None:
            hit = Match(_entry(doc_id, place), d)
            if q in out:
                out[q].append(hit)
            else:
                out[q] = [hit]
    for hits in out.values():
        if len(hits) > 1:
            hits.sort(key=lambda m: (m.distance, m.doc_id))
    return out


TABLES_MAGIC = b"FPIBLOCKS2\n"  # 1 had no places


def save_tables(path: Path, tables: dict[str, TableArrays], generation: int, store_id: bytes) -> None:
    """Save the named indexes' table arrays beside the store (a side file: store.sidefile)."""
    buf = io.BytesIO()
    arrays = {f"{name}.{part}": arr for name, t in tables.items()
              for part, arr in zip(_PARTS, t, strict=True)}
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    save_side(path, TABLES_MAGIC, buf.getvalue(), generation, store_id)


def load_tables(path: Path, generation: int, store_id: bytes) -> dict[str, TableArrays]:
    """The table arrays saved at exactly ``generation`` by store ``store_id``; none when the file is
    missing, damaged or of another state (the indexes then rebuild their tables from LevelDB)."""
    payload, _state = load_side(path, TABLES_MAGIC, generation, store_id)
    if payload is None:
        return {}
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as z:
            names = {k.split(".", 1)[0] for k in z.files}
            return {n: (z[f"{n}.fps"].astype(np.uint64), z[f"{n}.alive"].astype(bool),
                        z[f"{n}.places"].astype(np.uint16)) for n in names}  # fmt: skip
    except (ValueError, KeyError, OSError):
        return {}


class IndexWrites:
    """Index changes staged into a LevelDB write batch that the caller may share with other records.

    Reads its own document writes (an id added then removed in one batch). Call :meth:`finish` before
    the batch is written and :meth:`committed` after: only then do the in-memory tables change.
    """

    def __init__(self, index: LevelDBIndex, wb: Any, queried: bool = False) -> None:
        self.index, self.wb = index, wb
        self._docs: dict[str, tuple[int, int] | None] = {}  # doc -> (first number, count), None: removed
        self._delta = 0
        self._base = self._next = index.next_number
        self._added_nums: list[int] = []  # entries added: numbers, fingerprints and places, in turn
        self._added_fps: list[int] = []
        self._added_places: list[int] = []
        self._removed: list[int] = []
        # ``queried``: the entries added are also put into small block tables of their own, for
        # :meth:`query_many`, numbered from 0 at _base (the documents holding them by that first number)
        self._staged = numbered_tables(index.layout, small=True) if queried else None
        self._held_by: dict[int, str] = {}

    def _current(self, doc_id: str) -> tuple[int, int] | None:
        if doc_id in self._docs:
            return self._docs[doc_id]
        return self.index.held(doc_id)

    def add(self, doc_id: str, fingerprint: int, meta: Meta | None = None, fresh: bool = False) -> None:
        self.add_doc(doc_id, (fingerprint,), meta, fresh)

    def add_doc(self, doc_id: str, fingerprints: Sequence[int], meta: Meta | None = None,
                fresh: bool = False) -> int:  # fmt: skip
        """Stage a document with its fingerprints (matched as entries: see the module docstring),
        replacing what the document held; its first entry number. ``fresh``: the caller knows that the
        document is held neither committed nor staged (its record is absent), so nothing is read first."""
        count = len(fingerprints)
        if not 1 <= count <= MAX_ENTRIES:
            raise ValueError(f"a document holds 1 to {MAX_ENTRIES} fingerprints, not {count}")
        ix, docs = self.index, self._docs
        key = ix.doc_key(doc_id)
        if not fresh and (docs[doc_id] if doc_id in docs else ix.held_at(key)) is not None:
            self.remove(doc_id)
        fps = [fp & MASK64 for fp in fingerprints]
        first = self._next
        self._next = first + count
        ix.stage_doc_at(self.wb, key, doc_id, first, fps, meta)
        docs[doc_id] = (first, count)
        self._added_nums += range(first, first + count)
        self._added_fps += fps
        self._added_places += range(count)
        self._delta += count
        if self._staged is not None:
            at = first - self._base
            self._staged.put_run(at, fps)
            self._held_by[at] = doc_id
        return first

    def remove(self, doc_id: str) -> tuple[int, int] | None:
        """Stage the removal of a document and all its entries; its (first entry number, fingerprint
        count) as it was held, None when it was not."""
        cur = self._current(doc_id)
        if cur is None:
            return None
        first, count = cur
        self.index.stage_removal(self.wb, doc_id, first)
        self._docs[doc_id] = None
        self._removed += range(first, first + count)
        self._delta -= count
        at = first - self._base
        if self._held_by.pop(at, None) is not None:  # added here: its entries leave the staged tables too
            for num in range(at, at + count):
                self._staged.kill(num)  # type: ignore[union-attr]
        return cur

    def query_many(self, fingerprints: Sequence[int], k: int) -> list[list[Match]]:
        """The entries added here (not committed, not removed since) within ``k`` of each fingerprint, as
        :meth:`LevelDBIndex.query_many` answers (no bucket budget: a batch's entries are few); only for
        writes made ``queried``."""
        staged = self._queried()
        if not self._held_by:
            return [[] for _ in fingerprints]
        qs, nums, dist = staged.query_ints(fingerprints, k)
        found = _found_matches(qs, nums, dist, self._added_places.__getitem__, self._held_by.get)
        return listed(found, len(fingerprints))

    def any_near(self, fingerprints: Sequence[int], k: int) -> bool:
        """Whether :meth:`query_many` would find any entry."""
        staged = self._queried()
        return bool(self._held_by) and staged.any_within(fingerprints, k)

    def _queried(self) -> NumberedTables | CompiledNumberedTables:
        if self._staged is None:
            raise TypeError("these index writes keep no tables of their own entries: make them queried")
        return self._staged

    def finish(self) -> None:
        ix = self.index
        if self._next > NUM_MASK + 1:
            raise OverflowError(f"{ix.location}: more than 2^32 index entries were ever written; rebuild it")
        ix.stage_counters(self.wb, len(ix) + self._delta, self._next)

    def committed(self) -> None:
        self.index.apply(self._delta, self._next, self._added_nums, self._added_fps, self._added_places,
                         self._removed)
        self._delta = 0
        self._docs.clear()
        self._added_nums.clear()
        self._added_fps.clear()
        self._added_places.clear()
        self._removed.clear()


class LevelDBIndex(NearDupIndex):
    """Block index whose entries are persisted in LevelDB (the embedded default backend).

    ``bucket_budget`` bounds the entries a query reads from each block bucket (newest first; None reads
    them all). ``tables`` are the arrays of :meth:`table_arrays` saved by the owner when it last closed
    this index at the current state; without them (or when they do not fit) the tables are rebuilt from
    LevelDB. ``upgrade`` opens an index of an :data:`UPGRADABLE` format empty, for the owner to
    :meth:`clear` and fill again.
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
        tables: TableArrays | None = None,
        upgrade: bool = False,
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
            self.layout, self.algorithm, old = self._check_meta(layout, algorithm, upgrade)
            self._count = 0 if old else int(self._db.get(self._key(b"meta/count")) or b"0")
            self._next_number = 0 if old else int(self._db.get(self._key(b"meta/next_number")) or b"0")
            if old:  # entries of another format: none is read (the owner clears and rebuilds them)
                tables = (np.zeros(0, np.uint64), np.zeros(0, bool), np.zeros(0, np.uint16))
            self.tables_rebuilt = tables is None or any(len(t) != self._next_number for t in tables) or int(
                tables[1].sum()) != self._count
            fps, alive, places = self._scan() if self.tables_rebuilt else tables  # type: ignore[misc]
            self._keeps_put = False  # see keep_largest_put
            self._tables = numbered_tables(self.layout, fps, alive)
            self._places = array.array("H", places.astype(np.uint16).tobytes())
        except BaseException:
            self.close()
            raise

    def _scan(self) -> TableArrays:
        """(fingerprint, alive, place) by entry number, from one pass over the ``d/`` keys."""
        firsts, counts, held = [], [], []
        for raw in self._db.iterator(prefix=self.doc_key(""), include_key=False):
            first, count = _held(raw)
            firsts.append(first)
            counts.append(count)
            held.append(raw[_HEAD.size : _doc_struct(count).size])
        lengths = np.array(counts, dtype=np.int64)
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        places = np.arange(int(lengths.sum()), dtype=np.int64) - starts
        nums = np.repeat(np.array(firsts, dtype=np.int64), lengths) + places
        fps = np.zeros(self._next_number, dtype=np.uint64)
        alive = np.zeros(self._next_number, dtype=bool)
        at = np.zeros(self._next_number, dtype=np.uint16)
        fps[nums] = np.frombuffer(b"".join(held), dtype=">u8")
        alive[nums] = True
        at[nums] = places
        return fps, alive, at

    @property
    def next_number(self) -> int:
        """The number the next entry written gets (numbers are never reused)."""
        return self._next_number

    def table_arrays(self) -> TableArrays:
        """What the tables are rebuilt from, for the owner to save beside the store."""
        fps, alive = self._tables.arrays()
        return fps, alive, np.frombuffer(self._places, dtype=np.uint16).copy()

    # ------------------------------------------------------------------ meta
    def _key(self, suffix: bytes) -> bytes:
        return self._p + suffix

    def _check_meta(
        self, layout: BlockLayout | None, algorithm: str | None, upgrade: bool
    ) -> tuple[BlockLayout, str | None, bool]:
        """The layout and algorithm to use, and whether the index is of an :data:`UPGRADABLE` format
        (opened for an upgrade)."""
        raw_layout = self._db.get(self._key(b"meta/layout"))
        raw_algo = self._db.get(self._key(b"meta/algorithm"))
        raw_format = self._db.get(self._key(b"meta/format"))
        has_docs = next(self._db.iterator(prefix=self._key(b"d/"), include_value=False), None) is not None
        old = upgrade and raw_format in UPGRADABLE
        if (raw_format is not None or has_docs) and raw_format != FORMAT and not old:
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
        return final, stored_algo or algorithm, old

    # ------------------------------------------------------------------ keys
    def doc_key(self, doc_id: str) -> bytes:
        """LevelDB key of a document's entries."""
        return self._p + b"d/" + doc_id.encode()

    def _num_key(self, num: int) -> bytes:
        return self._p + b"n/" + num.to_bytes(4, "big")

    def held(self, doc_id: str) -> tuple[int, int] | None:
        """(first entry number, fingerprint count) of a document as LevelDB holds it (None when absent)."""
        return self.held_at(self.doc_key(doc_id))

    def held_at(self, key: bytes) -> tuple[int, int] | None:
        """:meth:`held` of the document under LevelDB key ``key`` (:meth:`doc_key`)."""
        raw = self._db.get(key)
        return None if raw is None else _held(raw)

    def numbers_held(self) -> int:
        """How many first entry numbers LevelDB holds (one per document in a healthy index)."""
        return sum(1 for _ in self._db.iterator(prefix=self._key(b"n/"), include_value=False))

    # ---------------------------------------------------------------- writes
    def writes(self, wb: Any, queried: bool = False) -> IndexWrites:
        """Stage index changes into ``wb`` (a plyvel write batch shared with the caller's records);
        ``queried``: the caller will ask for the entries staged (:meth:`IndexWrites.query_many`)."""
        return IndexWrites(self, wb, queried)

    def stage_doc_at(self, wb: Any, key: bytes, doc_id: str, first: int, fps: Sequence[int],
                     meta: Meta | None = None) -> None:  # fmt: skip
        """Put document ``doc_id`` (LevelDB key ``key``: :meth:`doc_key`), its entries numbered from
        ``first``, into the write batch ``wb`` (its keys only: see :meth:`apply`)."""
        wb.put(key, _doc_value(first, fps, meta))
        wb.put(self._num_key(first), doc_id.encode())

    def stage_removal(self, wb: Any, doc_id: str, first: int) -> None:
        """Delete a document and its first number in the write batch ``wb``."""
        wb.delete(self.doc_key(doc_id))
        wb.delete(self._num_key(first))

    def stage_counters(self, wb: Any, count: int, next_number: int) -> None:
        """Put the entry count and the next entry number into the write batch ``wb``."""
        wb.put(self._key(b"meta/count"), b"%d" % count)
        wb.put(self._key(b"meta/next_number"), b"%d" % next_number)

    def apply(self, delta: int, next_number: int, nums: Sequence[int], fps: Sequence[int],
              places: Sequence[int], removed: Iterable[int]) -> None:  # fmt: skip
        """Bring the counters and the in-memory tables level with a written batch: ``delta`` entries more,
        entries added under ``nums`` (consecutive from :attr:`next_number`) with ``fps`` at ``places`` in
        their documents, ``removed`` numbers."""
        self._count += delta
        self._next_number = next_number
        if nums:
            self._tables.put_ints(nums, fps)
            self._places.extend(places)
        for num in removed:
            self._tables.kill(num)

    def clear(self) -> None:
        """Delete every entry and counter (the layout and algorithm stay; the format becomes this
        version's), in one write batch; the in-memory tables are emptied."""
        keep = tuple(self._key(k) for k in (b"meta/layout", b"meta/algorithm"))
        with self._db.write_batch(transaction=True) as wb:
            for key in self._db.iterator(prefix=self._p, include_value=False):
                if not key.startswith(keep):
                    wb.delete(key)
            wb.put(self._key(b"meta/format"), FORMAT)
        self._count = self._next_number = 0
        self._tables = numbered_tables(self.layout)
        if self._keeps_put:
            self._tables.keep_largest_put()
        self._places = array.array("H")

    def add(self, doc_id: str, fingerprint: int, meta: Meta | None = None) -> None:
        self.add_many([(doc_id, fingerprint, meta)])

    def add_many(self, items: Iterable[tuple[str, int, Meta | None]], batch_size: int = 10_000) -> None:
        """Insert documents of one fingerprint each, in atomic write batches of ``batch_size``."""
        self.add_docs(((doc_id, (fp,), meta) for doc_id, fp, meta in items), batch_size)

    def add_docs(self, items: Iterable[tuple[str, Sequence[int], Meta | None]], batch_size: int = 10_000
                 ) -> None:  # fmt: skip
        """Insert documents with their fingerprints, in atomic write batches of ``batch_size``."""
        wb = self._db.write_batch(transaction=True)
        staged = self.writes(wb)
        for n, (doc_id, fps, meta) in enumerate(items, 1):
            staged.add_doc(doc_id, fps, meta)
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
        found = staged.remove(doc_id) is not None
        if found:
            staged.finish()
            wb.write()
            staged.committed()
        return found

    # --------------------------------------------------------------- queries
    def get(self, doc_id: str) -> int | None:
        """A document's first fingerprint (its document fingerprint), or None."""
        fps = self.fingerprints(doc_id)
        return None if fps is None else fps[0]

    def fingerprints(self, doc_id: str) -> tuple[int, ...] | None:
        """Every fingerprint of a document, in entry order, or None when it is absent."""
        raw = self._db.get(self.doc_key(doc_id))
        if raw is None:
            return None
        return _fingerprints_of(raw)

    def get_meta(self, doc_id: str) -> dict[str, Any] | None:
        """The meta stored with ``doc_id`` (empty dict when none), or None if absent."""
        raw = self._db.get(self.doc_key(doc_id))
        if raw is None:
            return None
        end = _doc_struct(_held(raw)[1]).size
        return json.loads(raw[end:]) if len(raw) > end else {}

    def __len__(self) -> int:
        return self._count

    def id_of(self, num: int) -> str | None:
        """The entry id under entry number ``num`` (None when its document was removed)."""
        place = self._places[num]
        doc_id = self.id_at(num - place)
        return None if doc_id is None else _entry(doc_id, place)

    def bucket_sizes(self, fingerprint: int, limit: int | None = None) -> list[int]:
        """Number of entries in each block bucket of ``fingerprint``, each counted up to ``limit``
        (a query reads no more of a bucket than its budget)."""
        sizes = self._tables.bucket_sizes(fingerprint & MASK64)
        return sizes if limit is None else [min(s, limit) for s in sizes]

    def keep_largest_put(self) -> None:
        """Keep :meth:`largest_put` from now on (free in the compiled tables; the reference looks every
        put's buckets up for it)."""
        self._keeps_put = True
        self._tables.keep_largest_put()

    def largest_put(self, limit: int | None = None) -> int:
        """The most entries a block bucket held right after a document's entry was put into it since
        :meth:`keep_largest_put` (0 for none), counted up to ``limit``: the service's gauge of hot buckets,
        kept by the tables as they put each entry."""
        size = self._tables.largest_put
        return size if limit is None else min(size, limit)

    def largest_bucket(self, fingerprints: Sequence[int], limit: int | None = None) -> int:
        """The most entries under any block bucket of ``fingerprints`` (0 for none), counted up to
        ``limit``: :meth:`bucket_sizes`' largest, in one call."""
        size = self._tables.largest_bucket(fingerprints)
        return size if limit is None else min(size, limit)

    def all_bucket_sizes(self) -> npt.NDArray[np.int64]:
        """Entries of every non-empty block bucket (the cost a query would pay without a budget)."""
        return self._tables.all_bucket_sizes()

    def query(self, fingerprint: int, k: int = 3) -> list[Match]:
        return self.query_many([fingerprint], k)[0]

    def query_many(self, fingerprints: Sequence[int], k: int = 3) -> list[list[Match]]:
        """Matches of each fingerprint, sorted by (distance, doc id): one pass over the tables for all of
        them, and one id look-up per document matched (however many of its entries, and queries, match)."""
        return listed(self.query_found(fingerprints, k), len(fingerprints))

    def query_found(self, fingerprints: Sequence[int], k: int = 3) -> dict[int, list[Match]]:
        """:meth:`query_many` of the fingerprints that found any, by their place in ``fingerprints``."""
        self.layout.check_k(k)
        qs, nums, dist = self._tables.query_ints(fingerprints, k, self.bucket_budget)
        return _found_matches(qs, nums, dist, self._places.__getitem__, self.id_at)

    def nbytes(self) -> int:
        """Bytes of the in-memory tables."""
        return self._tables.nbytes()

    def flush(self) -> None:
        """Merge the buffered appends into the sorted tables now (queries read the buffer whole)."""
        self._tables.flush()

    def doc_ids(self) -> list[str]:
        """Every stored doc id, in key order."""
        pfx = self.doc_key("")
        return [k[len(pfx) :].decode() for k in self._db.iterator(prefix=pfx, include_value=False)]

    def docs(self) -> Iterable[tuple[str, int, tuple[int, ...]]]:
        """(doc id, first entry number, fingerprints) of every stored document, in key order."""
        pfx = self.doc_key("")
        for key, raw in self._db.iterator(prefix=pfx):
            yield key[len(pfx) :].decode(), _held(raw)[0], _fingerprints_of(raw)

    def id_at(self, first: int) -> str | None:
        """The document whose entries are numbered from ``first`` (None when there is none)."""
        raw = self._db.get(self._num_key(first))
        return None if raw is None else raw.decode()

    def compact(self) -> None:
        """Compact this index's key range (after a bulk load, so queries read few files)."""
        self._db.compact_range(start=self._p, stop=self._p + b"\xff")

    def close(self) -> None:
        if self._owns_db and not self._db.closed:
            self._db.close()
