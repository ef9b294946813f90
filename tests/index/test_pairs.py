"""near_pairs against brute force on small sets with planted neighbours, and the compiled pairs against
the NumPy reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.index.pairs import near_pairs, near_pairs_reference


def _brute(fps: np.ndarray, k: int) -> set[tuple[int, int, int]]:
    d = np.bitwise_count(fps[:, None] ^ fps[None, :])
    i, j = np.nonzero(np.triu(d <= k, 1))
    return {(a, b, int(d[a, b])) for a, b in zip(i.tolist(), j.tolist(), strict=True)}


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 300), k=st.integers(0, 3), dup=st.floats(0, 0.8))
def test_near_pairs_matches_brute_force(seed, n, k, dup):
    fps = _planted(seed, n, dup)
    for pairs in (near_pairs, near_pairs_reference):
        i, j, d = pairs(fps, k)
        got = set(zip(i.tolist(), j.tolist(), d.tolist(), strict=True))
        assert len(got) == len(i), "each pair exactly once"
        assert got == _brute(fps, k)


def _planted(seed: int, n: int, dup: float) -> np.ndarray:
    """``n`` random fingerprints, a share ``dup`` of them replaced by near copies of others."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    planted = int(n * dup)
    if n and planted:
        src = rng.integers(0, n, planted)
        flips = rng.integers(0, 64, (planted, 4)).astype(np.uint64)
        near = fps[src].copy()
        for c in range(rng.integers(0, 5)):
            near ^= np.uint64(1) << flips[:, c]
        fps[rng.choice(n, planted, replace=False)] = near
    return fps


@pytest.mark.skipif(not native.AVAILABLE, reason="the compiled core is not built")
@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 400), k=st.integers(0, 4), dup=st.floats(0, 0.9),
       layout=st.sampled_from([None, BlockLayout(), BlockLayout.even(6), BlockLayout((8, 24, 16, 16))]))
def test_compiled_pairs_equal_the_reference(seed, n, k, dup, layout):
    """The same arrays, in the same order and types, on every layout that serves ``k``."""
    layout = layout or BlockLayout.for_k(k)
    k = min(k, layout.n_blocks - 1)
    fps = _planted(seed, n, dup)
    fps[: n // 10] = fps[0] if n else fps[:0]  # a hot run: many copies of one fingerprint
    for want, got in zip(near_pairs_reference(fps, k, layout), near_pairs(fps, k, layout), strict=True):
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_identical_fingerprints_pair_up_once_with_wider_layout():
    fps = np.array([5, 5, 5, 7], dtype=np.uint64)
    for pairs in (near_pairs, near_pairs_reference):
        i, j, d = pairs(fps, 4, BlockLayout.for_k(4))
        assert list(zip(i.tolist(), j.tolist(), d.tolist(), strict=True)) == [
            (0, 1, 0), (0, 2, 0), (0, 3, 1), (1, 2, 0), (1, 3, 1), (2, 3, 1)
        ]
