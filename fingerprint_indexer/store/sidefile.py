"""Files beside the LevelDB directory that hold derived state, trusted only when provably current.

LevelDB is the truth; a side file (the Bloom filter, the block tables) saves rebuilding derived state at
open. Layout: a magic line naming the kind of file, the id of the store it belongs to (16 bytes, written
into LevelDB when the store is created), the store generation it reflects (8 bytes), payload length and
xxh64 of the payload, then the payload. :func:`load_side` says why a file cannot be used: missing,
corrupt, of another store, older than the store (normal after a crash: the caller rebuilds from
LevelDB), or newer than the store, which means LevelDB lost writes it had committed.
"""

from __future__ import annotations

import os
import struct
from enum import Enum
from pathlib import Path

import xxhash

_HEADER = struct.Struct(">16sQQQ")  # store id, generation, payload length, xxh64(payload)


class SideState(Enum):
    """What a side file is, relative to the store it lies beside."""

    CURRENT = "current"
    MISSING = "missing"
    NOT_A_FILE = "not a file"
    CORRUPT = "corrupt or of an older format"
    FOREIGN = "of another store"
    STALE = "older than the store"
    AHEAD = "newer than the store"


def save_side(path: Path, magic: bytes, payload: bytes, generation: int, store_id: bytes) -> None:
    """Write atomically (temporary file + rename), so a crash leaves the old file or the new one; a failed
    write leaves no temporary file behind."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("wb") as f:
            f.write(magic + _HEADER.pack(store_id, generation, len(payload), xxhash.xxh64_intdigest(payload)))
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def _read(path: Path, magic: bytes) -> tuple[SideState, bytes, int, bytes]:
    if not path.exists():
        return SideState.MISSING, b"", 0, b""
    if not path.is_file():
        return SideState.NOT_A_FILE, b"", 0, b""
    try:
        data = path.read_bytes()
    except OSError:
        return SideState.CORRUPT, b"", 0, b""
    head = len(magic) + _HEADER.size
    if len(data) < head or not data.startswith(magic):
        return SideState.CORRUPT, b"", 0, b""
    store_id, gen, length, digest = _HEADER.unpack_from(data, len(magic))
    payload = data[head:]
    if length != len(payload) or xxhash.xxh64_intdigest(payload) != digest:
        return SideState.CORRUPT, store_id, gen, b""
    return SideState.CURRENT, store_id, gen, payload


def side_header(path: Path, magic: bytes) -> tuple[SideState, bytes, int]:
    """The file's state as far as it tells by itself (CURRENT when intact), its store id and generation."""
    state, store_id, gen, _ = _read(path, magic)
    return state, store_id, gen


def load_side(path: Path, magic: bytes, generation: int, store_id: bytes) -> tuple[bytes | None, SideState]:
    """The payload saved by store ``store_id`` at exactly ``generation``, or None and why not."""
    state, sid, gen, payload = _read(path, magic)
    if state is not SideState.CURRENT:
        return None, state
    if sid != store_id:
        return None, SideState.FOREIGN
    if gen < generation:
        return None, SideState.STALE
    if gen > generation:
        return None, SideState.AHEAD
    return payload, state
