"""The vectorised helpers of the verified look-up equal their per-candidate forms on random data."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.es.codec import (
    FACTS_FIELD,
    FP_FIELD,
    FPS_FIELD,
    SKETCH_FIELD,
    block_keys,
    hit_fingerprints,
    hit_sketch,
)
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import to_signed
from fingerprint_indexer.fingerprint.sketch import to_bytes
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.records.match import Match
from fingerprint_indexer.verification import Evidence, check, closest, closest_many

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


LAYOUTS = [BlockLayout((16, 16, 16, 16)), BlockLayout((13, 13, 13, 13, 12)), BlockLayout((20, 22, 22)),
           BlockLayout((8,) * 8), BlockLayout.permuted(3), BlockLayout((20, 22, 22), per_key=2)]


@settings(max_examples=100, deadline=None)
@given(st.lists(U64, max_size=40), st.sampled_from(LAYOUTS))
def test_block_keys_equal_layout_keys_per_fingerprint(fps: list[int], layout: BlockLayout) -> None:
    got = block_keys(layout, fps)
    assert len(got) == layout.n_keys
    for b, col in enumerate(got):
        assert col == [layout.keys(f)[b] for f in fps]


def _scalar_verify(mine: Evidence, hits: list[dict], k: int, exclude: str | None) -> list:
    """The rule applied one hit at a time (:func:`check`), with the fields read by hand."""
    out = []
    for h in hits:
        fields = h.get("fields") or {}
        theirs = hit_fingerprints(fields)
        if h["_id"] == exclude or not theirs:
            continue
        v = check(mine, Evidence(theirs, hit_sketch(fields), fields.get(FACTS_FIELD) or []), k)
        if v.accepted:
            out.append(Match(h["_id"], v.distance))
    return sorted(out, key=lambda m: (m.distance, m.doc_id))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_verify_hits_equals_the_per_candidate_rule(data: st.DataObject) -> None:
    mine = data.draw(st.lists(U64, min_size=1, max_size=6))
    base = np.array(data.draw(st.lists(st.integers(0, 7), min_size=16, max_size=16)), dtype=np.uint32)
    mutate = st.lists(st.integers(0, 7), min_size=16, max_size=16).map(lambda v: np.array(v, dtype=np.uint32))
    own_sketch = data.draw(st.sampled_from([b"", to_bytes(base)]))
    facts = st.lists(st.sampled_from(["=1", "=2", "#3月", "#4日", "#第2次", "#第3次", "@北京"]), max_size=4,
                     unique=True).map(sorted)  # fmt: skip
    own_facts = data.draw(facts)
    hits = []
    for n in range(data.draw(st.integers(0, 25))):
        fps = data.draw(st.lists(st.one_of(U64, _near(mine)), min_size=0, max_size=6))
        fields: dict = {}
        key = data.draw(st.sampled_from([FPS_FIELD, FP_FIELD]))
        if fps:
            fields[key] = [to_signed(f) for f in fps]
        if data.draw(st.booleans()):  # a sketch sharing many minima with ours, or none at all
            fields[SKETCH_FIELD] = [base64.b64encode(to_bytes(data.draw(mutate))).decode("ascii")]
        if data.draw(st.booleans()):
            fields[FACTS_FIELD] = data.draw(facts)
        hits.append({"_id": f"d{n % 20}", "fields": fields})
    exclude = data.draw(st.sampled_from([None, "d1", "d2"]))
    k = data.draw(st.integers(0, 3))
    ev = Evidence(mine, own_sketch, own_facts)
    want = _scalar_verify(ev, hits, k, exclude)
    assert ElasticsearchIndex.verify_hits(ev, hits, k, exclude) == want
