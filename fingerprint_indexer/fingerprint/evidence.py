"""What verification reads of one document, whatever store it comes from."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from fingerprint_indexer.fingerprint.sketch import band_keys

T = TypeVar("T")
R = TypeVar("R")


class cached_attribute(Generic[T, R]):
    """:func:`functools.cached_property` for the objects made once per document: the value is set on the
    instance (a frozen dataclass's too) as a plain attribute, which later reads find first. Unlike
    ``cached_property`` it takes no lock and does not read the instance's ``__dict__``, which CPython
    3.11 builds on first read for an object that had kept its attributes without one."""

    def __init__(self, func: Callable[[T], R]) -> None:
        self.func, self.name, self.__doc__ = func, func.__name__, func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, objtype: Any = None) -> cached_attribute[T, R]: ...
    @overload
    def __get__(self, obj: T, objtype: Any = None) -> R: ...
    def __get__(self, obj: T | None, objtype: Any = None) -> R | cached_attribute[T, R]:
        if obj is None:
            return self
        value = self.func(obj)
        object.__setattr__(obj, self.name, value)
        return value


@dataclass(frozen=True)
class Evidence:
    """A document's fingerprints (document first, then lead and chunks), sketch bytes, facts and frames.

    Built from a fresh fingerprint, an embedded store record or an Elasticsearch document alike, so
    :func:`fingerprint_indexer.verification.check` is the one rule for all of them.
    """

    fingerprints: Sequence[int]
    sketch: bytes = b""
    facts: Sequence[str] = ()
    frames: Sequence[int] = ()

    @cached_attribute
    def band_keys(self) -> tuple[str, ...]:
        """The sketch's band keys (:func:`~fingerprint_indexer.fingerprint.sketch.band_keys`), made once:
        a batch's look-ahead, the document's look-up and its write all read them."""
        return band_keys(self.sketch)
