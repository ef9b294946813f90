"""Faults: Elasticsearch goes away mid-ingest (a real TCP cut), and the service is killed with SIGKILL.

In both cases every acknowledged document must end up in Elasticsearch exactly once.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest
from elasticsearch import Elasticsearch
from support.ingest_driver import IngestDriver, assert_exactly_once, wait_spool_empty
from support.service import ServiceProcess
from support.tcp_forwarder import TcpForwarder

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus, pytest.mark.slow, pytest.mark.timeout(400)]


@pytest.fixture
def forwarder(es_url: str) -> Iterator[TcpForwarder]:
    u = urlparse(es_url)
    fwd = TcpForwarder(u.hostname or "127.0.0.1", u.port or 9200)
    yield fwd
    fwd.cut()


@pytest.fixture
def fault_index(svc_index: str) -> str:
    return svc_index


def _all_gone(pids: set[int], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(Path(f"/proc/{p}").exists() for p in pids):
            return True
        time.sleep(0.2)
    return False


def _texts(articles: list[dict[str, Any]]) -> list[str]:
    return [a["content"][:1500] for a in articles[:40]]


def test_outage_mid_ingest_loses_nothing(
    forwarder: TcpForwarder, es_client: Elasticsearch, tmp_path: Path, fault_index: str,
    zh_articles: list[dict[str, Any]],
) -> None:
    with ServiceProcess(forwarder.url, tmp_path / "data") as svc:
        driver = IngestDriver(svc.url, {}, fault_index, _texts(zh_articles))
        driver.start()
        try:
            driver.wait_for(201, 40)  # indexed directly
            forwarder.cut()
            driver.wait_for(202, 60)  # acknowledged as queued while the cluster is unreachable
            assert httpx.get(f"{svc.url}/readyz").status_code == 503
            mark = len(driver.history)
            forwarder.restore()
            driver.wait_for(201, 40, timeout=120)  # direct again once the spool has drained
        finally:
            driver.stop()
        # After the cluster came back: items queued behind the spool (how many depends on when the
        # replayer's next probe lands), then written directly once it had drained, never queued again.
        after = driver.since(mark)
        first_direct = after.index(201)
        assert set(after[:first_direct]) <= {202} and set(after[first_direct:]) == {201}, after
        wait_spool_empty(svc.url, {})
        metrics = httpx.get(f"{svc.url}/metrics").text
        assert "fpi_replayed_operations_total" in metrics
        # graceful shutdown: uvicorn finishes, then re-raises SIGTERM as its exit status
        assert svc.stop() in (0, -signal.SIGTERM)
        assert "Traceback" not in svc.log_text()
    assert driver.statuses[202] >= 61
    assert_exactly_once(es_client, fault_index, driver.acked)


def test_sigkill_mid_ingest_loses_nothing(
    forwarder: TcpForwarder, es_client: Elasticsearch, tmp_path: Path, fault_index: str,
    zh_articles: list[dict[str, Any]],
) -> None:
    svc = ServiceProcess(forwarder.url, tmp_path / "data", processes=2).start()  # worker processes
    driver = IngestDriver(svc.url, {}, fault_index, _texts(zh_articles))
    driver.start()
    try:
        driver.wait_for(201, 30)
        forwarder.cut()
        driver.wait_for(202, 60)  # some acknowledged documents exist only in the spool now
        workers = svc.children()
        svc.kill9()  # mid-ingest: the driver has requests in flight
        forwarder.restore()
        assert workers and _all_gone(workers, timeout=15), "fingerprint workers outlived the service"
    finally:
        driver.stop()
    assert driver.statuses[202] >= 60
    with ServiceProcess(forwarder.url, tmp_path / "data", port=svc.port) as again:
        wait_spool_empty(again.url, {})
        # the store reopened cleanly and still knows the documents decided before the kill
        first = next(iter(driver.acked.values()))
        r = httpx.get(f"{again.url}/v1/similar/{first}", params={"index": fault_index})
        assert r.status_code == 200, r.text
    assert_exactly_once(es_client, fault_index, driver.acked)


def test_sigterm_finishes_requests_in_flight(
    es_url: str, tmp_path: Path, zh_articles: list[dict[str, Any]], fault_index: str
) -> None:
    svc = ServiceProcess(es_url, tmp_path / "data").start()
    docs = [{"id": f"g{i}", "content": a["content"]} for i, a in enumerate(zh_articles[:300])]
    result: list[httpx.Response] = []

    def post() -> None:
        result.append(httpx.post(f"{svc.url}/v1/ingest", timeout=120,
                                 json={"documents": docs, "index": True, "index_name": fault_index}))

    sender = threading.Thread(target=post)
    sender.start()
    time.sleep(1.0)  # the batch is being fingerprinted
    assert svc.proc is not None
    svc.proc.send_signal(signal.SIGTERM)
    sender.join(timeout=120)
    assert result and result[0].status_code == 200, result
    assert {r["index"]["status"] for r in result[0].json()["results"]} == {201}
    assert svc.proc.wait(timeout=60) in (0, -signal.SIGTERM)
