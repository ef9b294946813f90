"""The Bloom filter file beside the LevelDB directory, trusted only when provably current.

File layout: magic, the store generation it reflects (8 bytes), payload length and xxh64 of the payload,
then pybloom-live's own serialisation. :func:`load_bloom` returns None for a missing, truncated,
corrupt or stale file; the caller then rebuilds from LevelDB.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Iterable
from pathlib import Path

import xxhash
from pybloom_live import ScalableBloomFilter

MAGIC = b"FPIBLOOM1\n"
_HEADER = struct.Struct(">QQQ")  # generation, payload length, xxh64(payload)
ERROR_RATE = 1e-4


def new_bloom(items: Iterable[str] = (), capacity: int = 100_000) -> ScalableBloomFilter:
    bloom = ScalableBloomFilter(initial_capacity=capacity, error_rate=ERROR_RATE,
                                mode=ScalableBloomFilter.LARGE_SET_GROWTH)
    for item in items:
        bloom.add(item)
    return bloom


def save_bloom(path: Path, bloom: ScalableBloomFilter, generation: int) -> None:
    """Write atomically (temporary file + rename), so a crash leaves the old file or the new one."""
    buf = io.BytesIO()
    bloom.tofile(buf)
    payload = buf.getvalue()
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        f.write(MAGIC + _HEADER.pack(generation, len(payload), xxhash.xxh64_intdigest(payload)) + payload)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_bloom(path: Path, generation: int) -> ScalableBloomFilter | None:
    """The filter saved for exactly ``generation``, or None when missing, corrupt or stale."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(MAGIC) + _HEADER.size
    if len(data) < head or not data.startswith(MAGIC):
        return None
    gen, length, digest = _HEADER.unpack_from(data, len(MAGIC))
    payload = data[head:]
    if gen != generation or length != len(payload) or xxhash.xxh64_intdigest(payload) != digest:
        return None
    try:
        return ScalableBloomFilter.fromfile(io.BytesIO(payload))
    except (ValueError, EOFError, struct.error):
        return None
