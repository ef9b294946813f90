"""Hamming distance between 64-bit fingerprints, scalar and vectorised."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # NumPy is imported by the vectorised function only: two hex values need none
    import numpy as np
    import numpy.typing as npt

MASK64 = (1 << 64) - 1


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two unsigned 64-bit fingerprints."""
    return ((a ^ b) & MASK64).bit_count()


def hamming_many(query: int, fingerprints: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """Distances from one fingerprint to each of an array of fingerprints (XOR + popcount)."""
    import numpy as np

    return np.bitwise_count(np.asarray(fingerprints, dtype=np.uint64) ^ np.uint64(query & MASK64))


def to_signed(fp: int) -> int:
    """Two's complement of an unsigned 64-bit value: the form Elasticsearch's ``long`` holds."""
    fp &= MASK64
    return fp - (1 << 64) if fp >= 1 << 63 else fp


def to_unsigned(value: int) -> int:
    """Inverse of :func:`to_signed`."""
    return value & MASK64


def to_hex(fp: int) -> str:
    """16 lowercase hex digits."""
    return f"{fp & MASK64:016x}"


def from_hex(text: str) -> int:
    """Parse a 16-digit hex fingerprint; raises ValueError on anything else."""
    t = text.strip().lower()
    if t.startswith("0x"):
        t = t[2:]
    if len(t) != 16 or any(c not in "0123456789abcdef" for c in t):
        raise ValueError(f"not a 16-digit hex fingerprint: {text!r}")
    return int(t, 16)
