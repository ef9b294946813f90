#!/usr/bin/env python3
"""Throughput of the Scrapy item pipeline against fingerprinting alone (issue #30), start-up counted.

The first ``--docs`` articles of ``--corpus`` are served as a local news site (an index page linking
every article, one HTML page per article) by a threaded HTTP server on loopback in this process. Each case
runs in a fresh process and is timed from its start to its exit; rounds interleave the cases, so a burst of
load on a shared machine hits them alike:

  crawl           ``scrapy runspider`` of the site with no item pipeline: the crawl's own cost
  pipeline        the same crawl with ``FingerprintPipeline`` on a fresh embedded store (``FPI_STORE``),
                  items decided in batches (``FPI_BATCH_SIZE`` default)
  pipeline-b1     the same with ``FPI_BATCH_SIZE=1``: one decision (one synced commit) per item, as
                  before batching
  sidecar         (``--sidecar``) the crawl with ``FPI_SIDECAR_URL`` against a ``fingerprint-indexer
                  serve`` without Elasticsearch, started (and its start-up not counted) beforehand, with
                  a fresh store for each round
  fingerprint     ``fingerprint-indexer fingerprint FILE --no-terms`` of the same articles (the same id,
                  title and text the spider extracts): fingerprinting alone
  decide          no crawl: a process that opens ``FingerprintPipeline`` on a fresh embedded store, queues
                  every article at once (``submit``) and closes it: the pipeline's decision step alone,
                  which is where batching can show
  decide-b1       the same with ``FPI_BATCH_SIZE=1``
  baseline        (``--baseline DIR``) the pipeline case with another checkout's package, right after
                  this one's in every round: an A/B of the pipeline in one run

``--cases`` runs some of the cases (crawl and fingerprint always: the ratios need them).
``--per-thread`` runs the crawls with a pipeline through a wrapper that times the pipeline's calls by the
CPU time of the thread each runs on (its worker thread, the decision step, fingerprinting) and reports
the pipeline's own work: its worker thread, plus the decision step where it ran on another thread (no
start-up, none of the reactor's work for the items: a figure to compare checkouts by, with
``--baseline``). The crawl's own CPU moves by more than the pipeline costs from run to run; it does not.

The spider yields ``url``, ``title`` and ``content`` (the article's paragraphs), so the pipeline
fingerprints the same text as the ``fingerprint`` case. Every crawl's item count and, with a pipeline,
its decided-item count are checked against ``--docs``. Prints docs/s and CPU seconds per case (medians over
``--rounds``), the ratios pipeline / fingerprint and pipeline / crawl, and by CPU fingerprinting alone
against what each pipeline adds to the crawl (its CPU less the crawl's, round by round: the crawl's
own cost, which bounds every pipeline's throughput, left out; for ``sidecar`` the service's CPU
during the crawl is counted in), the command lines, and the load average before and after.

    PYTHONPATH=. python3 scripts/bench_scrapy.py --docs 2000 --rounds 3 --sidecar
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import html
import json
import os
import re
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

PIPELINE = "fingerprint_indexer.scrapy.FingerprintPipeline"
REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "zh_news.jsonl.gz"

SPIDER = """
import scrapy


class Site(scrapy.Spider):
    name = "site"

    def __init__(self, start="", **kw):
        super().__init__(**kw)
        self.start_urls = [start]

    def parse(self, response):
        yield from response.follow_all(css="ul.articles a", callback=self.article)

    def article(self, response):
        yield {"url": response.url, "title": response.css("h1::text").get(default=""),
               "content": "\\n".join(response.css("article p::text").getall())}
"""

DECIDE = """
import json, sys
from scrapy.utils.test import get_crawler
from fingerprint_indexer.documents import Document
from fingerprint_indexer.scrapy import FingerprintPipeline

settings = {"FPI_STORE": sys.argv[2], "FPI_BATCH_SIZE": int(sys.argv[3])}
pipe = FingerprintPipeline.from_crawler(get_crawler(settings_dict=settings))
pipe.open_spider()
with open(sys.argv[1], encoding="utf-8") as f:
    docs = [Document(id=r["id"], title=r["title"], content=r["content"]) for r in map(json.loads, f)]
futures = [pipe.submit(doc) for doc in docs]
pipe.close_spider()
assert all(f.result() is not None for f in futures)
"""

# ``--per-thread``: the crawl run with the pipeline's calls timed by the CPU time of the thread they run on
# (a wrapper around each; the crawl itself runs as ``python -m scrapy`` would run it)
PER_THREAD = """
import atexit, collections, runpy, sys, threading, time
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.pipeline import Pipeline
from fingerprint_indexer.scrapy import FingerprintPipeline

