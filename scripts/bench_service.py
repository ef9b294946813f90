#!/usr/bin/env python3
"""Load benchmark of the HTTP service on loopback, beside the in-process pipeline on the same documents.

1. In-process baseline: ``Pipeline.process_many`` (fresh store) over the same ``--docs`` documents, with one
   process and with as many worker processes as the service gets. With ``--index`` also the same pipeline
   writing every document with the service's fields into a fresh Elasticsearch index (one ``_bulk`` per
   committed batch, on a writer thread so writes overlap fingerprinting, as the service's do): the reference
   for the service with Elasticsearch writes.
2. Service: ``fingerprint-indexer serve`` as a subprocess on a free loopback port (fresh data directory), then
   for ``--seconds`` (default 120) ``--clients`` threads post ``/v1/ingest`` batches of ``--batch`` documents
   while one thread posts ``/v1/similar`` look-ups. Documents cycle through the corpus; each pass uses new
   ids, so later passes are exact duplicates (still fingerprinted and decided in full).
3. Reports sustained documents/s and its ratio to each in-process baseline, p50/p99 latency per
   ``/v1/ingest`` batch and per ``/v1/similar``, and the service's resident memory (main process and
   workers) after warm-up and at the end.

Usage:
    python scripts/bench_service.py [--seconds 120] [--es URL] [--processes 2] [--batch 50] [--index]
                                    [--state embedded|elasticsearch]

``--index`` also writes every document into Elasticsearch (the default measures the ingest hook alone,
which is what the in-process pipeline does). Reads ../shared/data/zh_news.jsonl.gz in place.
Prints a JSON object with every figure.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import itertools
import json
import os
import queue
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from elasticsearch import helpers

from fingerprint_indexer.documents import Document
from fingerprint_indexer.es.connection import connect
from fingerprint_indexer.es.mapping import ES_LAYOUT, data_nodes_of, index_creation
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, fingerprint_many
from fingerprint_indexer.pipeline import Pipeline
from fingerprint_indexer.sidecar.ingest import es_fields

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("FPI_SHARED_DATA", REPO.parent / "shared" / "data"))


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 120) -> None:
    """Wait until the service at ``url`` answers /healthz; exit with its log's tail if it dies or hangs."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"service did not start: {log.read_text()[-2000:]}")
        time.sleep(0.2)


