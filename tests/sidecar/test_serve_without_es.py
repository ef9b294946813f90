"""``serve`` with no ``--es`` and no ``ES_URL``: the real service on its embedded stores alone meets the
decision contract (tests/support/decision_contract.py) through ``/v1/ingest``, serves a store ``dedupe``
wrote, and answers the Elasticsearch routes with a 501 naming the flag."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from support.decision_contract import CASES, DecisionStore, OpenStore, item
from support.service import ServiceProcess
from support.synthetic_news import make_store

from fingerprint_indexer.documents import Document
from fingerprint_indexer.engine.rules import Keep
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintResult


class IngestStore:
    """One fresh index of a service without Elasticsearch, decided through ``/v1/ingest``."""

    def __init__(self, svc: ServiceProcess, index: str) -> None:
        self.http = httpx.Client(base_url=svc.url, timeout=120)
        self.index = index

    def decide(self, batch: Sequence[tuple[Document, FingerprintResult]]) -> list[dict[str, Any]]:
        docs = [{"id": d.id, "title": d.title, "content": d.content, "published_at": d.published_at}
                for d, _ in batch]
        r = self.http.post("/v1/ingest", json={"documents": docs, "index_name": self.index})
        assert r.status_code == 200, r.text
        out = []
        for res in r.json()["results"]:
            assert res.pop("index") is None and "fingerprint_hex" in res.pop("fields")
            # the API's model answers every field; Decision.to_dict leaves out those it does not set
            for key, unset in (("degenerate", False), ("replaces", None), ("pictures", None)):
                if key in res and res[key] == unset:
                    del res[key]
            out.append(res)
        return out

    def stored(self, doc_id: str) -> dict[str, Any]:
        r = self.http.get("/v1/documents/" + quote(doc_id, safe=""), params={"index": self.index})
        assert r.status_code == 200, r.text
        return {k: r.json()[k] for k in ("decision", "duplicate_of", "cluster_id")}


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ServiceProcess]]:
    """One service without Elasticsearch per keep policy, started when first asked for."""
    started: dict[str, ServiceProcess] = {}
    root = tmp_path_factory.mktemp("no-es")

    class Lazy(dict[str, ServiceProcess]):
        def __missing__(self, keep: str) -> ServiceProcess:
            svc = ServiceProcess(None, root / keep, "--keep", keep).start()
            started[keep] = self[keep] = svc
            return svc

    yield Lazy()
    for svc in started.values():
        svc.stop()


@pytest.fixture
def over_http(services: dict[str, ServiceProcess]) -> Iterator[OpenStore]:
    opened: list[IngestStore] = []

    def open_store(keep: Keep, name: str) -> DecisionStore:
        opened.append(IngestStore(services[keep], f"contract-{name}-{uuid.uuid4().hex[:8]}"))
        return opened[-1]

    yield open_store
    for store in opened:
        store.http.close()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_serve_without_elasticsearch_meets_the_contract(case: Any, over_http: OpenStore) -> None:
    case(over_http)


def test_elasticsearch_routes_answer_501_naming_the_flag(services: dict[str, ServiceProcess]) -> None:
    svc = services["first"]
    with httpx.Client(base_url=svc.url, timeout=60) as http:
        doc = {"id": "a/b c", "content": item("x", "市气象台今天发布消息。")[0].content}
        r = http.post("/v1/ingest", json={"documents": [doc], "index": True})
        assert r.status_code == 501, r.text
        err = r.json()["error"]
        assert err["type"] == "elasticsearch_not_configured" and "--es" in err["reason"]
        for method, path in (("POST", "/_bulk"), ("PUT", "/news/_doc/1"), ("GET", "/news/_search")):
            r = http.request(method, path, content=b"{}", headers={"Content-Type": "application/json"})
            assert r.status_code == 501 and "--es" in r.json()["error"]["reason"], (path, r.text)
        r = http.post("/v1/similar", json={"image": "aGVsbG8="})
        assert r.status_code in (400, 501)
        ready = http.get("/readyz").json()
        assert ready["status"] == "ready" and ready["checks"]["elasticsearch"] == "not configured"
        assert "fpi_documents_total" in http.get("/metrics").text


def test_serve_store_adds_to_a_store_dedupe_wrote(tmp_path: Path) -> None:
    """``serve --store`` on a store ``dedupe`` made: the store is the default index, a copy sent to
    ``/v1/ingest`` joins the cluster dedupe founded, and the page's routes read it."""
    store, _, docs = make_store(tmp_path / "made", docs=None)
    with ServiceProcess(None, store) as svc, httpx.Client(base_url=svc.url, timeout=60) as http:
        late = {"id": "late copy/1", "content": docs[7]["content"]}
        r = http.post("/v1/ingest", json={"documents": [late]})
        assert r.status_code == 200, r.text
        [res] = r.json()["results"]
        assert res["decision"] == "exact_duplicate" and res["duplicate_of"] == docs[7]["id"]
        cl = http.get("/v1/clusters/" + quote(res["cluster_id"], safe="")).json()
        assert {m["id"] for m in cl["members"]} == {docs[7]["id"], "late copy/1"}
        assert http.get("/v1/overview").json()["documents"] == len(docs) + 1
        other = {"documents": [{"id": "x", "content": "今天"}], "index_name": "other"}
        r = http.post("/v1/ingest", json=other)
        assert r.status_code == 404 and "one store" in r.json()["error"]["reason"]


def test_a_store_being_written_is_explored_but_not_served_for_writes(tmp_path: Path) -> None:
    """While a writer holds the store's lock, ``explore`` reads it (a private snapshot) and ``serve
    --store`` stops at once with one line saying the store is locked."""
    import os
    import subprocess
    import sys

    from fingerprint_indexer.store.embedded import EmbeddedStore

    store, _, docs = make_store(tmp_path / "made")
    env = {k: v for k, v in os.environ.items() if k != "ES_URL"}
    with EmbeddedStore(store):  # the writer, as a running dedupe would hold it
        r = subprocess.run([sys.executable, "-m", "fingerprint_indexer.cli.main", "serve", "--store",
                            str(store), "--port", "0"], capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 1 and "locked" in r.stderr and "Traceback" not in r.stderr, r.stderr
        with ServiceProcess(None, store, command="explore") as svc:
            assert httpx.get(svc.url + "/v1/overview", timeout=60).json()["documents"] == len(docs)
