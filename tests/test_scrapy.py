"""fingerprint_indexer.scrapy: the item pipeline in real Scrapy crawls of local news sites.

The sites serve real articles from ../shared/data; some are re-posted by other sites (other templates,
other URLs, one trimmed). Two ``scrapy crawl`` processes of the example project share a scrapy-redis queue
on a real redis-server and one sidecar: every re-post must be dropped, and every distinct article kept once.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.test import get_crawler
from support.corpus import ZH_NEWS, load_records
from support.news_sites import Site, serve_sites
from support.redis_server import redis_server
from support.service import ServiceProcess

from fingerprint_indexer.documents import Document
from fingerprint_indexer.pipeline import Pipeline
from fingerprint_indexer.scrapy import FingerprintPipeline

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "news_crawler"


def distinct_articles(n: int, tmp: Path) -> list[dict[str, Any]]:
    """``n`` real articles of which none is a near-duplicate of another (by the library's own decision),
    so that the only duplicates in the crawl are the re-posts the test makes."""
    out = []
    with Pipeline(tmp) as pipe:
        for rec in load_records(ZH_NEWS, limit=3 * n, min_chars=600):
            if pipe.process(_doc(rec)).decision == "new":
                out.append(rec)
                if len(out) == n:
                    return out
    raise AssertionError(f"fewer than {n} distinct articles in {ZH_NEWS}")


def _doc(rec: dict[str, Any]) -> Document:
    return Document(id=rec["id"], title=rec.get("title") or "", content=rec["content"])


def make_sites(arts: list[dict[str, Any]]) -> tuple[list[Site], dict[tuple[str, str], int]]:
    """24 articles on "daily"; 8 of them re-posted in "portal"'s frame beside 3 of its own; 6 re-posted
    by "digest", cut short. Returns the sites and, per (site, path), the article the page carries."""
    daily, portal, digest = Site("daily"), Site("portal"), Site("digest")
    story: dict[tuple[str, str], int] = {}
    for i, a in enumerate(arts[:24]):
        story[("daily", daily.add(f"news/{i}", a))] = i
    for i in range(8):
        story[("portal", portal.add(f"zhuanzai/{1000 + i}", arts[i]))] = i
    for i in range(24, 27):
        story[("portal", portal.add(f"own/{i}", arts[i]))] = i
    for i in range(4, 10):
        story[("digest", digest.add(f"d/{i}", arts[i], trim_last=True))] = i
    return [daily, portal, digest], story


def stats_of(log: str) -> dict[str, int]:
    """Integer stats from the 'Dumping Scrapy stats' block of a crawl's log."""
    return {k: int(v) for k, v in re.findall(r"'([\w/]+)': (\d+),?\n", log)}


@pytest.mark.corpus
@pytest.mark.elasticsearch
@pytest.mark.runtimes  # redis-server
def test_two_crawlers_share_a_redis_queue_and_a_sidecar_and_drop_every_repost(
    es_url: str, tmp_path: Path
) -> None:
    sites, story = make_sites(distinct_articles(27, tmp_path / "pick"))
    with serve_sites(sites), redis_server(tmp_path / "redis") as redis_url, \
            ServiceProcess(es_url, tmp_path / "sidecar", "--index", "fpi-test-crawl") as sidecar:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FPI_", "SCRAPY_"))}
        procs = []
        for n in (1, 2):
            cmd = [sys.executable, "-m", "scrapy", "crawl", "news", "-o", str(tmp_path / f"kept-{n}.jsonl"),
                   "-s", f"REDIS_URL={redis_url}", "-s", f"FPI_SIDECAR_URL={sidecar.url}",
                   "-s", "FPI_INDEX=fpi-test-crawl", "-s", "MAX_IDLE_TIME_BEFORE_CLOSE=10",
                   # a polite delay, as a real crawl has: the loopback pages are so fast that one process
                   # could otherwise drain the shared queue before the other polls it
                   "-s", "DOWNLOAD_DELAY=0.25", "-s", "LOG_LEVEL=INFO"]  # fmt: skip
            log = open(tmp_path / f"crawl-{n}.log", "w")  # noqa: SIM115
            procs.append((subprocess.Popen(cmd, cwd=EXAMPLE, env=env, stdout=log, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL), log))  # fmt: skip
        # seed the shared queue once both crawlers wait on it: a crawler that starts late on a loaded
        # machine would otherwise find the queue drained and show nothing about sharing
        deadline = time.monotonic() + 90
        while not all("Spider opened" in (tmp_path / f"crawl-{n}.log").read_text() for n in (1, 2)):
            assert time.monotonic() < deadline, "the crawlers did not start"
            time.sleep(0.2)
        queue = redis.Redis.from_url(redis_url)
        queue.lpush("news:start_urls", *[f"{s.url}/" for s in sites])
        queue.close()
        for proc, log in procs:
            proc.wait(timeout=120)
            log.close()
    logs = [(tmp_path / f"crawl-{n}.log").read_text() for n in (1, 2)]
    for (proc, _), log_text in zip(procs, logs, strict=True):
        assert proc.returncode == 0, log_text[-3000:]
    stats = [stats_of(t) for t in logs]

    by_url = {f"{s.url}{path}": story[(s.name, path)] for s in sites for path in s.pages}
    kept = [json.loads(line) for n in (1, 2)
            for line in (tmp_path / f"kept-{n}.jsonl").read_text().splitlines() if line.strip()]  # fmt: skip
    kept_stories = Counter(by_url[item["url"]] for item in kept)
    assert set(kept_stories) == set(range(27)), "a distinct article was lost"
    assert max(kept_stories.values()) == 1, f"a re-post was kept: {kept_stories.most_common(3)}"
    assert all(item["decision"] == "new" and item["cluster_id"] for item in kept)
    dropped = sum(s.get("fingerprint_indexer/dropped", 0) for s in stats)
    assert dropped == len(by_url) - 27 == 14
    assert sum(s.get("fingerprint_indexer/items", 0) for s in stats) == len(by_url)
    for s in stats:  # both processes took work from the shared queue
        assert s.get("fingerprint_indexer/items", 0) > 0, stats


SPIDER = """
import scrapy


class Plain(scrapy.Spider):
    name = "plain"

    def __init__(self, start="", **kw):
        super().__init__(**kw)
        self.start_urls = start.split(",")

    def parse(self, response):
        if response.css("meta[name=page-type][content=article]"):
            yield {"url": response.url, "title": response.css("title::text").get(), "html": response.text}
        yield from response.follow_all(css="a[href]", callback=self.parse)
"""


def crawl_plain(tmp_path: Path, sites: list[Site], *settings: str) -> tuple[Any, list[dict[str, Any]]]:
    """``scrapy runspider`` of the plain spider over ``sites`` with the pipeline and ``settings``
    (``-s`` values): the finished process and the items it passed on."""
    spider = tmp_path / "plain.py"
    spider.write_text(SPIDER)
    out = tmp_path / "items.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FPI_", "SCRAPY_"))}
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(spider), "-a",
           "start=" + ",".join(f"{s.url}/" for s in sites), "-o", str(out), "-s", "LOG_LEVEL=INFO",
           "-s", "ITEM_PIPELINES={\"fingerprint_indexer.scrapy.FingerprintPipeline\": 300}",
           "-s", "REQUEST_FINGERPRINTER_IMPLEMENTATION=2.7"]  # fmt: skip
    for setting in settings:
        cmd += ["-s", setting]
    res = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    return res, [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def assert_one_new_per_article(items: list[dict[str, Any]], by_url: dict[str, int]) -> None:
    """Every page passed on, tagged: one ``new`` per article, every other copy a duplicate of it."""
    assert sorted(i["url"] for i in items) == sorted(by_url), "every page is passed on, tagged"
    first_of = {by_url[i["url"]]: i["url"] for i in items if i["decision"] == "new"}
    assert sum(i["decision"] == "new" for i in items) == len(first_of) == 27, "one new item per article"
    for item in items:
        if item["decision"] == "new":
            assert item["duplicate_of"] is None and item["cluster_id"]
        else:
            assert item["decision"] in ("exact_duplicate", "near_duplicate"), item["url"]
            assert item["duplicate_of"] == first_of[by_url[item["url"]]], item["url"]


@pytest.mark.corpus
def test_one_crawler_tags_reposts_against_an_embedded_store(tmp_path: Path) -> None:
    sites, story = make_sites(distinct_articles(27, tmp_path / "pick"))
    with serve_sites(sites):
        res, items = crawl_plain(tmp_path, sites, f"FPI_STORE={tmp_path / 'store'}")
        by_url = {f"{s.url}{path}": story[(s.name, path)] for s in sites for path in s.pages}
    assert_one_new_per_article(items, by_url)
    stats = stats_of(res.stderr)
    assert stats["fingerprint_indexer/new"] == 27 and "fingerprint_indexer/dropped" not in stats
    assert stats["fingerprint_indexer/items"] == len(by_url)
    assert stats["fingerprint_indexer/batches"] < len(by_url), "the items were decided in batches"


def ingest_requests(sidecar: ServiceProcess) -> int:
    """``/v1/ingest`` requests the sidecar has answered, from its Prometheus metrics."""
    text = httpx.get(f"{sidecar.url}/metrics", timeout=10).text
    counts = re.findall(r'^fpi_request_seconds_count\{[^}]*route="/v1/ingest"[^}]*\} ([\d.]+)$', text, re.M)
    return int(sum(float(c) for c in counts))


@pytest.mark.corpus
def test_a_crawl_asks_the_sidecar_once_per_batch_not_once_per_item(tmp_path: Path) -> None:
    """The same crawl against a real ``serve`` (no Elasticsearch): the same decisions, in fewer requests
    than items."""
    sites, story = make_sites(distinct_articles(27, tmp_path / "pick"))
    with serve_sites(sites), ServiceProcess(None, tmp_path / "sidecar") as sidecar:
        assert ingest_requests(sidecar) == 0
        res, items = crawl_plain(tmp_path, sites, f"FPI_SIDECAR_URL={sidecar.url}", "FPI_BATCH_WAIT=0.5")
        requests = ingest_requests(sidecar)
        by_url = {f"{s.url}{path}": story[(s.name, path)] for s in sites for path in s.pages}
    assert_one_new_per_article(items, by_url)
    stats = stats_of(res.stderr)
    assert stats["fingerprint_indexer/items"] == len(by_url) and "fingerprint_indexer/undecided" not in stats
    assert requests == stats["fingerprint_indexer/batches"] < len(by_url), (requests, len(by_url))


def _pipeline(**settings: Any) -> FingerprintPipeline:
    return FingerprintPipeline.from_crawler(get_crawler(settings_dict=settings))


def test_items_that_cannot_be_decided_are_passed_on_untagged_and_counted(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the block ends
    pipe = _pipeline(FPI_SIDECAR_URL=f"http://127.0.0.1:{port}", FPI_SIDECAR_RETRIES=1, FPI_TIMEOUT=2)
    pipe.open_spider()
    try:
        text = "市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温。"
        item: dict[str, Any] = {"url": "http://example.org/a", "content": text}
        doc = pipe.document(item)
        assert doc is not None
        assert pipe.apply(pipe.decide_or_none(doc), item) == item and "decision" not in item
        no_id = {"content": "正文"}
        assert pipe.process_item(no_id) is no_id and "decision" not in no_id
        assert pipe.process_item({"url": "http://example.org/empty", "content": "  "}) is not None
    finally:
        pipe.close_spider()
    stats = pipe.stats.get_stats()
    assert stats["fingerprint_indexer/undecided"] == 2 and stats["fingerprint_indexer/no_text"] == 1


def test_settings_name_one_source_of_decisions() -> None:
    with pytest.raises(NotConfigured, match="FPI_STORE"):
        _pipeline()
    with pytest.raises(NotConfigured, match="not both"):
        _pipeline(FPI_STORE="x", FPI_SIDECAR_URL="http://127.0.0.1:1")


def test_tags_and_drops_against_an_embedded_store(tmp_path: Path, en_articles: list[dict]) -> None:
    pipe = _pipeline(FPI_STORE=str(tmp_path / "store"), FPI_DROP_DUPLICATES=True, FPI_TEXT_FIELD="body")
    pipe.open_spider()
    try:
        first = {"url": "http://a.example/1", "body": en_articles[0]["content"]}
        assert pipe.apply(pipe.decide_or_none(pipe.document(first)), first)["decision"] == "new"
        repost = {"url": "http://b.example/9", "body": "Reposted from A. " + en_articles[0]["content"]}
        with pytest.raises(DropItem, match=re.escape("duplicate of http://a.example/1")):
            pipe.apply(pipe.decide_or_none(pipe.document(repost)), repost)
    finally:
        pipe.close_spider()
    assert pipe.stats.get_stats()["fingerprint_indexer/dropped"] == 1


def test_tags_and_drops_against_a_sidecar_without_elasticsearch(tmp_path: Path) -> None:
    """FPI_SIDECAR_URL pointed at ``serve`` with no --es: the sidecar decides on its embedded store."""
    from support.synthetic_news import documents

    docs = documents(n_stories=8)
    with ServiceProcess(None, tmp_path / "sidecar") as sidecar:
        pipe = _pipeline(FPI_SIDECAR_URL=sidecar.url, FPI_DROP_DUPLICATES=True, FPI_ID_FIELD="id",
                         FPI_TEXT_FIELD="content")
        pipe.open_spider()
        try:
            def through(item: dict[str, Any]) -> Any:  # what process_item does, off the reactor
                doc = pipe.document(item)
                assert doc is not None
                return pipe.apply(pipe.decide_or_none(doc), item)

            first = dict(docs[0])
            assert through(first) is first and first["decision"] == "new"
            copy = next(d for d in docs if d["id"].startswith("repost site/0/"))
            with pytest.raises(DropItem, match=re.escape(f"duplicate of {docs[0]['id']}")):
                through(dict(copy))
        finally:
            pipe.close_spider()
    stats = pipe.stats.get_stats()
    assert stats["fingerprint_indexer/new"] == 1 and stats["fingerprint_indexer/dropped"] == 1


@pytest.mark.parametrize("mode", ["store", "sidecar"])
def test_two_copies_in_one_batch_are_one_new_and_one_duplicate(
    mode: str, tmp_path: Path, en_articles: list[dict]
) -> None:
    """Queued together, an article and its re-posts are decided in one batch (one commit, or one request to
    a real ``serve``) as they would be one after the other."""
    with contextlib.ExitStack() as stack:
        if mode == "store":
            pipe = _pipeline(FPI_STORE=str(tmp_path / "store"), FPI_BATCH_WAIT=30)
        else:
            sidecar = stack.enter_context(ServiceProcess(None, tmp_path / "sidecar"))
            pipe = _pipeline(FPI_SIDECAR_URL=sidecar.url, FPI_BATCH_WAIT=30)
        pipe.open_spider()
        text = en_articles[0]["content"]
        original = pipe.submit(Document(id="http://a.example/1", content=text))
        exact = pipe.submit(Document(id="http://c.example/3", content=text))
        repost = pipe.submit(Document(id="http://b.example/9", content="Reposted from A. " + text))
        other = pipe.submit(Document(id="http://a.example/2", content=en_articles[1]["content"]))
        pipe.close_spider()
        if mode == "sidecar":
            assert ingest_requests(sidecar) == 1
    decided = [f.result(timeout=0) for f in (original, exact, repost, other)]
    expected = ["new", "exact_duplicate", "near_duplicate", "new"]
    assert [d["decision"] if d else None for d in decided] == expected
    assert decided[1]["duplicate_of"] == decided[2]["duplicate_of"] == "http://a.example/1"  # type: ignore[index]
    assert pipe.stats.get_stats()["fingerprint_indexer/batches"] == 1


def test_close_spider_decides_and_stores_every_queued_item(tmp_path: Path, en_articles: list[dict]) -> None:
    """Items still queued when the spider closes are decided (in batches of FPI_BATCH_SIZE) and stored
    before the store closes, without waiting out FPI_BATCH_WAIT."""
    pipe = _pipeline(FPI_STORE=str(tmp_path / "store"), FPI_BATCH_SIZE=4, FPI_BATCH_WAIT=60)
    pipe.open_spider()
    articles = en_articles[:10]
    docs = [Document(id=f"http://a.example/{i}", content=a["content"]) for i, a in enumerate(articles)]
    futures = [pipe.submit(doc) for doc in docs]
    started = time.monotonic()
    pipe.close_spider()
    assert time.monotonic() - started < 30, "close_spider waited out FPI_BATCH_WAIT"
    assert all(f.done() for f in futures), "an item was left undecided"
    assert [f.result()["decision"] for f in futures] == ["new"] * 10  # type: ignore[index]
    assert pipe.stats.get_stats()["fingerprint_indexer/batches"] == 3  # 4 + 4 + 2
    with pytest.raises(RuntimeError, match="not open"):
        pipe.submit(docs[0])
    with Pipeline(tmp_path / "store") as store:  # committed: a re-post of each is now a copy
        reposts = [Document(id=f"http://b.example/{i}", content=d.content) for i, d in enumerate(docs)]
        assert [store.process(d).decision for d in reposts] == ["exact_duplicate"] * 10


def test_a_batch_larger_than_the_sidecar_takes_is_split(tmp_path: Path) -> None:
    """A sidecar started with a lower ``--max-batch`` refuses a full batch (413): the halves are sent
    instead, and every item is decided."""
    from support.synthetic_news import documents

    docs = documents(n_stories=8)
    copy = next(d for d in docs if d["id"].startswith("repost site/0/"))
    batch = [docs[0], docs[1], docs[2], copy, docs[3]]
    with ServiceProcess(None, tmp_path / "sidecar", "--max-batch", "2") as sidecar:
        pipe = _pipeline(FPI_SIDECAR_URL=sidecar.url, FPI_BATCH_WAIT=30)
        pipe.open_spider()
        futures = [pipe.submit(Document(id=d["id"], content=d["content"])) for d in batch]
        pipe.close_spider()
        requests = ingest_requests(sidecar)
    decided = [f.result(timeout=0) for f in futures]
    assert [d["decision"] if d else None for d in decided] == ["new", "new", "new", "exact_duplicate", "new"]
    assert pipe.stats.get_stats()["fingerprint_indexer/batches"] == 1
    assert requests == 5  # 5 refused; 2 taken, 3 refused; 1 and 2 taken


@pytest.mark.parametrize("freeze", [True, False])
def test_an_embedded_store_keeps_the_tables_out_of_the_collector_until_close(tmp_path: Path,
                                                                              freeze: bool) -> None:
    """The fingerprinter's tables are loaded at open and frozen out of the collector's passes with what
    was alive then (``FPI_GC_FREEZE``, on by default); close gives the collector everything back."""
    gc.unfreeze()
    pipe = _pipeline(FPI_STORE=str(tmp_path / "store"), FPI_GC_FREEZE=freeze)
    pipe.open_spider()
    try:
        assert (gc.get_freeze_count() > 0) is freeze
        item = {"url": "http://x.example/1", "content": "同一篇新闻的正文,说的是同一件事。" * 20}
        assert pipe.apply(pipe.decide_or_none(pipe.document(item)), item)["decision"] == "new"
    finally:
        pipe.close_spider()
    assert gc.get_freeze_count() == 0


REACTOR_CALLS = """
import json, sys, threading, time
from twisted.internet import reactor
from fingerprint_indexer.scrapy import call_on_reactor

reactor_thread, out, runs = threading.get_ident(), {}, []


def where(tag):
    runs.append(tag)
    return threading.get_ident()


def worker():
    out["running"] = call_on_reactor(where, "running") == reactor_thread
    try:
        call_on_reactor(lambda: 1 / 0)
    except ZeroDivisionError:
        out["raised"] = True
    reactor.callFromThread(block_then_crash)
    blocking.wait(10)
    out["crashed"] = call_on_reactor(where, "crashed") == threading.get_ident()


def block_then_crash():  # the worker's call is queued while the reactor is busy here, then never taken
    blocking.set()
    time.sleep(0.3)
    reactor.crash()


blocking = threading.Event()
thread = threading.Thread(target=worker)
reactor.callWhenRunning(thread.start)
reactor.run()
thread.join(10)
out["here"] = call_on_reactor(where, "here") == threading.get_ident()
out["runs"] = runs
print(json.dumps(out))
"""


def test_the_decision_step_runs_on_the_reactor_thread_while_it_runs() -> None:
    """``call_on_reactor`` (what the worker thread decides a batch through) runs the call on the reactor's
    thread while a real reactor runs, passes on what it raises, and runs it in the calling thread when
    the reactor is not running, or stopped before it took a queued call: once, either way."""
    res = subprocess.run([sys.executable, "-c", REACTOR_CALLS], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.splitlines()[-1])
    assert out == {"running": True, "raised": True, "crashed": True, "here": True,
                   "runs": ["running", "crashed", "here"]}  # fmt: skip
