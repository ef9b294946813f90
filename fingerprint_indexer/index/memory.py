"""In-memory near-duplicate index: Manku-style block tables held in NumPy arrays.

For every block of the layout the index keeps the block values sorted (smallest unsigned dtype that fits)
and the row numbers in that order, so ``np.searchsorted`` finds a bucket. Candidates are verified with
``np.bitwise_count`` on the XOR. A candidate found in table ``b`` is kept only if none of blocks ``0..b-1``
equal the query's, so each match is reported once without a ``unique`` pass.

Appends go to a small buffer scanned by brute force and merged into the tables when it grows; removals
set a tombstone and the tables are compacted when tombstones pile up. Footprint: 8 bytes per fingerprint
plus (key bytes + 4) per block: 32 bytes per fingerprint for the default 4x16 layout, plus the doc ids.

:class:`NumberedTables` (tables over fixed entry numbers, for the embedded store) has a compiled
equivalent, :class:`CompiledNumberedTables`, of which it is the reference; :func:`numbered_tables` picks.
:class:`DocumentIndex` is an index of documents by id over them.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, KeysView, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import MASK64
from fingerprint_indexer.index.base import Meta, NearDupIndex
from fingerprint_indexer.records.match import Match

U64 = npt.NDArray[np.uint64]
IntArray = npt.NDArray[np.int64]

#: Buffered appends are merged into the sorted tables once there are this many.
MERGE_THRESHOLD = 4096
#: NumberedTables: appends that every query scans unsorted before they are sorted into the recent tables
#: (below ``MERGE_THRESHOLD * 256`` entries the main merge comes first, and the recent level stays empty).
BUFFER_MAX = MERGE_THRESHOLD
#: Tables are rebuilt without tombstoned rows when this fraction of rows is dead.
COMPACT_FRACTION = 0.25


def key_dtype(width: int) -> type[np.unsignedinteger]:
    """Smallest unsigned dtype holding a block of ``width`` bits."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if width <= np.iinfo(dt).bits:
            return dt
    return np.uint64


def _earlier_masks(layout: BlockLayout) -> list[list[int]]:
    """For block b, the bit masks of blocks 0..b-1 (used to drop matches already found in earlier tables)."""
    masks = [((1 << w) - 1) << s for w, s in zip(layout.widths, layout.shifts, strict=True)]
    return [masks[:b] for b in range(layout.n_blocks)]


def _first_in_table(xor: U64, earlier: list[int]) -> npt.NDArray[np.bool_]:
    """True where no earlier block of the XOR is zero, i.e. this table is the first to see the candidate."""
    keep = np.ones(xor.shape, dtype=bool)
    for m in earlier:
        keep &= (xor & np.uint64(m)) != 0
    return keep


def _ranges_to_positions(starts: IntArray, ends: IntArray) -> tuple[IntArray, IntArray]:
    """Flatten half-open ranges into (positions, owning range index) without a Python loop."""
    lengths = ends - starts
    total = int(lengths.sum())
    owner = np.repeat(np.arange(len(starts), dtype=np.int64), lengths)
    if total == 0:
        return np.empty(0, dtype=np.int64), owner
    offsets = np.cumsum(lengths) - lengths
    positions = np.arange(total, dtype=np.int64) - np.repeat(offsets - starts, lengths)
    return positions, owner


def grouped_matches(n: int, queries: IntArray | list[int], rows: IntArray | list[int],
                    dist: npt.NDArray[np.uint8] | list[int],
                    ids: Sequence[str] | npt.NDArray[np.object_] | Mapping[int, str]) -> list[list[Match]]:
    """The matches of each of ``n`` queries, from (query index, row, distance) arrays or lists and the id
    of each row, nearest first (distance, then id)."""
    out: list[list[Match]] = [[] for _ in range(n)]
    if not len(queries):  # most look-ups find nothing
        return out
    if not isinstance(queries, list):
        queries, rows, dist = queries.tolist(), rows.tolist(), dist.tolist()  # type: ignore[union-attr]
    for q, r, d in zip(queries, rows, dist, strict=True):
        out[q].append(Match(ids[r], d))
    for hits in out:
        if len(hits) > 1:
            hits.sort(key=lambda m: (m.distance, m.doc_id))
    return out


