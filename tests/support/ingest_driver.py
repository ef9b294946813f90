"""A client that keeps ingesting through the service and remembers what was acknowledged.

Batches alternate between ``/v1/ingest`` (with ``index: true``) and the ``_bulk`` proxy (half of those
documents without ``_id``, so the proxy assigns one). Every document carries a unique ``seq``. A document
counts as acknowledged when its request returned 200 and its item a 2xx status (201 indexed, 202 queued;
the proxy answers a queued item 201 ``created`` marked ``fingerprint_indexer.queued``, counted here as 202).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
from elasticsearch import Elasticsearch


class IngestDriver(threading.Thread):
    def __init__(self, base_url: str, headers: dict[str, str], index: str, texts: list[str],
                 batch: int = 10) -> None:
        super().__init__(daemon=True)
        self.base_url, self.headers, self.index = base_url, headers, index
        self.texts, self.batch = texts, batch
        self.acked: dict[int, str] = {}
        self.statuses: Counter[int] = Counter()
        #: every acknowledged or refused item's status, in the order the answers came
        self.history: list[int] = []
        self.failed_requests = 0
        self.batches = 0
        self._seq = 0
        self._stop_flag = threading.Event()
        self.lock = threading.Lock()

    def _docs(self) -> list[dict[str, Any]]:
        out = []
        for _ in range(self.batch):
            seq = self._seq
            self._seq += 1
            text = self.texts[seq % len(self.texts)]
            out.append({"id": f"doc-{seq}", "seq": seq, "content": f"{text} 第{seq}号"})
        return out

    def _send(self, client: httpx.Client, docs: list[dict[str, Any]]) -> list[tuple[int, str, int]]:
        """(seq, id, item status) of each document of a 200 answer."""
        if self.batches % 2 == 0:
            r = client.post("/v1/ingest", json={"documents": docs, "index": True, "index_name": self.index})
            if r.status_code != 200:
                return []
            return [(d["seq"], res["id"], res["index"]["status"])
                    for d, res in zip(docs, r.json()["results"], strict=True)]
        lines = []
        for i, d in enumerate(docs):
            meta = {"_index": self.index} if i % 2 else {"_index": self.index, "_id": d["id"]}
            lines += [json.dumps({"index": meta}), json.dumps({k: v for k, v in d.items() if k != "id"})]
        r = client.post("/_bulk", content=("\n".join(lines) + "\n").encode(),
                        headers={"content-type": "application/x-ndjson"})
        if r.status_code != 200:
            return []
        items = [it["index"] for it in r.json()["items"]]
        return [(d["seq"], it["_id"], 202 if (it.get("fingerprint_indexer") or {}).get("queued")
                 else it["status"]) for d, it in zip(docs, items, strict=True)]

    def move_to(self, base_url: str) -> None:
        """Send the next requests to another service (as a load balancer does when one dies)."""
        self.base_url = base_url

    def run(self) -> None:
        client = httpx.Client(base_url=self.base_url, headers=self.headers, timeout=30)
        with contextlib.ExitStack() as stack:
            stack.callback(lambda: client.close())
            while not self._stop_flag.is_set():
                if str(client.base_url).rstrip("/") != self.base_url.rstrip("/"):
                    client.close()
                    client = httpx.Client(base_url=self.base_url, headers=self.headers, timeout=30)
                docs = self._docs()
                try:
                    results = self._send(client, docs)
                except httpx.HTTPError:
                    results = []
                with self.lock:
                    self.batches += 1
                    if not results:
                        self.failed_requests += 1
                    for seq, doc_id, status in results:
                        self.statuses[status] += 1
                        self.history.append(status)
                        if 200 <= status < 300:
                            self.acked[seq] = doc_id
                if not results:
                    time.sleep(0.2)

    def wait_for(self, status: int, n: int, timeout: float = 60) -> None:
        """Until at least ``n`` more items were answered with ``status``."""
        start = self.statuses[status]
        deadline = time.monotonic() + timeout
        while self.statuses[status] < start + n:
            if time.monotonic() > deadline:
                raise AssertionError(f"no {n} items with status {status} within {timeout}s: {self.statuses}")
            time.sleep(0.05)

    def since(self, mark: int) -> list[int]:
        """The items' statuses answered after ``len(self.history)`` was ``mark``."""
        with self.lock:
            return self.history[mark:]

    def stop(self) -> None:
        self._stop_flag.set()
        self.join(timeout=60)


def wait_checks(base_url: str, headers: dict[str, str], until: Callable[[dict[str, Any]], bool], what: str,
                timeout: float = 180) -> dict[str, Any]:  # fmt: skip
    """The service's ``/readyz`` checks once ``until`` holds of them (polled; the readiness of a service
    is what it last saw, so a test waits for it); AssertionError naming ``what`` and the last answer."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = httpx.get(f"{base_url}/readyz", headers=headers, timeout=5).json()
            if until(last["checks"]):
                return dict(last["checks"])
        except httpx.HTTPError as exc:
            last = exc
        time.sleep(0.5)
    raise AssertionError(f"{what} not seen within {timeout}s: {last}")


def wait_spool_empty(base_url: str, headers: dict[str, str], timeout: float = 180) -> None:
    wait_checks(base_url, headers, lambda c: c["spool_depth"] == 0 and bool(c["elasticsearch"]),
                "the spool drained", timeout)


def assert_exactly_once(es: Elasticsearch, index: str, acked: dict[int, str]) -> None:
    """Every acknowledged document is in the index once, under its acknowledged id; no seq twice."""
    es.indices.refresh(index=index)
    found: dict[int, list[str]] = {}
    resp = es.search(index=index, size=10_000, source=["seq"], query={"match_all": {}})
    for h in resp["hits"]["hits"]:
        found.setdefault(int(h["_source"]["seq"]), []).append(h["_id"])
    assert len(resp["hits"]["hits"]) < 10_000, "test index too large for one page"
    missing = sorted(s for s in acked if s not in found)
    assert not missing, f"{len(missing)} acknowledged documents missing, e.g. {missing[:10]}"
    twice = {s: ids for s, ids in found.items() if len(ids) > 1}
    assert not twice, f"documents indexed more than once: {dict(list(twice.items())[:5])}"
    wrong = {s: (found[s][0], i) for s, i in acked.items() if found[s][0] != i}
    assert not wrong, f"documents under another id than acknowledged: {dict(list(wrong.items())[:5])}"
