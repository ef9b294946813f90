"""Sidecar faults, each reproduced against the real node: a write Elasticsearch keeps refusing, slow
clients, a full spool disk, ids with ``/`` on the look-up routes, the write timeout."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlparse

import httpx
import pytest
from elasticsearch import Elasticsearch
from support.ingest_driver import wait_spool_empty
from support.service import ServiceProcess
from support.tcp_forwarder import TcpForwarder

from fingerprint_indexer.sidecar.es import EsClient
from fingerprint_indexer.sidecar.settings import EsSettings

pytestmark = [pytest.mark.elasticsearch]

TEXTS = [
    "市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温，最低气温将降至零下五度，请市民注意防寒保暖。",
    "本市地铁三号线延长线今天开通试运营，沿线新增八座车站，早晚高峰行车间隔缩短至四分钟，方便市民出行。",
    "市教育局公布今年中考改革方案，体育成绩分值提高到七十分，考试科目和录取办法同时调整，明年起实施。",
    "国家统计局今天发布数据，上月全国居民消费价格同比上涨百分之二，其中食品价格上涨较多，能源价格回落。",
    "省博物馆新馆今天正式开放，展出文物三千余件，首次公开展出的青铜器引来大批观众，周末需提前预约参观。",
]


@pytest.fixture
def two_indices(es_client: Elasticsearch) -> Iterator[tuple[str, str]]:
    stem = uuid.uuid4().hex[:10]
    names = (f"fpi-test-poison-{stem}", f"fpi-test-behind-{stem}")
    yield names
    for name in names:
        with contextlib.suppress(Exception):
            es_client.indices.put_settings(index=name, settings={"index.blocks.read_only_allow_delete": None})
        es_client.indices.delete(index=name, ignore_unavailable=True)


def _metric(url: str, name: str) -> float:
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def test_poison_write_is_parked_and_the_writes_behind_it_flow_on(
    es_url: str, es_client: Elasticsearch, tmp_path: Path, two_indices: tuple[str, str]
) -> None:
    """#17.1: Elasticsearch refuses one document every time with a per-item 429 (its index carries the
    flood-stage read-only-allow-delete block); the write is acknowledged (kept in the spool), retried a
    bounded number of times, then parked with id and reason, and the writes behind it reach
    Elasticsearch."""
    poison_index, behind = two_indices
    with ServiceProcess(es_url, tmp_path / "data", "--replay-tries", "3") as svc:
        client = Elasticsearch(svc.url, request_timeout=60)
        client.index(index=poison_index, id="first", document={"content": TEXTS[0]})
        es_client.indices.put_settings(index=poison_index,
                                       settings={"index.blocks.read_only_allow_delete": True})
        r = client.index(index=poison_index, id="news/poison", document={"content": TEXTS[1]})
        assert (r["result"], r["fingerprint_indexer"]["queued"]) == ("created", True)
        ops = []
        for i, text in enumerate(TEXTS[2:]):
            ops += [{"index": {"_index": behind, "_id": f"b{i}"}}, {"content": text}]
        resp = client.bulk(operations=ops)
        assert not resp["errors"]
        assert all(next(iter(it.values()))["fingerprint_indexer"]["queued"] for it in resp["items"])
        wait_spool_empty(svc.url, {}, timeout=120)
        es_client.indices.refresh(index=behind)
        assert es_client.count(index=behind)["count"] == len(TEXTS) - 2  # the writes behind it went on
        rejected = (tmp_path / "data" / "spool" / "rejected.ndjson").read_text()
        rows = [json.loads(x) for x in rejected.splitlines()]
        assert [(r["index"], r["id"], r["status"], r["parked_after_tries"]) for r in rows] == [
            (poison_index, "news/poison", 429, 3)]
        assert rows[0]["error"]["type"] == "cluster_block_exception"
        assert TEXTS[1][:20] not in json.dumps(rows, ensure_ascii=False)  # no bodies
        assert _metric(svc.url, "fpi_parked_operations_total") == 1.0
        ready = httpx.get(f"{svc.url}/readyz").json()
        assert ready["status"] == "ready"
        assert ready["checks"]["parked"] == 1
        assert ready["checks"]["last_parked"]["id"] == "news/poison"
        assert "cluster_block_exception" in ready["checks"]["last_parked"]["reason"]
        client.close()


def test_spool_waiting_reason_is_shown_while_a_write_is_retried(
    es_url: str, es_client: Elasticsearch, tmp_path: Path, two_indices: tuple[str, str]
) -> None:
    poison_index, _ = two_indices
    with ServiceProcess(es_url, tmp_path / "data", "--replay-tries", "1000") as svc:
        client = Elasticsearch(svc.url, request_timeout=60)
        client.index(index=poison_index, id="first", document={"content": TEXTS[0]})
        es_client.indices.put_settings(index=poison_index,
                                       settings={"index.blocks.read_only_allow_delete": True})
        client.index(index=poison_index, id="p", document={"content": TEXTS[1]})
        deadline = time.monotonic() + 30
        checks: dict[str, object] = {}
        while time.monotonic() < deadline and "spool_waiting" not in checks:
            checks = httpx.get(f"{svc.url}/readyz").json()["checks"]
            time.sleep(0.2)
        assert "429" in str(checks.get("spool_waiting")), checks
        es_client.indices.put_settings(index=poison_index,
                                       settings={"index.blocks.read_only_allow_delete": None})
        wait_spool_empty(svc.url, {}, timeout=120)  # applied once the block is lifted: nothing parked
        assert es_client.get(index=poison_index, id="p")["_source"]["decision"] == "new"
        assert not (tmp_path / "data" / "spool" / "rejected.ndjson").exists()
        client.close()


def test_es_timeout_governs_writes() -> None:
    """#17.1: the write timeout is ``--es-timeout`` (it was fixed at 10 s)."""
    client = EsClient(EsSettings("http://127.0.0.1:9", timeout_s=42.0))
    assert client.write_timeout.read == 42.0 and client.write_timeout.write == 42.0


