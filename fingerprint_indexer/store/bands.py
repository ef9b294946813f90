"""Which sketch band keys the embedded store may hold: one bit per key, so that a look-up seeks LevelDB
only for keys that some document may hold.

A band key (:func:`fingerprint_indexer.fingerprint.sketch.band_keys`) is stored as 9 bytes, its band
number and the xxh3 of its minima (``s/b/<band><doc id>``: see :mod:`fingerprint_indexer.store.embedded`).
Most of a new document's keys are held by no one, and each of them cost a LevelDB seek. The filter
answers "certainly absent" for those. A bit is set when the batch that writes its key has committed,
and it is never cleared: a key whose documents were all removed costs a seek, as before.

The filter keeps at most one key in sixteen bits, so about one absent key in sixteen is still sought.
When more keys than that have been added, the owner rebuilds it four times larger from LevelDB's keys
(:meth:`BandFilter.wants_growth`). It is saved beside the store (``bands.bin``, a side file:
:mod:`fingerprint_indexer.store.sidefile`) and rebuilt from LevelDB whenever that file is not current.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.store.sidefile import load_side, save_side

MAGIC = b"FPIBANDS1\n"
KEY_BYTES = 9  # band number (1 byte) and xxh3 of the band's minima (8 bytes, big-endian)
MIN_BITS = 1 << 16
BITS_PER_KEY = 16  # bits kept per key added: about one absent key in sixteen still costs a seek
GROWTH = 4
_KEY = np.dtype([("band", "u1"), ("hash", ">u8")])
_MIX = np.uint64(0x9E3779B97F4A7C15)  # spreads the band number over the high bits the position reads


def _bits_for(keys: int) -> int:
    """The smallest power of two of at least :data:`MIN_BITS` bits that holds ``keys`` keys."""
    bits = MIN_BITS
    while bits < keys * BITS_PER_KEY:
        bits *= 2
    return bits


def _joined(keys: bytes | Sequence[bytes]) -> bytes:
    raw = keys if isinstance(keys, bytes) else b"".join(keys)
    if len(raw) % KEY_BYTES:
        raise ValueError(f"band keys are {KEY_BYTES} bytes each; got {len(raw)} bytes")
    return raw


class BandFilter:
    """A bit per band key: clear means no document holds the key (see the module's docstring).

    ``words`` holds the bits (a power of two of them, at least :data:`MIN_BITS`); ``added`` counts the keys
    set since the filter was built, repeats included, which is what :meth:`wants_growth` reads.
    """

    def __init__(self, words: npt.NDArray[np.uint64] | None = None, added: int = 0) -> None:
        self.words = np.zeros(MIN_BITS // 64, dtype=np.uint64) if words is None else words
        bits = len(self.words) * 64
        if bits < MIN_BITS or bits & (bits - 1):
            raise ValueError(f"a band filter holds a power of two of at least {MIN_BITS} bits, not {bits}")
        self.added = added
        self._shift = np.uint64(64 - (bits.bit_length() - 1))

    @classmethod
    def for_keys(cls, keys: int, bits: int = MIN_BITS) -> BandFilter:
        """An empty filter of at least ``bits`` bits (a power of two), large enough for ``keys`` keys."""
        return cls(np.zeros(max(bits, _bits_for(keys)) // 64, dtype=np.uint64))

    @property
    def bits(self) -> int:
        return len(self.words) * 64

    def _positions(self, raw: bytes) -> npt.NDArray[np.uint64]:
        keys = np.frombuffer(raw, dtype=_KEY)
        return ((keys["hash"].astype(np.uint64) ^ keys["band"].astype(np.uint64) * _MIX) >> self._shift)

    def may_hold(self, keys: bytes | Sequence[bytes]) -> npt.NDArray[np.bool_]:
        """Whether each key may be held by some document (False: certainly not); ``keys`` may also be
        given as one buffer of keys one after the other."""
        raw = _joined(keys)
        if not raw:
            return np.zeros(0, dtype=bool)
        pos = self._positions(raw)
        return ((self.words[pos >> np.uint64(6)] >> (pos & np.uint64(63))) & np.uint64(1)).astype(bool)

    def add(self, keys: bytes | Sequence[bytes]) -> None:
        """Set the bits of ``keys`` (after the batch writing them has committed; one buffer or a list)."""
        raw = _joined(keys)
        if not raw:
            return
        pos = self._positions(raw)
        np.bitwise_or.at(self.words, pos >> np.uint64(6), np.uint64(1) << (pos & np.uint64(63)))
        self.added += len(raw) // KEY_BYTES

    def wants_growth(self) -> bool:
        """Whether more keys were added than the filter holds well: the owner then rebuilds it
        :data:`GROWTH` times larger from the keys LevelDB holds (:meth:`for_keys`)."""
        return self.added * BITS_PER_KEY > self.bits


def save_bands(path: Path, bands: BandFilter, generation: int, store_id: bytes) -> None:
    """Write the filter atomically beside the store (see :func:`save_side`)."""
    payload = np.array([bands.added], dtype="<u8").tobytes() + bands.words.astype("<u8").tobytes()
    save_side(path, MAGIC, payload, generation, store_id)


def load_bands(path: Path, generation: int, store_id: bytes) -> BandFilter | None:
    """The filter saved by store ``store_id`` at exactly ``generation``; None when the file is missing,
    damaged or of another state (the owner then rebuilds it from LevelDB)."""
    payload, _state = load_side(path, MAGIC, generation, store_id)
    if payload is None or len(payload) < 8 or (len(payload) - 8) % 8:
        return None
    added = int(np.frombuffer(payload[:8], dtype="<u8")[0])
    try:
        return BandFilter(np.frombuffer(payload[8:], dtype="<u8").astype(np.uint64), added)
    except ValueError:
        return None
