"""Prometheus metrics of one service instance (a private registry, so several apps can share a process)."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


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

    def bind(self, spool_depth: Callable[[], float], spool_bytes: Callable[[], float],
             largest_bucket: Callable[[], float], es_up: Callable[[], float]) -> None:
        """Gauges read live values when scraped."""
        self.spool_depth.set_function(spool_depth)
        self.spool_bytes.set_function(spool_bytes)
        self.largest_bucket.set_function(largest_bucket)
        self.es_up.set_function(es_up)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
