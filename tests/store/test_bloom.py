"""The store's Bloom filter: the compiled membership test sets and reads the very bits pybloom-live does
(the library stays the reference, and its file format the store's)."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pybloom_live import ScalableBloomFilter

from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.store.bloom import bloom_absent, bloom_add_many, bloom_has, compiled_test, new_bloom

keys = st.text(max_size=40)


def _library(capacity: int, error_rate: float, items: list[str]) -> ScalableBloomFilter:
    bloom = ScalableBloomFilter(initial_capacity=capacity, error_rate=error_rate,
                                mode=ScalableBloomFilter.LARGE_SET_GROWTH)
    for item in items:
        bloom.add(item)
    return bloom


def _state(bloom: ScalableBloomFilter) -> bytes:
    out = io.BytesIO()
    bloom.tofile(out)
    return out.getvalue()


@pytest.mark.skipif(not native.AVAILABLE, reason="the compiled core is not built")
@settings(max_examples=80, deadline=None)
@given(items=st.lists(keys, max_size=120), probes=st.lists(keys, max_size=30),
       size=st.sampled_from([(2, 0.1), (5, 0.01), (20, 0.001), (40, 1e-4), (3000, 1e-4), (30_000, 0.05),
                              (30_000, 0.001), (100_000, 1e-4)]))
def test_compiled_bloom_equals_the_library(items, probes, size):
    """Small capacities make the filter grow (new filters, more slices) and pick each of the library's
    hashes (xxh128, SHA-1, SHA-256, SHA-384, SHA-512): bits, counts and answers are the library's, item
    by item and for many items at once."""
    test = compiled_test(ScalableBloomFilter())
    assert test is not None, "run with the compiled core on"
    capacity, error_rate = size
    want = _library(capacity, error_rate, items)
    got = ScalableBloomFilter(initial_capacity=capacity, error_rate=error_rate,
                              mode=ScalableBloomFilter.LARGE_SET_GROWTH)
    bloom_add_many(got, items[: len(items) // 2], test)
    bloom_add_many(got, items[len(items) // 2 :], test)
    assert _state(got) == _state(want)
    for probe in probes + items[:10]:
        assert bloom_has(got, probe, test) == (probe in want)
    asked = probes + items[:10]
    assert bloom_absent(got, asked, test) == [p not in want for p in asked] == bloom_absent(want, asked)


def test_the_reference_is_the_library(monkeypatch):
    """Switched off, the library adds and answers itself."""
    monkeypatch.setenv("FPI_NATIVE", "0")
    got = new_bloom(["c:a", "f:b"], capacity=10)
    assert compiled_test(got) is None
    assert _state(got) == _state(_library(10, 1e-4, ["c:a", "f:b"]))
    assert bloom_has(got, "c:a") and not bloom_has(got, "c:z")
