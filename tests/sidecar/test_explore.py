"""``explore STORE``: the real command serving a store ``dedupe`` wrote, read-only, with no Elasticsearch:
clusters largest first and paged, counts, recent duplicates with the rule's verdict, documents by ids
holding ``/`` and spaces with their texts read from the recorded input, side-by-side passages."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from support.service import ServiceProcess
from support.synthetic_news import REPOSTED, make_store


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict[str, Any]]]:
    return make_store(tmp_path_factory.mktemp("explore"))


@pytest.fixture(scope="module")
def explorer(made: tuple[Path, Path, list[dict[str, Any]]]) -> Iterator[ServiceProcess]:
    with ServiceProcess(None, made[0], command="explore") as svc:
        yield svc


@pytest.fixture
def http(explorer: ServiceProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=explorer.url, timeout=60) as client:
        yield client


def test_overview_counts_and_recent_duplicates_with_their_reason(http: httpx.Client,
                                                                  made: tuple[Path, Path, Any]) -> None:
    docs = made[2]
    ov = http.get("/v1/overview", params={"limit": 5}).json()
    copies = sum(REPOSTED)
    assert ov["documents"] == len(docs) and ov["read_only"] is True and ov["elasticsearch"] is False
    assert ov["counts"]["new"] == len(docs) - copies
    assert ov["counts"]["exact_duplicate"] + ov["counts"]["near_duplicate"] == copies
    assert ov["recent_total"] == copies and len(ov["recent"]) == 5 and ov["texts"] is None
    originals = {d["id"]: d for d in docs[: len(REPOSTED)]}
    for row in ov["recent"]:
        assert row["decision"] in ("exact_duplicate", "near_duplicate")
        assert row["why"]["accepted"] is True and row["why"]["distance"] == row["distance"]
        assert row["title"] == row["duplicate_title"] == originals[row["duplicate_of"]]["title"]
    times = [r["decided_at"] for r in http.get("/v1/overview", params={"limit": 200}).json()["recent"]]
    assert times == sorted(times, reverse=True)


def test_clusters_largest_first_and_paged(http: httpx.Client, made: tuple[Path, Path, Any]) -> None:
    docs = made[2]
    seen: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = http.get("/v1/clusters", params={"offset": offset, "limit": 7}).json()
        assert page["total"] == len(docs) - sum(REPOSTED)
        seen += page["clusters"]
        offset += 7
        if offset >= page["total"]:
            break
    sizes = [c["size"] for c in seen]
    assert sizes[: len(REPOSTED)] == [n + 1 for n in REPOSTED] and sizes == sorted(sizes, reverse=True)
    assert len({c["id"] for c in seen}) == len(seen) == page["total"]
    assert seen[0]["canonical"] == docs[0]["id"] and seen[0]["title"] == docs[0]["title"]
    big = http.get("/v1/clusters", params={"min_size": 3}).json()
    assert big["total"] == sum(n + 1 >= 3 for n in REPOSTED)


def test_documents_clusters_and_passages_by_ids_with_slashes_and_spaces(
        http: httpx.Client, made: tuple[Path, Path, Any]) -> None:
    docs = made[2]
    original, copy = docs[0], next(d for d in docs if d["id"] == "repost site/0/copy 1.html")
    got = http.get("/v1/documents/" + quote(copy["id"], safe="")).json()
    assert got["id"] == copy["id"] and got["title"] == copy["title"]
    assert got["decision"] == "near_duplicate" and got["duplicate_of"] == original["id"]
    assert copy["content"].split("\n")[0] in got["text"]
    cl = http.get("/v1/clusters/" + quote(got["cluster_id"], safe="")).json()
    assert cl["size"] == REPOSTED[0] + 1 and cl["members"][0]["id"] == original["id"]
    assert {m["id"] for m in cl["members"]} >= {original["id"], copy["id"]}
    pair = {"a": {"id": original["id"]}, "b": {"id": copy["id"]}, "with_text": True}
    r = http.post("/v1/copies", json=pair)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["passages"] and body["a_text"] != body["b_text"]
    p = body["passages"][0]
    assert body["a_text"][p["a_start"] : p["a_end"]] == body["b_text"][p["b_start"] : p["b_end"]]
    sim = http.post("/v1/similar", json={"text": original["content"]}).json()
    assert {m["id"] for m in sim["matches"]} >= {original["id"], copy["id"]}
    rel = http.get("/v1/related/" + quote(original["id"], safe="")).json()
    assert rel["related"] == [] and copy["id"] in {d["id"] for d in rel["duplicates"]}
    hits = http.post("/v1/copies/search", json={"id": original["id"], "min_chars": 100}).json()["hits"]
    assert copy["id"] in {h["id"] for h in hits}
    assert http.get("/v1/documents/" + quote("site 9/nothing here", safe="")).status_code == 404


def test_read_only_and_no_elasticsearch_answers(http: httpx.Client) -> None:
    r = http.post("/v1/ingest", json={"documents": [{"id": "new one", "content": "今天天气很好。"}]})
    assert r.status_code == 403 and "read-only" in r.json()["error"]["reason"]
    r = http.post("/_bulk", content=b'{"index":{"_index":"news"}}\n{"title":"x"}\n')
    assert r.status_code == 501 and "--es" in r.json()["error"]["reason"]
    assert http.get("/news/_search").status_code == 501
    ready = http.get("/readyz").json()
    assert ready["status"] == "ready" and ready["checks"]["read_only"] is True
    assert http.get("/ui/").status_code == 200 and "text/html" in http.get("/ui/").headers["content-type"]


def test_explore_needs_a_store(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "fingerprint_indexer.cli.main", "explore",
                        str(tmp_path / "none")], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "no store at" in r.stderr and "dedupe" in r.stderr
