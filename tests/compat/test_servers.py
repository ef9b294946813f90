"""The compatibility suite: the CLI, the sidecar and its ``_bulk`` proxy against every supported server.

Each server is a real node from ``scripts/es-local`` (started once per session and server; the 9.x node is
the main suite's). Documents are inspected over plain REST so the checks do not depend on the client under
test; the proxy is driven by the server's own official Python client.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from support.corpus import ZH_NEWS, iter_records
from support.es_node import MAIN_DISTRIBUTION, local_node
from support.service import ServiceProcess

from fingerprint_indexer.es.connection import connect
from fingerprint_indexer.es.servers import Server, server_of
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.sidecar.es import EsClient
from fingerprint_indexer.sidecar.settings import EsSettings
from fingerprint_indexer.verification import Evidence

pytestmark = [pytest.mark.compat, pytest.mark.elasticsearch, pytest.mark.corpus]
DISTRIBUTIONS = ["elasticsearch:8.19.0", "opensearch:2.19.1", "opensearch:3.5.0", MAIN_DISTRIBUTION]
ES_CLI = "from fingerprint_indexer.cli.es_commands import es_group; es_group()"
#: The official 8.x client cannot share an environment with the 9.x one (each pins its own
#: elastic-transport major), so it is installed on its own and run in a subprocess.
ES8_CLIENT = ("elasticsearch8>=8.19,<9", "elastic-transport>=8.15,<9")


@pytest.fixture(scope="session", params=DISTRIBUTIONS)
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(distribution, URL) of a running node of each supported server."""
    dist = str(request.param)
    if os.environ.get("ES_URL"):
        pytest.skip("ES_URL points at one external cluster; the compatibility suite runs local nodes")
    if dist == MAIN_DISTRIBUTION:
        yield dist, str(request.getfixturevalue("es_url"))
        return
    with local_node(dist) as url:
        yield dist, url


def rest(url: str, method: str, path: str, **kw: Any) -> Any:
    r = httpx.request(method, url + path, timeout=60, **kw)
    assert r.status_code < 300, r.text
    return r.json()


def run(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ES_")}
    env["ES_URL"] = url
    return subprocess.run([sys.executable, "-c", ES_CLI, *args], capture_output=True, text=True, timeout=600,
                          env=env, stdin=subprocess.DEVNULL)  # fmt: skip


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def articles() -> list[dict[str, Any]]:
    """80 real articles, then an exact and a prefixed (re-posted) copy of the first."""
    recs = [r for r in iter_records(ZH_NEWS) if len(r["content"]) > 500][:80]
    first = recs[0]
    near = dict(first, id="copy-near", content="【转载】" + first["content"])
    return [*recs, dict(first, id="copy-exact"), near]


@pytest.fixture
def index_name(server: tuple[str, str]) -> Iterator[str]:
    name = f"fpi-compat-{uuid.uuid4().hex[:10]}"
    yield name
    httpx.delete(f"{server[1]}/{name},{name}-*", params={"ignore_unavailable": "true"}, timeout=60)


def test_the_server_is_detected_at_connect(server: tuple[str, str]) -> None:
    dist, url = server
    client = connect(url)
    try:
        found = server_of(client)
        assert f"{found.kind}:{found.version}" == dist
        assert client.cluster.health()["status"] in ("green", "yellow")
    finally:
        client.close()


def test_the_sidecar_identifies_the_server_when_it_first_answers(server: tuple[str, str]) -> None:
    dist, url = server

    async def probe() -> tuple[bool, Server | None]:
        client = EsClient(EsSettings(url))
        try:
            return await client.ping(), client.server
        finally:
            await client.close()

    ok, found = asyncio.run(probe())
    assert ok and found is not None and f"{found.kind}:{found.version}" == dist


def test_cli_setup_index_similar_related_reindex_dedupe(
    server: tuple[str, str], index_name: str, articles: list[dict[str, Any]], tmp_path: Path
) -> None:
    _, url = server
    news = tmp_path / "news.jsonl"
    news.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in articles))
    first = articles[0]["id"]

    assert lines(run(url, "setup", "--index", index_name).stdout)[0]["action"] == "created"
    indexed = run(url, "index", str(news), "--index", index_name, "--batch-size", "32")
    assert indexed.returncode == 0, indexed.stderr
    decisions = {d["id"]: d for d in lines(indexed.stdout)}
    assert decisions["copy-exact"]["decision"] == "exact_duplicate"
    assert decisions["copy-near"]["decision"] == "near_duplicate"
    assert decisions["copy-near"]["duplicate_of"] == first
    rest(url, "POST", f"/{index_name}/_refresh")
    assert rest(url, "GET", f"/{index_name}/_count")["count"] == len(articles)

    similar = run(url, "similar", "--index", index_name, "--id", first)
    assert similar.returncode == 0, similar.stderr
    assert {"copy-exact", "copy-near"} <= {d["id"] for d in lines(similar.stdout)}

    rel = run(url, "related", "--index", index_name, "--id", first, "--size", "3")
    assert rel.returncode == 0, rel.stderr
    assert {"copy-exact", "copy-near"} <= {n["id"] for n in lines(rel.stdout)[0]["near_duplicates"]}

    dedupe = run(url, "dedupe", "--index", index_name)  # composite aggregations, written back
    assert dedupe.returncode == 0, dedupe.stderr
    assert lines(dedupe.stdout)[0]["groups"] >= 1

    # reindex: documents written without fingerprints (by another indexer) get them in place (PIT scan)
    plain = f"{index_name}-plain"
    assert run(url, "setup", "--index", plain).returncode == 0
    bulk = "".join(json.dumps({"index": {"_index": plain, "_id": r["id"]}}) + "\n"
                   + json.dumps({"title": r.get("title"), "content": r["content"]}, ensure_ascii=False) + "\n"
                   for r in articles)  # fmt: skip
    rest(url, "POST", "/_bulk", params={"refresh": "true"}, content=bulk.encode(),
         headers={"content-type": "application/x-ndjson"})  # fmt: skip
    reindexed = run(url, "reindex", "--index", plain, "--processes", "1", "--no-progress",
                    "--checkpoint", str(tmp_path / "ckpt.json"))  # fmt: skip
    assert reindexed.returncode == 0, reindexed.stderr
    rest(url, "POST", f"/{plain}/_refresh")
    doc = rest(url, "GET", f"/{plain}/_doc/copy-near")["_source"]
    assert doc["fingerprint_hex"] and doc["duplicate_of"] == first


