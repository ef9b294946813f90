"""Weighted SimHash (Charikar) over weighted terms, vectorised with NumPy.

Each term is hashed to 64 bits with xxh3 (stable across processes and machines, unlike ``hash``);
bit ``i`` of the fingerprint is set when the weights of the terms having bit ``i`` set outweigh
those that do not.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import xxhash

_SHIFTS = np.arange(63, -1, -1, dtype=np.uint64)  # column 0 = most significant bit
_EPS = float(np.finfo(np.float64).eps)


def term_hashes(terms: Sequence[str]) -> npt.NDArray[np.uint64]:
    """Stable 64-bit hashes of the terms (xxh3_64 of their UTF-8 bytes)."""
    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(t.encode("utf-8")) for t in terms), dtype=np.uint64, count=len(terms))


def simhash_from_hashes(hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.float64]) -> int:
    """Fold term hashes and weights into one unsigned 64-bit fingerprint."""
    if hashes.size == 0:
        return 0
    bits = ((hashes[:, None] >> _SHIFTS[None, :]) & np.uint64(1)).astype(np.float64)  # (n, 64)
    return fold_signs(2.0 * bits - 1.0, weights)


def fold_signs(signs: npt.NDArray[np.float64], weights: npt.NDArray[np.float64]) -> int:
    """The fingerprint from each term's bits as +1.0 / -1.0 votes (``n x 64``, most significant first)."""
    if not len(signs):
        return 0
    votes = weights @ signs  # fast, but rounded in the order of the CPU's BLAS kernel
    # Any order of the additions lands within n * eps/2 * sum|w| of the exact sum, so a vote farther
    # than twice that from 0 has the same sign in every order; the few nearer ones (ties) are summed
    # again in the fixed order of :func:`vote_sums`.
    bound = 8.0 * len(weights) * _EPS * float(np.abs(weights).sum())
    near = np.abs(votes) <= bound
    if near.any():
        votes[near] = vote_sums(signs[:, near], weights)
    packed = np.packbits(votes > 0)  # big-endian: MSB first
    return int.from_bytes(packed.tobytes(), "big")


def vote_sums(signs: npt.NDArray[np.float64], weights: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each bit's weighted vote, summed in one fixed order: terms four at a time, ``((a + b) + c) + d``,
    the groups added in turn, then the last ``n mod 4`` terms one by one.

    Equal weights make exact ties common (two terms of the same count and IDF on opposite sides of a
    bit), and then the bit is decided by rounding, that is by the order of the additions. A BLAS
    matrix-vector product sums in the order of the kernel it picks for the CPU, so ``weights @ signs``
    gave two machines two fingerprints for one text. This is the order of the generic kernel the
    reference vectors were made with, written with NumPy's element-wise additions, which round the same
    everywhere."""
    prod = np.asarray(weights, dtype=np.float64)[:, None] * signs  # exact: signs are +1.0 / -1.0
    n = len(prod) - len(prod) % 4
    votes = np.zeros(prod.shape[1], dtype=np.float64)
    if n:
        quads = prod[:n].reshape(-1, 4, prod.shape[1])
        grouped = ((quads[:, 0] + quads[:, 1]) + quads[:, 2]) + quads[:, 3]
        votes = np.add.accumulate(grouped, axis=0)[-1]  # sequential, unlike a pairwise reduction
    for row in prod[n:]:
        votes = votes + row
    return votes


def simhash(terms: Sequence[str], weights: Sequence[float]) -> int:
    """SimHash of weighted terms."""
    if len(terms) != len(weights):
        raise ValueError(f"{len(terms)} terms but {len(weights)} weights")
    return simhash_from_hashes(term_hashes(terms), np.asarray(weights, dtype=np.float64))
