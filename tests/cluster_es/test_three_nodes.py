"""A real three-node Elasticsearch cluster on loopback (``scripts/es-local start --nodes 3``).

It forms as one cluster, and an index ``es setup`` creates there has a replica. An ``es index`` job given
all three node URLs goes on while the node holding the index's primary is SIGKILLed and restarted: every
document the job reports is in the index exactly once, and the decisions are those of the same input on a
single healthy node. The sidecar's ``_bulk`` proxy in front of the cluster loses nothing either.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch
from support.corpus import ZH_NEWS, iter_records
from support.es_cluster import NODES, LocalCluster, es_local
from support.ingest_driver import IngestDriver, assert_exactly_once, wait_spool_empty
from support.service import ServiceProcess

from fingerprint_indexer.env import EsSettings
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.sidecar.es import EsClient

pytestmark = [pytest.mark.cluster, pytest.mark.elasticsearch]

CLI = "from fingerprint_indexer.cli.main import main; main()"
N_DOCS = 3000  # enough for the job to run well past the kill and the restart
BATCH = 200  # a decided batch is reported every few hundred documents, so "mid-ingest" is observable
JOB_TIMEOUT_S = 400


def cli(*args: str, url: str) -> list[str]:
    return [sys.executable, "-c", CLI, *args, "--es", url]


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def zh_inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The first N_DOCS articles of zh_news (with their re-posts as they occur in the corpus), in two
    halves: the second is indexed while a node dies, against an index that already holds the first."""
    folder = tmp_path_factory.mktemp("zh")
    recs = []
    for n, rec in enumerate(iter_records(ZH_NEWS)):
        if n == N_DOCS:
            break
        recs.append(json.dumps(rec, ensure_ascii=False) + "\n")
    halves = folder / "first.jsonl", folder / "second.jsonl"
    halves[0].write_text("".join(recs[: N_DOCS // 2]), encoding="utf-8")
    halves[1].write_text("".join(recs[N_DOCS // 2 :]), encoding="utf-8")
    return halves


def test_three_nodes_form_one_green_cluster_and_new_indices_get_a_replica(
    es_cluster: LocalCluster, cluster_client: Elasticsearch, cluster_index: str
) -> None:
    assert len(es_cluster.urls) == NODES == len(set(es_cluster.urls))
    health = cluster_client.cluster.health(wait_for_status="green", timeout="60s")
    assert (health["number_of_nodes"], health["status"]) == (NODES, "green")
    names = {n["name"] for n in cluster_client.nodes.info()["nodes"].values()}
    status = es_cluster.status()
    assert names == {n["name"] for n in status["nodes"]} and status["nodes_joined"] == NODES
    assert len({n["pid"] for n in status["nodes"]}) == NODES and all(n["running"] for n in status["nodes"])
    assert es_local("url").stdout.strip() == es_cluster.url
    assert es_local("url", "--first").stdout.strip() == es_cluster.urls[0]

    setup = subprocess.run(cli("es", "setup", "--index", cluster_index, url=es_cluster.url),
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert setup.returncode == 0, setup.stderr
    settings = cluster_client.indices.get_settings(index=cluster_index, name="index.number_of_replicas")
    assert [s["settings"]["index"]["number_of_replicas"] for s in settings.values()] == ["1"]
    health = cluster_client.cluster.health(index=cluster_index, wait_for_status="green", timeout="60s")
    assert health["status"] == "green" and health["active_shards"] == 2 * health["active_primary_shards"]

    # the other creation paths follow the same rule: the sidecar before its first write to a missing
    # index, and ElasticsearchIndex(create=True)
    sidecar_index, class_index = f"{cluster_index}-sidecar", f"{cluster_index}-class"

    async def sidecar_creates() -> None:
        es = EsClient(EsSettings.from_env(es_cluster.urls[0]))
        try:
            await es.ensure_index(sidecar_index)
        finally:
            await es.close()

    asyncio.run(sidecar_creates())
    ElasticsearchIndex(cluster_client, class_index)
    settings = cluster_client.indices.get_settings(index=f"{sidecar_index},{class_index}",
                                                   name="index.number_of_replicas")  # fmt: skip
    assert {i: s["settings"]["index"]["number_of_replicas"] for i, s in settings.items()} == \
        {sidecar_index: "1", class_index: "1"}


def _victim(client: Elasticsearch, index: str) -> str:
    """A node holding a primary of the index, and of those the one with the most open search contexts:
    the running job's point-in-time snapshot (the cluster serves nothing else meanwhile)."""
    shards = client.cat.shards(index=f"{index}-*", format="json", h="prirep,state,node")
    primaries = {str(s["node"]) for s in shards if s["prirep"] == "p" and s["state"] == "STARTED"}
    stats = client.nodes.stats(metric="indices", index_metric="search")["nodes"].values()
    contexts = {n["name"]: n["indices"]["search"]["open_contexts"] for n in stats}
    return max(sorted(primaries), key=lambda name: contexts.get(name, 0))


def _wait_for_reported(path: Path, job: subprocess.Popen[str], at_least: int) -> int:
    """Wait until the job has reported at least ``at_least`` decisions; how many it has."""
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline and job.poll() is None:
        done = len(path.read_text().splitlines()) if path.exists() else 0
        if done >= at_least:
            return done
        time.sleep(0.2)
    raise AssertionError(f"the job reported too little before it ended (exit {job.poll()})")


def _indexed(client: Elasticsearch, index: str) -> list[tuple[str, str]]:
    """(id, content) of every document in the index, read from a point-in-time snapshot."""
    client.indices.refresh(index=index)
    pit = client.open_point_in_time(index=index, keep_alive="2m")["id"]
    out: list[tuple[str, str]] = []
    after: list[Any] | None = None
    try:
        while True:
            kw: dict[str, Any] = {"search_after": after} if after else {}
            resp = client.search(pit={"id": pit, "keep_alive": "2m"}, size=1000, sort=["_shard_doc"],
                                 source_includes=["content"], allow_partial_search_results=False,
                                 **kw)  # fmt: skip
            hits = resp["hits"]["hits"]
            out += [(h["_id"], h["_source"]["content"]) for h in hits]
            if len(hits) < 1000:
                return out
            after = hits[-1]["sort"]
    finally:
        client.close_point_in_time(id=pit)


def _index(url: str, index: str, path: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(cli("es", "index", str(path), "--index", index, "--batch-size", str(BATCH),
                                "-o", str(out), url=url),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def _finish(job: subprocess.Popen[str]) -> None:
    _stdout, stderr = job.communicate(timeout=JOB_TIMEOUT_S)
    assert job.returncode == 0, stderr[-3000:]


@pytest.mark.corpus
@pytest.mark.slow
def test_es_index_survives_a_node_killed_mid_ingest_with_nothing_lost_or_doubled(
    es_cluster: LocalCluster, cluster_client: Elasticsearch, cluster_index: str, es_url: str, es_index: str,
    zh_inputs: tuple[Path, Path], tmp_path: Path,
) -> None:  # fmt: skip
    """Index the first half, then the second while the node holding a primary is SIGKILLed (once the job
    has reported its first batches) and brought back with es-local. Every acknowledged document is then in
    the index exactly once (by id and by content), and the decisions of both jobs equal those of a single
    healthy node. Three shards, so that the node's death takes part of the job's point-in-time snapshot
    of the first half away, not all of it: a search that answered from the rest would miss duplicates."""
    first, second = zh_inputs
    setup = subprocess.run(cli("es", "setup", "--index", cluster_index, "--shards", "3", url=es_cluster.url),
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert setup.returncode == 0, setup.stderr
    cluster_client.cluster.health(index=cluster_index, wait_for_status="green", timeout="60s")
    outs = [tmp_path / "cluster-1.jsonl", tmp_path / "cluster-2.jsonl"]
    _finish(_index(es_cluster.url, cluster_index, first, outs[0]))

    job = _index(es_cluster.url, cluster_index, second, outs[1])
    try:
        reported_before = _wait_for_reported(outs[1], job, BATCH)
        victim = _victim(cluster_client, cluster_index)
        es_cluster.kill(victim)
        restarted = es_cluster.start()
        assert restarted.returncode == 0, restarted.stderr
        assert "restarting (data and address kept)" in restarted.stderr
        _finish(job)
    finally:
        if job.poll() is None:
            job.kill()
            job.communicate()
    assert reported_before < N_DOCS // 2, "the job ended before the node was killed: nothing was tested"
    health = cluster_client.cluster.health(wait_for_status="green", wait_for_nodes=str(NODES), timeout="120s")
    assert health["number_of_nodes"] == NODES and health["status"] == "green"
    assert es_cluster.pid_of(victim)  # back, under a new process

    decisions = [lines(out) for out in outs]
    assert [len(d) for d in decisions] == [N_DOCS // 2] * 2
    assert [d for d in decisions[1] if "error" in d] == []
    acknowledged = [d["id"] for job_decisions in decisions for d in job_decisions if d.get("indexed", True)]
    indexed = _indexed(cluster_client, cluster_index)
    ids = Counter(i for i, _ in indexed)
    assert [i for i, n in ids.items() if n > 1] == [], "documents indexed twice"
    assert sorted(ids) == sorted(acknowledged), "acknowledged documents missing, or unknown ones indexed"
    texts = {r["id"]: r["content"] for path in zh_inputs
             for r in map(json.loads, path.read_text().splitlines())}
    assert Counter(c for _, c in indexed) == Counter(texts[i] for i in acknowledged)
    assert cluster_client.count(index=cluster_index)["count"] == len(acknowledged)

    # the same two inputs, on one healthy node, from an empty index
    single = [tmp_path / "single-1.jsonl", tmp_path / "single-2.jsonl"]
    for path, out in zip(zh_inputs, single, strict=True):
        _finish(_index(es_url, es_index, path, out))
    assert decisions[0] == lines(single[0])
    assert decisions[1] == lines(single[1])
    # the second half has duplicates of the first: what the snapshot searches had to find
    first_ids = {d["id"] for d in decisions[0]}
    assert sum(d["duplicate_of"] in first_ids for d in decisions[1]) >= 10


@pytest.mark.corpus
@pytest.mark.slow
def test_the_sidecar_bulk_proxy_loses_nothing_while_a_node_is_killed_and_restarted(
    es_cluster: LocalCluster, cluster_client: Elasticsearch, cluster_index: str,
    zh_articles: list[dict[str, Any]], tmp_path: Path,
) -> None:  # fmt: skip
    """``serve`` (one URL: a node that stays up) takes ``_bulk`` and ``/v1/ingest`` writes while the node
    holding the index's primary is SIGKILLed and brought back: the writes go on (the replica is promoted;
    what cannot be written meanwhile waits in the spool), and every acknowledged document ends up in the
    index exactly once."""
    setup = subprocess.run(cli("es", "setup", "--index", cluster_index, url=es_cluster.url),
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert setup.returncode == 0, setup.stderr
    cluster_client.cluster.health(index=cluster_index, wait_for_status="green", timeout="60s")
    victim = _victim(cluster_client, cluster_index)
    entry = next(n["url"] for n in es_cluster.status()["nodes"] if n["name"] != victim)
    texts = [a["content"][:1500] for a in zh_articles[:40]]
    with ServiceProcess(entry, tmp_path / "data", "--index", cluster_index) as svc:
        driver = IngestDriver(svc.url, {}, cluster_index, texts)
        driver.start()
        try:
            driver.wait_for(201, 40)
            es_cluster.kill(victim)
            driver.wait_for(201, 20, timeout=90)  # written directly with the node down: the replica took over
            restarted = es_cluster.start()
            assert restarted.returncode == 0, restarted.stderr
            assert "restarting (data and address kept)" in restarted.stderr
            driver.wait_for(201, 40, timeout=120)  # written directly again, after the node is back
        finally:
            driver.stop()
        wait_spool_empty(svc.url, {})
        assert "Traceback" not in svc.log_text()
    cluster_client.cluster.health(index=cluster_index, wait_for_status="green", timeout="120s")
    assert_exactly_once(cluster_client, cluster_index, driver.acked)