def test_pinned_snapshot_lookups(server: tuple[str, str], index_name: str) -> None:
    """Point-in-time: ES ``_pit`` and OpenSearch ``_search/point_in_time`` behind one ``pin``."""
    _, url = server
    client = connect(url)
    try:
        index = ElasticsearchIndex(client, index_name)
        index.add("a", 0x0123456789ABCDEF)
        index.refresh()
        index.pin("1m")
        index.add("b", 0x0123456789ABCDEE)
        index.refresh()
        probe = Evidence([0x0123456789ABCDEF])
        assert [m.doc_id for m in index.query_verified(probe, k=3)] == ["a"]  # the snapshot
        index.unpin()
        assert [m.doc_id for m in index.query_verified(probe, k=3)] == ["a", "b"]
        index.close()
    finally:
        client.close()


def test_api_keys_are_refused_on_opensearch_with_one_line(server: tuple[str, str]) -> None:
    dist, url = server
    if not dist.startswith("opensearch"):
        pytest.skip("Elasticsearch API keys need a secured cluster (covered by the TLS tests on 9.x)")
    env = {**os.environ, "ES_API_KEY": "abc"}
    res = subprocess.run([sys.executable, "-c", ES_CLI, "setup", "--es", url, "--index", "x"], env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "ES_USERNAME/ES_PASSWORD" in res.stderr


# --------------------------------------------------------------------------------------------- proxy
def _es8_client_dir() -> Path:
    """A directory holding the official 8.x client (installed once, from PyPI, on first use)."""
    target = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fingerprint_indexer" / "es8"
    probe = [sys.executable, "-c", "import elasticsearch8, elastic_transport; "
             "assert elastic_transport.__version__.startswith('8')"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(target)}
    if subprocess.run(probe, env=env, capture_output=True).returncode != 0:
        cmd = [sys.executable, "-m", "pip", "install", "-q", "--upgrade", "--target", str(target),
               *ES8_CLIENT]
        pip = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert pip.returncode == 0, pip.stderr
    return target


BULK_SCRIPT = """
import json, sys
url, index, docs = sys.argv[1], sys.argv[2], json.loads(sys.stdin.read())
ops = []
for d in docs:
    ops += [{"index": {"_index": index, "_id": d["id"]}}, {"title": d.get("title"), "content": d["content"]}]
if sys.argv[3] == "elasticsearch8":
    from elasticsearch8 import Elasticsearch as Client
elif sys.argv[3] == "elasticsearch":
    from elasticsearch import Elasticsearch as Client
else:
    from opensearchpy import OpenSearch as Client
client = Client(url)
resp = client.bulk(operations=ops, refresh=True) if sys.argv[3] != "opensearch" else client.bulk(body=ops,
    refresh=True)
print(json.dumps({"module": Client.__module__, "resp": dict(resp)}))
"""


def test_proxy_bulk_with_the_servers_own_client(
    server: tuple[str, str], index_name: str, articles: list[dict[str, Any]], tmp_path: Path
) -> None:
    dist, url = server
    kind, version = dist.split(":")
    client_kind = kind if kind == "opensearch" else "elasticsearch8" if version < "9" else "elasticsearch"
    env = dict(os.environ)
    if client_kind == "elasticsearch8":
        env["PYTHONPATH"] = str(_es8_client_dir())
    docs = articles[:20] + articles[-2:]
    with ServiceProcess(url, tmp_path / "svc", "--index", index_name) as svc:
        res = subprocess.run([sys.executable, "-c", BULK_SCRIPT, svc.url, index_name, client_kind],
                             input=json.dumps(docs), capture_output=True, text=True, timeout=300,
                             env=env)  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.splitlines()[-1])
    modules = {"elasticsearch8": "elasticsearch8", "elasticsearch": "elasticsearch",
               "opensearch": "opensearchpy"}
    assert out["module"].split(".")[0] == modules[client_kind]
    items = out["resp"]["items"]
    assert not out["resp"]["errors"] and len(items) == len(docs)
    near = rest(url, "GET", f"/{index_name}/_doc/copy-near")["_source"]
    assert near["decision"] == "near_duplicate" and near["duplicate_of"] == docs[0]["id"]
    other = rest(url, "GET", f"/{index_name}/_doc/{quote(docs[1]['id'], safe='')}")["_source"]
    assert other["decision"] == "new"