class _Tables:
    """Sorted block tables over a fixed array of fingerprints (rows 0..n-1).

    Every table holds every row, so the tables' row arrays are views of one array, table ``b`` at
    ``b * n``: a look-up of many fingerprints gathers the rows of all their buckets in one pass.
    """

    def __init__(self, layout: BlockLayout) -> None:
        self.layout = layout
        self.keys: list[npt.NDArray[np.unsignedinteger]] = [
            np.empty(0, dtype=key_dtype(w)) for w in layout.widths
        ]
        self._set_rows([np.empty(0, dtype=np.uint32) for _ in layout.widths])

    def _set_rows(self, rows: list[npt.NDArray[np.uint32]]) -> None:
        self.all_rows = np.concatenate(rows)
        n = len(rows[0])
        self.rows: list[npt.NDArray[np.uint32]] = [self.all_rows[b * n : (b + 1) * n]
                                                   for b in range(len(rows))]

    def build(self, fps: U64, rows: npt.NDArray[np.uint32]) -> None:
        """Sort the given rows (whose fingerprints are ``fps``) under every block."""
        blocks = self.layout.split_many(fps)
        by_table = []
        for b, w in enumerate(self.layout.widths):
            col = blocks[:, b].astype(key_dtype(w))
            order = np.argsort(col, kind="stable")
            self.keys[b] = col[order]
            by_table.append(rows[order])
        self._set_rows(by_table)

    def merge(self, fps: U64, rows: npt.NDArray[np.uint32]) -> None:
        """Insert new rows into the sorted tables (linear-time merge, no full re-sort)."""
        blocks = self.layout.split_many(fps)
        by_table = []
        for b, w in enumerate(self.layout.widths):
            col = blocks[:, b].astype(key_dtype(w))
            order = np.argsort(col, kind="stable")
            new_keys, new_rows = col[order], rows[order]
            at = np.searchsorted(self.keys[b], new_keys, side="right")
            self.keys[b] = np.insert(self.keys[b], at, new_keys)
            by_table.append(np.insert(self.rows[b], at, new_rows))
        self._set_rows(by_table)

    def nbytes(self) -> int:
        return sum(k.nbytes for k in self.keys) + self.all_rows.nbytes

    def bucket_slices(self, fp: int, budget: int | None = None) -> list[npt.NDArray[np.uint32]]:
        """The rows under each of ``fp``'s block values, one array per table (one searchsorted pair each);
        with a ``budget``, only the last (highest-numbered, i.e. newest) ``budget`` rows of each bucket."""
        out = []
        for b, (w, s) in enumerate(zip(self.layout.widths, self.layout.shifts, strict=True)):
            v = (fp >> s) & ((1 << w) - 1)
            keys = self.keys[b]
            if v + 1 < (1 << w):  # typed probe: a Python-int probe would upcast the whole table
                lo, hi = keys.searchsorted(np.array((v, v + 1), dtype=keys.dtype)).tolist()
            else:
                lo, hi = int(keys.searchsorted(np.array(v, dtype=keys.dtype))), len(keys)
            if budget is not None and hi - lo > budget:
                lo = hi - budget
            out.append(self.rows[b][lo:hi])
        return out

    def bucket_rows_many(self, fps: U64, budget: int | None = None) -> tuple[IntArray, IntArray]:
        """(query index, row) of every row under each query's block values, all tables together:
        :meth:`bucket_slices` of many fingerprints, two searchsorted calls per table and one gather."""
        blocks = self.layout.split_many(fps)
        n = len(self.rows[0])
        los: list[IntArray] = []
        his: list[IntArray] = []
        for b, keys in enumerate(self.keys):
            qk = blocks[:, b].astype(keys.dtype)  # typed probe: a uint64 probe would upcast the table
            los.append(keys.searchsorted(qk, side="left") + b * n)
            his.append(keys.searchsorted(qk, side="right") + b * n)
        lo, hi = np.concatenate(los), np.concatenate(his)
        if budget is not None:
            lo = np.maximum(lo, hi - budget)
        pos, owner = _ranges_to_positions(lo, hi)
        return owner % len(fps), self.all_rows[pos].astype(np.int64)

    def bucket_sizes(self) -> npt.NDArray[np.int64]:
        """Entries of every non-empty bucket of every table."""
        return np.concatenate([np.unique(k, return_counts=True)[1] for k in self.keys]).astype(np.int64)


