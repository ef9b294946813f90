"""Decide the recent documents of an index again, as one writer would have (``es reconcile``).

Several stateless sidecars share one index (``serve --state elasticsearch``). Exact copies are agreed at
once (digest claims), but two near copies given to two sidecars within one refresh of the index do not see
each other, and both may be ``new``. Reconciliation closes that gap: the documents decided since a time
(``decided_at``) are decided again by the engine, one after the other in the order they were decided
(``decided_at``; among documents decided in the same millisecond, those that were their group's canonical
first, then by id), against the index as it was without them; their decision fields are rewritten. After
it, the index holds what one writer given those documents in that order writes: only what the race got
wrong changes (a copy's canonical stays the copy that arrived first, as ``keep=first`` promises).

Documents older than the window keep their decisions (under ``keep=first`` a later document never changes
an earlier one). Under ``keep=longest|newest`` a canonical that a recent document replaced is first put
back (``duplicate_of`` cleared), so the recent documents can replace it again or not. Text comes from the
documents' ``_source`` (``title``, ``content``, ``html``, ``url``, ``published_at``), fingerprinted with the
index's configuration.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from elasticsearch import Elasticsearch

from fingerprint_indexer.documents import TEXT_FIELDS, Document, source_document
from fingerprint_indexer.elastic.es_ingest import DECIDE_BATCH, EsDecider, fingerprinted_batches, pipelined
from fingerprint_indexer.elastic.es_setup import index_config
from fingerprint_indexer.engine.rules import Keep
from fingerprint_indexer.es.codec import DECIDED_FIELD, bulk_failures
from fingerprint_indexer.es.errors import ElasticsearchWriteError
from fingerprint_indexer.es.scan import pit_scan
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex

DECISION_FIELDS = ["decision", "duplicate_of", "cluster_id", "distance"]
MAX_LISTED = 100


@dataclass
class ReconcileReport:
    index: str
    since: int  # epoch milliseconds
    until: int
    documents: int = 0
    changed: int = 0  # documents whose decision, duplicate_of, cluster_id or distance changed
    changed_ids: list[str] = field(default_factory=list)
    restored: int = 0  # canonicals put back before deciding (keep longest/newest)
    missing_text: list[str] = field(default_factory=list)
    failures: list[list[str]] = field(default_factory=list)
    elapsed_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _window(since_ms: int, until_ms: int) -> dict[str, Any]:
    # numbers, so the range holds on a date field and on a long (an older index mapped it dynamically)
    return {"range": {DECIDED_FIELD: {"gte": since_ms, "lt": until_ms}}}


def decided_order(decided_at: Any, duplicate_of: Any, doc_id: str) -> tuple[float, bool, str]:
    """Where a document comes when decisions are made again: when it was decided; among documents decided
    in the same millisecond (one batch), its group's canonicals first; then by id."""
    try:
        when = float(decided_at)
    except (TypeError, ValueError):
        when = float("inf")
    return when, duplicate_of is not None, doc_id


def recent_documents(client: Elasticsearch, index: str, since_ms: int, until_ms: int
                     ) -> list[tuple[str, dict[str, Any]]]:  # fmt: skip
    """(id, decision fields) of the documents decided in the window, in :func:`decided_order`."""
    out = []
    for hit in pit_scan(client, index, _window(since_ms, until_ms), 5000,
                        source=[DECIDED_FIELD, *DECISION_FIELDS]):  # fmt: skip
        src = hit.get("_source") or {}
        out.append((str(hit["_id"]), src))
    out.sort(key=lambda r: decided_order(r[1].get(DECIDED_FIELD), r[1].get("duplicate_of"), r[0]))
    return [(doc_id, {f: src.get(f) for f in DECISION_FIELDS}) for doc_id, src in out]


def _restore_replaced(client: Elasticsearch, index: str, recent: set[str], keep: Keep) -> int:
    """Under keep longest/newest: clear ``duplicate_of`` of older canonicals a recent document replaced."""
    if keep == "first" or not recent:
        return 0
    ids = sorted(recent)
    actions: list[dict[str, Any]] = []
    for start in range(0, len(ids), 1000):
        query = {"bool": {"filter": [{"terms": {"duplicate_of": ids[start : start + 1000]}},
                                     {"term": {"decision": "new"}}],
                          "must_not": [{"ids": {"values": ids}}]}}  # fmt: skip
        for hit in pit_scan(client, index, query, 1000, source=False):
            actions += [{"update": {"_index": index, "_id": hit["_id"]}},
                        {"doc": {"duplicate_of": None, "distance": None}}]  # fmt: skip
    if actions:
        resp = client.bulk(operations=actions, refresh=True)
        failed = bulk_failures(resp["items"]) if resp.get("errors") else []
        if failed:
            raise ElasticsearchWriteError(failed)
    return len(actions) // 2


def _documents(client: Elasticsearch, index: str, order: Sequence[str], missing: list[str],
               page: int = 500) -> Iterator[Document]:  # fmt: skip
    for start in range(0, len(order), page):
        ids = list(order[start : start + page])
        resp = client.mget(index=index, ids=ids, source_includes=list(TEXT_FIELDS), realtime=True)
        for d in resp["docs"]:
            doc = source_document(str(d["_id"]), d.get("_source")) if d.get("found") else None
            if isinstance(doc, Document):  # read as the proxy reads what it is sent
                yield doc
            else:
                missing.append(str(d["_id"]))


def reconcile(
    client: Elasticsearch, index: str, since_ms: int, until_ms: int | None = None, *, k: int = 3,
    keep: Keep = "first", config: FingerprintConfig | None = None, processes: int = 1,
    batch_size: int = DECIDE_BATCH,
) -> ReconcileReport:  # fmt: skip
    """Decide the documents of ``index`` decided in ``[since_ms, until_ms)`` again (see the module)."""
    t0 = time.perf_counter()
    until_ms = until_ms if until_ms is not None else int(time.time() * 1000)
    report = ReconcileReport(index, since_ms, until_ms)
    client.indices.refresh(index=index)  # every acknowledged write is in the window's scan
    recent = recent_documents(client, index, since_ms, until_ms)
    report.documents = len(recent)
    if not recent:
        report.elapsed_s = round(time.perf_counter() - t0, 3)
        return report
    hidden = {doc_id for doc_id, _ in recent}
    before = dict(recent)
    report.restored = _restore_replaced(client, index, hidden, keep)
    es_index = ElasticsearchIndex(client, index, create=False)
    fpr = Fingerprinter(index_config(client, index, config or FingerprintConfig()))
    decider = EsDecider(es_index, k, keep=keep, hidden=hidden)
    missing: list[str] = []
    docs = _documents(client, index, [doc_id for doc_id, _ in recent], missing)
    for result in pipelined(decider, fingerprinted_batches(docs, fpr, batch_size, processes), mode="update"):
        report.failures += [list(f) for f in result.failures]
        for d in result.decisions:
            now = {"decision": d.decision, "duplicate_of": d.duplicate_of, "cluster_id": d.cluster_id,
                   "distance": d.distance}  # fmt: skip
            if now != before.get(d.id):
                report.changed += 1
                if len(report.changed_ids) < MAX_LISTED:
                    report.changed_ids.append(d.id)
    report.missing_text = missing[:MAX_LISTED]
    report.elapsed_s = round(time.perf_counter() - t0, 3)
    return report
