"""The Bloom filter file beside the LevelDB directory, trusted only when provably current.

File layout: magic, the id of the store it belongs to (16 bytes, written into LevelDB when the store is
created), the store generation it reflects (8 bytes), payload length and xxh64 of the payload, then
pybloom-live's own serialisation. :func:`load_bloom` says why a file cannot be used: missing, corrupt,
of another store, older than the store (normal after a crash: the caller rebuilds it from LevelDB), or
newer than the store, which means LevelDB lost writes it had committed (the caller must not go on).
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Iterable
from enum import Enum
from pathlib import Path

import xxhash
from pybloom_live import ScalableBloomFilter

MAGIC = b"FPIBLOOM2\n"
_HEADER = struct.Struct(">16sQQQ")  # store id, generation, payload length, xxh64(payload)
ERROR_RATE = 1e-4


class BloomState(Enum):
    """What a Bloom filter file is, relative to the store it lies beside."""

    CURRENT = "current"
    MISSING = "missing"
    NOT_A_FILE = "not a file"
    CORRUPT = "corrupt or of an older format"
    FOREIGN = "of another store"
    STALE = "older than the store"
    AHEAD = "newer than the store"


def new_bloom(items: Iterable[str] = (), capacity: int = 100_000) -> ScalableBloomFilter:
    bloom = ScalableBloomFilter(initial_capacity=capacity, error_rate=ERROR_RATE,
                                mode=ScalableBloomFilter.LARGE_SET_GROWTH)
    for item in items:
        bloom.add(item)
    return bloom


def save_bloom(path: Path, bloom: ScalableBloomFilter, generation: int, store_id: bytes) -> None:
    """Write atomically (temporary file + rename), so a crash leaves the old file or the new one; a failed
    write leaves no temporary file behind."""
    buf = io.BytesIO()
    bloom.tofile(buf)
    payload = buf.getvalue()
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("wb") as f:
            f.write(MAGIC + _HEADER.pack(store_id, generation, len(payload), xxhash.xxh64_intdigest(payload))
                    + payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def bloom_header(path: Path) -> tuple[BloomState, bytes, int]:
    """The file's state as far as its header tells (CURRENT when intact), its store id and generation."""
    if not path.exists():
        return BloomState.MISSING, b"", 0
    if not path.is_file():
        return BloomState.NOT_A_FILE, b"", 0
    try:
        data = path.read_bytes()
    except OSError:
        return BloomState.CORRUPT, b"", 0
    head = len(MAGIC) + _HEADER.size
    if len(data) < head or not data.startswith(MAGIC):
        return BloomState.CORRUPT, b"", 0
    store_id, gen, length, digest = _HEADER.unpack_from(data, len(MAGIC))
    payload = data[head:]
    if length != len(payload) or xxhash.xxh64_intdigest(payload) != digest:
        return BloomState.CORRUPT, store_id, gen
    return BloomState.CURRENT, store_id, gen


def load_bloom(path: Path, generation: int, store_id: bytes) -> tuple[ScalableBloomFilter | None, BloomState]:
    """The filter saved by store ``store_id`` at exactly ``generation``, or None and why not."""
    state, sid, gen = bloom_header(path)
    if state is not BloomState.CURRENT:
        return None, state
    if sid != store_id:
        return None, BloomState.FOREIGN
    if gen < generation:
        return None, BloomState.STALE
    if gen > generation:
        return None, BloomState.AHEAD
    try:
        payload = path.read_bytes()[len(MAGIC) + _HEADER.size:]
        return ScalableBloomFilter.fromfile(io.BytesIO(payload)), state
    except (ValueError, EOFError, struct.error, OSError):
        return None, BloomState.CORRUPT