class MemoryIndex(NearDupIndex):
    """NumPy block tables; the reference backend and the engine of batch dedupe."""

    def __init__(
        self,
        layout: BlockLayout | None = None,
        capacity: int = 1024,
        merge_threshold: int = MERGE_THRESHOLD,
        compact_min: int = 64,
    ) -> None:
        self.layout = layout or BlockLayout()
        self.merge_threshold, self.compact_min = merge_threshold, compact_min
        self._earlier = _earlier_masks(self.layout)
        self._fps = np.zeros(max(capacity, 16), dtype=np.uint64)
        self._alive = np.zeros(max(capacity, 16), dtype=bool)
        # doc ids by row in a NumPy object array: unlike a list it is not tracked by the cycle collector,
        # so a 10M-entry index does not make every full collection walk 10M pointers (latency spikes)
        self._ids: npt.NDArray[np.object_] = np.empty(max(capacity, 16), dtype=object)
        self._n = 0
        self._row_of: dict[str, int] = {}
        self._tables = _Tables(self.layout)
        self._n_sorted = 0  # rows [0, _n_sorted) are in the tables; the rest are buffered
        self._n_dead = 0

    # ----------------------------------------------------------------- writes
    def add(self, doc_id: str, fingerprint: int, meta: Meta | None = None) -> None:
        """One entry, without the bulk path's arrays (a batch's staged index adds them one at a time)."""
        row = self._n
        self._reserve(row + 1)
        self._fps[row] = fingerprint & MASK64
        self._alive[row] = True
        self._ids[row] = doc_id
        self._claim(doc_id, row)
        self._n = row + 1
        self._appended()

    def add_many(self, items: Iterable[tuple[str, int, Meta | None]]) -> None:
        ids: list[str] = []
        fps: list[int] = []
        for doc_id, fp, _meta in items:
            ids.append(doc_id)
            fps.append(fp & MASK64)
        self.add_arrays(ids, np.array(fps, dtype=np.uint64))

    def add_arrays(self, ids: Sequence[str], fps: U64) -> None:
        """Bulk insert: ``ids[i]`` gets ``fps[i]``; a repeated or existing id is replaced (last wins)."""
        fps = np.asarray(fps, dtype=np.uint64)
        if len(ids) != len(fps):
            raise ValueError(f"{len(ids)} ids but {len(fps)} fingerprints")
        if not len(ids):
            return
        start = self._n
        self._reserve(start + len(ids))
        self._fps[start : start + len(ids)] = fps
        self._alive[start : start + len(ids)] = True
        self._ids[start : start + len(ids)] = ids
        for i, doc_id in enumerate(ids, start):
            self._claim(doc_id, i)
        self._n = start + len(ids)
        self._appended()

    def _claim(self, doc_id: str, row: int) -> None:
        """Make ``row`` the entry of ``doc_id``, tombstoning the row it had (a repeated id: last wins)."""
        old = self._row_of.get(doc_id)
        if old is not None:
            self._alive[old] = False
            self._n_dead += 1
        self._row_of[doc_id] = row

    def _appended(self) -> None:
        if self._n - self._n_sorted >= self.merge_threshold:
            self._merge_buffer()
        self._maybe_compact()

    def remove(self, doc_id: str) -> bool:
        row = self._row_of.pop(doc_id, None)
        if row is None:
            return False
        self._alive[row] = False
        self._n_dead += 1
        self._maybe_compact()
        return True

    def _reserve(self, n: int) -> None:
        if n <= len(self._fps):
            return
        size = max(n, int(len(self._fps) * 1.5))
        fps = np.zeros(size, dtype=np.uint64)
        alive = np.zeros(size, dtype=bool)
        ids = np.empty(size, dtype=object)
        fps[: self._n] = self._fps[: self._n]
        alive[: self._n] = self._alive[: self._n]
        ids[: self._n] = self._ids[: self._n]
        self._fps, self._alive, self._ids = fps, alive, ids

    def _merge_buffer(self) -> None:
        n = self._n
        if n == self._n_sorted:
            return
        rows = np.arange(self._n_sorted, n, dtype=np.uint32)
        if self._n_sorted < n - self._n_sorted:
            self._tables.build(self._fps[:n], np.arange(n, dtype=np.uint32))
        else:
            self._tables.merge(self._fps[self._n_sorted : n], rows)
        self._n_sorted = n

    def _maybe_compact(self) -> None:
        n = self._n
        if self._n_dead >= self.compact_min and self._n_dead >= COMPACT_FRACTION * n:
            self.compact()

    def compact(self) -> None:
        """Drop tombstoned rows and rebuild the tables (also merges the append buffer)."""
        n = self._n
        keep = np.flatnonzero(self._alive[:n])
        fps = self._fps[keep].copy()
        ids = self._ids[keep]
        self._fps = np.zeros(max(len(ids), 16), dtype=np.uint64)
        self._alive = np.zeros(max(len(ids), 16), dtype=bool)
        self._fps[: len(ids)] = fps
        self._alive[: len(ids)] = True
        self._ids = np.empty(max(len(ids), 16), dtype=object)
        self._ids[: len(ids)] = ids
        self._n = len(ids)
        self._row_of = {doc_id: i for i, doc_id in enumerate(ids.tolist())}
        self._n_dead = 0
        self._tables = _Tables(self.layout)
        self._tables.build(fps, np.arange(len(ids), dtype=np.uint32))
        self._n_sorted = len(ids)

    # ---------------------------------------------------------------- queries
    def get(self, doc_id: str) -> int | None:
        row = self._row_of.get(doc_id)
        return None if row is None else int(self._fps[row])

    def __len__(self) -> int:
        return len(self._row_of)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._row_of

    def query(self, fingerprint: int, k: int = 3) -> list[Match]:
        """Single-query path: few NumPy calls (one searchsorted per table, one verify pass)."""
        self.layout.check_k(k)
        fp = fingerprint & MASK64
        slices = [x for x in self._tables.bucket_slices(fp) if len(x)] if self._n_sorted else []
        n = self._n
        if n > self._n_sorted:
            slices.append(np.arange(self._n_sorted, n, dtype=np.uint32))
        if not slices:
            return []
        rows = np.concatenate(slices) if len(slices) > 1 else slices[0]
        dist = np.bitwise_count(self._fps[rows] ^ np.uint64(fp))
        ok = np.flatnonzero(dist <= k)
        if not len(ok):
            return []
        hit_rows = rows[ok]
        live = self._alive[hit_rows]  # tombstones checked on the few matches, not on every candidate
        ids = self._ids
        found = {ids[r]: d for r, d in zip(hit_rows[live].tolist(), dist[ok][live].tolist(), strict=True)}
        return sorted((Match(i, d) for i, d in found.items()), key=lambda m: (m.distance, m.doc_id))

    def query_many(self, fingerprints: Sequence[int] | U64, k: int = 3) -> list[list[Match]]:
        """All matches for a batch of fingerprints, found with whole-array operations."""
        qidx, rows, dist = self.query_arrays(np.asarray(fingerprints, dtype=np.uint64), k)
        return grouped_matches(len(fingerprints), qidx, rows, dist, self._ids)

    def query_arrays(self, queries: U64, k: int) -> tuple[IntArray, IntArray, npt.NDArray[np.uint8]]:
        """(query index, row, distance) of every match, each (query, row) pair exactly once."""
        self.layout.check_k(k)
        queries = np.asarray(queries, dtype=np.uint64)
        if len(queries) > 64:
            self._merge_buffer()  # a big batch is cheaper against tables than against the buffer
        parts_q: list[IntArray] = []
        parts_r: list[IntArray] = []
        parts_d: list[npt.NDArray[np.uint8]] = []
        if self._n_sorted:
            qblocks = self.layout.split_many(queries)
            for b, w in enumerate(self.layout.widths):
                qk = qblocks[:, b].astype(key_dtype(w))
                keys = self._tables.keys[b]
                lo = np.searchsorted(keys, qk, side="left").astype(np.int64)
                hi = np.searchsorted(keys, qk, side="right").astype(np.int64)
                pos, owner = _ranges_to_positions(lo, hi)
                if not len(pos):
                    continue
                rows = self._tables.rows[b][pos].astype(np.int64)
                xor = self._fps[rows] ^ queries[owner]
                dist = np.bitwise_count(xor)
                ok = (dist <= k) & self._alive[rows]
                if b:
                    ok[ok] = _first_in_table(xor[ok], self._earlier[b])
                parts_q.append(owner[ok])
                parts_r.append(rows[ok])
                parts_d.append(dist[ok])
        n = self._n
        if n > self._n_sorted:
            dist = np.bitwise_count(self._fps[self._n_sorted : n][None, :] ^ queries[:, None])
            near = dist <= k
            if near.any():  # most look-ups match nothing in the buffer: no index arrays for them
                qi, ri = np.nonzero(near)
                rows = ri.astype(np.int64) + self._n_sorted
                live = self._alive[rows]  # tombstones checked on the few matches
                parts_q.append(qi[live].astype(np.int64))
                parts_r.append(rows[live])
                parts_d.append(dist[qi, ri][live])
        if not parts_q:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint8)
        if len(parts_q) == 1:
            return parts_q[0], parts_r[0], parts_d[0]
        return np.concatenate(parts_q), np.concatenate(parts_r), np.concatenate(parts_d)

    def nbytes(self) -> int:
        """Bytes held by the NumPy arrays (fingerprints, tombstones, tables); doc-id strings excluded."""
        return int(self._fps.nbytes + self._alive.nbytes + self._tables.nbytes())

    def flush(self) -> None:
        """Merge the append buffer into the tables now (e.g. before a timing run)."""
        self._merge_buffer()


