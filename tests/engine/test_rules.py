"""The engine's pure helpers on chosen values."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fingerprint_indexer.engine.rules import batch_canonical, duplicate_kind

members = st.lists(st.tuples(st.one_of(st.none(), st.floats(0, 1e12)), st.text(min_size=1, max_size=3)),
                   min_size=1, unique_by=lambda m: m[1])  # fmt: skip


@given(members)
def test_batch_canonical_is_the_first_published_then_the_smallest_id(group):
    canon = batch_canonical(group, lambda m: m[0], lambda m: m[1])
    dated = [m for m in group if m[0] is not None]
    if dated:
        assert canon[0] == min(m[0] for m in dated)
        assert canon[1] == min(m[1] for m in dated if m[0] == canon[0])
    else:
        assert canon[1] == min(m[1] for m in group)
    assert batch_canonical(list(reversed(group)), lambda m: m[0], lambda m: m[1]) == canon


def test_duplicate_kind_names_exact_copies_by_digest():
    assert duplicate_kind(True) == "exact_duplicate"
    assert duplicate_kind(False) == "near_duplicate"
