"""The vectorised candidate check equals the per-candidate :func:`closest` on random data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.verify import closest, closest_many

U64 = st.integers(0, 2**64 - 1)


def _near(base: list[int]) -> st.SearchStrategy[int]:
    """Fingerprints a few bits away from one of ``base`` (so small distances and ties are common)."""
    flips = st.lists(st.integers(0, 63), max_size=5)
    return st.builds(lambda i, bits: _flip(base[i % len(base)], bits), st.integers(0, 99), flips)


def _flip(fp: int, bits: list[int]) -> int:
    for b in bits:
        fp ^= 1 << b
    return fp


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_closest_many_equals_closest_per_candidate(data: st.DataObject) -> None:
    mine = data.draw(st.lists(U64, min_size=1, max_size=8))
    value = st.one_of(U64, _near(mine))
    cands = data.draw(st.lists(st.lists(value, min_size=1, max_size=12), max_size=30))
    flat = np.array([f for c in cands for f in c], dtype=np.uint64)
    got = closest_many(mine, flat, [len(c) for c in cands])
    assert got.tolist() == [closest(mine, c)[0] for c in cands]


def test_closest_many_rejects_empty_sides_and_wrong_lengths() -> None:
    with pytest.raises(ValueError):
        closest_many([], np.array([1], dtype=np.uint64), [1])
    with pytest.raises(ValueError):
        closest_many([1], np.array([1], dtype=np.uint64), [0, 1])
    with pytest.raises(ValueError):
        closest_many([1], np.array([1, 2], dtype=np.uint64), [1])
    assert closest_many([1], np.zeros(0, dtype=np.uint64), []).tolist() == []
