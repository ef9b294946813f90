"""Metrics, related articles, and back-pressure (429 with Retry-After) when the spool is full."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from elasticsearch import Elasticsearch
from support.service import ServiceProcess, free_port

from fingerprint_indexer.sidecar.settings import ServiceSettings

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]


def _metric(text: str, name: str, labels: str = "") -> float:
    pattern = rf"^{re.escape(name)}{re.escape(labels)} ([0-9.e+-]+)$"
    m = re.search(pattern, text, re.M)
    assert m, f"{name}{labels} not in metrics"
    return float(m.group(1))


def test_metrics_count_decisions_and_latency(http: httpx.Client, zh_articles: list[dict[str, Any]],
                                             svc_index: str) -> None:
    before = http.get("/metrics").text
    a = zh_articles[150]["content"]
    docs = [{"id": "m1", "content": a}, {"id": "m2", "content": a}, {"id": "m3", "content": a[:-10] + "。"}]
    http.post("/v1/ingest", json={"documents": docs, "index_name": svc_index}).raise_for_status()
    text = httpx.get(f"{http.base_url}/metrics").text  # open without the key
    for decision in ("new", "exact_duplicate"):
        name = "fpi_documents_total"
        label = f'{{decision="{decision}"}}'
        old = _metric(before, name, label) if f"{name}{label}" in before else 0.0
        assert _metric(text, name, label) >= old + 1
    assert _metric(text, "fpi_request_seconds_count", '{method="POST",route="/v1/ingest"}') >= 1
    assert _metric(text, "fpi_largest_block_bucket") >= 1
    assert _metric(text, "fpi_spool_depth") == 0
    assert _metric(text, "fpi_elasticsearch_up") == 1


def test_related_folds_reports_of_one_story(
    http: httpx.Client, es_client: Elasticsearch, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    x, y = zh_articles[160]["content"], zh_articles[161]["content"]
    docs = [
        {"id": "x1", "title": "x", "content": x}, {"id": "x2", "title": "x", "content": x + "（转载）"},
        {"id": "y1", "title": "y", "content": y}, {"id": "y2", "title": "y", "content": y + "（转载）"},
        # a quarter of each story: topically close to both, a copy of neither (sketch similarity < 0.3)
        {"id": "mix", "title": "mix", "content": x[: len(x) // 4] + y[: len(y) // 4]},
    ]
    r = http.post("/v1/ingest", json={"documents": docs, "index": True, "index_name": svc_index})
    decisions = {res["id"]: res for res in r.json()["results"]}
    assert decisions["x2"]["duplicate_of"] == "x1" and decisions["y2"]["duplicate_of"] == "y1"
    es_client.indices.refresh(index=svc_index)
    rel = http.get(f"/v1/related/mix?index={svc_index}").json()
    own_dups = {d["id"] for d in rel["duplicates"]}
    clusters = [e["cluster_id"] for e in rel["related"]]
    assert len(clusters) == len(set(clusters)), rel  # one entry per story
    for e in rel["related"]:
        assert e["similar_reports"] == len(e["members"]) - 1
        assert not own_dups & set(e["members"]), rel  # its own near-duplicates are not "related"
    # mix takes a part of x and of y: a topical neighbour of both stories, whose two reports each are
    # folded into one entry (at most one story could be a near-duplicate of it instead)
    folded = [sorted(e["members"]) for e in rel["related"] if e["similar_reports"] == 1]
    assert folded and all(f in (["x1", "x2"], ["y1", "y2"]) for f in folded), rel
    own = http.get(f"/v1/related/x1?index={svc_index}").json()
    assert [d["id"] for d in own["duplicates"]] == ["x2"]
    assert all("x2" not in e["members"] for e in own["related"])
    assert http.get(f"/v1/related/none?index={svc_index}").status_code == 404


def test_full_spool_answers_429_with_retry_after(tmp_path: Path, zh_articles: list[dict[str, Any]]) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens: every write is spooled
    with ServiceProcess(dead, tmp_path / "data", "--spool-limit-mb", "1") as svc:
        content = "".join(a["content"] for a in zh_articles[:20])[:20_000]
        statuses = []
        for b in range(12):
            docs = [{"id": f"f{b}-{i}", "content": f"{content} {b} {i}"} for i in range(10)]
            r = httpx.post(f"{svc.url}/v1/ingest", json={"documents": docs, "index": True}, timeout=60)
            statuses.append(r.status_code)
            if r.status_code == 429:
                assert int(r.headers["retry-after"]) > 0
                assert r.json()["error"]["type"] == "spool_full"
                break
            assert {x["index"]["status"] for x in r.json()["results"]} == {202}
        assert statuses[-1] == 429 and statuses[0] == 200, statuses
        # deciding without writing still works, and readiness reports the cluster missing
        ok = httpx.post(f"{svc.url}/v1/ingest", json={"document": {"id": "n", "content": content}})
        assert ok.status_code == 200
        assert httpx.get(f"{svc.url}/readyz").status_code == 503


def test_event_loop_stays_responsive_during_a_big_batch(
    http: httpx.Client, service: ServiceProcess, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    """Fingerprinting runs in the worker pool: probes are answered while a large batch is being decided.
    The batch is the largest one request may carry, each document three articles long: long enough to
    observe however fast one article is decided."""
    n = len(zh_articles)
    docs = [{"id": f"big-{i}", "content": "\n".join(zh_articles[(i + j) % n]["content"] for j in range(3))}
            for i in range(ServiceSettings.max_batch)]  # fmt: skip
    done = threading.Event()
    status: list[int] = []

    def big() -> None:
        status.append(http.post("/v1/ingest", json={"documents": docs, "index_name": svc_index}).status_code)
        done.set()

    threading.Thread(target=big).start()
    latencies = []
    with httpx.Client(base_url=service.url, timeout=30) as probe:
        time.sleep(0.1)
        while not done.is_set() and len(latencies) < 50:
            t0 = time.perf_counter()
            assert probe.get("/healthz").status_code == 200
            latencies.append(time.perf_counter() - t0)
            time.sleep(0.05)
    done.wait(timeout=300)
    assert status == [200]
    assert len(latencies) >= 5, "the batch finished too quickly to observe"
    assert max(latencies) < 0.5, f"probe latencies while ingesting: {sorted(latencies)[-5:]}"
