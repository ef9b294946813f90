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

MAGIC = b"FPIBLOOM3\n"  # 3: document and cluster ids too (a file of 2 is rebuilt at open)
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


def bloom_absent(bloom: ScalableBloomFilter, items: Sequence[str], test: Any = None) -> list[bool]:
    """For each of ``items``, whether ``bloom`` certainly does not hold it (the library's answer); with
    ``test`` (:func:`compiled_test`), one compiled call per filter for all of them."""
    if test is None:
        return [item not in bloom for item in items]
    test_many, _fill = _many()
    free = set(_not_held(bloom.filters, items, test_many))
    return [i in free for i in range(len(items))]


def _not_held(filters: Sequence[BloomFilter], items: Sequence[str], test_many: Any) -> list[int]:
    """The places of ``items`` that none of ``filters`` holds, in order (one compiled call per filter,
    each for the items no filter before it held)."""
    places = list(range(len(items)))
    for f in filters:
        held = test_many(f.bitarray, f.num_slices, f.bits_per_slice, [items[i] for i in places])
        places = [i for i, h in zip(places, held, strict=True) if not h]
    return places


def bloom_add_many(bloom: ScalableBloomFilter, items: Iterable[str], test: Any = None) -> None:
    """``bloom.add`` of each item, with the library's result (the same bits, counts and filters); its
    hashing compiled with ``test`` (:func:`compiled_test`). The library adds whatever it would make a new
    filter for. Until the newest filter is full, the items are tested against the older filters and set
    in the newest with one compiled call each: an item a filter already holds sets nothing new and is not
    counted, as the library's own test first would have it."""
    if test is None:
        for item in items:
            bloom.add(item)
        return
    test_many, fill = _many()
    items = items if isinstance(items, list) else list(items)
    at = 0
    while at < len(items):
        last = bloom.filters[-1] if bloom.filters else None
        if last is None or last.count >= last.capacity:
            bloom.add(items[at])  # the library tests it, and makes the next, larger filter if it is new
            at += 1
            continue
        rest = items[at:]
        places = _not_held(bloom.filters[:-1], rest, test_many)  # what an older filter holds is not added
        wanted = [rest[i] for i in places]
        room = last.capacity - last.count
        taken, new = fill(last.bitarray, last.num_slices, last.bits_per_slice, wanted, room)
        last.count += new
        if taken == len(wanted):
            return
        at += places[taken]  # the newest filter is full: the library takes the next item


def _many() -> tuple[Any, Any]:
    from fingerprint_indexer.fingerprint.native import bloom_many

    got = bloom_many()
    assert got is not None, "a compiled test without the compiled core"
    return got


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
