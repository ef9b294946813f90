"""Block layout of a 64-bit fingerprint: the pigeonhole split used for candidate retrieval.

With ``n`` blocks, two fingerprints within Hamming distance ``n - 1`` share at least one whole block,
so exact lookups on block values find every candidate. Block 0 holds the most significant bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

FP_BITS = 64


@dataclass(frozen=True)
class BlockLayout:
    """Widths of the blocks, most significant first; they must add up to 64 bits."""

    widths: tuple[int, ...] = (16, 16, 16, 16)

    def __post_init__(self) -> None:
        if not self.widths or any(w <= 0 for w in self.widths):
            raise ValueError(f"block widths must be positive, got {self.widths}")
        if sum(self.widths) != FP_BITS:
            raise ValueError(f"block widths must add up to {FP_BITS} bits, got {sum(self.widths)}")

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

    @property
    def n_blocks(self) -> int:
        return len(self.widths)

    @property
    def max_k(self) -> int:
        """Largest distance for which block lookups guarantee full recall."""
        return self.n_blocks - 1

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
        shifts = np.array(self.shifts, dtype=np.uint64)
        masks = np.array([(1 << w) - 1 for w in self.widths], dtype=np.uint64)
        return (fps[:, None] >> shifts[None, :]) & masks[None, :]

    def keys(self, fingerprint: int) -> list[str]:
        """Block values as fixed-width lowercase hex strings (the keyword form stored in indexes)."""
        return [f"{v:0{(w + 3) // 4}x}" for v, w in zip(self.split(fingerprint), self.widths, strict=True)]

    def check_k(self, k: int) -> None:
        """Refuse a distance that this layout cannot serve with full recall."""
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        if k > self.max_k:
            raise ValueError(
                f"k={k} needs at least {k + 1} blocks; this index has {self.n_blocks} "
                f"(widths {list(self.widths)}); rebuild it with a wider layout"
            )

    def to_dict(self) -> dict[str, Any]:
        return {"widths": list(self.widths)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BlockLayout:
        return cls(tuple(int(w) for w in data["widths"]))

    def __str__(self) -> str:
        return "x".join(str(w) for w in self.widths)
