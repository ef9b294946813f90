"""Second-stage verification of a near-duplicate candidate, and the explanation of a match.

The block index returns candidates whose document or chunk fingerprints lie within Hamming distance k.
A candidate is accepted when the MinHash sketches of the two (boilerplate-stripped) texts agree on at
least ``min_similarity`` of their minima: on the labelled sets (docs/quality.md) this removes every
false candidate of the wider, chunk-based retrieval while keeping edited reposts, whose 5-gram Jaccard
stays well above the different-story pairs of the same topic or site template.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.fingerprint.hamming import hamming
from fingerprint_indexer.fingerprint.sketch import similarity

MIN_SIMILARITY = 0.3


@dataclass(frozen=True)
class Verdict:
    """Why two documents are (or are not) near-duplicates."""

    distance: int  # smallest Hamming distance over the document and chunk fingerprints
    matched: tuple[int, int]  # indexes (in each side's fingerprint list) of the closest pair; 0 = document
    similarity: float  # estimated 5-gram Jaccard from the sketches
    accepted: bool
    shared_terms: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "distance": self.distance,
            "matched": "document" if self.matched == (0, 0) else f"chunk {self.matched[0]}~{self.matched[1]}",
            "similarity": round(self.similarity, 3),
            "accepted": self.accepted,
            "shared_terms": list(self.shared_terms),
        }


def closest(fps_a: Sequence[int], fps_b: Sequence[int]) -> tuple[int, tuple[int, int]]:
    """Smallest Hamming distance between any fingerprint of ``a`` and any of ``b``, and where it is."""
    if not fps_a or not fps_b:
        raise ValueError("each side needs at least one fingerprint")
    a = np.asarray(fps_a, dtype=np.uint64)
    b = np.asarray(fps_b, dtype=np.uint64)
    dist = np.bitwise_count(a[:, None] ^ b[None, :])
    i, j = np.unravel_index(int(np.argmin(dist)), dist.shape)
    return int(dist[i, j]), (int(i), int(j))


def closest_many(
    fps_a: Sequence[int] | npt.NDArray[np.uint64], theirs: npt.NDArray[np.uint64], lengths: npt.ArrayLike
) -> npt.NDArray[np.int64]:
    """:func:`closest` distance of ``a`` to each of several candidates at once.

    ``theirs`` holds the candidates' fingerprints back to back, candidate ``c`` owning the next
    ``lengths[c]`` (at least one each); one XOR + popcount over the whole matrix, then a minimum per owner.
    """
    a = np.asarray(fps_a, dtype=np.uint64)
    counts = np.asarray(lengths, dtype=np.int64)
    if not a.size or (counts.size and int(counts.min()) < 1):
        raise ValueError("each side needs at least one fingerprint")
    b = np.asarray(theirs, dtype=np.uint64)
    if int(counts.sum()) != b.size:
        raise ValueError(f"lengths add up to {int(counts.sum())}, not {b.size} fingerprints")
    if not counts.size:
        return np.zeros(0, dtype=np.int64)
    per_value = np.bitwise_count(b[:, None] ^ a[None, :]).min(axis=1)
    starts = np.cumsum(counts) - counts
    return np.minimum.reduceat(per_value, starts).astype(np.int64)


def verify(
    fps_a: Sequence[int],
    fps_b: Sequence[int],
    sketch_a: npt.NDArray[np.uint32],
    sketch_b: npt.NDArray[np.uint32],
    k: int,
    min_similarity: float = MIN_SIMILARITY,
    terms_a: Sequence[str] = (),
    terms_b: Sequence[str] = (),
) -> Verdict:
    """Accept when some fingerprint pair is within ``k`` and the sketches agree on ``min_similarity``."""
    d, where = closest(fps_a, fps_b)
    sim = similarity(sketch_a, sketch_b)
    shared = tuple(t for t in terms_a if t in set(terms_b))[:10]
    return Verdict(d, where, sim, d <= k and sim >= min_similarity, shared)


def document_distance(fp_a: int, fp_b: int) -> int:
    """Hamming distance of the two document fingerprints alone (what a plain k-search reports)."""
    return hamming(fp_a, fp_b)