class NumberedTables:
    """Block tables over fingerprints that carry fixed entry numbers (0, 1, 2, ...; never reused): the
    in-memory half of an index whose entries live elsewhere (the embedded store keeps them in LevelDB).

    ``put`` appends entries under numbers above every number seen (holes stay dead), ``kill`` tombstones
    one. Everything above the main tables is merged into them when it reaches ``max(merge_min, live rows
    / 256)``, so a merge's linear cost is spread over many inserts however large the index grows; before
    that, every ``buffer_max`` appends are sorted into small *recent* tables. A query reads bucket slices
    of both levels and scans at most ``buffer_max`` unsorted appends (a buffer of ``live rows / 256``
    would make every query's scan grow with the index). ``fps`` and ``alive`` (by number) are everything
    needed to rebuild the tables.
    """

    def __init__(self, layout: BlockLayout, fps: U64 | None = None,
                 alive: npt.NDArray[np.bool_] | None = None, merge_min: int = MERGE_THRESHOLD,
                 buffer_max: int = BUFFER_MAX) -> None:  # fmt: skip
        self.layout, self.merge_min, self.buffer_max = layout, merge_min, buffer_max
        #: whether puts keep :attr:`largest_put` (asked for with :meth:`keep_largest_put`: here it costs a
        #: look-up of every put's buckets, which only a service reporting hot buckets needs)
        self._keeps_put = False
        n = 0 if fps is None else len(fps)
        self._fps = np.zeros(max(n, 1024), dtype=np.uint64)
        self._alive = np.zeros(max(n, 1024), dtype=bool)
        if fps is not None:
            self._fps[:n] = fps
            self._alive[:n] = True if alive is None else alive
        self._n = n
        self._largest_put = 0
        self._rebuild()  # sets the tables and their counts: rows sorted, rows put (live when merged), dead

    @property
    def n(self) -> int:
        """One above the highest number ever put."""
        return self._n

    def arrays(self) -> tuple[U64, npt.NDArray[np.bool_]]:
        """(fingerprint, alive) by number: what :meth:`__init__` rebuilds the tables from."""
        return self._fps[: self._n], self._alive[: self._n]

    def put(self, nums: npt.NDArray[np.int64], fps: U64) -> None:
        """Add entries ``nums[i] -> fps[i]``; every number must be above :attr:`n` - 1."""
        if not len(nums):
            return
        if int(nums.min()) < self._n:
            raise ValueError(f"entry numbers must grow: {int(nums.min())} < {self._n}")
        top = int(nums.max()) + 1
        if top > len(self._fps):
            size = max(top, int(len(self._fps) * 1.5))
            self._fps = np.concatenate([self._fps, np.zeros(size - len(self._fps), np.uint64)])
            self._alive = np.concatenate([self._alive, np.zeros(size - len(self._alive), bool)])
        self._fps[nums] = fps
        self._alive[nums] = True
        self._n = top
        if self._n - self._n_sorted >= max(self.merge_min, self._in_tables // 256):
            self._merge()
        elif self._n - self._n_recent >= self.buffer_max:
            self._sort_buffer()
        if self._keeps_put:
            put = self._fps[np.unique(nums)].tolist()  # a number given twice: its last fingerprint
            self._largest_put = max(self._largest_put, self.largest_bucket(put))

    def keep_largest_put(self) -> None:
        """Keep :attr:`largest_put` over the puts from now on."""
        self._keeps_put = True

    @property
    def largest_put(self) -> int:
        """The most entries a block bucket held right after a put into it, over every put since
        :meth:`keep_largest_put` (0 for none): what a service reports of the buckets it wrote to, with no
        look-up of its own."""
        if not self._keeps_put:
            raise TypeError("these tables do not keep the largest bucket a put made: keep_largest_put()")
        return self._largest_put

    def kill(self, num: int) -> None:
        """Tombstone entry ``num`` (the tables are rebuilt once a quarter of their rows are dead)."""
        if num >= self._n or not self._alive[num]:
            return
        self._alive[num] = False
        if num < self._n_sorted:
            self._dead_in_tables += 1
            if self._dead_in_tables >= 64 and self._dead_in_tables >= COMPACT_FRACTION * self._in_tables:
                self._rebuild()

    def _rebuild(self) -> None:
        rows = np.flatnonzero(self._alive[: self._n]).astype(np.uint32)
        self._tables: _Tables = _Tables(self.layout)
        self._tables.build(self._fps[rows], rows)
        self._n_sorted: int = self._n
        self._in_tables: int = len(rows)
        self._dead_in_tables: int = 0
        self._clear_recent()

    def _clear_recent(self) -> None:
        self._recent = _Tables(self.layout)  # rows _n_sorted .. _n_recent - 1 (those alive when sorted)
        self._n_recent: int = self._n_sorted

    def _live_from(self, start: int) -> npt.NDArray[np.uint32]:
        """The live rows from ``start`` to the last one put."""
        return start + np.flatnonzero(self._alive[start : self._n]).astype(np.uint32)

    def _merge(self) -> None:
        """Everything above the main tables (recent tables and buffer) into the main tables."""
        if self._n == self._n_sorted:
            return
        rows = self._live_from(self._n_sorted)
        self._tables.merge(self._fps[rows], rows)
        self._n_sorted, self._in_tables = self._n, self._in_tables + len(rows)
        self._clear_recent()

    def _sort_buffer(self) -> None:
        """The buffer into the recent tables (a merge into tables of at most ``live rows / 256``)."""
        rows = self._live_from(self._n_recent)
        self._recent.merge(self._fps[rows], rows)
        self._n_recent = self._n

    def put_ints(self, nums: Sequence[int], fps: Sequence[int]) -> None:
        """:meth:`put` of sequences of ints (the few entries of one document)."""
        self.put(np.array(nums, dtype=np.int64), np.array(fps, dtype=np.uint64))

    def put_run(self, first: int, fps: Sequence[int]) -> None:
        """:meth:`put_ints` of ``fps`` (their low 64 bits) under ``first``, ``first + 1`` ... (one document's
        consecutive entries)."""
        self.put_ints(range(first, first + len(fps)), [fp & MASK64 for fp in fps])

    def query_ints(self, fps: Sequence[int], k: int, budget: int | None = None
                   ) -> tuple[list[int], list[int], list[int]]:  # fmt: skip
        """:meth:`query_many` of a sequence of ints (their low 64 bits), answered as lists of ints."""
        qs, nums, dist = self.query_many(np.array([fp & MASK64 for fp in fps], dtype=np.uint64), k, budget)
        return qs.tolist(), nums.tolist(), dist.tolist()

    def any_within(self, fps: Sequence[int], k: int, budget: int | None = None) -> bool:
        """Whether :meth:`query_ints` of ``fps`` (their low 64 bits) finds any entry."""
        return bool(self.query_ints(fps, k, budget)[0])

    def query(self, fp: int, k: int, budget: int | None = None) -> tuple[IntArray, npt.NDArray[np.uint8]]:
        """(numbers, distances) of the live entries within ``k`` of ``fp``, each number once (see
        :meth:`query_many`)."""
        _q, nums, dist = self.query_many(np.array([fp], dtype=np.uint64), k, budget)
        return nums, dist

    def query_many(self, fps: U64, k: int, budget: int | None = None
                   ) -> tuple[IntArray, IntArray, npt.NDArray[np.uint8]]:  # fmt: skip
        """(query index, number, distance) of the live entries within ``k`` of each of ``fps``, each
        (query, number) pair once, ordered by query then number. At most ``budget`` entries of each main
        bucket are read (the newest), and every entry newer than the main tables (the recent tables'
        buckets whole, the buffer). One pass for all the queries: a document's fingerprints are looked up
        together."""
        fps = np.asarray(fps, dtype=np.uint64)
        if len(fps) > 64 and self._n > self._n_recent:
            self._sort_buffer()  # a big batch is cheaper against small sorted tables than the buffer
        qs: list[IntArray] = []
        rs: list[IntArray] = []
        ds: list[npt.NDArray[np.uint8]] = []
        for tables, live, cap in ((self._tables, self._in_tables, budget),
                                  (self._recent, self._n_recent > self._n_sorted, None)):
            if live:
                owner, row = tables.bucket_rows_many(fps, cap)
                dist = np.bitwise_count(self._fps[row] ^ fps[owner])
                ok = np.flatnonzero(dist <= k)
                qs.append(owner[ok])
                rs.append(row[ok])
                ds.append(dist[ok])
        if self._n > self._n_recent:  # the buffer: every query against every entry, in one broadcast
            dist = np.bitwise_count(self._fps[self._n_recent : self._n][None, :] ^ fps[:, None])
            qi, ri = np.nonzero(dist <= k)
            qs.append(qi.astype(np.int64))
            rs.append(ri.astype(np.int64) + self._n_recent)
            ds.append(dist[qi, ri])
        if not qs:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint8)
        q, r, dist = np.concatenate(qs), np.concatenate(rs), np.concatenate(ds)
        ok = self._alive[r]  # tombstones checked on the few matches, not on every candidate
        q, r, dist = q[ok], r[ok], dist[ok]
        if len(r) > 1:  # one entry may match in several tables; order by query, then number
            _pairs, first = np.unique(q * max(self._n, 1) + r, return_index=True)
            q, r, dist = q[first], r[first], dist[first]
        return q, r, dist

    def bucket_sizes(self, fp: int) -> list[int]:
        """Entries under each of ``fp``'s block values (tombstoned ones included until a rebuild)."""
        sizes = [len(s) for s in self._tables.bucket_slices(fp)] if self._in_tables else [0] * len(
            self.layout.widths)
        buf = self._fps[self._n_sorted : self._n][self._alive[self._n_sorted : self._n]]
        if len(buf):
            fpb = self.layout.split_many(np.array([fp], dtype=np.uint64))[0]
            same = self.layout.split_many(buf) == fpb[None, :]
            sizes = [s + int(c) for s, c in zip(sizes, same.sum(axis=0), strict=True)]
        return sizes

    def largest_bucket(self, fps: Sequence[int]) -> int:
        """The most entries under any block value of any of ``fps`` (0 for none)."""
        return max((size for fp in fps for size in self.bucket_sizes(fp)), default=0)

    def flush(self) -> None:
        """Merge the buffered appends into the tables now."""
        self._merge()

    def all_bucket_sizes(self) -> npt.NDArray[np.int64]:
        """Entries of every non-empty bucket of every table (after merging the appends)."""
        self._merge()
        return self._tables.bucket_sizes()

    def nbytes(self) -> int:
        return int(self._fps.nbytes + self._alive.nbytes + self._tables.nbytes() + self._recent.nbytes())


