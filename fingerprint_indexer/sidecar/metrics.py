"""Prometheus metrics of one service instance (a private registry, so several apps can share a process)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


#: The steps of a write request on the event loop that ``fpi_write_cpu_seconds_total`` counts.
WRITE_STEPS = ("read", "prepare", "apply", "encode", "answer")

#: The part of the service a thread does, by the prefix of its name: fingerprinting, deciding (the
#: embedded stores' thread, or the cluster-state thread of a stateless service), writing the spool, and
#: the event loop (requests, their JSON, the calls to Elasticsearch).
THREAD_ROLES = (("fingerprint", "fingerprint"), ("store", "decide"), ("es-state", "decide"),
                ("spool", "spool"), ("MainThread", "event_loop"))
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def thread_role(name: str) -> str:
    """The role of a thread named ``name`` (``other`` for threads of libraries)."""
    return next((role for prefix, role in THREAD_ROLES if name.startswith(prefix)), "other")


def thread_cpu_seconds() -> dict[str, float]:
    """CPU seconds (user + system) of this process's live threads by role, from Linux's per-thread
    accounting (empty elsewhere). A pool's threads live as long as the pool, so the sums only grow."""
    out: dict[str, float] = {}
    for t in threading.enumerate():
        if t.native_id is None:
            continue
        try:
            stat = Path(f"/proc/self/task/{t.native_id}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        role = thread_role(t.name)
        out[role] = out.get(role, 0.0) + (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime
    return out


class ThreadCpuCollector(Collector):
    """``fpi_thread_cpu_seconds_total{role}``: where the service's CPU goes, read when scraped."""

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily("fpi_thread_cpu_seconds",
                                     "CPU seconds of the service's threads by role: fingerprint, decide, "
                                     "spool, event_loop (requests and their JSON), other (fingerprint "
                                     "worker processes, with --processes > 1, are not included)",
                                     labels=["role"])
        for role, seconds in sorted(thread_cpu_seconds().items()):
            family.add_metric([role], seconds)
        yield family


class Metrics:
    """Documents by decision, request and fingerprinting latency, spool and bucket gauges."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry(auto_describe=True)
        self.documents = Counter("fpi_documents", "Documents decided, by decision", ["decision"], registry=r)
        self.skipped = Counter("fpi_documents_skipped", "Duplicates not forwarded (policy skip)", registry=r)
        self.updates = Counter("fpi_update_operations",
                               "Proxied update operations by outcome: fingerprinted, no_text (passed on), "
                               "scripted (passed on, cannot be evaluated here), unknown_source (passed on, "
                               "current document not readable)", ["outcome"], registry=r)
        self.requests = Histogram("fpi_request_seconds", "Request latency by route", ["route", "method"],
                                  buckets=LATENCY_BUCKETS, registry=r)
        self.fingerprint_seconds = Histogram("fpi_fingerprint_batch_seconds",
                                             "Worker-pool fingerprinting time per request",
                                             buckets=LATENCY_BUCKETS, registry=r)
        self.spooled = Counter("fpi_spooled_operations", "Operations written to the spool", registry=r)
        self.replayed = Counter("fpi_replayed_operations", "Spooled operations applied on replay", registry=r)
        self.rejected = Counter("fpi_rejected_operations",
                                "Spooled operations Elasticsearch rejected for good", registry=r)
        self.parked = Counter("fpi_parked_operations",
                              "Spooled operations Elasticsearch kept refusing (429/5xx for that document), "
                              "parked in rejected.ndjson after the bounded number of tries", registry=r)
        self.spool_depth = Gauge("fpi_spool_depth", "Undelivered spool records", registry=r)
        self.spool_bytes = Gauge("fpi_spool_bytes", "Undelivered spool payload bytes", registry=r)
        self.largest_bucket = Gauge("fpi_largest_block_bucket", "Largest block bucket written to since start "
                                    "(entries, counted up to the query budget)", registry=r)
        self.es_up = Gauge("fpi_elasticsearch_up", "1 while Elasticsearch takes writes directly", registry=r)
        self.write_cpu = Counter("fpi_write_cpu_seconds",
                                 "CPU seconds of the event loop in each step of the write requests: read "
                                 "(the bulk body taken apart), prepare (ids, sources, documents), apply "
                                 "(the decisions' fields and the policy), encode (the bulk body to "
                                 "Elasticsearch), answer (the answer's JSON)", ["step"], registry=r)
        for step in WRITE_STEPS:
            self.write_cpu.labels(step)
        r.register(ThreadCpuCollector())

    @contextlib.contextmanager
    def write_step(self, step: str) -> Iterator[None]:
        """Count the CPU time of the block under ``step`` (one of :data:`WRITE_STEPS`): the block holds
        no ``await``, so no other request's work runs on the thread meanwhile."""
        t0 = time.thread_time()
        try:
            yield
        finally:
            self.write_cpu.labels(step).inc(time.thread_time() - t0)

    def bind(self, spool_depth: Callable[[], float], spool_bytes: Callable[[], float],
             largest_bucket: Callable[[], float], es_up: Callable[[], float]) -> None:
        """Gauges read live values when scraped."""
        self.spool_depth.set_function(spool_depth)
        self.spool_bytes.set_function(spool_bytes)
        self.largest_bucket.set_function(largest_bucket)
        self.es_up.set_function(es_up)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
