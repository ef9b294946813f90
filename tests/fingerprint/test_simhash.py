import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint.simhash import simhash, simhash_from_hashes, term_hashes


def simhash_bitwise(hashes: list[int], weights: list[float]) -> int:
    """Textbook per-bit reference, for testing the vectorised version only."""
    v = [0.0] * 64
    for h, w in zip(hashes, weights, strict=True):
        for i in range(64):
            v[i] += w if (h >> i) & 1 else -w
    return sum(1 << i for i in range(64) if v[i] > 0)


@given(st.lists(st.tuples(st.text(min_size=1, max_size=8), st.floats(0.01, 100.0)), min_size=1, max_size=40))
def test_vectorised_matches_per_bit_reference(pairs: list[tuple[str, float]]) -> None:
    terms = [t for t, _ in pairs]
    weights = [w for _, w in pairs]
    hashes = term_hashes(terms)
    assert simhash(terms, weights) == simhash_bitwise([int(h) for h in hashes], weights)


def test_single_term_fingerprint_is_its_hash() -> None:
    h = int(term_hashes(["金庸"])[0])
    assert simhash(["金庸"], [1.0]) == h


def test_term_hashes_are_stable_values() -> None:
    # xxh3_64 of UTF-8: fixed across processes and machines
    assert term_hashes(["hello"]).tolist() == [0x9555E8555C62DCFD]


def test_empty() -> None:
    assert simhash_from_hashes(np.array([], dtype=np.uint64), np.array([], dtype=np.float64)) == 0
