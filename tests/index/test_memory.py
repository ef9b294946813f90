"""MemoryIndex against brute force, through the buffer, the merged tables and compaction."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.index_contract import brute_force, check_scenario, index_scenarios

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.index.memory import MemoryIndex, NumberedTables


@settings(max_examples=150, deadline=None)
@given(scenario=index_scenarios(), merge=st.sampled_from([1, 3, 4096]), wide=st.booleans())
def test_memory_matches_brute_force(scenario, merge, wide):
    layout = BlockLayout.even(6) if wide else BlockLayout()
    index = MemoryIndex(layout, merge_threshold=merge, compact_min=2)
    check_scenario(lambda: index, scenario)


@settings(max_examples=50, deadline=None)
@given(scenario=index_scenarios(max_k=5))
def test_wider_layout_serves_larger_k(scenario):
    index = MemoryIndex(BlockLayout.for_k(5), merge_threshold=2)
    check_scenario(lambda: index, scenario, batched=False)


def test_large_batch_query_many_agrees_with_single_queries():
    rng = np.random.default_rng(7)
    base = rng.integers(0, 2**64, size=2000, dtype=np.uint64)
    noise = np.uint64(1) << rng.integers(0, 64, size=2000).astype(np.uint64)
    fps = np.concatenate([base, base ^ noise])
    index = MemoryIndex()
    index.add_arrays([f"d{i}" for i in range(len(fps))], fps)
    queries = fps[::7]
    live = {f"d{i}": int(f) for i, f in enumerate(fps)}
    batch = index.query_many(queries, 2)
    for q, got in zip(queries.tolist(), batch, strict=True):
        assert got == index.query(q, 2) == brute_force(live, q, 2)
        assert len(got) >= 2  # itself and its planted neighbour


def test_k_beyond_layout_is_refused():
    with pytest.raises(ValueError, match="needs at least 5 blocks"):
        MemoryIndex().query(0, 4)


def test_footprint_is_within_40_bytes_per_fingerprint():
    n = 100_000
    fps = np.random.default_rng(1).integers(0, 2**64, size=n, dtype=np.uint64)
    index = MemoryIndex(capacity=n)
    index.add_arrays([str(i) for i in range(n)], fps)
    index.flush()
    assert index.nbytes() / n <= 40


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 2**64 - 1), st.integers(0, 30)), max_size=80),
       merge=st.sampled_from([1, 3, 8, 4096]), buffer=st.sampled_from([1, 2, 512]),
       probe=st.integers(0, 2**64 - 1), k=st.integers(0, 3))
def test_numbered_tables_match_brute_force(ops, merge, buffer, probe, k):
    """Puts (some near the probe), tombstones, sorts into the recent tables, merges and rebuilds: every
    live entry within k, once."""
    tables = NumberedTables(BlockLayout(), merge_min=merge, buffer_max=buffer)
    live: dict[int, int] = {}
    for is_put, value, pick in ops:
        if is_put or not live:
            fp = probe ^ (value & 0b111) if pick % 2 else value  # half of them within 3 bits of the probe
            num = tables.n + pick % 3  # numbers grow, with holes
            tables.put(np.array([num]), np.array([fp], dtype=np.uint64))
            live[num] = fp
        else:
            num = sorted(live)[pick % len(live)]
            tables.kill(num)
            del live[num]
        nums, dist = tables.query(probe, k)
        want = {n: bin(f ^ probe).count("1") for n, f in live.items() if bin(f ^ probe).count("1") <= k}
        assert dict(zip(nums.tolist(), dist.tolist(), strict=True)) == want and len(nums) == len(want)
        probes = [probe, probe ^ 0b1000, value, probe]  # a batch: each probe answered on its own
        qs, nums, dist = tables.query_many(np.array(probes, dtype=np.uint64), k)
        got = sorted(zip(qs.tolist(), nums.tolist(), dist.tolist(), strict=True))
        assert got == sorted((q, n, bin(f ^ p).count("1")) for q, p in enumerate(probes)
                             for n, f in live.items() if bin(f ^ p).count("1") <= k)
    fps, alive = tables.arrays()
    again = NumberedTables(BlockLayout(), fps, alive)  # rebuilt from its arrays
    assert sorted(again.query(probe, k)[0].tolist()) == sorted(tables.query(probe, k)[0].tolist())
