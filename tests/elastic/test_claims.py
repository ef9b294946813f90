"""Digest claims on a real node: two writers of one index (two deciders, nothing refreshed between them)
agree on which copy of a text is ``new``; a stale claim is taken over; a retry of the claiming document
keeps its claim."""

from __future__ import annotations

import threading
import time

import pytest
from elasticsearch import Elasticsearch
from support.decision_contract import STORY_A, STORY_B, edited

from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic import claims as claims_mod
from fingerprint_indexer.elastic.claims import DigestClaims, claims_index
from fingerprint_indexer.elastic.es_ingest import EsDecider
from fingerprint_indexer.elastic.es_setup import setup_index
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, FingerprintResult
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex

pytestmark = pytest.mark.elasticsearch

FPR = Fingerprinter()


def pair(doc_id: str, text: str) -> tuple[Document, FingerprintResult]:
    doc = Document(id=doc_id, content=text)
    return doc, FPR.fingerprint_document(doc)


def writer(client: Elasticsearch, index: str) -> EsDecider:
    return EsDecider(ElasticsearchIndex(client, index), claims=DigestClaims(client, index))


@pytest.fixture
def index(es_client: Elasticsearch, es_index: str) -> str:
    setup_index(es_client, es_index)
    yield es_index
    es_client.indices.delete(index=claims_index(es_index), ignore_unavailable=True)


def test_two_writers_given_one_text_at_once_call_exactly_one_copy_new(es_client, index):
    a, b = writer(es_client, index), writer(es_client, index)
    da, _ = a.decide([pair("a-1", STORY_A)])
    db, _ = b.decide([pair("b-1", STORY_A)])  # a's document is neither written nor searchable yet
    assert da[0].decision == "new"
    assert (db[0].decision, db[0].duplicate_of, db[0].cluster_id) == ("exact_duplicate", "a-1", "a-1")


def test_a_lost_race_is_decided_again_with_the_winners_document(es_client, index):
    """Both writers look the claims up before either claims: the loser's batch is decided again, and a
    later document of it that matched the loser's copy follows the winner."""
    a, b = writer(es_client, index), writer(es_client, index)
    barrier = threading.Barrier(2)
    lookup = DigestClaims.lookup
    waited: set[str] = set()

    def synchronised(self: DigestClaims, digests):  # both look up before either claims
        out = lookup(self, digests)
        name = threading.current_thread().name
        if name.startswith("w-") and name not in waited:
            waited.add(name)
            barrier.wait(timeout=30)
        return out

    results: dict[str, list] = {}
    batch_b = [pair("b-1", STORY_A), pair("b-2", edited(STORY_A))]
    threads = [threading.Thread(target=lambda: results.__setitem__("a", a.decide([pair("a-1", STORY_A)])[0]),
                                name="w-a"),
               threading.Thread(target=lambda: results.__setitem__("b", b.decide(batch_b)[0]), name="w-b")]
    DigestClaims.lookup = synchronised  # type: ignore[method-assign]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        DigestClaims.lookup = lookup  # type: ignore[method-assign]
    kinds = [d.decision for d in results["a"] + results["b"] if d.id in ("a-1", "b-1")]
    assert sorted(kinds) == ["exact_duplicate", "new"]
    winner = next(d.id for d in results["a"] + results["b"] if d.decision == "new" and d.id in ("a-1", "b-1"))
    b2 = next(d for d in results["b"] if d.id == "b-2")
    assert (b2.decision, b2.duplicate_of) == ("near_duplicate", winner)


def test_a_stale_claim_is_taken_over_and_a_retry_keeps_its_own(es_client, index, monkeypatch):
    a, b = writer(es_client, index), writer(es_client, index)
    a.decide([pair("a-1", STORY_B)])  # claimed, never written (the writer died)
    again = writer(es_client, index).decide([pair("a-1", STORY_B)])[0]  # its client retried elsewhere
    assert again[0].decision == "new"
    monkeypatch.setattr(claims_mod, "GRACE_S", 0.0)
    time.sleep(0.01)
    taken = b.decide([pair("b-1", STORY_B)])[0]  # a-1 never reached the index: its claim is stale
    assert taken[0].decision == "new"
    digest = FPR.fingerprint_document(Document(id="x", content=STORY_B)).content_digest
    assert DigestClaims(es_client, index).lookup([digest])[digest].owner.id == "b-1"
