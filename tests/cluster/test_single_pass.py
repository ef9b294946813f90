"""Single-Pass clustering: nearest centre within k, stable ids, incremental."""

from __future__ import annotations

import numpy as np

from fingerprint_indexer.cluster.single_pass import SinglePassClusterer, assign
from fingerprint_indexer.records.match import Match


def test_joins_nearest_centre_within_k_or_founds():
    c = SinglePassClusterer(k=3)
    a = c.add("a", 0b0000)
    b = c.add("b", 0xFFFF_0000_0000_0000)
    assert a.founded and b.founded and (a.cluster_id, b.cluster_id) == ("a", "b")
    x = c.add("x", 0b0111)  # distance 3 from a
    assert (x.cluster_id, x.distance, x.founded) == ("a", 3, False)
    y = c.add("y", 0b1111)  # distance 4 from a, 1 from x: x is no centre, so y founds
    assert y.founded and y.cluster_id == "y"
    z = c.add("z", 0b1110)  # distance 3 from a, 1 from y: the nearest centre wins
    assert (z.cluster_id, z.distance) == ("y", 1)
    assert c.sizes == {"a": 2, "b": 1, "y": 2}


def test_ties_go_to_the_smaller_cluster_id():
    hits = [Match("m", 2), Match("c", 2), Match("z", 1)]
    assert assign(0, 3, lambda fp, k: hits, "new").cluster_id == "z"
    assert assign(0, 3, lambda fp, k: hits[:2], "new").cluster_id == "c"
    assert assign(0, 3, lambda fp, k: [], "new").founded


def test_same_order_gives_same_clusters_and_members_stay_within_k_of_centre():
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**64, size=50, dtype=np.uint64)
    fps = [int(base[i % 50]) ^ (1 << int(rng.integers(0, 64))) for i in range(400)]
    items = [(f"d{i}", fp) for i, fp in enumerate(fps)]
    first = SinglePassClusterer(k=3).add_many(items)
    assert first == SinglePassClusterer(k=3).add_many(items)
    centres = {a.cluster_id: fp for (_, fp), a in zip(items, first, strict=True) if a.founded}
    for (_, fp), a in zip(items, first, strict=True):
        assert (fp ^ centres[a.cluster_id]).bit_count() <= 3
    assert len(centres) <= 60  # the 50 planted groups, give or take double-flip neighbours


def test_reused_founder_id_gets_a_distinct_cluster():
    c = SinglePassClusterer(k=3)
    c.add("a", 0)
    again = c.add("a", 2**64 - 1)
    assert again.founded and again.cluster_id == "a~2"
