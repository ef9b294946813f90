"""Pinned (point-in-time) verified look-ups on a real node: what they see, and recovery from expiry."""

from __future__ import annotations

import pytest
from elasticsearch import Elasticsearch

from fingerprint_indexer.es.codec import fingerprint_fields
from fingerprint_indexer.fingerprint.sketch import sketch, to_bytes
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.verification import Evidence

pytestmark = pytest.mark.elasticsearch
TEXT = "市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温，请市民注意添衣保暖。" * 3
SKETCH = to_bytes(sketch(TEXT))


def _write(index: ElasticsearchIndex, doc_id: str, fp: int) -> None:
    source = fingerprint_fields(fp, index.layout, chunks=[fp ^ 0xFF00], sketch=SKETCH)
    index.write_actions([{"_op_type": "index", "_index": index.index, "_id": doc_id, "_source": source}])
    index.refresh()


def _found(index: ElasticsearchIndex) -> list[str]:
    return sorted(m.doc_id for m in index.query_verified(Evidence([0b111], SKETCH), 3))


def test_pinned_lookups_see_the_snapshot(es_client: Elasticsearch, es_index: str) -> None:
    """Documents written after pin() stay out until the next pin(); an expired snapshot is replaced."""
    index = ElasticsearchIndex(es_client, es_index, read_your_writes=False, page_size=1)  # page 1: scans too
    _write(index, "a", 0b1)
    index.pin()
    try:
        _write(index, "b", 0b11)  # refreshed, but after the snapshot
        assert _found(index) == ["a"]
        index.pin()
        assert _found(index) == ["a", "b"]
        es_client.close_point_in_time(id=index._pit)  # as if it had expired between two batches
        _write(index, "c", 0b1111)
        assert _found(index) == ["a", "b", "c"]  # a fresh snapshot replaced it
        assert index.pinned
    finally:
        index.unpin()
    assert not index.pinned
    assert _found(index) == ["a", "b", "c"]
    index.unpin()  # nothing to close: fine
