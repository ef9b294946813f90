"""Errors raised when opening or using a persistent store: each says in one line what is wrong."""

from __future__ import annotations

from fingerprint_indexer.errors import FingerprintIndexerError


class StoreError(FingerprintIndexerError):
    """Base class of store problems the CLI reports as one clear line."""


class StoreLockedError(StoreError):
    """Another process holds the LevelDB lock of this store."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"store {path} is locked by another process")


class StoreReadOnlyError(StoreError):
    """The store's folder cannot be written (read-only file system or no permission)."""


class StoreMismatchError(StoreError):
    """The store was written with a different block layout or fingerprint algorithm version."""


class StoreDamagedError(StoreError):
    """Files of the store are missing or corrupt, or it lost writes it had recorded."""


class StoreWriteError(StoreError):
    """A write to the store failed (disk full, I/O error); nothing of the failed batch was stored."""


def rebuild_error(location: object, holds: str) -> StoreMismatchError:
    """The one refusal of a store this version cannot read: what it holds, and that it must be rebuilt."""
    return StoreMismatchError(
        f"{location} holds {holds}; rebuild it: deduplicate the input again into a new store directory"
    )
