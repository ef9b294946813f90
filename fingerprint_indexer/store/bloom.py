"""The Bloom filter file beside the LevelDB directory (a side file: store.sidefile), trusted only when
provably current. Its payload is pybloom-live's own serialisation."""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable
from pathlib import Path

from pybloom_live import ScalableBloomFilter

from fingerprint_indexer.store.sidefile import SideState, load_side, save_side, side_header

MAGIC = b"FPIBLOOM2\n"
ERROR_RATE = 1e-4
BloomState = SideState  # what a Bloom filter file is, relative to the store it lies beside


def new_bloom(items: Iterable[str] = (), capacity: int = 100_000) -> ScalableBloomFilter:
    bloom = ScalableBloomFilter(initial_capacity=capacity, error_rate=ERROR_RATE,
                                mode=ScalableBloomFilter.LARGE_SET_GROWTH)
    for item in items:
        bloom.add(item)
    return bloom


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