class CompiledNumberedTables:
    """:class:`NumberedTables` in compiled code (``native.block_tables``), with the same results: a
    look-up of a document's few fingerprints costs one call instead of a few dozen NumPy calls.

    One bucket per block value holds entry numbers in ascending order, the main tables' rows and then
    the live entries put since; a query splits each bucket at the main tables' end (the budget applies
    to the part below). The reference's recent tables and buffer change no result, so there are none.
    Like the reference's tables it finds an entry only through a block it shares with the query, so
    every match within ``k`` only for ``k`` below the number of blocks (the buffer the reference scans
    whole may find farther ones). ``small`` tables keep their buckets in hash maps: made for a few
    thousand entries, they cost nothing to make (direct buckets of 16-bit blocks take 6 MB).
    """

    def __init__(self, layout: BlockLayout, fps: U64 | None = None,
                 alive: npt.NDArray[np.bool_] | None = None, merge_min: int = MERGE_THRESHOLD,
                 buffer_max: int = BUFFER_MAX, small: bool = False) -> None:  # fmt: skip
        from fingerprint_indexer.fingerprint import native  # the compiled core's one place; loaded on use

        if not native.AVAILABLE:
            raise RuntimeError("the compiled core was not built into this installation")
        self.layout, self.merge_min, self.buffer_max = layout, merge_min, buffer_max
        fps = np.ascontiguousarray(np.empty(0, np.uint64) if fps is None else fps, dtype=np.uint64)
        flags = np.ones(len(fps), dtype=bool) if alive is None else np.ascontiguousarray(alive, dtype=bool)
        self._tables = native.block_tables(layout.widths, fps, flags.view(np.uint8), merge_min, small)

    @property
    def n(self) -> int:
        """One above the highest number ever put."""
        return int(self._tables.n)

    def arrays(self) -> tuple[U64, npt.NDArray[np.bool_]]:
        """(fingerprint, alive) by number (copies): what :meth:`__init__` rebuilds the tables from."""
        fps, alive = self._tables.arrays()
        return np.frombuffer(fps, dtype=np.uint64), np.frombuffer(alive, dtype=bool)

    def put(self, nums: npt.NDArray[np.int64], fps: U64) -> None:
        """Add entries ``nums[i] -> fps[i]``; every number must be above :attr:`n` - 1."""
        if not len(nums):
            return
        nums, fps = np.ascontiguousarray(nums, dtype=np.int64), np.ascontiguousarray(fps, dtype=np.uint64)
        self._tables.put(nums, fps)

    def put_ints(self, nums: Sequence[int], fps: Sequence[int]) -> None:
        """:meth:`put` of sequences of ints (the few entries of one document: no arrays made)."""
        self._tables.put_ints(nums, fps)

    def put_run(self, first: int, fps: Sequence[int]) -> None:
        """:meth:`NumberedTables.put_run`, in one call."""
        self._tables.put_run(first, fps)

    def keep_largest_put(self) -> None:
        """:meth:`NumberedTables.keep_largest_put`: these tables keep it always (the bucket is at hand as
        each entry is put), so there is nothing to start."""

    @property
    def largest_put(self) -> int:
        """:attr:`NumberedTables.largest_put`, kept by the tables as they put each entry."""
        return int(self._tables.largest_put)

    def query_ints(self, fps: Sequence[int], k: int, budget: int | None = None
                   ) -> tuple[list[int], list[int], list[int]]:  # fmt: skip
        """:meth:`NumberedTables.query_ints`, answered as lists of ints (no arrays made)."""
        return self._tables.query_ints(fps, k, budget)

    def any_within(self, fps: Sequence[int], k: int, budget: int | None = None) -> bool:
        """:meth:`NumberedTables.any_within`, in one call that stops at the first entry found."""
        return bool(self._tables.any_within(fps, k, budget))

    def kill(self, num: int) -> None:
        """Tombstone entry ``num`` (the tables are rebuilt once a quarter of their rows are dead)."""
        self._tables.kill(int(num))

    def query(self, fp: int, k: int, budget: int | None = None) -> tuple[IntArray, npt.NDArray[np.uint8]]:
        """(numbers, distances) of the live entries within ``k`` of ``fp``, each number once."""
        _q, nums, dist = self.query_many(np.array([fp], dtype=np.uint64), k, budget)
        return nums, dist

    def query_many(self, fps: U64, k: int, budget: int | None = None
                   ) -> tuple[IntArray, IntArray, npt.NDArray[np.uint8]]:  # fmt: skip
        """:meth:`NumberedTables.query_many`: (query index, number, distance), ordered by query then
        number, reading at most ``budget`` entries of each main bucket."""
        qs, nums, dist = self._tables.query_many(np.ascontiguousarray(fps, dtype=np.uint64), k, budget)
        return (np.frombuffer(qs, dtype=np.int64), np.frombuffer(nums, dtype=np.int64),
                np.frombuffer(dist, dtype=np.uint8))  # fmt: skip

    def bucket_sizes(self, fp: int) -> list[int]:
        """Entries under each of ``fp``'s block values (tombstoned ones included until a rebuild)."""
        return self._tables.bucket_sizes(int(fp) & MASK64)

    def largest_bucket(self, fps: Sequence[int]) -> int:
        """The most entries under any block value of any of ``fps`` (0 for none), in one call."""
        return int(self._tables.largest_bucket([int(fp) & MASK64 for fp in fps]))

    def flush(self) -> None:
        """Merge the appends into the main tables now."""
        self._tables.flush()

    def all_bucket_sizes(self) -> npt.NDArray[np.int64]:
        """Entries of every non-empty bucket of every table (after merging the appends)."""
        return np.frombuffer(self._tables.all_bucket_sizes(), dtype=np.int64)

    def nbytes(self) -> int:
        """Bytes the compiled tables hold (their own layout's figure, not the reference's)."""
        return int(self._tables.nbytes())


