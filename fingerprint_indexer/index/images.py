"""In-memory look-up of image fingerprints: low-frequency window keys in a sorted table, then the rule.

Every picture is stored under the keys of its windows (:func:`~fingerprint_indexer.fingerprint.image.
stored_keys`), one *entry* (key, window hash, picture) per distinct key. A look-up takes the keys of every
window of the query, mirror image included, finds the entries under them with one vectorised
``searchsorted`` pair, keeps those whose window hash is within ``k_key`` of the query window that
brought them, and judges each remaining picture by the full rule (nearest windows and colour grid, in one
vectorised pass). A crop lines some window of one picture up with some window of the other, and the
keys of lined-up windows are equal while their full hashes may still differ by several bits: that is
what a block-key look-up on the full hash at a small distance could not find.

Appends go to a small unsorted buffer, sorted into a *recent* table when it grows, merged into the
main table in turn (whose key runs are addressed directly: the keys are narrow); removals tombstone the
picture. The same pixels (equal digests) are found through a dictionary, flat pictures only that way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.fingerprint.image import (
    KEY_WIDTH,
    THRESHOLDS,
    ImageFingerprint,
    ImageThresholds,
    grid_array,
    grid_distance_many,
    key_values,
    nearest_many,
    probe_array,
)
from fingerprint_indexer.index.memory import _ranges_to_positions

#: Appended entries are sorted into the *recent* table once there are this many (every look-up scans them).
BUFFER_MAX = 4096
#: The recent table is merged into the main one once it holds this many entries, or a sixteenth of the
#: main table's if more: a merge is linear in the main table, so its cost is spread over many appends.
RECENT_MIN = 65536

Entries = tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64], npt.NDArray[np.uint32]]


def _empty() -> Entries:
    return np.empty(0, np.uint32), np.empty(0, np.uint64), np.empty(0, np.uint32)


def _merged(*parts: Entries) -> Entries:
    """Entries of all parts sorted by key (a stable sort of sorted runs is a linear merge)."""
    keys = np.concatenate([p[0] for p in parts])
    order = np.argsort(keys, kind="stable")
    hashes, rows = np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts])
    return keys[order], hashes[order], rows[order]


@dataclass(frozen=True)
class ImageMatch:
    """A stored picture the rule accepts for a query: its id, window distance, whether it matched the
    query's mirror image, and whether the pixels are the same."""

    image_id: str
    distance: int
    mirrored: bool = False
    exact: bool = False


