"""The pending set: the compiled one answers as the reference, through puts, puts again and removals; the
reference's answers on chosen values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.sketch import MAX_BAND_READ
from fingerprint_indexer.index.pending import CompiledPendingSet, PendingSet, pending_set

BASES = [0, 0xFFFF_0000_FFFF_0000, 0x0123_4567_89AB_CDEF]


@st.composite
def fingerprint(draw: st.DrawFn) -> int:
    """Near one of a few bases (so that matches occur), signed or not, as a writer may pass them."""
    fp = draw(st.sampled_from(BASES))
    for bit in draw(st.lists(st.integers(0, 63), max_size=5)):
        fp ^= 1 << bit
    return fp - (1 << 64) if fp >= 1 << 63 and draw(st.booleans()) else fp


fingerprints = st.lists(fingerprint(), min_size=1, max_size=4)
band_keys = st.lists(st.sampled_from(["k1", "k2", "k3", "k4", "长"]), max_size=3, unique=True)
held = st.tuples(st.sampled_from([f"d{n}" for n in range(8)] + ["文"]), fingerprints, band_keys)
query = st.one_of(st.just(([], [])), st.tuples(fingerprints, band_keys))
step = st.one_of(st.tuples(st.just("put"), st.lists(held, max_size=6)),
                 st.tuples(st.just("remove"), st.sampled_from(["d0", "d1", "d2", "文", "absent"])),
                 st.tuples(st.just("ask"), st.lists(query, max_size=6)))  # fmt: skip


@pytest.mark.skipif(not native.AVAILABLE, reason="the compiled core is not built")
@settings(max_examples=300, deadline=None)
@given(k=st.sampled_from([2, 3]), steps=st.lists(step, max_size=8))
def test_the_compiled_pending_set_answers_as_the_reference(k, steps):
    ref, compiled = PendingSet(k), CompiledPendingSet(k)
    for what, arg in steps:
        if what == "put":
            ids, fps, keys = (list(column) for column in zip(*arg, strict=True)) if arg else ([], [], [])
            ref.put_many(ids, fps, keys)
            compiled.put_many(ids, fps, keys)
        elif what == "remove":
            assert ref.remove(arg) == compiled.remove(arg)
        else:
            fps, keys = [q[0] for q in arg], [q[1] for q in arg]
            assert compiled.candidates(fps, keys) == ref.candidates(fps, keys)
        assert len(compiled) == len(ref)


@pytest.mark.parametrize("make", [PendingSet, CompiledPendingSet] if native.AVAILABLE else [PendingSet])
def test_candidates_are_the_nearest_fingerprint_or_a_shared_key(make):
    s = make(3)
    s.put_many(["a", "b", "c"], [[0, 1 << 40], [0xFFFF], [1 << 63]], [["x"], ["y"], ["x"]])
    s.put_many(["c"], [[(1 << 63) | (1 << 50)]], [["q"]])  # put again: its old fingerprint and key are gone
    fps = [[0b111], [], [(1 << 40) | 1], [(1 << 40) | 3, (1 << 63) | (1 << 50) | (1 << 20)]]
    before, within = s.candidates(fps, [["x"], [], ["y", "z"], ["z"]])
    # 0b111 is 3 bits from a's 0; b shares y with position 2 (16 bits apart: k + 1); c's new fingerprint
    # is 1 bit from position 3's second
    assert before == [{"a": 3}, {}, {"a": 1, "b": 4}, {"a": 2, "c": 1}]
    assert within == [{}, {}, {0: 3}, {0: 2, 2: 1}]  # 3 and 2 share z too: the nearer counts
    assert s.remove("a") and not s.remove("a") and len(s) == 2


@pytest.mark.parametrize("make", [PendingSet, CompiledPendingSet] if native.AVAILABLE else [PendingSet])
def test_a_key_held_by_too_many_is_passed_over(make):
    s = make(3)
    far = [(n * 0x0101_0101_0101_0101) << 1 for n in range(MAX_BAND_READ + 2)]  # 8+ bits apart
    s.put_many([f"d{n}" for n in range(MAX_BAND_READ)], [[fp] for fp in far[:MAX_BAND_READ]],
               [["stock"]] * MAX_BAND_READ)
    batch = ([[0x5555_5555_5555_5555], [0xAAAA_AAAA_AAAA_AAAA]], [["stock"], ["stock"]])  # far from all
    before, within = s.candidates(*batch)
    assert len(before[0]) == MAX_BAND_READ and before[1] == {} and within == [{}, {}]
    s.remove("d0")  # now the second position's key is held by as many as may be read
    before, within = s.candidates(*batch)
    assert len(before[0]) == len(before[1]) == MAX_BAND_READ - 1 and within == [{}, {0: 4}]


def test_a_document_without_fingerprints_is_refused():
    for s in [PendingSet(3)] + ([CompiledPendingSet(3)] if native.AVAILABLE else []):
        with pytest.raises(ValueError, match="has no fingerprint"):
            s.put_many(["a"], [[]], [["x"]])


def test_the_compiled_set_is_used_when_built(monkeypatch):
    assert isinstance(pending_set(3), CompiledPendingSet if native.AVAILABLE else PendingSet)
    monkeypatch.setenv("FPI_NATIVE", "0")
    assert isinstance(pending_set(3), PendingSet)
