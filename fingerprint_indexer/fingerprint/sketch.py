"""A small MinHash sketch of a document's character shingles: the second-stage check on candidates.

A 64-bit SimHash places reposts near each other but cannot by itself tell "the same text with a few
edits" from "a different story on the same topic" once the candidate radius is wide enough to catch
edited reposts. The Jaccard similarity of character 5-gram sets can: it is what MinHash peers use. So
each document also keeps a compact MinHash (``SKETCH_SIZE`` = 64 32-bit minima, 256 bytes), computed on the
same boilerplate-stripped text, and a candidate within the Hamming radius is confirmed when the sketches
agree enough.

Everything is vectorised with NumPy: shingles are rolling polynomial hashes of the code points, mixed
with the SplitMix64 finaliser; permutation ``i`` is the mix of ``hash XOR seed_i``. Stable across
processes and machines (no use of Python's ``hash``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from types import ModuleType

import numpy as np
import numpy.typing as npt
import xxhash

SHINGLE = 5
SKETCH_SIZE = 64
_WS = re.compile(r"\s+")
_P = np.uint64(0x100000001B3)  # FNV-64 prime as the polynomial base
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = 0x9E3779B97F4A7C15
_SEEDS = np.array([(_GOLDEN * (i + 1)) & ((1 << 64) - 1) for i in range(256)], dtype=np.uint64)
_EMPTY = np.uint32(0xFFFFFFFF)


def _mix(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64 finaliser (wrapping uint64 arithmetic)."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def _mix_in_place(x: npt.NDArray[np.uint64], tmp: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """:func:`_mix` computed in ``x`` (``tmp``: scratch of the same shape): the sketch mixes every shingle
    against every seed, and fresh temporaries for each step would cost more than the arithmetic."""
    for shift, mult in ((30, _M1), (27, _M2)):
        np.right_shift(x, np.uint64(shift), out=tmp)
        np.bitwise_xor(x, tmp, out=x)
        np.multiply(x, mult, out=x)
    np.right_shift(x, np.uint64(31), out=tmp)
    return np.bitwise_xor(x, tmp, out=x)


_WINDOW = 1 << 20  # characters hashed at a time
_ROWS = 1 << 10  # shingles mixed against all seeds at a time (a _ROWS x size matrix that stays in cache)


def _window_hashes(codes: npt.NDArray[np.uint64], n: int) -> npt.NDArray[np.uint64]:
    """Hashes of every ``n``-gram of one window of code points (repeats included)."""
    h = np.zeros(len(codes) - n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(n):  # n (= 5) vector steps, not a per-shingle loop
            h = h * _P + codes[j : len(codes) - n + 1 + j]
        return _mix(h)


def _iter_hashes(text: str, n: int) -> Iterator[npt.NDArray[np.uint64]]:
    """Shingle hashes of ``text`` (whitespace removed) in windows, so a huge text needs bounded memory."""
    compact = _WS.sub("", text)
    if not compact:
        return
    n = min(n, len(compact))
    for start in range(0, len(compact) - n + 1, _WINDOW):
        piece = compact[start : start + _WINDOW + n - 1]  # windows overlap by n - 1: every shingle once
        codes = np.frombuffer(piece.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        yield _window_hashes(codes, n)


def shingle_hashes(text: str, n: int = SHINGLE) -> npt.NDArray[np.uint64]:
    """Distinct 64-bit hashes of the character ``n``-grams of ``text`` with whitespace removed."""
    parts = list(_iter_hashes(text, n))
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.uint64)


def sketch(text: str, size: int = SKETCH_SIZE, n: int = SHINGLE) -> npt.NDArray[np.uint32]:
    """MinHash of the shingle set: ``size`` 32-bit minima (all ``0xFFFFFFFF`` for empty text).

    Repeated shingles need no de-duplication (they cannot change a minimum), and the hashes are mixed
    against the seeds a block of rows at a time, so memory stays bounded for any text length.
    """
    if not 1 <= size <= len(_SEEDS):
        raise ValueError(f"size must be in 1..{len(_SEEDS)}, got {size}")
    mins = np.full(size, np.uint64(_EMPTY) << np.uint64(32), dtype=np.uint64)
    seeds = _SEEDS[None, :size]
    for hashes in _iter_hashes(text, n):
        for row in range(0, len(hashes), _ROWS):
            block = hashes[row : row + _ROWS, None]
            x = np.bitwise_xor(block, seeds)
            np.minimum(mins, _mix_in_place(x, np.empty_like(x)).min(axis=0), out=mins)
    mins >>= np.uint64(32)  # the top half of the smallest mix is the smallest top half
    return mins.astype(np.uint32)


def similarity(a: npt.NDArray[np.uint32], b: npt.NDArray[np.uint32]) -> float:
    """Estimated Jaccard similarity of the two shingle sets (share of equal minima)."""
    if a.shape != b.shape:
        raise ValueError(f"sketch sizes differ: {a.shape} vs {b.shape}")
    if a.size == 0:
        return 0.0
    return float(np.count_nonzero(a == b)) / a.size


def similarities(q: npt.NDArray[np.uint32], rows: npt.NDArray[np.uint32]) -> npt.NDArray[np.float64]:
    """:func:`similarity` of ``q`` with each row of the ``n x size`` matrix ``rows``, in one pass."""
    rows = np.asarray(rows, dtype=np.uint32)
    if rows.ndim != 2 or rows.shape[1] != q.size:
        raise ValueError(f"sketch sizes differ: {q.shape} vs rows of {rows.shape[1:]}")
    if q.size == 0:
        return np.zeros(len(rows), dtype=np.float64)
    return np.count_nonzero(rows == q[None, :], axis=1) / q.size


def to_bytes(s: npt.NDArray[np.uint32]) -> bytes:
    """Storage form (little-endian uint32s)."""
    return s.astype("<u4").tobytes()


def from_bytes(data: bytes) -> npt.NDArray[np.uint32]:
    """Inverse of :func:`to_bytes`."""
    if len(data) % 4:
        raise ValueError(f"sketch bytes must be a multiple of 4, got {len(data)}")
    return np.frombuffer(data, dtype="<u4").astype(np.uint32)


def from_bytes_many(blobs: Sequence[bytes], size: int = SKETCH_SIZE) -> npt.NDArray[np.uint32]:
    """:func:`from_bytes` of several sketches of ``size`` minima each, as one ``n x size`` matrix."""
    if any(len(b) != 4 * size for b in blobs):
        raise ValueError(f"every sketch must hold {size} minima ({4 * size} bytes)")
    return np.frombuffer(b"".join(blobs), dtype="<u4").astype(np.uint32).reshape(len(blobs), size)


# ------------------------------------------------------------------------------------ band keys (LSH)
#: Band keys: the first BANDS x BAND_ROWS minima, BAND_ROWS at a time. Two texts of 5-gram Jaccard J share
#: a band with probability 1 - (1 - J ** BAND_ROWS) ** BANDS: 0.41 at J = 0.5, 0.89 at 0.7, 0.99 at 0.8.
BANDS, BAND_ROWS = 8, 4


#: A band key held by more documents than this is a stock phrase, not a copy: every store passes it over,
#: so a look-up's cost does not grow with it.
MAX_BAND_READ = 64


def band_keys(data: bytes) -> tuple[str, ...]:
    """Exact-match lookup keys of a sketch (MinHash LSH, one per band: its number and the xxh3 of its
    minima), so that edited short texts, whose SimHash moves by more than the block index's ``k``, are
    still found. None for a sketch too small to band, or of a text without shingles. The tuple is
    shared by every caller that asks for the same sketch."""
    return _band_keys(data if type(data) is bytes else bytes(data))


@functools.lru_cache(maxsize=4096)  # a document's keys are asked for by its look-up, its write and its batch
def _band_keys(data: bytes) -> tuple[str, ...]:
    native = _native()
    if native.enabled():
        return native.band_keys(data, BANDS, BAND_ROWS)
    return band_keys_reference(data)


@functools.cache
def _native() -> ModuleType:
    """The compiled core's one place (which imports this module), imported on first use."""
    from fingerprint_indexer.fingerprint import native

    return native