def stop_service(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the service finishes what it holds), SIGKILL after a minute."""
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def load_records(limit: int) -> list[dict[str, Any]]:
    out = []
    with gzip.open(DATA / "zh_news.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if isinstance(rec.get("content"), str) and rec["content"].strip():
                out.append({"id": str(rec["id"]), "title": rec.get("title") or "", "content": rec["content"]})
            if len(out) >= limit:
                break
    return out


def fingerprint_alone(records: list[dict[str, Any]], processes: int, threads: int = 1) -> dict[str, float]:
    """Fingerprinting alone (``fingerprint_many``, pool start-up counted, nothing decided or written):
    the floor of every path that fingerprints; ``threads`` with one process."""
    fpr = Fingerprinter().warm()
    t0, c0 = time.perf_counter(), _cpu_s()
    n = sum(1 for _ in fingerprint_many((Document.from_mapping(r) for r in records), processes=processes,
                                        fingerprinter=fpr, threads=threads))  # fmt: skip
    dt = time.perf_counter() - t0
    return {"docs": n, "seconds": round(dt, 2), "docs_per_s": round(n / dt, 1),
            "cpu_s": round(_cpu_s() - c0, 2)}


def _cpu_s() -> float:
    """CPU seconds of this process and its joined children (a finished pool's workers)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ru.ru_utime + ru.ru_stime


def baseline(records: list[dict[str, Any]], processes: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, Pipeline(Path(tmp) / "store", processes=processes) as pipe:
        t0 = time.perf_counter()  # dictionaries are loaded; worker start-up (processes > 1) is counted
        n = sum(1 for _ in pipe.process_many(Document.from_mapping(r) for r in records))
        dt = time.perf_counter() - t0
    return {"docs": n, "seconds": round(dt, 2), "docs_per_s": round(n / dt, 1)}


def baseline_es(records: list[dict[str, Any]], processes: int, es: str, index: str,
                threads: int = 1) -> dict[str, float]:
    """The in-process pipeline plus Elasticsearch writes of each document with the fields the service adds
    (one ``_bulk`` per committed batch, on a writer thread), into a fresh ``index`` created as the service
    creates its indices."""
    client = connect(es)
    concrete, body = index_creation(index, ES_LAYOUT, copy_marks=None, data_nodes=data_nodes_of(client),
                                    dynamic=True)  # fmt: skip
    client.indices.create(index=concrete, **body)
    pending: queue.Queue[list[dict[str, Any]] | None] = queue.Queue(maxsize=2)
    failed: list[int] = []

    def writer() -> None:
        while (actions := pending.get()) is not None:
            _, errors = helpers.bulk(client, actions, chunk_size=len(actions), raise_on_error=False)
            failed.append(len(errors) if isinstance(errors, list) else int(errors))

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        with tempfile.TemporaryDirectory() as tmp, Pipeline(Path(tmp) / "store", processes=processes) as pipe:
            t0 = time.perf_counter()
            seen: deque[tuple[dict[str, Any], Document]] = deque()  # as Pipeline.process_many hands over

            def feed() -> Iterator[Document]:
                for rec in records:
                    doc = Document.from_mapping(rec)
                    seen.append((rec, doc))
                    yield doc

            results = fingerprint_many(feed(), processes=processes, fingerprinter=pipe.fingerprinter,
                                       threads=threads)
            triples = ((*seen.popleft(), res) for res in results)
            n = 0
            while chunk := list(itertools.islice(triples, pipe.batch_size)):
                decisions = pipe.decide_batch([(doc, res) for _, doc, res in chunk])
                pending.put([{"_index": index, "_id": doc.id,
                              "_source": {**{k: v for k, v in rec.items() if k != "id"},
                                          **es_fields(res, dec, ES_LAYOUT, doc.length)}}
                             for (rec, doc, res), dec in zip(chunk, decisions, strict=True)])
                n += len(chunk)
            pending.put(None)
            thread.join()
            dt = time.perf_counter() - t0
    finally:
        if thread.is_alive():
            pending.put(None)
            thread.join()
        client.indices.delete(index=index, ignore_unavailable=True)
        client.close()
    return {"docs": n, "seconds": round(dt, 2), "docs_per_s": round(n / dt, 1), "write_errors": sum(failed)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    """Resident kB (``RssAnon``: heap and other private memory; ``RssFile``: mapped files, such as the
    LevelDB tables LevelDB reads through mmap, which the kernel can drop at any time)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            out += [int(p) for p in (task / "children").read_text().split()]
    return out


def memory(pid: int) -> dict[str, float]:
    workers = [rss_kb(c) for c in children(pid)]
    main = rss_kb(pid)
    return {"main_mb": round(main / 1024, 1), "main_anon_mb": round(rss_kb(pid, "RssAnon") / 1024, 1),
            "main_file_mb": round(rss_kb(pid, "RssFile") / 1024, 1),
            "workers_mb": round(sum(workers) / 1024, 1),
            "total_mb": round((main + sum(workers)) / 1024, 1)}


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)) * 1000, 1) if values else float("nan")


class Load:
    """Client threads sharing the document cycle and the measurements."""

    def __init__(self, url: str, records: list[dict[str, Any]], batch: int, index: bool) -> None:
        self.url, self.records, self.batch, self.index = url, records, batch, index
        self.lock = threading.Lock()
        self.cursor = 0
        self.stop = threading.Event()
        self.ingest_lat: list[float] = []
        self.similar_lat: list[float] = []
        self.docs = 0
        self.errors = 0
        self.write_errors = 0  # documents the service answered for but Elasticsearch did not take

    def next_batch(self) -> bytes:
        with self.lock:
            start = self.cursor
            self.cursor += self.batch
        docs = []
        for i in range(start, start + self.batch):
            rec = self.records[i % len(self.records)]
            docs.append({**rec, "id": f"{i // len(self.records)}-{rec['id']}"})
        return json.dumps({"documents": docs, "index": self.index}, ensure_ascii=False).encode()

    def ingest_client(self) -> None:
        with httpx.Client(base_url=self.url, timeout=120) as c:
            while not self.stop.is_set():
                body = self.next_batch()
                t0 = time.perf_counter()
                r = c.post("/v1/ingest", content=body, headers={"content-type": "application/json"})
                dt = time.perf_counter() - t0
                failed = 0
                if r.status_code == 200 and self.index:
                    failed = sum(1 for res in r.json()["results"]
                                 if (res.get("index") or {}).get("status", 500) >= 300)
                with self.lock:
                    if r.status_code == 200:
                        self.ingest_lat.append(dt)
                        self.docs += self.batch
                        self.write_errors += failed
                    else:
                        self.errors += 1

    def similar_client(self) -> None:
        i = 0
        with httpx.Client(base_url=self.url, timeout=120) as c:
            while not self.stop.is_set():
                rec = self.records[(i * 7) % len(self.records)]
                i += 1
                t0 = time.perf_counter()
                r = c.post("/v1/similar", json={"text": rec["content"]})
                dt = time.perf_counter() - t0
                with self.lock:
                    if r.status_code == 200:
                        self.similar_lat.append(dt)
                    else:
                        self.errors += 1


def es_url_default() -> str | None:
    if os.environ.get("ES_URL"):
        return os.environ["ES_URL"]
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "es-local"), "url"], capture_output=True,
                       text=True, timeout=60)
    return r.stdout.strip() or None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=120.0, help="length of the load phase (default 120)")
    ap.add_argument("--es", default=None, help="Elasticsearch URL (default: ES_URL or scripts/es-local url)")
    ap.add_argument("--processes", type=int, default=2, help="service fingerprint workers (default 2)")
    ap.add_argument("--clients", type=int, default=2, help="concurrent /v1/ingest clients (default 2)")
    ap.add_argument("--batch", type=int, default=50, help="documents per /v1/ingest request (default 50)")
    ap.add_argument("--docs", type=int, default=12_000, help="corpus documents to cycle through")
    ap.add_argument("--baseline-docs", type=int, default=0,
                    help="documents for the in-process baseline (default 0: the whole sample, i.e. the same "
                         "documents the service gets)")
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds of load before measuring")
    ap.add_argument("--index", action="store_true", help="also write the documents into Elasticsearch")
    ap.add_argument("--state", choices=["embedded", "elasticsearch"], default="embedded",
                    help="the service's --state (elasticsearch: decides against the cluster; needs --index)")
    args = ap.parse_args()
    if args.state == "elasticsearch" and not args.index:
        sys.exit("--state elasticsearch decides against the cluster: pass --index too")

    es = args.es or es_url_default()
    if not es and args.index:
        sys.exit("no Elasticsearch URL: pass --es, set ES_URL or run scripts/es-local start")
    # without --index the measured paths never reach Elasticsearch; an unreachable URL is fine
    es = es or "http://127.0.0.1:9"
    records = load_records(args.docs)
    out: dict[str, Any] = {"documents_in_corpus_sample": len(records), "batch": args.batch,
                           "clients": args.clients, "processes": args.processes, "index": args.index,
                           "state": args.state,
                           "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    base = records[: args.baseline_docs] if args.baseline_docs else records
    out["in_process_1"] = baseline(base, 1)
    out[f"in_process_{args.processes}"] = baseline(base, args.processes)
    if args.index:
        out[f"in_process_{args.processes}_es"] = baseline_es(base, args.processes, es,
                                                              f"bench-service-baseline-{os.getpid()}")

    tmp = Path(tempfile.mkdtemp(prefix="bench-service-"))
    port = free_port()
    index = f"bench-service-{port}"
    cmd = [sys.executable, "-m", "fingerprint_indexer.cli.main", "serve", "--es", es, "--port", str(port),
           "--store", str(tmp / "data"), "--processes", str(args.processes), "--index", index,
           "--no-access-log", "--log-level", "warning", "--state", args.state]
    log = open(tmp / "service.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, tmp / "service.log")
        load = Load(url, records, args.batch, args.index)
        threads = [threading.Thread(target=load.ingest_client) for _ in range(args.clients)]
        threads.append(threading.Thread(target=load.similar_client))
        for t in threads:
            t.start()
        time.sleep(args.warmup)
        with load.lock:
            load.ingest_lat.clear()
            load.similar_lat.clear()
            docs0 = load.docs
        mem_start = memory(proc.pid)
        t0 = time.perf_counter()
        samples = []
        while (left := args.seconds - (time.perf_counter() - t0)) > 0:
            time.sleep(min(10.0, left))
            samples.append([round(time.perf_counter() - t0), memory(proc.pid)["total_mb"]])
        with load.lock:
            elapsed = time.perf_counter() - t0
            docs = load.docs - docs0
            ingest_lat, similar_lat = list(load.ingest_lat), list(load.similar_lat)
        mem_end = memory(proc.pid)
        load.stop.set()
        for t in threads:
            t.join(timeout=180)
        out["service"] = {
            "seconds": round(elapsed, 1), "documents": docs, "docs_per_s": round(docs / elapsed, 1),
            "ingest_batches": len(ingest_lat), "ingest_p50_ms": pct(ingest_lat, 50),
            "ingest_p99_ms": pct(ingest_lat, 99), "similar_requests": len(similar_lat),
            "similar_per_s": round(len(similar_lat) / elapsed, 1), "similar_p50_ms": pct(similar_lat, 50),
            "similar_p99_ms": pct(similar_lat, 99), "errors": load.errors, "write_errors": load.write_errors,
            "memory_start": mem_start, "memory_end": mem_end,
            "memory_growth": round(mem_end["total_mb"] / mem_start["total_mb"] - 1, 3),
            "memory_total_mb_every_10s": samples,
        }
        ref = out[f"in_process_{args.processes}"]["docs_per_s"]
        out["service_vs_in_process"] = {
            f"processes_{args.processes}": round(docs / elapsed / ref, 2),
            "processes_1": round(docs / elapsed / out["in_process_1"]["docs_per_s"], 2),
        }
        if args.index:
            httpx.post(f"{es}/{index}/_refresh", timeout=60)
            count = httpx.get(f"{es}/{index}/_count", timeout=60).json()["count"]
            out["service"]["documents_in_elasticsearch"] = count  # warm-up and the last requests included
            ref_es = out[f"in_process_{args.processes}_es"]["docs_per_s"]
            out["service_vs_in_process"][f"processes_{args.processes}_es"] = round(docs / elapsed / ref_es, 2)
    finally:
        stop_service(proc)
        log.close()
        if args.index:
            httpx.delete(f"{es}/{index}", timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    out["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
