"""The decision contract (tests/support/decision_contract.py) on every record store: the in-memory store
(the engine over a MemoryStore, in milliseconds), the embedded LevelDB store (Pipeline) and a real
Elasticsearch index (EsDecider, as ``es index`` drives it and as a stateless sidecar drives it: digest
claims on, its writes made by the sidecar's own bulk, nothing refreshed but by the sidecar's own rule);
same inputs, same decisions."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch
from support.decision_contract import CASES, DecisionStore, K, OpenStore, edited
from support.stateless import StatelessSidecarStore

from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.claims import claims_index
from fingerprint_indexer.elastic.es_ingest import EsDecider
from fingerprint_indexer.elastic.es_setup import setup_index
from fingerprint_indexer.engine.rules import Engine, Keep
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, FingerprintResult
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.pipeline import Pipeline
from fingerprint_indexer.store.memory import MemoryStore

Batch = Sequence[tuple[Document, FingerprintResult]]


class InMemoryStore:
    def __init__(self, keep: Keep) -> None:
        self.store, self.engine = MemoryStore(), Engine(K, keep)

    def decide(self, batch: Batch) -> list[dict[str, Any]]:
        return [self.engine.decide(self.store, doc, res)[0].to_dict() for doc, res in batch]

    def stored(self, doc_id: str) -> dict[str, Any]:
        rec = self.store.record(doc_id)
        assert rec is not None
        return {"decision": rec.decision, "duplicate_of": rec.duplicate_of, "cluster_id": rec.cluster_id}


class PipelineStore:
    def __init__(self, directory: Path, keep: Keep) -> None:
        self.pipe = Pipeline(directory, k=K, keep=keep)

    def decide(self, batch: Batch) -> list[dict[str, Any]]:
        return [d.to_dict() for d in self.pipe.decide_batch(list(batch))]

    def stored(self, doc_id: str) -> dict[str, Any]:
        rec = self.pipe.store.record(doc_id)
        assert rec is not None
        return {"decision": rec.decision, "duplicate_of": rec.duplicate_of, "cluster_id": rec.cluster_id}


class ElasticStore:
    def __init__(self, client: Elasticsearch, index: str, keep: Keep) -> None:
        setup_index(client, index)
        self.client, self.index = client, index
        self.decider = EsDecider(ElasticsearchIndex(client, index), k=K, keep=keep)

    def decide(self, batch: Batch) -> list[dict[str, Any]]:
        result = self.decider.index_batch(list(batch))
        assert result.failures == []
        self.decider.refresh()
        return [{k: v for k, v in d.to_dict().items() if k != "indexed"} for d in result.decisions]

    def stored(self, doc_id: str) -> dict[str, Any]:
        src = self.client.get(index=self.index, id=doc_id)["_source"]
        return {k: src.get(k) for k in ("decision", "duplicate_of", "cluster_id")}


def in_memory(keep: Keep, name: str) -> DecisionStore:
    return InMemoryStore(keep)


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[OpenStore]:
    opened: list[PipelineStore] = []

    def open_store(keep: Keep, name: str) -> DecisionStore:
        opened.append(PipelineStore(tmp_path / name, keep))
        return opened[-1]

    yield open_store
    for store in opened:
        store.pipe.close()


@pytest.fixture
def elastic(es_client: Elasticsearch, es_index: str) -> OpenStore:
    def open_store(keep: Keep, name: str) -> DecisionStore:
        return ElasticStore(es_client, f"{es_index}-{name}", keep)

    return open_store


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_the_in_memory_store_meets_the_contract(case):
    case(in_memory)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_embedded_store_meets_the_contract(case, embedded):
    case(embedded)


@pytest.mark.elasticsearch
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_elasticsearch_meets_the_contract(case, elastic):
    case(elastic)


@pytest.fixture
def stateless(es_client: Elasticsearch, es_index: str) -> Iterator[OpenStore]:
    opened: list[StatelessSidecarStore] = []

    def open_store(keep: Keep, name: str) -> DecisionStore:
        opened.append(StatelessSidecarStore(es_client, f"{es_index}-{name}", keep))
        return opened[-1]

    yield open_store
    for store in opened:
        store.close()
        es_client.indices.delete(index=claims_index(store.index), ignore_unavailable=True)


@pytest.mark.elasticsearch
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_a_stateless_sidecar_meets_the_contract(case, stateless):
    case(stateless)


def _real_news(zh_articles: list[dict[str, Any]]) -> list[list[tuple[Document, FingerprintResult]]]:
    """Real articles with exact copies, edited reposts and longer copies, shuffled, in batches of 40 (a copy
    and its original in one batch or in two)."""
    rng = random.Random(12)
    arts = zh_articles[:150]
    docs = [Document(id=f"n{i}", content=a["content"]) for i, a in enumerate(arts)]
    docs += [Document(id=f"x{i}", content=arts[i]["content"]) for i in range(0, 150, 7)]
    docs += [Document(id=f"e{i}", content=edited(arts[i]["content"])) for i in range(3, 150, 6)]
    docs += [Document(id=f"l{i}", content=arts[i]["content"] + "（完）") for i in range(5, 150, 9)]
    rng.shuffle(docs)
    fpr = Fingerprinter()
    items = [(d, fpr.fingerprint_document(d)) for d in docs]
    return [items[s : s + 40] for s in range(0, len(items), 40)]


@pytest.mark.corpus
@pytest.mark.parametrize("keep", ["first", "longest"])
def test_in_memory_and_embedded_decide_real_news_alike(keep, zh_articles, embedded):
    """Real news through the in-memory and the embedded store: every decision, link, distance and cluster
    equal."""
    batches = _real_news(zh_articles)
    runs = [[d for b in batches for d in store.decide(b)]
            for store in (in_memory(keep, "real"), embedded(keep, "real"))]
    assert runs[0] == runs[1]
    assert {d["decision"] for d in runs[0]} == {"new", "exact_duplicate", "near_duplicate"}


@pytest.mark.elasticsearch
@pytest.mark.corpus
@pytest.mark.parametrize("keep", ["first", "longest"])
def test_both_stores_decide_real_news_alike(keep, zh_articles, embedded, elastic):
    """Real news through the embedded store and Elasticsearch: every decision, link, distance and cluster
    equal on both."""
    batches = _real_news(zh_articles)
    runs = []
    for open_store in (embedded, elastic):
        store = open_store(keep, "real")
        runs.append([d for b in batches for d in store.decide(b)])
    assert runs[0] == runs[1]
    kinds = {d["decision"] for d in runs[0]}
    assert kinds == {"new", "exact_duplicate", "near_duplicate"}
    assert (keep == "longest") == any("replaces" in d for d in runs[0])
