"""Verification of Elasticsearch candidates a page at a time gives what verifying them at once gives."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.es.codec import FP_FIELD
from fingerprint_indexer.fingerprint.hamming import to_signed
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.verification import Evidence


def _hits(n: int, centre: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        fp = centre ^ (1 << rng.randrange(64)) if rng.random() < 0.5 else rng.getrandbits(64)
        out.append({"_id": f"h{i}", "fields": {FP_FIELD: [to_signed(fp)]}})
    return out


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 60), page=st.integers(1, 70), seed=st.integers(0, 9))
def test_paged_verification_equals_verifying_all_at_once(n, page, seed):
    centre = random.Random(seed).getrandbits(64)
    hits = _hits(n, centre, seed)
    ev = Evidence([centre])
    whole = ElasticsearchIndex.verify_hits(ev, hits, 3, exclude="h3", page=10**6)
    assert ElasticsearchIndex.verify_hits(ev, iter(hits), 3, exclude="h3", page=page) == whole
    assert all(m.doc_id != "h3" for m in whole)
