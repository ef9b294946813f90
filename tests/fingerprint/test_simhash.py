import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint.simhash import simhash, simhash_from_hashes, term_hashes


def simhash_bitwise(hashes: list[int], weights: list[float]) -> int:
    """Textbook per-bit reference, for testing the vectorised version only; the votes are added in the
    order :func:`vote_sums` fixes (four terms at a time, ((a + b) + c) + d, then the rest one by one),
    in plain Python floats."""
    v = [0.0] * 64
    n = len(weights) - len(weights) % 4
    for i in range(64):
        votes = [w if (h >> i) & 1 else -w for h, w in zip(hashes, weights, strict=True)]
        for q in range(0, n, 4):
            v[i] += ((votes[q] + votes[q + 1]) + votes[q + 2]) + votes[q + 3]
        for x in votes[n:]:
            v[i] += x
    return sum(1 << i for i in range(64) if v[i] > 0)


@given(st.lists(st.tuples(st.text(min_size=1, max_size=8), st.floats(0.01, 100.0)), min_size=1, max_size=40))
def test_vectorised_matches_per_bit_reference(pairs: list[tuple[str, float]]) -> None:
    terms = [t for t, _ in pairs]
    weights = [w for _, w in pairs]
    hashes = term_hashes(terms)
    assert simhash(terms, weights) == simhash_bitwise([int(h) for h in hashes], weights)


FEW_WEIGHTS = st.sampled_from([0.1, 0.2, 0.3, 0.7, 1e-3, 1 / 3])


@given(st.lists(st.tuples(st.text(min_size=1, max_size=8), FEW_WEIGHTS), min_size=1, max_size=60))
def test_ties_fold_alike_whatever_the_blas(pairs: list[tuple[str, float]]) -> None:
    """Few distinct weights make exact ties, where the order of the additions decides a bit: the fold
    adds in one fixed order of its own, never a BLAS kernel's (which differs from CPU to CPU)."""
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
