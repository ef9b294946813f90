"""A stateless sidecar's decision path in-process: what ``serve --state elasticsearch`` does with a batch,
minus HTTP (decide on the state thread, write with the fields the sidecar adds, settle)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from elasticsearch import Elasticsearch

from fingerprint_indexer.documents import Document
from fingerprint_indexer.engine.rules import Keep
from fingerprint_indexer.env import EsSettings
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, FingerprintResult
from fingerprint_indexer.sidecar.es_state import EsStateOwner
from fingerprint_indexer.sidecar.ingest import es_fields, relink_op

Batch = Sequence[tuple[Document, FingerprintResult]]
K = 3


class StatelessSidecarStore:
    """What ``serve --state elasticsearch`` does with a batch, minus HTTP: decide on the state thread,
    write the documents with the fields the sidecar adds (and its relinks) in one bulk, settle them."""

    def __init__(self, client: Elasticsearch, index: str, keep: Keep, refresh: bool = False) -> None:
        self.client, self.index = client, index
        self.owner = EsStateOwner(EsSettings(url=""), FingerprintConfig(), K, keep, client=client)
        self.owner.call_sync(self.owner.decider, index)
        if not refresh:  # never refreshed by time: what it decided stays pending
            self.owner._refreshed[index] = float("inf")

    def decide(self, batch: Batch) -> list[dict[str, Any]]:
        decisions = self.owner.call_sync(self.owner.decide, self.index, list(batch))
        layout = self.owner.decider(self.index).index.layout  # type: ignore[union-attr]
        ops: list[dict[str, Any]] = []
        for (doc, res), d in zip(batch, decisions, strict=True):
            source = {"title": doc.title, "content": doc.content, **es_fields(res, d, layout, doc.length)}
            if doc.published_at:
                source["published_at"] = doc.published_at
            ops += [{"index": {"_index": self.index, "_id": doc.id}}, source]
            if (relink := relink_op(self.index, d)) is not None:
                ops += [{"update": relink.meta}, relink.source]
        assert not self.client.bulk(operations=ops)["errors"]
        self.owner.call_sync(self.owner.settle, self.index, [doc.id for doc, _ in batch])
        return [d.to_dict() for d in decisions]

    def stored(self, doc_id: str) -> dict[str, Any]:
        src = self.client.get(index=self.index, id=doc_id)["_source"]
        return {k: src.get(k) for k in ("decision", "duplicate_of", "cluster_id")}

    def close(self) -> None:
        self.owner._executor.shutdown()
