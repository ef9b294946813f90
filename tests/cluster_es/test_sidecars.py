"""Several stateless sidecars (``serve --state elasticsearch``) in front of the three-node cluster.

(a) zh_news articles, shuffled, go through the official client's bulk helper to two sidecars at once (each
    takes every other chunk): exact copies are agreed at once (at most one ``new`` per text); the near
    copies the two missed between them are counted and reported; after ``es reconcile`` every decision,
    link, distance and cluster equals those of one sidecar given all the articles in the order the two
    decided them, and reconciliation changed only what the race got wrong.
(c) One sidecar is SIGKILLed mid-ingest and its client moves to the other: every acknowledged document is
    in the index once.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch, helpers
from support.corpus import ZH_NEWS, iter_records
from support.es_cluster import LocalCluster
from support.ingest_driver import IngestDriver, assert_exactly_once
from support.service import ServiceProcess, running

from fingerprint_indexer.elastic.reconcile import decided_order

pytestmark = [pytest.mark.cluster, pytest.mark.elasticsearch, pytest.mark.corpus]

CLI = "from fingerprint_indexer.cli.main import main; main()"
N_DOCS = 3000  # the first articles of zh_news, with the re-posts among them
CHUNK = 100
SEED = 20261123
FIELDS = ["decision", "duplicate_of", "cluster_id", "distance"]


def cli(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CLI, *args, "--es", url], capture_output=True, text=True,
                          timeout=900)  # fmt: skip


def decisions(client: Elasticsearch, index: str, with_time: bool = False) -> dict[str, dict[str, Any]]:
    fields = [*FIELDS, "content_digest", *(["decided_at"] if with_time else [])]
    client.indices.refresh(index=index)
    return {h["_id"]: {f: h["_source"].get(f) for f in fields}
            for h in helpers.scan(client, index=index, source=fields)}  # fmt: skip


def send(url: str, index: str, chunks: list[list[dict[str, Any]]]) -> None:
    """Through the sidecar's ``_bulk`` proxy with the official client's bulk helper."""
    with Elasticsearch(url, request_timeout=120, max_retries=5, retry_on_status=(429, 502, 503, 504)) as es:
        for chunk in chunks:
            actions = [{"_index": index, "_id": d["id"], "_source": {"title": d.get("title", ""),
                                                                       "content": d["content"]}}
                       for d in chunk]  # fmt: skip
            _, errors = helpers.bulk(es, actions, chunk_size=CHUNK, max_retries=5, raise_on_error=False)
            assert not errors, errors[:3]


@pytest.fixture(scope="module")
def shuffled() -> list[dict[str, Any]]:
    docs = []
    for n, rec in enumerate(iter_records(ZH_NEWS)):
        if n == N_DOCS:
            break
        docs.append(rec)
    random.Random(SEED).shuffle(docs)
    return docs


@pytest.fixture
def sidecars(es_cluster: LocalCluster, cluster_index: str, tmp_path: Path) -> Iterator[list[ServiceProcess]]:
    urls = [n["url"] for n in es_cluster.status()["nodes"]]
    with running([ServiceProcess(urls[i], tmp_path / f"data-{i}", "--state", "elasticsearch", "--index",
                                 cluster_index) for i in range(2)]) as procs:  # fmt: skip
        yield procs


def test_two_sidecars_agree_after_reconciliation(
    es_cluster: LocalCluster, cluster_client: Elasticsearch, cluster_index: str,
    sidecars: list[ServiceProcess], shuffled: list[dict[str, Any]], tmp_path: Path,
) -> None:  # fmt: skip
    one, two = f"{cluster_index}-one", f"{cluster_index}-two"
    for name in (one, two):
        r = cli("es", "setup", "--index", name, url=es_cluster.url)
        assert r.returncode == 0, r.stderr
    chunks = [shuffled[i : i + CHUNK] for i in range(0, len(shuffled), CHUNK)]
    threads = [threading.Thread(target=send, args=(s.url, two, chunks[i::2])) for i, s in enumerate(sidecars)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(900)
    raced = decisions(cluster_client, two, with_time=True)
    assert len(raced) == len({d["id"] for d in shuffled})
    news = Counter(d["content_digest"] for d in raced.values() if d["decision"] == "new")
    assert news and max(news.values()) == 1, "two sidecars called one text new twice"

    # one sidecar given every article in the order the two decided them
    order = sorted(raced, key=lambda i: decided_order(raced[i]["decided_at"], raced[i]["duplicate_of"], i))
    by_id = {d["id"]: d for d in shuffled}
    send(sidecars[0].url, one, [[by_id[i] for i in order[s : s + CHUNK]]
                                for s in range(0, len(order), CHUNK)])  # fmt: skip
    reference = decisions(cluster_client, one)
    before = {i: {f: v for f, v in d.items() if f != "decided_at"} for i, d in raced.items()}
    differ = [i for i in reference if reference[i] != before[i]]
    missed = [i for i in reference if reference[i]["decision"] == "near_duplicate"
              and before[i]["decision"] == "new"]  # fmt: skip

    r = cli("es", "reconcile", "--index", two, "--since", "1d", url=es_cluster.url)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    after = decisions(cluster_client, two)
    summary = {"documents": len(after), "differ_before": len(differ), "near_missed_before": len(missed),
               "changed_by_reconcile": report["changed"],
               "kinds": Counter(d["decision"] for d in after.values())}  # fmt: skip
    print("two sidecars vs one:", json.dumps(summary))
    (tmp_path / "sidecars.json").write_text(json.dumps(summary))
    assert report["documents"] == len(shuffled)
    assert report["changed"] == len(differ)  # only what the race got wrong
    assert after == reference
    assert {"new", "exact_duplicate", "near_duplicate"} <= {d["decision"] for d in after.values()}


def test_a_sidecar_killed_mid_ingest_loses_nothing_when_its_client_moves(
    es_cluster: LocalCluster, cluster_client: Elasticsearch, cluster_index: str,
    sidecars: list[ServiceProcess], zh_articles: list[dict[str, Any]],
) -> None:  # fmt: skip
    r = cli("es", "setup", "--index", cluster_index, url=es_cluster.url)
    assert r.returncode == 0, r.stderr
    texts = [a["content"][:1500] for a in zh_articles[:40]]
    driver = IngestDriver(sidecars[0].url, {}, cluster_index, texts)
    driver.start()
    try:
        driver.wait_for(201, 60, timeout=120)
        sidecars[0].kill9()
        driver.move_to(sidecars[1].url)
        driver.wait_for(201, 60, timeout=120)
    finally:
        driver.stop()
    assert "Traceback" not in sidecars[1].log_text()
    assert_exactly_once(cluster_client, cluster_index, driver.acked)