def numbered_tables(layout: BlockLayout, fps: U64 | None = None, alive: npt.NDArray[np.bool_] | None = None,
                    merge_min: int = MERGE_THRESHOLD, small: bool = False
                    ) -> NumberedTables | CompiledNumberedTables:  # fmt: skip
    """Block tables over numbered fingerprints: the compiled ones when the compiled core is built and not
    switched off (``FPI_NATIVE=0``), else the reference (``small``: see :class:`CompiledNumberedTables`)."""
    from fingerprint_indexer.fingerprint.native import enabled  # the switch's one place; loaded on use

    if enabled():
        return CompiledNumberedTables(layout, fps, alive, merge_min, small=small)
    return NumberedTables(layout, fps, alive, merge_min)



class DocumentIndex(NearDupIndex):
    """Documents by id, each with one or more fingerprints (document, lead, chunks), over
    :func:`numbered_tables` (compiled when built): a document put gets the next numbers, one a
    fingerprint, and the numbers of a document removed or put again are tombstoned. A look-up answers
    documents, at the smallest distance of any of their fingerprints: no entry id is made per fingerprint
    and parsed back per hit. For a set written a batch at a time and queried in batches, such as the
    documents ``es index`` has decided since the index's last refresh; numbers are never reused, so a set
    that lives long should be replaced now and then (the tables drop tombstoned rows when a quarter are
    dead)."""

    def __init__(self, layout: BlockLayout | None = None) -> None:
        self.layout = layout or BlockLayout()
        self._tables = numbered_tables(self.layout, small=True)
        self._rows: dict[str, range] = {}  # id -> its numbers
        self._fps: dict[str, int] = {}  # id -> its first fingerprint (:meth:`get`)
        self._docs: dict[int, str] = {}  # number -> id, live numbers only
        self._next = 0

    def add(self, doc_id: str, fingerprint: int, meta: Meta | None = None) -> None:
        self.put_many([(doc_id, (fingerprint,))])

    def add_many(self, items: Iterable[tuple[str, int, Meta | None]]) -> None:
        self.put_many((doc_id, (fp,)) for doc_id, fp, _meta in items)

    def put_many(self, docs: Iterable[tuple[str, Sequence[int]]]) -> None:
        """Put each document with its fingerprints (an id given again, here or before: the last wins), in
        one call to the tables."""
        latest = dict(docs)  # an id given twice: the last wins (its first is never put)
        if not all(latest.values()):
            empty = next(doc_id for doc_id, fingerprints in latest.items() if not fingerprints)
            raise ValueError(f"document {empty!r} has no fingerprint")
        for doc_id in latest.keys() & self._rows.keys():  # put again: its old numbers die
            self.remove(doc_id)
        if not latest:
            return
        # every document's numbers in one run, the dicts filled at C speed (no Python step per document)
        counts = list(map(len, latest.values()))
        ends = list(itertools.accumulate(counts, initial=self._next))
        nums = range(ends[0], ends[-1])
        self._next = ends[-1]
        self._rows.update(zip(latest, map(range, ends, ends[1:]), strict=True))
        self._fps.update(zip(latest, (fps[0] & MASK64 for fps in latest.values()), strict=True))
        owners = itertools.chain.from_iterable(map(itertools.repeat, latest, counts))
        self._docs.update(zip(nums, owners, strict=True))
        self._tables.put_ints(nums, [fp & MASK64 for fingerprints in latest.values() for fp in fingerprints])

    def remove(self, doc_id: str) -> bool:
        rows = self._rows.pop(doc_id, None)
        if rows is None:
            return False
        del self._fps[doc_id]
        for num in rows:
            self._tables.kill(num)
            del self._docs[num]
        return True

    def query(self, fingerprint: int, k: int = 3) -> list[Match]:
        return self.query_many([fingerprint], k)[0]

    def near(self, fingerprints: Sequence[int] | U64, k: int = 3) -> tuple[list[int], list[str], list[int]]:
        """Every (query position, document, distance) with a fingerprint of the document within ``k`` of
        the query's, in one call to the tables; a document once per fingerprint of its that is near."""
        self.layout.check_k(k)
        fps = (fingerprints.tolist() if isinstance(fingerprints, np.ndarray)
               else [f & MASK64 for f in fingerprints])  # fmt: skip
        qs, nums, dist = self._tables.query_ints(fps, k)
        docs = self._docs
        return qs, [docs[n] for n in nums], dist

    def query_many(self, fingerprints: Sequence[int] | U64, k: int = 3) -> list[list[Match]]:
        """The documents near each fingerprint, at their smallest distance, nearest first (distance, then
        id)."""
        qs, docs, dist = self.near(fingerprints, k)
        best: list[dict[str, int]] = [{} for _ in range(len(fingerprints))]
        for q, doc, d in zip(qs, docs, dist, strict=True):
            if d < best[q].get(doc, d + 1):
                best[q][doc] = d
        return [sorted((Match(doc, d) for doc, d in found.items()), key=lambda m: (m.distance, m.doc_id))
                for found in best]  # fmt: skip

    def get(self, doc_id: str) -> int | None:
        """The document's first fingerprint."""
        return self._fps.get(doc_id)

    def __len__(self) -> int:
        return len(self._rows)