cpu = collections.Counter()


def timed(cls, name, key):
    call = getattr(cls, name)

    def wrapper(*args, **kwargs):
        t = time.thread_time()
        try:
            return call(*args, **kwargs)
        finally:
            cpu[key, threading.current_thread().name] += time.thread_time() - t

    setattr(cls, name, wrapper)


timed(FingerprintPipeline, "_run", "worker")
timed(Pipeline, "decide_batch", "decide")
timed(Fingerprinter, "fingerprint_documents", "fingerprint")


def report():
    (worker_thread, worker), = ((t, v) for (k, t), v in cpu.items() if k == "worker")
    decide = sum(v for (k, _), v in cpu.items() if k == "decide")
    elsewhere = sum(v for (k, t), v in cpu.items() if k == "decide" and t != worker_thread)
    fingerprint = sum(v for (k, _), v in cpu.items() if k == "fingerprint")
    print(f"PIPELINE-CPU own={worker + elsewhere:.3f} worker={worker:.3f} decide={decide:.3f} "
          f"fingerprint={fingerprint:.3f} decide_off_worker={elsewhere:.3f}", file=sys.stderr)


atexit.register(report)
sys.argv = ["scrapy", *sys.argv[1:]]
runpy.run_module("scrapy", run_name="__main__", alter_sys=True)
"""

PAGE = ("<html><head><title>{title} - Daily News</title></head><body>"
        '<nav><a href="/">首页</a> | 国内 | 国际 | 财经 | 娱乐</nav>'
        "<article><h1>{title}</h1>{paragraphs}</article>"
        "<footer>Daily News 版权所有</footer></body></html>")  # fmt: skip


def articles(corpus: Path, n: int) -> list[dict[str, str]]:
    """The first ``n`` articles with a title and text, as (title, paragraphs) without blank lines."""
    out = []
    with gzip.open(corpus, "rt", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            paras = [p.strip() for p in (rec.get("content") or "").replace("\r", "").split("\n") if p.strip()]
            title = (rec.get("title") or "").strip()
            if paras and title:
                out.append({"title": title, "paragraphs": paras})
                if len(out) == n:
                    return out
    raise SystemExit(f"fewer than {n} articles in {corpus}")


def site(arts: list[dict[str, Any]]) -> dict[str, bytes]:
    """path -> page: the index linking every article, and the articles."""
    pages = {}
    for i, a in enumerate(arts):
        body = "".join(f"<p>{html.escape(p)}</p>" for p in a["paragraphs"])
        pages[f"/news/{i}.html"] = PAGE.format(title=html.escape(a["title"]), paragraphs=body).encode()
    links = "".join(f'<li><a href="{p}">{p}</a></li>' for p in pages)
    pages["/"] = f'<html><body><ul class="articles">{links}</ul></body></html>'.encode()
    return pages


@contextlib.contextmanager
def serve(pages: dict[str, bytes]) -> Iterator[str]:
    """The site on a loopback port for the block; its base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = pages.get(self.path.split("?")[0])
            self.send_response(200 if body is not None else 404)
            body = body if body is not None else b"not found"
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def stats_of(log: str) -> dict[str, int]:
    """Integer stats from the 'Dumping Scrapy stats' block of a crawl's log."""
    return {k: int(v) for k, v in re.findall(r"'([\w/]+)': (\d+),?\n", log)}


