"""Errors raised when opening or using a persistent store."""

from __future__ import annotations


class StoreError(Exception):
    """Base class of store problems the CLI reports as one clear line."""


class StoreLockedError(StoreError):
    """Another process holds the LevelDB lock of this store."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"store {path} is locked by another process")


class StoreMismatchError(StoreError):
    """The store was written with a different block layout or fingerprint algorithm version."""
