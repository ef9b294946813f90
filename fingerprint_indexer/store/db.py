"""Opening a LevelDB directory with plyvel: never creating over an existing one, errors in one line.

A directory that holds anything is opened without ``create_if_missing``: LevelDB would otherwise start
a fresh database beside (and then delete) table files whose ``CURRENT`` file was lost. Only a missing
or empty directory becomes a new database. A folder that cannot be written is reported as read-only,
before any work is done; :func:`open_snapshot` reads such a store through a private copy of its small
files (the table files are linked, never written).
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path

import plyvel

from fingerprint_indexer.store.errors import (
    StoreDamagedError,
    StoreError,
    StoreLockedError,
    StoreReadOnlyError,
    StoreWriteError,
)

#: LevelDB block cache: keeps the blocks of recently read records and index entries decoded.
CACHE_BYTES = 256 << 20
#: Bits per key of the filters LevelDB writes into its table files: a get of an absent key (every new
#: document and index entry is looked up first) then skips the tables of each level instead of reading a
#: block of each, so its cost stops growing with the number of levels.
BLOOM_BITS = 10
#: Memtable size and table file size: LevelDB's defaults (4 MB, 2 MB) make a store of millions of
#: documents write many small level-0 files and rewrite each byte more often as levels fill; larger ones
#: cut the compaction work per document, which runs beside the decisions on the same cores.
WRITE_BUFFER = 64 << 20
TABLE_FILE = 16 << 20
#: Table blocks of 16 KB with a full key every 32 keys (LevelDB: 4 KB, 16): a store's keys share long
#: prefixes and its records compress better in larger blocks (docs/benchmarks.md, scale: store size).
BLOCK_SIZE = 16 << 10
RESTART_INTERVAL = 32


def _options(cache_bytes: int) -> dict[str, int]:
    """The LevelDB options every store is opened with, for writing or through a read-only snapshot."""
    return {"lru_cache_size": cache_bytes, "bloom_filter_bits": BLOOM_BITS, "write_buffer_size": WRITE_BUFFER,
            "max_file_size": TABLE_FILE, "block_size": BLOCK_SIZE, "block_restart_interval": RESTART_INTERVAL}
TABLE_SUFFIXES = (".ldb", ".sst")


def writable(path: Path) -> bool:
    """Whether this process may create files in ``path`` (False on a read-only file system)."""
    return os.access(path, os.W_OK | os.X_OK)


def message(exc: BaseException) -> str:
    """An error's text; plyvel's come as bytes."""
    raw = exc.args[0] if exc.args else ""
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(exc)


def describe(path: str | Path, exc: BaseException, store: str | Path | None = None) -> StoreError:
    """The one-line store error for a plyvel or OS error met at ``path`` (``store`` names the command's
    store folder in repair hints)."""
    text = message(exc)
    low = text.lower()
    where = store if store is not None else path
    if isinstance(exc, plyvel.CorruptionError) or "corruption" in low:
        return StoreDamagedError(f"store {where} is damaged ({text}); "
                                 f"see 'fingerprint-indexer store check {where}'")
    if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "no space left" in low:
        return StoreWriteError(f"store {where}: disk full ({text.strip()})")
    if (isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)) or (
            "read-only file system" in low or "permission denied" in low):
        return StoreReadOnlyError(f"store {where} cannot be written ({text.strip()})")
    if "lock" in low:
        return StoreLockedError(str(path))
    return StoreError(f"cannot use store {where}: {text.strip()}")


def open_db(path: str | Path, create: bool = True, cache_bytes: int = CACHE_BYTES,
            store: str | Path | None = None) -> plyvel.DB:
    """Open a LevelDB directory owned by this process; a missing or empty one is created if ``create``."""
    p = Path(path)
    where = store if store is not None else p
    fresh = not p.exists() or (p.is_dir() and not any(p.iterdir()))
    if fresh and not create:
        raise StoreError(f"no store at {where}")
    if not fresh and not (p / "CURRENT").is_file():
        raise StoreDamagedError(
            f"store {where} is damaged: {p / 'CURRENT'} is missing; 'fingerprint-indexer store repair "
            f"{where}' rebuilds it from the table files")
    try:
        if fresh:
            p.mkdir(parents=True, exist_ok=True)
        if not writable(p):
            raise StoreReadOnlyError(f"store {where} is read-only ({p} cannot be written)")
        return plyvel.DB(str(p), create_if_missing=fresh, **_options(cache_bytes))
    except (plyvel.Error, OSError) as exc:
        raise describe(p, exc, store) from None


def open_snapshot(path: str | Path, cache_bytes: int = CACHE_BYTES,
                  store: str | Path | None = None) -> tuple[plyvel.DB, Path]:
    """Open a LevelDB directory that cannot be written, for reading: through a temporary folder with links
    to its table files and copies of the rest. Returns the database and the folder to remove after."""
    p = Path(path)
    if not (p / "CURRENT").is_file():
        raise StoreDamagedError(f"store {store or p} is damaged: {p / 'CURRENT'} is missing")
    tmp = Path(tempfile.mkdtemp(prefix="fpi-readonly-"))
    try:
        for f in p.iterdir():
            if f.name == "LOCK" or not f.is_file():
                continue
            if f.name.endswith(TABLE_SUFFIXES):
                (tmp / f.name).symlink_to(f.resolve())
            else:
                shutil.copy2(f, tmp / f.name)
        return plyvel.DB(str(tmp), create_if_missing=False, **_options(cache_bytes)), tmp
    except (plyvel.Error, OSError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise describe(p, exc, store) from None