def band_keys_reference(data: bytes) -> tuple[str, ...]:
    """:func:`band_keys` in Python: the reference the compiled keys must equal."""
    if len(data) < 4 * BANDS * BAND_ROWS:
        return ()
    if np.all(from_bytes(data[: 4 * BANDS * BAND_ROWS]) == _EMPTY):
        return ()
    width = 4 * BAND_ROWS
    return tuple(f"{i:x}{xxhash.xxh3_64_hexdigest(data[i * width : (i + 1) * width])}" for i in range(BANDS))


def shares_band_many(q: npt.NDArray[np.uint32], rows: npt.NDArray[np.uint32]) -> npt.NDArray[np.bool_]:
    """Whether each row of ``rows`` has a band of minima equal to ``q``'s (what sharing a band key means,
    without the keys); False for sketches too small to band and for the empty text's."""
    rows = np.asarray(rows, dtype=np.uint32)
    n = BANDS * BAND_ROWS
    if q.size < n or rows.ndim != 2 or rows.shape[1] < n or np.all(q[:n] == _EMPTY):
        return np.zeros(len(rows), dtype=np.bool_)
    same = (rows[:, :n] == q[None, :n]).reshape(len(rows), BANDS, BAND_ROWS)
    return same.all(axis=2).any(axis=1)
