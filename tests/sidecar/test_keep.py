"""``serve --keep longest``: a longer copy becomes its group's canonical, and Elasticsearch follows the store.

A real service process in front of the real local node: the earlier canonical's Elasticsearch document is
re-pointed (``duplicate_of``, ``distance``) through the proxy and through ``/v1/ingest``, the client's bulk
answer keeps one item per operation, the update survives an outage in the spool, and ``--keep first``
changes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest
from elasticsearch import Elasticsearch
from support.ingest_driver import wait_spool_empty
from support.service import ServiceProcess
from support.tcp_forwarder import TcpForwarder

from fingerprint_indexer.documents import Document
from fingerprint_indexer.pipeline import Pipeline

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]


def copies(article: dict[str, Any]) -> tuple[str, str, str]:
    """A real article cut to two thirds (short), in full (long), and cut to five sixths (mid)."""
    text = article["content"]
    return text[: len(text) * 2 // 3], text, text[: len(text) * 5 // 6]


@pytest.fixture(scope="module")
def longest(es_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """A service with ``--keep longest`` (no API key; loopback)."""
    data = tmp_path_factory.mktemp("keep") / "data"
    with ServiceProcess(es_url, data, "--keep", "longest") as svc:
        yield svc


@pytest.fixture
def proxied(longest: ServiceProcess) -> Iterator[Elasticsearch]:
    """The official client pointed at the ``--keep longest`` service."""
    client = Elasticsearch(longest.url, request_timeout=60)
    yield client
    client.close()


def _source(es: Elasticsearch, index: str, doc_id: str) -> dict[str, Any]:
    return dict(es.get(index=index, id=doc_id)["_source"])


def _ingest(url: str, index: str, docs: list[dict[str, Any]], write: bool = True,
            headers: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    r = httpx.post(f"{url}/v1/ingest", json={"documents": docs, "index": write, "index_name": index, **extra},
                   headers=headers or {}, timeout=120)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_the_copies_are_duplicates_the_longer_one_kept(
    tmp_path: Path, zh_articles: list[dict[str, Any]]
) -> None:
    """The pipeline itself calls the test's copies duplicates and keeps the longer one."""
    short, long_, mid = copies(zh_articles[200])
    with Pipeline(tmp_path, keep="longest") as pipe:
        out = list(pipe.process_many([Document(id="s", content=short), Document(id="l", content=long_),
                                      Document(id="m", content=mid)]))
    assert out[1].decision == "near_duplicate" and out[1].replaces == "s" and out[1].duplicate_of is None
    assert out[2].duplicate_of == "l"


def test_proxy_repoints_the_replaced_canonical(
    proxied: Elasticsearch, es_client: Elasticsearch, svc_index: str, zh_articles: list[dict[str, Any]]
) -> None:
    short, long_, mid = copies(zh_articles[200])
    other = zh_articles[201]["content"]
    r = proxied.index(index=svc_index, id="short", document={"content": short})  # the _doc API
    assert r["result"] == "created"
    ops: list[dict[str, Any]] = [{"index": {"_index": svc_index, "_id": "long"}}, {"content": long_},
                                 {"index": {"_index": svc_index, "_id": "other"}}, {"content": other}]
    resp = proxied.bulk(operations=ops)
    assert not resp["errors"]
    assert [(next(iter(it)), next(iter(it.values()))["_id"]) for it in resp["items"]] == \
        [("index", "long"), ("index", "other")]  # exactly one item per operation, no relink update
    summary = resp["items"][0]["index"]["fingerprint_indexer"]
    assert summary["replaces"] == "short" and summary["duplicate_of"] is None
    r = proxied.index(index=svc_index, id="mid", document={"content": mid})
    assert r["result"] == "created" and r["_id"] == "mid"
    es_client.indices.refresh(index=svc_index)
    s, lg, m = (_source(es_client, svc_index, i) for i in ("short", "long", "mid"))
    assert s["duplicate_of"] == "long" and s["distance"] == lg["distance"] == summary["distance"]
    assert s["decision"] == "new"  # the store keeps the replaced canonical's decision
    assert lg["duplicate_of"] is None and lg["decision"] == "near_duplicate"
    assert m["duplicate_of"] == "long"  # later copies point at the kept one
    assert _source(es_client, svc_index, "other")["duplicate_of"] is None


def test_ingest_repoints_the_replaced_canonical(
    longest: ServiceProcess, es_client: Elasticsearch, svc_index: str, zh_articles: list[dict[str, Any]]
) -> None:
    short, long_, _ = copies(zh_articles[210])
    first = _ingest(longest.url, svc_index, [{"id": "s1", "content": short}])
    assert "replaces" not in first["results"][0] or first["results"][0]["replaces"] is None
    out = _ingest(longest.url, svc_index, [{"id": "l1", "content": long_}])["results"][0]
    assert out["replaces"] == "s1" and out["duplicate_of"] is None and out["index"]["status"] == 201
    # both copies in one request: the update follows the write of the replaced one
    short2, long2, _ = copies(zh_articles[220])
    res = _ingest(longest.url, svc_index, [{"id": "s2", "content": short2}, {"id": "l2", "content": long2}])
    assert not res["errors"] and len(res["results"]) == 2
    assert res["results"][1]["replaces"] == "s2"
    es_client.indices.refresh(index=svc_index)
    assert _source(es_client, svc_index, "s1")["duplicate_of"] == "l1"
    assert _source(es_client, svc_index, "s1")["distance"] == out["distance"]
    assert _source(es_client, svc_index, "s2")["duplicate_of"] == "l2"
    assert _source(es_client, svc_index, "l2")["duplicate_of"] is None


