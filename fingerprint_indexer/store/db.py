"""Opening a LevelDB directory with plyvel, turning its lock error into :class:`StoreLockedError`."""

from __future__ import annotations

from pathlib import Path

import plyvel

from fingerprint_indexer.store.errors import StoreError, StoreLockedError


def open_db(path: str | Path, create: bool = True) -> plyvel.DB:
    """Open (and by default create) a LevelDB directory owned by this process."""
    p = Path(path)
    if create:
        p.mkdir(parents=True, exist_ok=True)
    try:
        return plyvel.DB(str(p), create_if_missing=create)
    except plyvel.IOError as exc:
        text = str(exc)
        if "lock" in text.lower():
            raise StoreLockedError(str(p)) from None
        raise StoreError(f"cannot open store {p}: {text}") from None
    except plyvel.Error as exc:
        raise StoreError(f"cannot open store {p}: {exc}") from None