def test_similar_and_related_address_ids_with_slashes(service: ServiceProcess, svc_index: str) -> None:
    """#17.7: ``/v1/similar/{id}`` and ``/v1/related/{id}`` take ids containing ``/``."""
    client = Elasticsearch(service.url, api_key=service.api_key, request_timeout=60)
    client.index(index=svc_index, id="2024/06/a", document={"title": "降温", "content": TEXTS[0]},
                 refresh=True)
    client.index(index=svc_index, id="2024/06/b", document={"content": TEXTS[0] + "转载。"}, refresh=True)
    client.close()
    h = service.headers()
    for path in (quote("2024/06/a", safe=""), "2024/06/a"):
        r = httpx.get(f"{service.url}/v1/similar/{path}", params={"index": svc_index}, headers=h)
        assert r.status_code == 200, r.text
        assert r.json()["id"] == "2024/06/a" and [m["id"] for m in r.json()["matches"]] == ["2024/06/b"]
        r = httpx.get(f"{service.url}/v1/related/{path}", params={"index": svc_index}, headers=h)
        assert r.status_code == 200, r.text
        assert [d["id"] for d in r.json()["duplicates"]] == ["2024/06/b"]
    r = httpx.get(f"{service.url}/v1/related/{quote('no/such', safe='')}", params={"index": svc_index},
                  headers=h)
    assert r.status_code == 404


