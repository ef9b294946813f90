"""The Bloom filter file beside the LevelDB directory (a side file: store.sidefile), trusted only when
provably current. Its payload is pybloom-live's own serialisation."""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pybloom_live import BloomFilter, ScalableBloomFilter

from fingerprint_indexer.store.sidefile import SideState, load_side, save_side, side_header

MAGIC = b"FPIBLOOM2\n"
ERROR_RATE = 1e-4
BloomState = SideState  # what a Bloom filter file is, relative to the store it lies beside


def new_bloom(items: Iterable[str] = (), capacity: int = 100_000) -> ScalableBloomFilter:
    bloom = ScalableBloomFilter(initial_capacity=capacity, error_rate=ERROR_RATE,
                                mode=ScalableBloomFilter.LARGE_SET_GROWTH)
    bloom_add_many(bloom, items, compiled_test(bloom))
    return bloom


def compiled_test(bloom: ScalableBloomFilter) -> Any:
    """The compiled membership test for ``bloom``'s filters (``native.bloom_test``), or None when the
    compiled core is not built or switched off, or the filters are not of the library's own kind (a
    caller resolves it once for many items: the filters the library adds later are of that kind)."""
    from fingerprint_indexer.fingerprint.native import bloom_test  # the compiled core's one place

    test = bloom_test()
    ours = all(type(f) is BloomFilter and _endian(f.bitarray) == "little" for f in bloom.filters)
    return test if ours else None


def _endian(bits: Any) -> str:
    endian = bits.endian  # an attribute since bitarray 3, a method before
    return str(endian() if callable(endian) else endian)


def _held(filters: Sequence[BloomFilter], item: str, test: Any) -> bool:
    """Whether any of ``filters`` holds ``item``, newest first, as the library asks them."""
    return any(test(f.bitarray, f.num_slices, f.bits_per_slice, item) for f in reversed(filters))


def bloom_has(bloom: ScalableBloomFilter, item: str, test: Any = None) -> bool:
    """``item in bloom``, the library's answer; its hashing compiled with ``test`` (:func:`compiled_test`)."""
    return item in bloom if test is None else _held(bloom.filters, item, test)


def bloom_add_many(bloom: ScalableBloomFilter, items: Iterable[str], test: Any = None) -> None:
    """``bloom.add`` of each item, with the library's result (the same bits, counts and filters); its
    hashing compiled with ``test`` (:func:`compiled_test`). The library adds whatever it would make a new
    filter for. The newest filter is tested and set in one pass: an item it already holds sets nothing
    new and is not counted, as the library's own test first would have it."""
    if test is None:
        for item in items:
            bloom.add(item)
        return
    it = iter(items)
    for item in it:
        last = bloom.filters[-1] if bloom.filters else None
        if last is None or last.count >= last.capacity:
            bloom.add(item)  # the library tests it, and makes the next, larger filter if it is new
            continue
        # until the newest filter is full, the filters stay the same: read them once for the items
        older, bits, slices, per = bloom.filters[:-1], last.bitarray, last.num_slices, last.bits_per_slice
        while True:
            if not (older and _held(older, item, test)) and not test(bits, slices, per, item, True):
                last.count += 1
                if last.count >= last.capacity:
                    break
            following = next(it, None)
            if following is None:
                return
            item = following


def save_bloom(path: Path, bloom: ScalableBloomFilter, generation: int, store_id: bytes) -> None:
    """Write atomically (see :func:`save_side`)."""
    buf = io.BytesIO()
    bloom.tofile(buf)
    save_side(path, MAGIC, buf.getvalue(), generation, store_id)


def bloom_header(path: Path) -> tuple[SideState, bytes, int]:
    """The file's state as far as its header tells (CURRENT when intact), its store id and generation."""
    return side_header(path, MAGIC)


def load_bloom(path: Path, generation: int, store_id: bytes) -> tuple[ScalableBloomFilter | None, SideState]:
    """The filter saved by store ``store_id`` at exactly ``generation``, or None and why not."""
    payload, state = load_side(path, MAGIC, generation, store_id)
    if payload is None:
        return None, state
    try:
        return ScalableBloomFilter.fromfile(io.BytesIO(payload)), state
    except (ValueError, EOFError, struct.error, OSError):
        return None, SideState.CORRUPT
