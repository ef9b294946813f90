"""The contract every NearDupIndex backend must meet, checked against brute force.

Use with hypothesis::

    @given(scenario=index_scenarios())
    def test_backend(scenario):
        check_scenario(lambda: open_backend(...), scenario, reopen=True)

``open_index`` must return an index on the *same* storage each time it is called (a persistent backend
reopens what was written; with ``reopen=False`` it is called once).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import hamming
from fingerprint_indexer.index.base import NearDupIndex
from fingerprint_indexer.records.match import Match

MASK64 = (1 << 64) - 1


@dataclass
class Scenario:
    """Documents (id, fp) added in order, ids removed, then queries at distance k."""

    adds: list[tuple[str, int]]
    removals: list[str]
    later_adds: list[tuple[str, int]]
    queries: list[int]
    k: int


def _near(centre: int, bits: Sequence[int]) -> int:
    fp = centre
    for b in bits:
        fp ^= 1 << b
    return fp & MASK64


@st.composite
def index_scenarios(draw: st.DrawFn, max_k: int = 3, max_docs: int = 40) -> Scenario:
    """Fingerprints clustered around a few centres (so there are hits at every distance), repeated ids
    (replacement), removals and queries both near the centres and random."""
    centres = draw(st.lists(st.integers(0, MASK64), min_size=1, max_size=4))
    flips = st.lists(st.integers(0, 63), max_size=max_k + 3)

    def fp_strategy() -> st.SearchStrategy[int]:
        near = st.builds(_near, st.sampled_from(centres), flips)
        return st.one_of(near, near, st.integers(0, MASK64))

    ids = st.integers(0, max_docs).map(lambda i: f"doc-{i}")
    adds = draw(st.lists(st.tuples(ids, fp_strategy()), max_size=max_docs))
    present = sorted({i for i, _ in adds})
    removals = draw(st.lists(st.sampled_from(present), max_size=len(present))) if present else []
    removals += draw(st.lists(ids, max_size=2))  # possibly absent ids
    later = draw(st.lists(st.tuples(ids, fp_strategy()), max_size=10))
    queries = draw(st.lists(fp_strategy(), min_size=1, max_size=8))
    k = draw(st.integers(0, max_k))
    return Scenario(adds, removals, later, queries, k)


def brute_force(live: dict[str, int], fp: int, k: int) -> list[Match]:
    hits = [Match(i, hamming(f, fp)) for i, f in live.items()]
    return sorted((m for m in hits if m.distance <= k), key=lambda m: (m.distance, m.doc_id))


def _check(index: NearDupIndex, live: dict[str, int], queries: list[int], k: int, stage: str) -> None:
    assert len(index) == len(live), f"{stage}: len {len(index)} != {len(live)}"
    for doc_id, fp in live.items():
        assert index.get(doc_id) == fp, f"{stage}: get({doc_id})"
    probes = [*queries, *list(live.values())[:5]]
    singles = [index.query(q, k) for q in probes]
    batch = index.query_many(probes, k)
    for q, got, got_batch in zip(probes, singles, batch, strict=True):
        want = brute_force(live, q, k)
        assert got == want, f"{stage}: query({q:016x}, k={k}) returned {got}, brute force {want}"
        assert got_batch == want, f"{stage}: query_many({q:016x}, k={k}) returned {got_batch}, want {want}"


def check_scenario(
    open_index: Callable[[], NearDupIndex],
    scenario: Scenario,
    reopen: bool = False,
    batched: bool = True,
) -> None:
    """Run the scenario on a backend and compare every answer with brute force."""
    live: dict[str, int] = {}
    index = open_index()
    try:
        if batched:
            index.add_many((i, fp, None) for i, fp in scenario.adds)
        else:
            for i, fp in scenario.adds:
                index.add(i, fp)
        for i, fp in scenario.adds:
            live[i] = fp
        _check(index, live, scenario.queries, scenario.k, "after adds")
        for i in scenario.removals:
            assert index.remove(i) == (i in live), f"remove({i}) should report presence"
            live.pop(i, None)
        _check(index, live, scenario.queries, scenario.k, "after removals")
        if reopen:
            index.close()
            index = open_index()
            _check(index, live, scenario.queries, scenario.k, "after reopen")
        for i, fp in scenario.later_adds:
            index.add(i, fp)
            live[i] = fp
        _check(index, live, scenario.queries, scenario.k, "after later adds")
    finally:
        index.close()


def layouts_for(k: int) -> list[BlockLayout]:
    """Layouts that serve distance k: the default and a wider one (more, narrower blocks)."""
    return [BlockLayout.for_k(k), BlockLayout.even(k + 3)]
