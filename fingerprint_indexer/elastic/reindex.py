"""Fingerprint an existing Elasticsearch index in place (``fingerprint-indexer reindex``).

Scans the documents that have no fingerprint of the current algorithm version (point-in-time +
``search_after`` on ``_shard_doc``), fingerprints them (on threads of this process, or in worker
processes), decides new / exact / near against what is already fingerprinted, and writes the fields
back with bulk ``update`` operations (429s are retried with backoff by the bulk helper).

Resuming needs no cursor: a document written by an earlier run already carries the current ``fp_version``
and so drops out of the scan. The checkpoint file (rewritten atomically after every written batch) holds
the job's baseline: how many documents were pending and how many decisions of this version the index
already had when the job began. The final totals are counted in the index against that baseline, so they
are exact even when a run was killed between a bulk write and its checkpoint. Documents without the
source field and failed writes stay pending: each run lists them afresh (a later run retries them).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch
from tqdm import tqdm

from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.es_ingest import (
    DECIDE_BATCH,
    BatchResult,
    EsDecider,
    fingerprinted_batches,
    pipelined,
)
from fingerprint_indexer.es.scan import pit_scan
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex

MAX_LISTED = 1000  # ids listed in the report per kind of problem (all are counted)


@dataclass
class ReindexReport:
    """Totals of a reindex job, across resumed runs."""

    index: str
    fp_version: str
    documents: int = 0
    new: int = 0
    exact_duplicates: int = 0
    near_duplicates: int = 0
    missing_source: int = 0
    missing_source_ids: list[str] = field(default_factory=list)
    failed: int = 0
    failures: list[list[str]] = field(default_factory=list)
    runs: int = 0
    elapsed_s: float = 0.0
    done: bool = False
    pending_at_start: int = 0
    baseline: dict[str, int] = field(default_factory=dict)

    @property
    def clusters(self) -> int:
        """Every new story founds a cluster; duplicates join one."""
        return self.new

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["clusters"] = self.clusters
        out["duplicates"] = self.exact_duplicates + self.near_duplicates
        out["docs_per_s"] = round(self.documents / self.elapsed_s, 1) if self.elapsed_s else None
        return out

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=1))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path, index: str, fp_version: str) -> ReindexReport | None:
        """The unfinished job recorded at ``path`` for the same index and algorithm, if any."""
        try:
            data = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        if data.get("done") or data.get("index") != index or data.get("fp_version") != fp_version:
            return None
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})


def decision_counts(client: Elasticsearch, index: str, fp_version: str) -> dict[str, int]:
    """How many documents fingerprinted with ``fp_version`` carry each decision."""
    resp = client.search(index=index, size=0, query={"term": {"fp_version": fp_version}},
                         aggs={"d": {"terms": {"field": "decision", "size": 10}}})  # fmt: skip
    return {b["key"]: int(b["doc_count"]) for b in resp["aggregations"]["d"]["buckets"]}


def pending_query(fp_version: str) -> dict[str, Any]:
    """Documents without a fingerprint of this algorithm version."""
    return {"bool": {"must_not": [{"term": {"fp_version": fp_version}}]}}


def scan(
    client: Elasticsearch, index: str, query: dict[str, Any], fields: list[str], page: int
) -> Iterator[dict[str, Any]]:
    """Every hit of ``query`` once, from a point-in-time snapshot."""
    return pit_scan(client, index, query, page, "5m", source_includes=fields)


def reindex(
    client: Elasticsearch,
    index: str,
    *,
    source_field: str = "content",
    title_field: str = "title",
    k: int = 3,
    config: FingerprintConfig | None = None,
    processes: int = 1,
    threads: int = 1,
    batch_size: int = DECIDE_BATCH,
    checkpoint: Path | None = None,
    progress: bool = True,
    layout: BlockLayout | None = None,
) -> ReindexReport:
    """Fingerprint every pending document of ``index``; returns the (cumulative) report. ``layout``, when
    given, must be the index's own (None: whatever it records). ``threads`` fingerprint within this
    process when ``processes`` is 1 (see ``fingerprint_many``)."""
    es_index = ElasticsearchIndex(client, index, layout, create=False)
    fpr = Fingerprinter(replace(config or FingerprintConfig(), layout=es_index.layout))
    decider = EsDecider(es_index, k=k)
    query = pending_query(fpr.version)
    client.indices.refresh(index=index)
    total = int(client.count(index=index, query=query)["count"])
    report = checkpoint and ReindexReport.load(checkpoint, index, fpr.version)
    if not report:
        baseline = decision_counts(client, index, fpr.version)
        report = ReindexReport(index, fpr.version, pending_at_start=total, baseline=baseline)
    report.runs += 1
    report.missing_source, report.missing_source_ids, report.failed, report.failures = 0, [], 0, []
    started = time.perf_counter()
    elapsed_before = report.elapsed_s

    def documents() -> Iterator[Document]:
        for hit in scan(client, index, query, [source_field, title_field, "published_at", "url"], batch_size):
            src = hit.get("_source") or {}
            text = src.get(source_field)
            if not isinstance(text, str) or not text.strip():
                report.missing_source += 1
                if len(report.missing_source_ids) < MAX_LISTED:
                    report.missing_source_ids.append(str(hit["_id"]))
                bar.update(1)
                continue
            title, published = src.get(title_field), src.get("published_at")
            yield Document(id=str(hit["_id"]), title=title if isinstance(title, str) else "", content=text,
                           published_at=published if isinstance(published, str) else None)

    bar = tqdm(total=total, unit="doc", desc=f"reindex {index}", disable=not progress, dynamic_ncols=True,
               smoothing=0.1)  # fmt: skip
    try:
        batches = fingerprinted_batches(documents(), fpr, batch_size, processes, threads)
        for result in pipelined(decider, batches, "update"):
            _count(result, report)
            report.elapsed_s = elapsed_before + time.perf_counter() - started
            if checkpoint:
                report.save(checkpoint)
            bar.update(len(result.decisions))
    finally:
        bar.close()
    _final_totals(client, report)
    report.done = True
    report.elapsed_s = elapsed_before + time.perf_counter() - started
    if checkpoint:
        report.save(checkpoint)
    return report


def _final_totals(client: Elasticsearch, report: ReindexReport) -> None:
    """Replace the running totals by the job's exact totals, counted in the index."""
    client.indices.refresh(index=report.index)
    now = decision_counts(client, report.index, report.fp_version)
    diff = {d: now.get(d, 0) - report.baseline.get(d, 0) for d in now}
    report.new = diff.get("new", 0)
    report.exact_duplicates = diff.get("exact_duplicate", 0)
    report.near_duplicates = diff.get("near_duplicate", 0)
    report.documents = sum(diff.values())


def _count(result: BatchResult, report: ReindexReport) -> None:
    """Add one written batch to the running totals (failed documents are listed, not counted)."""
    failed = {i for i, _ in result.failures}
    for d in result.decisions:
        if d.id in failed:
            continue
        report.documents += 1
        if d.decision == "new":
            report.new += 1
        elif d.decision == "exact_duplicate":
            report.exact_duplicates += 1
        else:
            report.near_duplicates += 1
    report.failed += len(result.failures)
    room = MAX_LISTED - len(report.failures)
    report.failures += [[i, r] for i, r in result.failures[: max(room, 0)]]
