"""The official Python, Node.js and Java clients drive the proxy against the real node (#16 Deliver 2).

Each client, configured exactly as for Elasticsearch but with the service's URL, sends real articles
(with planted exact and near copies; zh_news ids contain ``/``) through its bulk helpers and bulk API,
then single-document calls on an id with ``/``, a space and non-ASCII: index, update, a create that
draws a 409, a get that draws a 404, delete twice. Then the cluster is cut (a real TCP cut in front of
the node) and the client writes again: every answer must be accepted by the client, and once the cluster
is back each acknowledged document is in Elasticsearch exactly once, with its fingerprint fields.
The Node.js and Java clients are installed by the suite itself (support.clients), cached across runs.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from elasticsearch import AsyncElasticsearch, ConflictError, Elasticsearch, NotFoundError, helpers
from support.clients import java_driver, node_driver
from support.ingest_driver import wait_spool_empty
from support.service import ServiceProcess
from support.tcp_forwarder import TcpForwarder

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus, pytest.mark.timeout(900)]

KEY = "client-suite-key-" + "y" * 20
ODD = "with space/中文"


@pytest.fixture(scope="module")
def cut_service(es_url: str, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[tuple[ServiceProcess, TcpForwarder]]:
    """The service in front of a cuttable TCP forwarder in front of the node."""
    u = urlparse(es_url)
    fwd = TcpForwarder(u.hostname or "127.0.0.1", u.port or 9200)
    data = tmp_path_factory.mktemp("clients") / "data"
    try:
        with ServiceProcess(fwd.url, data, api_key=KEY) as svc:
            yield svc, fwd
    finally:
        fwd.cut()


@pytest.fixture
def index(svc_index: str) -> str:
    return svc_index


def corpus_docs(articles: list[dict[str, Any]], start: int, n: int = 16) -> list[dict[str, Any]]:
    """Real articles under their own ids (which contain ``/``), each fourth followed by an exact copy and
    a near copy; ``seq`` numbers them. The last one is for the single-document calls."""
    out: list[dict[str, Any]] = []
    for i, a in enumerate(articles[start:start + n]):
        out.append({"id": str(a["id"]), "title": a.get("title") or "", "content": a["content"]})
        if i % 4 == 0:
            out.append({"id": f"copy/{a['id']}", "title": "", "content": a["content"], "of": str(a["id"])})
            near = a["content"][:-30] + "（转载自本报）"
            out.append({"id": f"near/{a['id']}", "title": "", "content": near, "of": str(a["id"])})
    for seq, d in enumerate(out):
        d["seq"] = seq
    return out


def check_index(es: Elasticsearch, index: str, prefix: str, docs: list[dict[str, Any]]) -> None:
    """Every written document is there once, fingerprinted; planted copies point at their originals."""
    es.indices.refresh(index=index)
    hits = [h for h in es.search(index=index, size=1000, query={"match_all": {}})["hits"]["hits"]
            if h["_id"].startswith(prefix)]
    by_id = {h["_id"]: h["_source"] for h in hits}
    written = docs[:-1]
    assert len(hits) == len(written) == len(by_id), (len(hits), len(written))
    for d in written:
        src = by_id[prefix + d["id"]]
        assert src["seq"] == d["seq"] and len(src["fingerprint_hex"]) == 16
        if "of" in d:  # a planted copy and its original are linked (either way: concurrent helpers
            # such as parallel_bulk may deliver the copy first)
            original = by_id[prefix + d["of"]]
            assert prefix + d["of"] in (src["duplicate_of"], src["cluster_id"]) or \
                original["duplicate_of"] == prefix + d["id"], (d["id"], src, original["duplicate_of"])


def run_driver(cmd: list[str], url: str, index: str, phase: str, docs: list[dict[str, Any]],
               tmp_path: Path) -> dict[str, dict[str, Any]]:
    path = tmp_path / f"docs-{phase}.json"
    path.write_text(json.dumps(docs, ensure_ascii=False), encoding="utf-8")
    res = subprocess.run([*cmd, url, KEY, index, phase, str(path)], capture_output=True, text=True,
                         timeout=600, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, \
        f"driver failed ({res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-5000:]}"
    steps = {}
    for line in res.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            steps[row.pop("step")] = row
    return steps


def check_main_steps(steps: dict[str, dict[str, Any]], docs: list[dict[str, Any]]) -> None:
    half = (len(docs) - 1) // 2
    bulk_helper = steps.get("helpers.bulk") or steps["BulkIngester"]
    assert bulk_helper["successful"] == half and bulk_helper["failed"] == 0, bulk_helper
    assert not steps["bulk"]["errors"] and set(steps["bulk"]["statuses"]) == {201}, steps["bulk"]
    assert {r.lower() for r in steps["bulk"]["results"]} == {"created"}
    assert (steps["index"]["result"], steps["index"]["version"]) == ("created", 1)
    assert steps["update"]["result"] == "updated"
    assert steps["create-existing"]["status"] == 409
    assert steps["get-missing"]["status"] == 404
    assert steps["delete"]["result"] == "deleted"
    assert steps["delete-missing"]["status"] == 404


def check_outage_steps(steps: dict[str, dict[str, Any]], docs: list[dict[str, Any]]) -> None:
    half = (len(docs) - 1) // 2
    bulk_helper = steps.get("helpers.bulk") or steps["BulkIngester"]
    assert bulk_helper["successful"] == half and bulk_helper["failed"] == 0, bulk_helper
    assert not steps["bulk"]["errors"] and {r.lower() for r in steps["bulk"]["results"]} == {"created"}
    assert steps["index"]["result"] == "created"
    assert steps["index"].get("queued", True) is True  # the Java client keeps no unknown fields
    assert (steps["update"]["result"], steps["delete"]["result"]) == ("updated", "deleted")


def _outage(svc: ServiceProcess, fwd: TcpForwarder, es: Elasticsearch, index: str, prefix: str,
            docs: list[dict[str, Any]], write: Any) -> None:
    """Cut the cluster, let ``write`` send ``docs``, restore, and check exactly-once delivery."""
    fwd.cut()
    try:
        write()
    finally:
        fwd.restore()
    wait_spool_empty(svc.url, {}, timeout=180)
    check_index(es, index, prefix, [*docs[:-1], {**docs[-1], "id": "single"}, {"id": "_end"}])
    # queued in order: the update (no text) applied, the document indexed then deleted stays deleted
    assert es.get(index=index, id=f"{prefix}single")["_source"]["note"] == "kept"
    assert not es.exists(index=index, id=f"{prefix}extra")


@pytest.mark.runtimes  # node and npm, or a JDK and Maven
@pytest.mark.parametrize("client", ["node", "java"])
def test_official_client(client: str, cut_service: tuple[ServiceProcess, TcpForwarder],
                         es_client: Elasticsearch, zh_articles: list[dict[str, Any]], index: str,
                         tmp_path: Path) -> None:
    svc, fwd = cut_service
    cmd = node_driver() if client == "node" else java_driver()
    docs = corpus_docs(zh_articles, 100 if client == "node" else 140)
    steps = run_driver(cmd, svc.url, index, "main", docs, tmp_path)
    check_main_steps(steps, docs)
    check_index(es_client, index, f"{client}/", docs)
    out_docs = corpus_docs(zh_articles, 120 if client == "node" else 160, 8)
    result: dict[str, dict[str, Any]] = {}

    def write() -> None:
        result.update(run_driver(cmd, svc.url, index, "outage", out_docs, tmp_path))

    _outage(svc, fwd, es_client, index, f"{client}-out/", out_docs, write)
    check_outage_steps(result, out_docs)


def _python_actions(index: str, prefix: str, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"_index": index, "_id": prefix + d["id"], "title": d["title"], "content": d["content"],
             "seq": d["seq"]} for d in docs]


def test_official_python_client(cut_service: tuple[ServiceProcess, TcpForwarder], es_client: Elasticsearch,
                                zh_articles: list[dict[str, Any]], index: str) -> None:
    svc, fwd = cut_service
    client = Elasticsearch(svc.url, api_key=KEY, request_timeout=60, max_retries=0)
    docs = corpus_docs(zh_articles, 180)
    written = docs[:-1]
    third = len(written) // 3
    ok = [r for r, _ in [(ok, it) for ok, it in helpers.streaming_bulk(
        client, _python_actions(index, "py/", written[:third]), chunk_size=7, raise_on_error=False)] if r]
    assert len(ok) == third
    results = list(helpers.parallel_bulk(client, _python_actions(index, "py/", written[third:2 * third]),
                                         chunk_size=5, thread_count=2, raise_on_error=False))
    assert all(r for r, _ in results) and len(results) == third

    async def async_part(actions: list[dict[str, Any]]) -> tuple[int, Any]:
        aclient = AsyncElasticsearch(svc.url, api_key=KEY, request_timeout=60, node_class="httpxasync")
        try:
            return await helpers.async_bulk(aclient, actions, chunk_size=6)
        finally:
            await aclient.close()

    n, errors = asyncio.run(async_part(_python_actions(index, "py/", written[2 * third:])))
    assert n == len(written) - 2 * third and not errors
    check_index(es_client, index, "py/", docs)
    odd = f"py/{ODD}"
    r = client.index(index=index, id=odd, document={"content": docs[-1]["content"], "seq": -1})
    assert (r["result"], r["_version"], r.meta.status) == ("created", 1, 201)
    changed = {"content": docs[-1]["content"] + " 更新"}
    assert client.update(index=index, id=odd, doc=changed)["result"] == "updated"
    with pytest.raises(ConflictError):
        client.create(index=index, id=odd, document={"content": "x"})
    with pytest.raises(NotFoundError):
        client.get(index=index, id="py/missing")
    assert client.delete(index=index, id=odd)["result"] == "deleted"
    with pytest.raises(NotFoundError):
        client.delete(index=index, id=odd)
    out_docs = corpus_docs(zh_articles, 200, 8)

    def write() -> None:
        half = (len(out_docs) - 1) // 2
        got = list(helpers.streaming_bulk(client, _python_actions(index, "py-out/", out_docs[:half]),
                                          chunk_size=3, raise_on_error=False))
        assert all(ok for ok, _ in got) and len(got) == half
        n, errs = asyncio.run(async_part(_python_actions(index, "py-out/", out_docs[half:-1])))
        assert not errs and n == len(out_docs) - 1 - half
        r = client.index(index=index, id="py-out/single", document={"content": out_docs[-1]["content"],
                                                                     "seq": out_docs[-1]["seq"]})
        assert r["result"] == "created" and r["fingerprint_indexer"]["queued"] is True
        assert client.update(index=index, id="py-out/single", doc={"note": "kept"})["result"] == "updated"
        extra = {"content": out_docs[-1]["content"] + " 又一篇"}
        client.index(index=index, id="py-out/extra", document=extra)
        assert client.delete(index=index, id="py-out/extra")["result"] == "deleted"

    _outage(svc, fwd, es_client, index, "py-out/", out_docs, write)
    client.close()