class KeyPostings:
    """The ids that hold each key, for exact keys such as a sketch's band keys. Nearly every key of a set
    of documents is held by one of them: such a key keeps that id itself, not a set of one (a batch adds
    thousands of keys), and a key no id holds any more is dropped."""

    def __init__(self) -> None:
        self._held: dict[str, str | set[str]] = {}

    def __bool__(self) -> bool:
        return bool(self._held)

    def __len__(self) -> int:
        return len(self._held)

    def keys(self) -> KeysView[str]:
        """Every key some id holds."""
        return self._held.keys()

    def add(self, doc_id: str, keys: Iterable[str]) -> None:
        """``doc_id`` holds each of ``keys`` (again: no change)."""
        held = self._held
        for key in keys:
            got = held.setdefault(key, doc_id)
            if got is doc_id or got == doc_id:  # most keys: new, or this id's already
                continue
            if isinstance(got, str):
                held[key] = {got, doc_id}
            else:
                got.add(doc_id)

    def remove(self, doc_id: str, keys: Iterable[str]) -> None:
        """``doc_id`` no longer holds ``keys`` (those it did not hold are passed over)."""
        held = self._held
        for key in keys:
            got = held.get(key)
            if got is None:
                continue
            if isinstance(got, str):
                if got == doc_id:
                    del held[key]
                continue
            got.discard(doc_id)
            if len(got) < 2:
                if got:
                    held[key] = next(iter(got))
                else:
                    del held[key]

    def holders(self, key: str) -> Collection[str]:
        """The ids that hold ``key`` (none: empty)."""
        got = self._held.get(key)
        if got is None:
            return ()
        return (got,) if isinstance(got, str) else got