def children_cpu_s() -> float:
    """CPU seconds (user and system) of this process's finished children so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def process_cpu_s(pid: int) -> float:
    """CPU seconds so far of a live process (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """Wall time and CPU seconds of ``cmd`` in a fresh process, and its stderr; fails loudly when it
    fails."""
    t0, c0 = time.perf_counter(), children_cpu_s()
    res = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)  # fmt: skip
    took, cpu = time.perf_counter() - t0, children_cpu_s() - c0
    if res.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)} exited with {res.returncode}:\n{res.stderr[-3000:]}")
    return took, cpu, res.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def sidecar(store: Path, env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """``fingerprint-indexer serve`` without Elasticsearch on ``store``, up for the block; its URL and
    process id."""
    port = free_port()
    cmd = [sys.executable, "-m", "fingerprint_indexer.cli.main", "serve", "--store", str(store), "--port",
           str(port), "--processes", "1", "--no-access-log", "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the sidecar did not start ({shlex.join(cmd)})")
            time.sleep(0.2)
        yield url, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sidecar", action="store_true", help="also the crawl against a local serve")
    ap.add_argument("--concurrent-requests", type=int, default=16, help="Scrapy's CONCURRENT_REQUESTS")
    ap.add_argument("--cases", default="", help="comma-separated cases to run (default: all); crawl and "
                    "fingerprint always run, the ratios need them")
    ap.add_argument("--per-thread", action="store_true", help="time the pipeline's own calls by the CPU "
                    "time of their threads in the crawl: steadier than the process's CPU less the crawl's")
    ap.add_argument("--baseline", type=Path, help="another checkout (with its compiled core built): its "
                    "pipeline runs as case 'baseline' in every round, right after this checkout's")
    args = ap.parse_args()

    print(f"# {shlex.join([sys.executable, *sys.argv])}")
    print(f"# load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    arts = articles(args.corpus, args.docs)
    work = Path(tempfile.mkdtemp(prefix="bench-scrapy-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FPI_", "SCRAPY_"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    try:
        (work / "spider.py").write_text(SPIDER)
        with serve(site(arts)) as base:
            # the same id, title and text as the spider's items, for fingerprinting alone
            with open(work / "articles.jsonl", "w", encoding="utf-8") as f:
                for i, a in enumerate(arts):
                    text = "\n".join(a["paragraphs"])
                    rec = {"id": f"{base}/news/{i}.html", "title": a["title"], "content": text}
                    f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            crawl = [sys.executable, "-m", "scrapy", "runspider", str(work / "spider.py"),
                     "-a", f"start={base}/", "-s", "LOG_LEVEL=INFO", "-s", "TELNETCONSOLE_ENABLED=False",
                     "-s", f"CONCURRENT_REQUESTS={args.concurrent_requests}",
                     "-s", f"CONCURRENT_REQUESTS_PER_DOMAIN={args.concurrent_requests}"]  # fmt: skip
            with_pipeline = [*crawl, "-s", f"ITEM_PIPELINES={json.dumps({PIPELINE: 300})}"]
            if args.per_thread:  # the same crawl, through the timing wrapper
                with_pipeline = [sys.executable, "-c", PER_THREAD, *with_pipeline[3:]]
            cases: dict[str, list[str]] = {
                "crawl": crawl,
                "pipeline": [*with_pipeline, "-s", "FPI_STORE={store}"],
                "pipeline-b1": [*with_pipeline, "-s", "FPI_STORE={store}", "-s", "FPI_BATCH_SIZE=1"],
                "fingerprint": [sys.executable, "-m", "fingerprint_indexer.cli.main", "fingerprint",
                                str(work / "articles.jsonl"), "--no-terms"],
                "decide": [sys.executable, "-c", DECIDE, str(work / "articles.jsonl"), "{store}", "64"],
                "decide-b1": [sys.executable, "-c", DECIDE, str(work / "articles.jsonl"), "{store}", "1"],
            }  # fmt: skip
            if args.sidecar:
                cases["sidecar"] = [*with_pipeline, "-s", "FPI_SIDECAR_URL={sidecar}"]
            if args.baseline:  # right after this checkout's pipeline, in every round
                ordered: dict[str, list[str]] = {}
                for name, cmd in cases.items():
                    ordered[name] = cmd
                    if name == "pipeline":
                        ordered["baseline"] = cmd
                cases = ordered
            if args.cases:
                wanted = {"crawl", "fingerprint", "baseline", "sidecar", *args.cases.split(",")}
                unknown = wanted - set(cases) - {"baseline", "sidecar"}
                if unknown:
                    ap.error(f"unknown cases {sorted(unknown)}; the cases are {sorted(cases)}")
                cases = {name: cmd for name, cmd in cases.items() if name in wanted}
            base_env = dict(env)
            if args.baseline:
                base_env["PYTHONPATH"] = str(args.baseline.resolve())
            times: dict[str, list[float]] = {name: [] for name in cases}
            cpus: dict[str, list[float]] = {name: [] for name in cases}
            own: dict[str, list[float]] = {name: [] for name in cases}  # --per-thread: the pipeline's own
            for r in range(args.rounds):
                for name, template in cases.items():
                    store = work / f"store-{name}-{r}"
                    with contextlib.ExitStack() as stack:
                        url, pid = stack.enter_context(sidecar(store, env)) if name == "sidecar" else ("", 0)
                        served = process_cpu_s(pid) if pid else 0.0
                        cmd = [a.replace("{store}", str(store)).replace("{sidecar}", url) for a in template]
                        took, cpu, log = timed(cmd, base_env if name == "baseline" else env, work)
                        if pid:  # the service's work for this crawl (its start-up not counted)
                            cpu += process_cpu_s(pid) - served
                    if name.startswith(("crawl", "pipeline", "sidecar", "baseline")):
                        stats = stats_of(log)
                        assert stats.get("item_scraped_count") == args.docs, (name, stats)
                        if name != "crawl":
                            decided = stats.get("fingerprint_indexer/items", 0)
                            undecided = stats.get("fingerprint_indexer/undecided", 0)
                            assert decided == args.docs and not undecided, (name, stats)
                    times[name].append(took)
                    cpus[name].append(cpu)
                    split = re.search(r"^PIPELINE-CPU (own=([\d.]+) .*)$", log, re.M)
                    if split:
                        own[name].append(float(split[2]))
                    print(f"# round {r + 1} {name}: {took:.2f} s, {cpu:.2f} CPU s"
                          + (f"; per thread {split[1]}" if split else ""), flush=True)
                    shutil.rmtree(store, ignore_errors=True)
        med = {name: statistics.median(t) for name, t in times.items()}
        cpu_med = {name: statistics.median(c) for name, c in cpus.items()}
        rate = {name: args.docs / t for name, t in med.items()}
        print(f"\n{args.docs} articles of {args.corpus.name}, median of {args.rounds} rounds, "
              "start-up counted")
        print(f"{'case':<14}{'seconds':>9}{'docs/s':>10}{'CPU s':>9}   runs (s)")
        for name in cases:
            runs = " ".join(f"{t:.2f}" for t in times[name])
            print(f"{name:<14}{med[name]:>9.2f}{rate[name]:>10.1f}{cpu_med[name]:>9.2f}   {runs}")
        ratios = [("pipeline", "fingerprint", "issue #30 asks >= 0.8"),
                  ("pipeline-b1", "fingerprint", "one item at a time"),
                  ("pipeline", "crawl", "what the pipeline costs the crawl"),
                  ("crawl", "fingerprint", "the crawl's own cost against fingerprinting"),
                  ("pipeline", "pipeline-b1", "the gain of batching in the crawl"),
                  ("decide", "decide-b1", "the gain of batching in the decision step alone"),
                  ("decide", "fingerprint", "the decision step alone against fingerprinting"),
                  ("sidecar", "fingerprint", "decisions by a local serve"),
                  ("sidecar", "crawl", ""),
                  ("pipeline", "baseline", "this checkout's pipeline against the baseline's")]  # fmt: skip
        print()
        for a, b, why in ratios:
            if a in rate and b in rate:
                print(f"{a + ' / ' + b:<28}{rate[a] / rate[b]:>6.2f}x  {why}")
        # By CPU, what a pipeline adds to the crawl against fingerprinting alone: the crawl's own cost,
        # which no pipeline can take away, left out (round by round, then the median)
        print()
        for name in ("pipeline", "pipeline-b1", "sidecar", "baseline"):
            if name in cpus:
                added = [c - k for c, k in zip(cpus[name], cpus["crawl"], strict=True)]
                ratio = statistics.median(f / a for f, a in zip(cpus["fingerprint"], added, strict=True))
                rounds = " / ".join(f"{f / a:.2f}" for f, a in zip(cpus["fingerprint"], added, strict=True))
                print(f"{name + ' by CPU':<28}{ratio:>6.2f}x  fingerprinting alone's CPU against what the "
                      f"{name} adds to the crawl's ({statistics.median(added):.2f} CPU s); rounds {rounds}")
        # --per-thread: the pipeline's own work inside the crawl (no start-up, none of the reactor's work
        # for the items): a figure to compare checkouts by, not against fingerprinting alone
        for name, got in own.items():
            if got:
                rounds = " / ".join(f"{o:.2f}" for o in got)
                print(f"{name + ' own threads':<28}{statistics.median(got):>6.2f}s  CPU of the pipeline's "
                      f"own calls in the crawl (rounds {rounds})")
        if own.get("pipeline") and own.get("baseline"):
            ratio = statistics.median(o / b for o, b in zip(own["pipeline"], own["baseline"], strict=True))
            print(f"{'own threads vs baseline':<28}{ratio:>6.2f}x  this checkout's pipeline work against the "
                  "baseline's, round by round")
        print("\ncommands:")
        for name, template in cases.items():
            snippets = {DECIDE: "<DECIDE, the snippet in this script>", PER_THREAD: "<PER_THREAD, ditto>"}
            shown = [snippets.get(a, a) for a in template]
            print(f"  {name}: {shlex.join(shown)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
