"""Opening a LevelDB directory with plyvel, turning its lock error into :class:`StoreLockedError`."""

from __future__ import annotations

from pathlib import Path

import plyvel

from fingerprint_indexer.store.errors import StoreError, StoreLockedError

#: LevelDB block cache: large enough to keep the hot bucket blocks of tens of millions of keys decoded.
CACHE_BYTES = 256 << 20


def open_db(path: str | Path, create: bool = True, cache_bytes: int = CACHE_BYTES) -> plyvel.DB:
    """Open (and by default create) a LevelDB directory owned by this process."""
    p = Path(path)
    if create:
        p.mkdir(parents=True, exist_ok=True)
    try:
        return plyvel.DB(str(p), create_if_missing=create, lru_cache_size=cache_bytes)
    except plyvel.IOError as exc:
        text = str(exc)
        if "lock" in text.lower():
            raise StoreLockedError(str(p)) from None
        raise StoreError(f"cannot open store {p}: {text}") from None
    except plyvel.Error as exc:
        raise StoreError(f"cannot open store {p}: {exc}") from None
