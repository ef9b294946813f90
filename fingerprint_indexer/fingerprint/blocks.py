"""Block layout of a 64-bit fingerprint: the pigeonhole split used for candidate retrieval.

The 64 bits are split into ``n`` blocks (block 0 holds the most significant bits), and a *key* is the
value of ``per_key`` of them taken together; a layout has one key per choice of ``per_key`` blocks (its
tables, in :func:`itertools.combinations` order). Two fingerprints within Hamming distance ``k`` differ in
at most ``k`` blocks, so they share every block of some choice of ``n - k`` of them: with
``per_key = n - k`` an exact look-up of every key finds every candidate.

- ``per_key = 1`` is the plain pigeonhole split: ``n`` keys of 64/n bits (4 x 16 bits for k = 3). A
  bucket holds about ``entries / 2**16`` random fingerprints: cheap in memory, fine up to a few
  million fingerprints.
- ``per_key > 1`` is the permuted-table layout of Manku et al. (2007): for k = 3, 6 blocks of 10-11
  bits and 20 keys of three blocks (31-33 bits), so a key matches almost no random fingerprint even at
  100M documents, for five times the keys per fingerprint.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

FP_BITS = 64
#: Keys of many fingerprints each once: in first-seen order, or sorted (see :meth:`BlockLayout.keys_many`).
Distinct = Literal["first", "sorted"] | None
_DISTINCT = {None: 0, "first": 1, "sorted": 2}  # the compiled keys' codes


@dataclass(frozen=True)
class BlockLayout:
    """Widths of the blocks, most significant first (they must add up to 64 bits), and the number of
    blocks that make one key."""

    widths: tuple[int, ...] = (16, 16, 16, 16)
    per_key: int = 1

    def __post_init__(self) -> None:
        if not self.widths or any(w <= 0 for w in self.widths):
            raise ValueError(f"block widths must be positive, got {self.widths}")
        if sum(self.widths) != FP_BITS:
            raise ValueError(f"block widths must add up to {FP_BITS} bits, got {sum(self.widths)}")
        if not 1 <= self.per_key <= len(self.widths):
            raise ValueError(f"per_key must be in 1..{len(self.widths)}, got {self.per_key}")

    @classmethod
    def even(cls, n_blocks: int) -> BlockLayout:
        """A layout of ``n_blocks`` blocks as even as possible (wider blocks first)."""
        if not 1 <= n_blocks <= FP_BITS:
            raise ValueError(f"n_blocks must be in 1..{FP_BITS}, got {n_blocks}")
        base, extra = divmod(FP_BITS, n_blocks)
        return cls(tuple(base + 1 if i < extra else base for i in range(n_blocks)))

    @classmethod
    def for_k(cls, k: int) -> BlockLayout:
        """The narrowest-key layout that still guarantees recall at distance ``k`` (k + 1 blocks)."""
        return cls.even(max(k + 1, 4))

    @classmethod
    def permuted(cls, k: int) -> BlockLayout:
        """The permuted-table layout for distance ``k``: ``2k`` blocks, keys of ``k`` blocks (k >= 2), so
        that keys are about 32 bits wide whatever ``k``; k <= 1 gives the plain split of 4 blocks."""
        if k <= 1:
            return cls()
        return cls(cls.even(2 * k).widths, per_key=k)

    @property
    def n_blocks(self) -> int:
        return len(self.widths)

    @property
    def max_k(self) -> int:
        """Largest distance for which key look-ups guarantee full recall."""
        return self.n_blocks - self.per_key

    @property
    def tables(self) -> tuple[tuple[int, ...], ...]:
        """The blocks of each key, in key order."""
        return tuple(itertools.combinations(range(self.n_blocks), self.per_key))

    @property
    def n_keys(self) -> int:
        return len(self.tables)

    @property
    def key_widths(self) -> tuple[int, ...]:
        """Bits of each key."""
        return tuple(sum(self.widths[b] for b in t) for t in self.tables)

    @property
    def shifts(self) -> tuple[int, ...]:
        """Right shift that brings each block to the low bits."""
        out, used = [], 0
        for w in self.widths:
            used += w
            out.append(FP_BITS - used)
        return tuple(out)

    def split(self, fingerprint: int) -> tuple[int, ...]:
        """Block values of one fingerprint, block 0 first."""
        pairs = zip(self.shifts, self.widths, strict=True)
        return tuple((fingerprint >> s) & ((1 << w) - 1) for s, w in pairs)

    def split_many(self, fingerprints: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
        """Block values of many fingerprints: shape (n, n_blocks)."""
        fps = np.asarray(fingerprints, dtype=np.uint64)
        shifts, masks = self._split_plan
        return (fps[:, None] >> shifts) & masks

    @functools.cached_property
    def _split_plan(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
        """Right shift and mask of each block, as rows to broadcast against a column of fingerprints."""
        shifts = np.array([self.shifts], dtype=np.uint64)
        masks = np.array([[(1 << w) - 1 for w in self.widths]], dtype=np.uint64)
        return shifts, masks

    @functools.cached_property
    def _key_plan(self) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.uint64]]:
        """Per key, its blocks and the left shift of each (the first block of a key most significant)."""
        blocks = np.array(self.tables, dtype=np.intp).reshape(self.n_keys, self.per_key)
        widths = np.array(self.widths, dtype=np.uint64)[blocks]
        shifts = np.cumsum(widths[:, ::-1], axis=1)[:, ::-1] - widths  # bits of the blocks after each
        return blocks, shifts.astype(np.uint64)

    def key_values_many(self, fingerprints: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
        """Key values of many fingerprints: shape (n, n_keys); a key is its blocks' bits side by side,
        the first block of its choice most significant (with ``per_key = 1``, :meth:`split_many`)."""
        blocks = self.split_many(fingerprints)
        if self.per_key == 1:
            return blocks
        which, shifts = self._key_plan
        return np.bitwise_or.reduce(blocks[:, which] << shifts[None, :, :], axis=2)

    @functools.cached_property
    def key_blocks(self) -> list[list[tuple[int, int]]]:
        """Per key, the (right shift, width) of each of its blocks, the first most significant: the
        layout as the compiled keys take it."""
        return [[(self.shifts[b], self.widths[b]) for b in table] for table in self.tables]

    @functools.cached_property
    def key_digits(self) -> tuple[int, ...]:
        """Hex digits of each key's stored form."""
        return tuple((w + 3) // 4 for w in self.key_widths)

    def keys(self, fingerprint: int) -> list[str]:
        """Key values as fixed-width lowercase hex strings (the keyword form stored in indexes)."""
        if self.per_key == 1:  # the blocks themselves: no array for one fingerprint
            values: list[int] = list(self.split(fingerprint))
            return [f"{v:0{d}x}" for v, d in zip(values, self.key_digits, strict=True)]
        return [col[0] for col in self.keys_many(np.array([fingerprint], dtype=np.uint64))]

    def keys_many(self, fingerprints: npt.NDArray[np.uint64] | list[int], distinct: Distinct = None
                  ) -> list[list[str]]:  # fmt: skip
        """:meth:`keys` of many fingerprints (unsigned), column-wise: per key, the key of each fingerprint,
        or with ``distinct`` each key once, in first-seen order (``"first"``) or sorted (``"sorted"``).
        In compiled code when it is built (:meth:`keys_many_reference` is what it equals)."""
        from fingerprint_indexer.fingerprint import native  # the compiled core's one switch; loaded on use

        if native.enabled():
            fps = fingerprints if isinstance(fingerprints, list) else np.asarray(fingerprints,
                                                                                   np.uint64).tolist()
            return _compiled_keys(self)(fps, _DISTINCT[distinct])
        return self.keys_many_reference(np.asarray(fingerprints, dtype=np.uint64), distinct)

    def keys_many_reference(self, fingerprints: npt.NDArray[np.uint64], distinct: Distinct = None
                            ) -> list[list[str]]:  # fmt: skip
        """:meth:`keys_many` in NumPy: one pass and one hex conversion for all the fingerprints, then a
        string slice per key."""
        values = self.key_values_many(fingerprints)
        n, m = values.shape
        text = values.astype(">u8").tobytes().hex()  # 16 digits per value, row by row
        cols = [[text[(i * m + j) * 16 + 16 - d : (i * m + j + 1) * 16] for i in range(n)]
                for j, d in enumerate(self.key_digits)]  # fmt: skip
        if distinct == "first":
            return [list(dict.fromkeys(col)) for col in cols]
        if distinct == "sorted":
            return [sorted(set(col)) for col in cols]
        return cols

    def check_k(self, k: int) -> None:
        """Refuse a distance that this layout cannot serve with full recall."""
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        if k > self.max_k:
            need = ("is beyond this index's layout " if self.per_key > 1
                    else f"needs at least {k + 1} blocks; this index has {self.n_blocks} ")
            raise ValueError(f"k={k} {need}({self}), which serves k <= {self.max_k}; "
                             "rebuild it with a wider layout")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"widths": list(self.widths)}
        if self.per_key != 1:
            out["per_key"] = self.per_key
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BlockLayout:
        return cls(tuple(int(w) for w in data["widths"]), int(data.get("per_key", 1)))

    def __str__(self) -> str:
        plain = "x".join(str(w) for w in self.widths)
        return plain if self.per_key == 1 else f"{plain}, {self.per_key} blocks a key"


@functools.lru_cache(maxsize=16)  # kept out of the layout itself, which is pickled to worker processes
def _compiled_keys(layout: BlockLayout) -> Callable[[list[int], int], list[list[str]]]:
    """:func:`~fingerprint_indexer.fingerprint.native.block_key_maker` of ``layout``, made once."""
    from fingerprint_indexer.fingerprint import native

    return native.block_key_maker(layout.key_blocks, layout.key_digits)