class ImageIndex:
    """Pictures by id, found by :meth:`query` when the rule says they are the same photo."""

    def __init__(self, limits: ImageThresholds = THRESHOLDS, capacity: int = 1024) -> None:
        self.limits = limits
        self._width = 0  # window hashes per picture, set by the first picture
        cap = max(capacity, 16)
        self._probes = np.zeros((cap, 0), dtype=np.uint64)
        self._grids = np.zeros((cap, limits.grid_cols * limits.grid_rows), dtype=np.uint8)
        self._flat = np.zeros(cap, dtype=bool)
        self._alive = np.zeros(cap, dtype=bool)
        self._ids: npt.NDArray[np.object_] = np.empty(cap, dtype=object)
        self._n = 0
        self._row_of: dict[str, int] = {}
        self._by_digest: dict[str, set[int]] = {}
        self._digest_of: dict[int, str] = {}
        # entries on three levels: the main table (sorted by key, with the start of every key's run, so a
        # key is two reads, not a binary search over millions of entries), the recent table (sorted) and
        # the buffer of appends (scanned)
        self._main: Entries = _empty()
        self._starts = np.zeros((1 << KEY_WIDTH) + 1, dtype=np.int64)
        self._recent: Entries = _empty()
        self._buf: list[Entries] = []
        self._buffered = 0

    # ----------------------------------------------------------------- writes
    def add(self, image_id: str, fp: ImageFingerprint) -> None:
        """Store one picture (an id already stored is replaced)."""
        self.add_arrays([image_id], probe_array(fp)[None, :], grid_array(fp.grid)[None, :],
                        np.array([fp.flat]), [fp.digest])

    def add_arrays(self, ids: Sequence[str], probes: npt.NDArray[np.uint64], grids: npt.NDArray[np.uint8],
                   flat: npt.NDArray[np.bool_], digests: Sequence[str]) -> None:
        """Bulk insert: picture ``ids[i]`` has window hashes ``probes[i]`` (its own, then its mirror
        image's), colour grid ``grids[i]`` (one digit a block), flatness and pixel digest."""
        probes = np.asarray(probes, dtype=np.uint64)
        m = len(ids)
        if not m:
            return
        if not (len(probes) == len(grids) == len(flat) == len(digests) == m):
            raise ValueError("ids, probes, grids, flat and digests must have one row per picture")
        if not self._width:
            self._width = probes.shape[1]
            self._probes = np.zeros((len(self._alive), self._width), dtype=np.uint64)
        elif probes.shape[1] != self._width:
            raise ValueError(f"{probes.shape[1]} window hashes a picture, the index holds {self._width}")
        for image_id in ids:
            if image_id in self._row_of:
                self.remove(image_id)
        start = self._n
        self._reserve(start + m)
        rows = np.arange(start, start + m, dtype=np.uint32)
        self._probes[start : start + m] = probes
        self._grids[start : start + m] = grids
        self._flat[start : start + m] = flat
        self._alive[start : start + m] = True
        self._ids[start : start + m] = list(ids)
        for row, image_id, digest in zip(rows.tolist(), ids, digests, strict=True):
            self._row_of[image_id] = row
            self._by_digest.setdefault(digest, set()).add(row)
            self._digest_of[row] = digest
        self._n = start + m
        # entries: each picture's own windows (not its mirror image's), one per distinct key
        own = probes[:, : self._width // 2]
        keys, per_row = key_values(own).ravel(), np.repeat(rows, own.shape[1])
        order = np.lexsort((keys, per_row))  # by picture, then key
        k_flat, h_flat, r_flat = keys[order], own.ravel()[order], per_row[order]
        first = np.ones(len(k_flat), dtype=bool)
        first[1:] = (k_flat[1:] != k_flat[:-1]) | (r_flat[1:] != r_flat[:-1])
        live_entries = ~self._flat[r_flat]
        keep = first & live_entries
        self._buf.append((k_flat[keep], h_flat[keep], r_flat[keep]))
        self._buffered += int(keep.sum())
        if self._buffered >= BUFFER_MAX:
            self._recent = self._live(_merged(self._recent, *self._buf))
            self._buf, self._buffered = [], 0
            if len(self._recent[0]) >= max(RECENT_MIN, len(self._main[0]) // 16):
                self.flush()

    def remove(self, image_id: str) -> bool:
        """Forget a picture; False if it was not stored."""
        row = self._row_of.pop(image_id, None)
        if row is None:
            return False
        self._alive[row] = False
        digest = self._digest_of.pop(row)
        self._by_digest[digest].discard(row)
        if not self._by_digest[digest]:
            del self._by_digest[digest]
        return True

    def _reserve(self, n: int) -> None:
        if n <= len(self._alive):
            return
        size = max(n, int(len(self._alive) * 1.5))

        def grow(a: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
            out = np.zeros((size, *a.shape[1:]), dtype=a.dtype)
            out[: self._n] = a[: self._n]
            return out

        self._probes = grow(self._probes)  # type: ignore[assignment]
        self._grids = grow(self._grids)  # type: ignore[assignment]
        self._flat = grow(self._flat)
        self._alive = grow(self._alive)
        ids = np.empty(size, dtype=object)
        ids[: self._n] = self._ids[: self._n]
        self._ids = ids

    def _live(self, entries: Entries) -> Entries:
        alive = self._alive[entries[2]]
        return entries if alive.all() else (entries[0][alive], entries[1][alive], entries[2][alive])

    def flush(self) -> None:
        """Merge every appended entry into the main table (dropping those of removed pictures)."""
        if not self._buf and not len(self._recent[0]):
            return
        self._main = self._live(_merged(self._main, self._recent, *self._buf))
        counts = np.bincount(self._main[0], minlength=1 << KEY_WIDTH)
        self._starts[1:] = np.cumsum(counts)
        self._recent, self._buf, self._buffered = _empty(), [], 0

    # ---------------------------------------------------------------- queries
    def __len__(self) -> int:
        return len(self._row_of)

    def __contains__(self, image_id: object) -> bool:
        return image_id in self._row_of

    def arrays(self, image_id: str) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint8]] | None:
        """(window hashes, grid digits) of a stored picture, copies; None if it is not stored."""
        row = self._row_of.get(image_id)
        return None if row is None else (self._probes[row].copy(), self._grids[row].copy())

    @property
    def entries(self) -> int:
        """Entries (key, window hash, picture) in the table and the buffer."""
        return len(self._main[0]) + len(self._recent[0]) + self._buffered

    def query(self, fp: ImageFingerprint, limits: ImageThresholds | None = None) -> list[ImageMatch]:
        """Every stored picture the rule accepts for ``fp``, nearest first (the same pixels first)."""
        return self.query_arrays(probe_array(fp), grid_array(fp.grid), fp.flat, fp.digest, limits)

    def query_arrays(self, probes: npt.NDArray[np.uint64], grid: npt.NDArray[np.uint8], flat: bool,
                     digest: str, limits: ImageThresholds | None = None) -> list[ImageMatch]:
        """:meth:`query` of a fingerprint given as arrays (window hashes, grid digits)."""
        lim = limits or self.limits
        exact = self._by_digest.get(digest, set())
        out = [ImageMatch(str(self._ids[r]), 0, False, True) for r in exact]
        if flat or not self._width:
            return sorted(out, key=lambda m: m.image_id)
        q = np.asarray(probes, dtype=np.uint64)
        qkeys = key_values(q)
        hits: list[npt.NDArray[np.int64]] = []

        def near(pos: npt.NDArray[np.int64], owner: npt.NDArray[np.int64], entries: Entries) -> None:
            if len(pos):
                ok = np.bitwise_count(entries[1][pos] ^ q[owner]) <= lim.k_key
                hits.append(entries[2][pos[ok]].astype(np.int64))

        near(*_ranges_to_positions(self._starts[qkeys], self._starts[qkeys + 1]), self._main)
        if len(self._recent[0]):
            keys = self._recent[0]
            lo = np.searchsorted(keys, qkeys, side="left").astype(np.int64)
            near(*_ranges_to_positions(lo, np.searchsorted(keys, qkeys, side="right").astype(np.int64)),
                 self._recent)
        if len(self._buf) > 1:  # one chunk: a scan per query, not one per buffered picture
            buf = self._buf
            self._buf = [(np.concatenate([b[0] for b in buf]), np.concatenate([b[1] for b in buf]),
                          np.concatenate([b[2] for b in buf]))]
        for entries in self._buf:
            e, w = np.nonzero(entries[0][:, None] == qkeys[None, :])
            near(e.astype(np.int64), w.astype(np.int64), entries)
        if not hits:
            return sorted(out, key=lambda m: m.image_id)
        cand = np.unique(np.concatenate(hits))
        cand = cand[self._alive[cand] & ~self._flat[cand]]
        if exact:
            cand = cand[~np.isin(cand, np.fromiter(exact, dtype=np.int64))]
        if len(cand):
            d, mirrored = nearest_many(q, self._probes[cand])
            g = grid_distance_many(grid, self._grids[cand], mirrored, lim.grid_cols)
            ok = (d <= lim.k) & (g <= lim.grid_max)
            out += [ImageMatch(str(self._ids[r]), dd, mm) for r, dd, mm in
                    zip(cand[ok].tolist(), d[ok].tolist(), mirrored[ok].tolist(), strict=True)]
        return sorted(out, key=lambda m: (not m.exact, m.distance, m.image_id))

    def nbytes(self) -> int:
        """Bytes held by the NumPy arrays; id strings excluded."""
        arrays = (self._probes, self._grids, self._flat, self._alive, self._starts, *self._main,
                  *self._recent)
        return int(sum(a.nbytes for a in arrays))
