"""Threshold calibration on a user's labelled pairs: what a distance means, and which setting to use.

Pure functions over scored pairs: a pair is (score, label) where the score is a Hamming distance (lower
means more alike) or a similarity (higher means more alike). Used by ``fingerprint-indexer calibrate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    """Confusion counts and rates when pairs at or under (or over) ``threshold`` count as duplicates."""

    threshold: float
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def sweep(
    scores: Sequence[float], labels: Sequence[bool], thresholds: Sequence[float], higher_is_dup: bool = False
) -> list[Point]:
    """One :class:`Point` per threshold."""
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels")
    out = []
    for t in thresholds:
        tp = fp = fn = tn = 0
        for s, y in zip(scores, labels, strict=True):
            dup = s >= t if higher_is_dup else s <= t
            if dup and y:
                tp += 1
            elif dup:
                fp += 1
            elif y:
                fn += 1
            else:
                tn += 1
        out.append(Point(t, tp, fp, fn, tn))
    return out


def recommend(points: Sequence[Point], target_precision: float) -> Point | None:
    """The point of highest recall (then F1, then the smaller threshold) reaching the target precision."""
    ok = [p for p in points if p.precision >= target_precision and p.tp > 0]
    if not ok:
        return None
    return max(ok, key=lambda p: (p.recall, p.f1, -p.threshold))


def histogram(
    distances: Sequence[int], labels: Sequence[bool], max_distance: int = 64
) -> list[tuple[int, int, int]]:
    """(distance, duplicates at exactly that distance, non-duplicates at exactly that distance)."""
    pos = [0] * (max_distance + 1)
    neg = [0] * (max_distance + 1)
    for d, y in zip(distances, labels, strict=True):
        d = min(int(d), max_distance)
        if y:
            pos[d] += 1
        else:
            neg[d] += 1
    return [(d, pos[d], neg[d]) for d in range(max_distance + 1)]
