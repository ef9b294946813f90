"""MemoryIndex against brute force, through the buffer, the merged tables and compaction."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.index_contract import brute_force, check_scenario, index_scenarios

from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.index import memory
from fingerprint_indexer.index.memory import (
    CompiledNumberedTables,
    DocumentIndex,
    KeyPostings,
    MemoryIndex,
    NumberedTables,
)
from fingerprint_indexer.records.match import Match


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


#: Fingerprints gathered around a few centres, so that buckets fill past the budgets.
_CENTRES = (0, 2**64 - 1, 0x0123456789ABCDEF, 0xF0F0F0F00F0F0F0F)
_near = st.builds(lambda c, flips: _CENTRES[c] ^ sum(1 << b for b in set(flips)),
                  st.integers(0, len(_CENTRES) - 1), st.lists(st.integers(0, 63), max_size=4))
_ops = st.lists(st.one_of(
    st.tuples(st.just("put"), st.lists(st.tuples(st.integers(0, 2), _near), min_size=1, max_size=6)),
    st.tuples(st.just("kill"), st.integers(0, 400), st.integers(1, 20) | st.sampled_from([64, 100, 200])),
    st.tuples(st.just("query"), st.lists(_near, max_size=70), st.sampled_from([1, 2, 3, 5, None]),
              st.integers(0, 5)),
    st.tuples(st.just("sizes"), _near),
), max_size=60)
_LAYOUTS = [BlockLayout(), BlockLayout.even(5), BlockLayout.even(6), BlockLayout((8, 24, 16, 16))]


def _same_answers(ref: NumberedTables, comp: CompiledNumberedTables, fps: list[int], k: int,
                  budget: int | None) -> None:  # fmt: skip
    batch = np.array(fps, dtype=np.uint64)
    for want, got in zip(ref.query_many(batch, k, budget), comp.query_many(batch, k, budget), strict=True):
        assert got.dtype == want.dtype and got.tolist() == want.tolist()
    as_ints = ref.query_ints(fps, k, budget)  # the lists of one document's look-up
    assert comp.query_ints(fps, k, budget) == as_ints
    assert as_ints == tuple(a.tolist() for a in ref.query_many(batch, k, budget))
    signed = [fp - 2**64 if fp >= 2**63 else fp for fp in fps]  # the same low 64 bits, as signed ints
    assert comp.query_ints(signed, k, budget) == ref.query_ints(signed, k, budget) == as_ints
    assert comp.any_within(signed, k, budget) is ref.any_within(fps, k, budget) is bool(as_ints[0])


@pytest.mark.skipif(not native.AVAILABLE, reason="the compiled core is not built")
@settings(max_examples=200, deadline=None)
@given(layout=st.sampled_from(_LAYOUTS), n_start=st.integers(0, 400), seed=st.integers(0, 2**32 - 1),
       ops=_ops, merge=st.sampled_from([1, 2, 5, 4096]), buffer=st.sampled_from([1, 3, 512]))
def test_compiled_numbered_tables_equal_the_reference(layout, n_start, seed, ops, merge, buffer):
    """Puts with holes, tombstones (runs of them, so that the tables are rebuilt), merges, budgeted
    queries (batches large enough for the reference to sort its buffer): the compiled tables answer
    as the reference in every respect."""
    rng = np.random.default_rng(seed)  # tables to start from: entries near the centres, a tenth dead
    flips = np.bitwise_or.reduce(np.uint64(1) << rng.integers(0, 64, (n_start, 3), dtype=np.uint64), axis=1)
    fps = np.array(_CENTRES, dtype=np.uint64)[rng.integers(0, len(_CENTRES), n_start)] ^ flips
    alive = rng.random(n_start) >= 0.1
    ref = NumberedTables(layout, fps, alive, merge_min=merge, buffer_max=buffer)
    comp = CompiledNumberedTables(layout, fps, alive, merge_min=merge)
    ref.keep_largest_put()
    comp.keep_largest_put()
    for op in ops:
        if op[0] == "put":
            nums = np.cumsum([gap + 1 for gap, _ in op[1]]) + ref.n - 1
            values = np.array([f for _, f in op[1]], dtype=np.uint64)
            if len(nums) % 2:  # a document's few entries as ints
                ref.put_ints(nums.tolist(), values.tolist())
                comp.put_ints(nums.tolist(), values.tolist())
            elif len(nums) % 4 == 2:  # a document's consecutive entries, as one run (signed ints too)
                run = [int(v) - 2**64 if v >= 2**63 and n % 2 else int(v) for n, v in enumerate(values)]
                ref.put_run(ref.n, run)
                comp.put_run(comp.n, run)
            else:
                ref.put(nums, values)
                comp.put(nums, values)
        elif op[0] == "kill":
            first = max(ref.n - op[1], 0)  # counted back from the newest (some numbers past it)
            for num in range(first, first + op[2]):
                ref.kill(num)
                comp.kill(num)
        elif op[0] == "query":
            _same_answers(ref, comp, op[1], op[3] % layout.n_blocks, op[2])  # k below the blocks
        else:
            assert comp.bucket_sizes(op[1]) == ref.bucket_sizes(op[1])
            assert comp.largest_bucket([op[1], *_CENTRES[:2]]) == ref.largest_bucket([op[1], *_CENTRES[:2]])
            assert comp.query(op[1], 3, 2)[0].tolist() == ref.query(op[1], 3, 2)[0].tolist()
        assert comp.n == ref.n
        assert comp.largest_put == ref.largest_put  # the largest bucket a put made, kept as it went
    for want, got in zip(ref.arrays(), comp.arrays(), strict=True):
        assert got.dtype == want.dtype and got.tolist() == want.tolist()
    assert comp.all_bucket_sizes().tolist() == ref.all_bucket_sizes().tolist()
    _same_answers(ref, comp, [*_CENTRES, 1, 2**63], layout.n_blocks - 1, 2)  # after the merge


@pytest.mark.skipif(not native.AVAILABLE, reason="the compiled core is not built")
def test_compiled_numbered_tables_refuse_shrinking_numbers():
    """As the reference: numbers below n are refused, and a hole stays dead."""
    comp = CompiledNumberedTables(BlockLayout())
    comp.put(np.array([3]), np.array([7], dtype=np.uint64))
    with pytest.raises(ValueError, match="entry numbers must grow: 2 < 4"):
        comp.put(np.array([2]), np.array([7], dtype=np.uint64))
    assert comp.n == 4 and comp.arrays()[1].tolist() == [False, False, False, True]


def test_numbered_tables_factory_follows_the_switch(monkeypatch):
    """The compiled tables when built and not switched off, else the reference."""
    monkeypatch.setenv("FPI_NATIVE", "0")
    assert type(memory.numbered_tables(BlockLayout())) is NumberedTables
    monkeypatch.setenv("FPI_NATIVE", "1")
    want = NumberedTables if not native.AVAILABLE else CompiledNumberedTables
    assert type(memory.numbered_tables(BlockLayout())) is want


@settings(max_examples=100, deadline=None)
@given(scenario=index_scenarios(), wide=st.booleans(), compiled=st.booleans())
def test_document_index_matches_brute_force(scenario, wide, compiled):
    """The index of documents over numbered tables, each document one fingerprint, on either backend: the
    NearDupIndex contract."""
    if compiled and not native.AVAILABLE:
        compiled = False
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FPI_NATIVE", "1" if compiled else "0")
        index = DocumentIndex(BlockLayout.even(6) if wide else BlockLayout())
    check_scenario(lambda: index, scenario)


@settings(max_examples=100, deadline=None)
@given(ops=st.lists(st.tuples(st.integers(0, 6), st.lists(st.integers(0, 2**64 - 1), max_size=4)),
                    max_size=40),
       near=st.lists(st.tuples(st.integers(0, 39), st.integers(0, 63)), max_size=40),
       probes=st.lists(st.integers(0, 2**64 - 1), max_size=4), k=st.integers(0, 3),
       compiled=st.booleans())  # fmt: skip
def test_document_index_answers_documents_at_their_nearest_fingerprint(ops, near, probes, k, compiled):
    """Documents of several fingerprints put, put again and removed (an empty list removes): each look-up
    answers the live documents with any fingerprint within k, at the smallest distance, as brute force
    over what each id holds last; ``near`` gives every (query, document, distance) within k."""
    if compiled and not native.AVAILABLE:
        compiled = False
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FPI_NATIVE", "1" if compiled else "0")
        index = DocumentIndex(BlockLayout())
    held: dict[str, list[int]] = {}
    for doc, fps in ops:
        if fps:
            index.put_many([(f"d{doc}", fps)])
            held[f"d{doc}"] = fps
        else:
            assert index.remove(f"d{doc}") == (f"d{doc}" in held)
            held.pop(f"d{doc}", None)
    everything = [f for fps in held.values() for f in fps]
    queries = probes + [everything[i % len(everything)] ^ (1 << bit) for i, bit in near if everything]
    want = [sorted(((min(bin(f ^ q).count("1") for f in fps), d) for d, fps in held.items()
                    if min(bin(f ^ q).count("1") for f in fps) <= k)) for q in queries]  # fmt: skip
    assert [[(m.distance, m.doc_id) for m in ms] for ms in index.query_many(queries, k)] == want
    qs, docs, dist = index.near(queries, k)
    assert sorted(zip(qs, docs, dist, strict=True)) == sorted(
        (q, d, bin(f ^ queries[q]).count("1")) for q in range(len(queries)) for d, fps in held.items()
        for f in fps if bin(f ^ queries[q]).count("1") <= k)  # fmt: skip
    assert len(index) == len(held) and all(index.get(d) == fps[0] for d, fps in held.items())


def test_document_index_keeps_the_last_version_of_a_document():
    """A document put twice, in one call or two, holds only its last fingerprints; a removed one holds none;
    one without a fingerprint is refused."""
    far = 0xFFFF << 40  # 16 bits from 0
    index = DocumentIndex(BlockLayout())
    index.put_many([("a", [0, 1]), ("b", [0b111]), ("a", [far])])
    assert len(index) == 2 and index.get("a") == far
    assert index.query(0, 3) == [Match("b", 3)]
    index.put_many([("b", [far | 1, 0b11])])
    assert index.query_many([0, far], 3) == [[Match("b", 2)], [Match("a", 0), Match("b", 1)]]
    assert index.remove("a") and not index.remove("a") and index.get("a") is None
    assert index.query(far, 3) == [Match("b", 1)] and len(index) == 1
    with pytest.raises(ValueError, match="no fingerprint"):
        index.put_many([("c", [])])


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.sampled_from("abcd"), st.lists(st.sampled_from("wxyz"),
                                                                                  max_size=4)),
                    max_size=30))  # fmt: skip
def test_key_postings_hold_what_a_dict_of_sets_holds(ops):
    """Postings that keep a key's one holder without a set give every key the holders a plain dict of
    sets gives, through adds (again too) and removes (of keys held and not), and drop emptied keys."""
    postings, model = KeyPostings(), {}
    for add, doc_id, keys in ops:
        for key in keys:
            if add:
                model.setdefault(key, set()).add(doc_id)
            else:
                model.get(key, set()).discard(doc_id)
        (postings.add if add else postings.remove)(doc_id, keys)
        model = {key: ids for key, ids in model.items() if ids}
        assert set(postings.keys()) == model.keys() and len(postings) == len(model)
        assert all(sorted(postings.holders(key)) == sorted(ids) for key, ids in model.items())
        assert postings.holders("absent") == ()
