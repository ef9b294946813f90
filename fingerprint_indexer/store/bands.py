"""Which documents hold each sketch band key, in memory: the embedded store's band postings.

A band key (:func:`fingerprint_indexer.fingerprint.sketch.band_keys`) is kept as 9 bytes, its band number
and the xxh3 of its minima. A document is named by the number of its first block-index entry (the store
reads its id under that number: :meth:`~fingerprint_indexer.store.block_index.LevelDBIndex.id_at`), which
is never reused, so a removed document's numbers stay dead however often its id comes back.

The postings are sorted runs of (key, band, document number) arrays, 13 bytes a pair, searched with
``np.searchsorted`` for a whole batch of keys at once. A commit adds one run; a run is merged into the
one before it as soon as it holds a quarter as many pairs (each pair of the newer run placed by a binary
search, the older run's around them), so a look-up reads a few runs and a pair is merged a few times,
whatever the store's size. A removal notes the document's number; its pairs are dropped at the next full
merge.

LevelDB keeps no band keys: the records hold every document's bands, and the postings are rebuilt from
them (and the block index's numbers) whenever the file saved beside the store (``bands.bin``, a side
file: :mod:`fingerprint_indexer.store.sidefile`) is not current.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.store.sidefile import load_side, save_side

MAGIC = b"FPIBANDS2\n"  # 1 was a bit per key over band keys held in LevelDB
KEY_BYTES = 9  # band number (1 byte) and xxh3 of the band's minima (8 bytes, big-endian)
#: A run is merged into the one before it once it holds this fraction of that run's pairs.
MERGE_RATIO = 4
_KEY = np.dtype([("band", "u1"), ("hash", ">u8")])
_MIX = np.uint64(0x9E3779B97F4A7C15)  # spreads the band number over the hash: one sort key a pair
#: (mixed key, band number, document number) arrays of one sorted run.
Run = tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint8], npt.NDArray[np.uint32]]


def _split(raw: bytes) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint8]]:
    """(sort key, band number) of each key of ``raw`` (keys of :data:`KEY_BYTES` one after the other).
    The sort key mixes the band number into the hash; equal sort keys with equal bands are equal keys."""
    if len(raw) % KEY_BYTES:
        raise ValueError(f"band keys are {KEY_BYTES} bytes each; got {len(raw)} bytes")
    keys = np.frombuffer(raw, dtype=_KEY)
    bands = keys["band"].astype(np.uint8)
    return keys["hash"].astype(np.uint64) ^ (bands.astype(np.uint64) * _MIX), bands


def _sorted_run(keys: npt.NDArray[np.uint64], bands: npt.NDArray[np.uint8],
                nums: npt.NDArray[np.uint32]) -> Run:  # fmt: skip
    order = np.argsort(keys, kind="stable")
    return keys[order], bands[order], nums[order]


def _without(run: Run, dead: set[int]) -> Run:
    """``run`` without the pairs of ``dead`` documents (still sorted)."""
    live = ~np.isin(run[2], np.fromiter(dead, dtype=np.uint32, count=len(dead)))
    return run[0][live], run[1][live], run[2][live]


def _merged(old: Run, new: Run) -> Run:
    """One sorted run of two (``new``'s pairs after ``old``'s of an equal key): each pair is placed once,
    with no concatenation and no sort order of the whole, so that a merge of the largest run needs
    little more than the run it makes."""
    total = len(old[0]) + len(new[0])
    at = np.searchsorted(old[0], new[0], side="right") + np.arange(len(new[0]))
    rest = np.ones(total, dtype=bool)
    rest[at] = False
    out = tuple(np.empty(total, dtype=a.dtype) for a in old)
    for merged, a, b in zip(out, old, new, strict=True):
        merged[at] = b
        merged[rest] = a
    return out  # type: ignore[return-value]


def _empty() -> Run:
    return np.zeros(0, np.uint64), np.zeros(0, np.uint8), np.zeros(0, np.uint32)


class BandPostings:
    """The documents (first entry numbers) under each band key (see the module's docstring)."""

    def __init__(self, run: Run | None = None) -> None:
        self._runs: list[Run] = [] if run is None or not len(run[0]) else [_sorted_run(*run)]
        self._dead: set[int] = set()  # removed documents whose pairs are still in some run

    def __len__(self) -> int:
        """Pairs held, those of removed documents not yet dropped included."""
        return sum(len(r[0]) for r in self._runs)

    def add(self, raw: bytes, nums: Sequence[int] | npt.NDArray[np.integer]) -> None:
        """Hold key ``i`` of ``raw`` under document number ``nums[i]`` (a committed batch's pairs)."""
        keys, bands = _split(raw)
        if len(nums) != len(keys):
            raise ValueError(f"{len(keys)} band keys but {len(nums)} document numbers")
        if not len(keys):
            return
        runs = self._runs
        runs.append(_sorted_run(keys, bands, np.asarray(nums, dtype=np.uint32)))
        while len(runs) > 1 and len(runs[-1][0]) * MERGE_RATIO >= len(runs[-2][0]):
            runs[-2:] = [_merged(runs[-2], runs[-1])]

    def remove(self, nums: Iterable[int]) -> None:
        """Forget documents (by first entry number); their pairs go at the next full merge, which comes
        once the removed documents number a thirty-second of the pairs (each holds several)."""
        self._dead.update(nums)
        if len(self._dead) * 32 > len(self):
            self._compact()

    def _compact(self) -> None:
        """One run of the live pairs."""
        runs = [_without(r, self._dead) for r in self._runs] if self._dead else self._runs
        while len(runs) > 1:
            runs[-2:] = [_merged(runs[-2], runs[-1])]
        self._runs = [r for r in runs if len(r[0])]
        self._dead.clear()

    def find(self, raw: bytes, limit: int) -> list[list[int]]:
        """The document numbers under each key of ``raw``, at most ``limit`` of each (a key held by more
        is a stock phrase: its caller only needs to know that), in no particular order. Nearly every key
        of a new document is held by no one: those answers are one shared empty list, not to be changed."""
        qk, qb = _split(raw)
        none: list[int] = []
        out = [none] * len(qk)
        dead = self._dead
        for keys, bands, nums in self._runs:
            lo = np.searchsorted(keys, qk, "left")
            hi = np.searchsorted(keys, qk, "right")
            for q in np.flatnonzero(hi > lo).tolist():
                if out[q] is none:
                    out[q] = []
                got, band, end = out[q], qb[q], int(hi[q])
                for start in range(int(lo[q]), end, 2 * limit):  # a hot key: read it a slice at a time
                    if len(got) >= limit:
                        break
                    stop = min(end, start + 2 * limit)
                    got += [n for n in nums[start:stop][bands[start:stop] == band].tolist() if n not in dead]
                del got[limit:]
        return out

    def run(self) -> Run:
        """Every live pair as one sorted run (what is saved, and what ``store check`` compares)."""
        self._compact()
        return self._runs[0] if self._runs else _empty()

    def pairs(self) -> set[tuple[bytes, int]]:
        """Every live (band key, document number) pair, the key as its 9 bytes (for ``store check``)."""
        keys, bands, nums = self.run()
        raw = np.empty(len(keys), dtype=_KEY)
        raw["band"], raw["hash"] = bands, keys ^ (bands.astype(np.uint64) * _MIX)
        data = raw.tobytes()
        return {(data[i * KEY_BYTES : (i + 1) * KEY_BYTES], n) for i, n in enumerate(nums.tolist())}


def save_bands(path: Path, bands: BandPostings, generation: int, store_id: bytes) -> None:
    """Write the postings atomically beside the store (see :func:`save_side`)."""
    keys, band, nums = bands.run()
    buf = io.BytesIO()
    np.savez(buf, keys=keys.astype("<u8"), bands=band, nums=nums.astype("<u4"))
    save_side(path, MAGIC, buf.getvalue(), generation, store_id)


def load_bands(path: Path, generation: int, store_id: bytes) -> BandPostings | None:
    """The postings saved by store ``store_id`` at exactly ``generation``; None when the file is missing,
    damaged or of another state (the owner then rebuilds them from the records)."""
    payload, _state = load_side(path, MAGIC, generation, store_id)
    if payload is None:
        return None
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as z:
            keys, band = z["keys"].astype(np.uint64), z["bands"].astype(np.uint8)
            nums = z["nums"].astype(np.uint32)
    except (ValueError, KeyError, OSError):
        return None
    if not len(keys) == len(band) == len(nums):
        return None
    return BandPostings((keys, band, nums))