def test_replaced_canonical_not_in_elasticsearch_is_no_error(
    longest: ServiceProcess, es_client: Elasticsearch, svc_index: str, zh_articles: list[dict[str, Any]]
) -> None:
    short, long_, _ = copies(zh_articles[230])
    _ingest(longest.url, svc_index, [{"id": "only-decided", "content": short}], write=False)
    res = _ingest(longest.url, svc_index, [{"id": "written", "content": long_}])
    assert not res["errors"] and res["results"][0]["replaces"] == "only-decided"
    assert res["results"][0]["index"]["status"] == 201
    es_client.indices.refresh(index=svc_index)
    assert not es_client.exists(index=svc_index, id="only-decided")  # not created by the update
    log = longest.log_text()
    assert "only-decided" in log and "not in Elasticsearch" in log
    assert short[:20] not in log and long_[:20] not in log  # no document bodies in the log


def test_skip_indexes_the_new_canonical_and_keeps_the_old(
    longest: ServiceProcess, es_client: Elasticsearch, svc_index: str, zh_articles: list[dict[str, Any]]
) -> None:
    short, long_, mid = copies(zh_articles[240])
    _ingest(longest.url, svc_index, [{"id": "ks", "content": short}], on_duplicate="skip")
    res = _ingest(longest.url, svc_index, [{"id": "kl", "content": long_}, {"id": "km", "content": mid}],
                  on_duplicate="skip")
    kl, km = res["results"]
    assert kl["replaces"] == "ks" and kl["index"]["status"] == 201  # the kept copy is indexed
    assert km["duplicate_of"] == "kl" and km["index"]["result"] == "skipped"
    es_client.indices.refresh(index=svc_index)
    assert _source(es_client, svc_index, "ks")["duplicate_of"] == "kl"  # kept in Elasticsearch, tagged
    assert not es_client.exists(index=svc_index, id="km")


def test_keep_first_changes_nothing(
    service: ServiceProcess, es_client: Elasticsearch, svc_index: str, zh_articles: list[dict[str, Any]]
) -> None:
    """The default service (``--keep first``): the earlier copy stays the canonical everywhere."""
    short, long_, _ = copies(zh_articles[250])
    client = Elasticsearch(service.url, api_key=service.api_key, request_timeout=60)
    try:
        client.index(index=svc_index, id="f-short", document={"content": short})
        resp = client.bulk(operations=[{"index": {"_index": svc_index, "_id": "f-long"}}, {"content": long_}])
    finally:
        client.close()
    assert len(resp["items"]) == 1
    summary = resp["items"][0]["index"]["fingerprint_indexer"]
    assert summary["duplicate_of"] == "f-short" and "replaces" not in summary
    res = _ingest(service.url, svc_index, [{"id": "f-long2", "content": long_ + "。"}],
                  headers=service.headers())["results"][0]
    assert res["duplicate_of"] == "f-short" and res["replaces"] is None
    es_client.indices.refresh(index=svc_index)
    assert _source(es_client, svc_index, "f-short")["duplicate_of"] is None
    assert _source(es_client, svc_index, "f-long")["duplicate_of"] == "f-short"


@pytest.mark.slow
def test_relink_is_spooled_during_an_outage_and_applied_after(
    es_url: str, es_client: Elasticsearch, tmp_path: Path, zh_articles: list[dict[str, Any]]
) -> None:
    u = urlparse(es_url)
    fwd = TcpForwarder(u.hostname or "127.0.0.1", u.port or 9200)
    index = f"fpi-test-keep-{uuid.uuid4().hex[:10]}"
    short, long_, _ = copies(zh_articles[260])
    ghost_short, ghost_long, _ = copies(zh_articles[270])
    try:
        with ServiceProcess(fwd.url, tmp_path / "data", "--keep", "longest") as svc:
            client = Elasticsearch(svc.url, request_timeout=60)
            ops: list[dict[str, Any]] = [{"index": {"_index": index, "_id": "o-long"}}, {"content": long_},
                                         {"index": {"_index": index, "_id": "o-ghost-long"}},
                                         {"content": ghost_long}]
            try:
                r = client.index(index=index, id="o-short", document={"content": short})
                assert r["result"] == "created"
                _ingest(svc.url, index, [{"id": "o-ghost", "content": ghost_short}], write=False)
                fwd.cut()
                resp = client.bulk(operations=ops)
            finally:
                client.close()
            statuses = [next(iter(it.values()))["status"] for it in resp["items"]]
            assert statuses == [201, 201]  # queued, answered as created; one item per operation
            assert all(next(iter(it.values()))["fingerprint_indexer"]["queued"] for it in resp["items"])
            assert resp["items"][0]["index"]["fingerprint_indexer"]["replaces"] == "o-short"
            assert resp["items"][1]["index"]["fingerprint_indexer"]["replaces"] == "o-ghost"
            es_client.indices.refresh(index=index)
            assert _source(es_client, index, "o-short")["duplicate_of"] is None  # not yet
            fwd.restore()
            wait_spool_empty(svc.url, {})
            es_client.indices.refresh(index=index)
            assert _source(es_client, index, "o-short")["duplicate_of"] == "o-long"
            assert _source(es_client, index, "o-long")["duplicate_of"] is None
            assert not es_client.exists(index=index, id="o-ghost")
            # the update of a canonical that was never indexed is no lost write
            rejected = tmp_path / "data" / "spool" / "rejected.ndjson"
            assert not rejected.exists() or not rejected.read_text().strip()
            metrics = httpx.get(f"{svc.url}/metrics").text
            assert "fpi_rejected_operations_total 0.0" in metrics.splitlines()
            assert "o-ghost" in svc.log_text() and "Traceback" not in svc.log_text()
    finally:
        fwd.cut()
        es_client.indices.delete(index=index, ignore_unavailable=True)