def test_related_passes_on_elasticsearch_refusals(service: ServiceProcess) -> None:
    """An Elasticsearch 4xx on the look-up is the caller's (here: the index does not exist), not a 503."""
    r = httpx.get(f"{service.url}/v1/related/x", params={"index": f"fpi-test-none-{uuid.uuid4().hex[:8]}"},
                  headers=service.headers())
    assert r.status_code == 404, r.text


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes ``sock`` within ``seconds`` (reads EOF or a reset)."""
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:
        return True
    return True


def test_slow_clients_are_closed(es_url: str, tmp_path: Path) -> None:
    """#17.13: connections that trickle their headers (with or without a key) or stall their body are
    closed after the timeouts, while other clients are served."""
    key = "k" * 32
    with ServiceProcess(es_url, tmp_path / "data", "--header-timeout", "1", "--body-timeout", "1",
                        api_key=key) as svc:
        slow = []
        for i in range(60):
            s = socket.create_connection(("127.0.0.1", svc.port))
            head = b"POST /_bulk HTTP/1.1\r\nHost: x\r\n"
            head += f"X-API-Key: {key}\r\n".encode() if i % 2 else b""
            s.sendall(head)  # never finishes the headers
            slow.append(s)
        bodies = []
        for _ in range(10):
            s = socket.create_connection(("127.0.0.1", svc.port))
            s.sendall(f"POST /_bulk HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\n"
                      "Content-Type: application/x-ndjson\r\nContent-Length: 1000\r\n\r\n"
                      '{"index":'.encode())  # the body stalls
            bodies.append(s)
        start = time.monotonic()
        for _ in range(6):  # a trickle keeps no connection alive
            for s in slow[:10]:
                with contextlib.suppress(OSError):
                    s.sendall(b"X")
            time.sleep(0.2)
        assert httpx.get(f"{svc.url}/healthz", timeout=5).status_code == 200
        assert all(_closed_within(s, 10) for s in slow)
        answers = []
        for s in bodies:
            s.settimeout(10)
            data = b""
            with contextlib.suppress(OSError):
                while chunk := s.recv(4096):
                    data += chunk
            answers.append(data)
        assert all(a.startswith(b"HTTP/1.1 408") for a in answers), answers[:2]
        assert time.monotonic() - start < 15
        for s in slow + bodies:
            s.close()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounting a tmpfs needs root")
def test_full_spool_disk_is_503_and_keeps_nothing_half_written(
    es_url: str, es_client: Elasticsearch, tmp_path: Path, svc_index: str
) -> None:
    """A spool on a full disk (a real 1 MB tmpfs) answers 503 ``spool_unavailable`` (not ``spool_full``
    429), acknowledges nothing, and spools again once there is room; the replay applies exactly what was
    acknowledged."""
    u = urlparse(es_url)
    fwd = TcpForwarder(u.hostname or "127.0.0.1", u.port or 9200)
    spool = tmp_path / "data" / "spool"
    spool.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(spool)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:  # e.g. a container without the privilege to mount
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        with ServiceProcess(fwd.url, tmp_path / "data") as svc:
            client = Elasticsearch(svc.url, request_timeout=60, max_retries=0)
            client.index(index=svc_index, id="up", document={"content": TEXTS[0]})
            fwd.cut()
            filler = spool / "filler"
            with open(filler, "wb") as f, contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            lines = ({"index": {"_index": svc_index, "_id": "lost"}}, {"content": TEXTS[1] * 40})
            body = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
            r = httpx.post(f"{svc.url}/_bulk", content=body.encode(),
                           headers={"content-type": "application/x-ndjson"})
            assert r.status_code == 503, r.text
            assert r.json()["error"]["type"] == "spool_unavailable"
            filler.unlink()
            r2 = client.index(index=svc_index, id="kept", document={"content": TEXTS[2]})
            assert r2["fingerprint_indexer"]["queued"] is True
            fwd.restore()
            wait_spool_empty(svc.url, {}, timeout=120)
            es_client.indices.refresh(index=svc_index)
            hits = es_client.search(index=svc_index, query={"match_all": {}})["hits"]["hits"]
            ids = {h["_id"] for h in hits}
            assert ids == {"up", "kept"}
            client.close()
    finally:
        fwd.cut()
        subprocess.run(["umount", "-l", str(spool)], check=False)


def test_replayed_write_refused_for_its_document_is_listed_with_its_id(
    es_url: str, es_client: Elasticsearch, tmp_path: Path, svc_index: str
) -> None:
    """#16 Deliver 3: of the writes acknowledged during an outage, the one Elasticsearch refuses for the
    document itself (a mapping error) goes to rejected.ndjson with its id; the others are applied."""
    u = urlparse(es_url)
    fwd = TcpForwarder(u.hostname or "127.0.0.1", u.port or 9200)
    try:
        with ServiceProcess(fwd.url, tmp_path / "data") as svc:
            client = Elasticsearch(svc.url, request_timeout=60)
            client.index(index=svc_index, id="typed", document={"content": TEXTS[0], "n": 1})
            fwd.cut()
            resp = client.bulk(operations=[
                {"index": {"_index": svc_index, "_id": "bad/n"}}, {"content": TEXTS[1], "n": "not a number"},
                {"index": {"_index": svc_index, "_id": "good"}}, {"content": TEXTS[2], "n": 2}])
            assert not resp["errors"]
            fwd.restore()
            wait_spool_empty(svc.url, {}, timeout=120)
            rows = [json.loads(x) for x in
                    (tmp_path / "data" / "spool" / "rejected.ndjson").read_text().splitlines()]
            assert [(r["id"], r["status"]) for r in rows] == [("bad/n", 400)]
            assert "parked_after_tries" not in rows[0]
            assert _metric(svc.url, "fpi_rejected_operations_total") == 1.0
            assert es_client.get(index=svc_index, id="good")["_source"]["n"] == 2
            client.close()
    finally:
        fwd.cut()
