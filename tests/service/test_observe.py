"""Metrics, related articles, and back-pressure (429 with Retry-After) when the spool is full."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from elasticsearch import Elasticsearch
from support.service import ServiceProcess, free_port

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
    by_first = {e["id"]: e for e in rel["related"]}
    assert set(by_first) in ({"x1", "y1"}, {"x2", "y1"}, {"x1", "y2"}, {"x2", "y2"}), rel
    assert all(e["similar_reports"] == 1 and len(e["members"]) == 2 for e in rel["related"])
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
