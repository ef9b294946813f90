"""Calibration sweeps and recommendations."""

from __future__ import annotations

import pytest

from fingerprint_indexer.calibration import histogram, recommend, sweep

DIST = [0, 1, 2, 5, 9, 20, 25, 4]
LAB = [True, True, True, True, True, False, False, False]


def test_sweep_counts() -> None:
    p = sweep(DIST, LAB, [3])[0]
    assert (p.tp, p.fp, p.fn, p.tn) == (3, 0, 2, 3)
    assert p.precision == 1.0 and p.recall == 0.6
    q = sweep([0.9, 0.1], [True, False], [0.5], higher_is_dup=True)[0]
    assert (q.tp, q.fp) == (1, 0)
    with pytest.raises(ValueError):
        sweep([1], [True, False], [1])


def test_recommend_highest_recall_at_target_precision() -> None:
    points = sweep(DIST, LAB, range(0, 30))
    best = recommend(points, 0.99)
    assert best is not None and best.threshold == 2  # 2 and 3 tie: the smaller radius wins
    assert recommend(sweep([5], [False], [5]), 0.99) is None


def test_histogram_clamps() -> None:
    h = histogram(DIST, LAB, max_distance=10)
    assert h[0] == (0, 1, 0) and h[4] == (4, 0, 1) and h[10] == (10, 0, 2)
