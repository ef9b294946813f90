"""The in-memory store reads like the embedded store's batch: stock band keys skipped, a removed text
handed to the earliest other holder (the decision contract covers the rest:
tests/engine/test_decision_contract.py)."""

from __future__ import annotations

import pytest

from fingerprint_indexer.fingerprint.sketch import MAX_BAND_READ
from fingerprint_indexer.records.record import DocRecord, record_now
from fingerprint_indexer.store.embedded import EmbeddedStore
from fingerprint_indexer.store.memory import MemoryStore

ALGO = "test-algo/1"
SKETCH = bytes(range(256)).hex()  # 64 x 32-bit minima: every record holding it shares all 8 band keys


def _rec(doc_id: str, fp: int, digest: str, at: float = 0.0) -> DocRecord:
    rec = record_now(id=doc_id, fingerprint=fp, content_digest=digest, keyword_digest="kw", cluster_id=doc_id,
                     decision="new", duplicate_of=None, distance=None, degenerate=False, length=10,
                     published_at=None, version=ALGO, sketch=SKETCH)
    rec.time = at
    return rec


@pytest.mark.parametrize("n", [MAX_BAND_READ, MAX_BAND_READ + 1])
def test_a_band_key_of_more_than_max_band_read_documents_is_skipped(tmp_path, n):
    recs = [_rec(f"d{i:03d}", i * 0x9E3779B97F4A7C15 & (2**64 - 1), f"digest{i}") for i in range(n)]
    band = recs[0].bands[0]
    mem = MemoryStore()
    for rec in recs:
        mem.put_record(rec, index=True)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        tx = store.batch()
        for rec in recs:
            tx.put_record(rec, index=True)
        tx.commit()
        assert mem.band_docs(band) == store.batch().band_docs(band)
    assert mem.band_docs(band) == ([r.id for r in recs] if n <= MAX_BAND_READ else [])


def test_removing_the_first_holder_of_a_text_hands_it_to_the_earliest_other():
    mem = MemoryStore()
    for doc_id, at in (("a", 1.0), ("c", 3.0), ("b", 2.0)):
        mem.put_record(_rec(doc_id, 7, "same", at), index=True)
    assert mem.doc_with_digest("same") == "a"
    assert mem.remove_doc("a") and not mem.remove_doc("a")
    assert mem.record("a") is None and mem.doc_with_digest("same") == "b"
    mem.remove_doc("b")
    mem.remove_doc("c")
    assert mem.doc_with_digest("same") is None and mem.n_docs == 0
    assert mem.index.query(7, 3) == []
