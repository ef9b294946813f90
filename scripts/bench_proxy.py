#!/usr/bin/env python3
"""Throughput of the Elasticsearch-compatible proxy with the official Node.js client's bulk helper.

Side by side in one run, on the same ``--docs`` zh_news documents:

1. ``in_process_es``: the in-process pipeline (the same fingerprinting workers) writing every document
   with the service's fields into a fresh Elasticsearch index (one ``_bulk`` per committed batch on a writer
   thread), the reference of ``scripts/bench_service.py --index``;
2. ``proxy``: ``fingerprint-indexer serve`` (same workers, fresh data directory) on loopback, fed by
   ``@elastic/elasticsearch``'s ``helpers.bulk`` with its default settings (5 MB flushes, concurrency 5),
   exactly as an existing indexer would be pointed at it;
3. ``direct``: the same helper straight into Elasticsearch (no fingerprints): the ceiling;
4. ``fingerprint_alone``: ``fingerprint_many`` with the same workers, nothing decided or written: the floor
   of every path that fingerprints.

Reports documents/s of each, ``proxy / in_process_es`` and ``proxy / fingerprint_alone`` (target >= 0.8),
and the same by CPU: fingerprinting alone's CPU seconds against the service's (with its workers), which
is the ratio the target means when Elasticsearch shares the cores (the ``direct`` run bounds the
proxy's throughput then). Workers: ``--processes N`` (> 1) worker processes, else ``--threads``
threads of one process, as ``serve`` takes them.
The Node.js client is installed as for the client suite (tests/support/clients.py, cached). Reads
../shared/data/zh_news.jsonl.gz.

Usage:
    python scripts/bench_proxy.py [--docs 3000] [--processes 1] [--threads 2] [--es URL]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "tests"))

from bench_service import (  # noqa: E402
    baseline_es,
    children,
    es_url_default,
    fingerprint_alone,
    free_port,
    load_records,
    stop_service,
    wait_healthy,
)
from support.clients import node_driver  # noqa: E402


def node_bulk(url: str, index: str, docs_file: Path) -> dict[str, Any]:
    cmd = node_driver(REPO / "scripts" / "bench_proxy_node.mjs")
    res = subprocess.run([*cmd, url, index, str(docs_file)], capture_output=True, text=True, timeout=3600)
    if res.returncode != 0:
        sys.exit(f"node bulk helper failed: {res.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def tree_cpu_s(pid: int) -> float:
    """CPU seconds so far of a live process and its live descendants (the service and its workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            todo += children(p)
        except (OSError, IndexError):  # ended meanwhile
            continue
    return total


def service_cpu_s(url: str) -> dict[str, dict[str, float]]:
    """CPU seconds of the service so far: its threads by role (``fpi_thread_cpu_seconds_total``) and its
    event loop by step of the write requests (``fpi_write_cpu_seconds_total``)."""
    out: dict[str, dict[str, float]] = {"role": {}, "step": {}}
    for line in httpx.get(f"{url}/metrics", timeout=60).text.splitlines():
        for name, label in (("fpi_thread_cpu_seconds_total{", "role"),
                            ("fpi_write_cpu_seconds_total{", "step")):
            if line.startswith(name):
                key = line.split(f'{label}="', 1)[1].split('"', 1)[0]
                out[label][key] = float(line.rsplit(" ", 1)[1])
    return out


def es_cpu_s(es: str) -> float:
    """CPU seconds so far of the Elasticsearch nodes' JVMs."""
    nodes = httpx.get(f"{es}/_nodes/stats/process", timeout=60).json()["nodes"].values()
    return sum(n["process"]["cpu"]["total_in_millis"] for n in nodes) / 1000


def children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2, help="fingerprinting threads with --processes 1")
    ap.add_argument("--es", default=None, help="Elasticsearch URL (default: ES_URL or scripts/es-local url)")
    args = ap.parse_args()
    es = args.es or es_url_default()
    if not es:
        sys.exit("no Elasticsearch URL: pass --es, set ES_URL or run scripts/es-local start")
    records = load_records(args.docs)
    tmp = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    docs_file = tmp / "docs.jsonl"
    docs_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    out: dict[str, Any] = {"documents": len(records), "processes": args.processes, "threads": args.threads,
                           "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    out["fingerprint_alone"] = fingerprint_alone(records, args.processes, args.threads)
    out["in_process_es"] = baseline_es(records, args.processes, es, f"bench-proxy-baseline-{os.getpid()}",
                                       args.threads)
    direct_index = f"bench-proxy-direct-{os.getpid()}"
    out["direct"] = node_bulk(es, direct_index, docs_file)
    httpx.delete(f"{es}/{direct_index}", timeout=60)
    port = free_port()
    index = f"bench-proxy-{port}"
    cmd = [sys.executable, "-m", "fingerprint_indexer.cli.main", "serve", "--es", es, "--port", str(port),
           "--store", str(tmp / "data"), "--processes", str(args.processes), "--threads", str(args.threads),
           "--no-access-log",
           "--log-level", "warning"]
    with open(tmp / "service.log", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, tmp / "service.log")
        before = (tree_cpu_s(proc.pid), es_cpu_s(es), children_cpu_s(), service_cpu_s(url))
        out["proxy"] = node_bulk(url, index, docs_file)
        after = (tree_cpu_s(proc.pid), es_cpu_s(es), children_cpu_s(), service_cpu_s(url))
        out["proxy"]["cpu_s"] = {  # where the time goes: the cores are shared by all three
            "service_and_workers": round(after[0] - before[0], 2),
            "elasticsearch": round(after[1] - before[1], 2),
            "node_client": round(after[2] - before[2], 2),
            # the service's threads by role (worker processes, with --processes > 1, not among them)
            "service_by_role": {role: round(after[3]["role"][role] - before[3]["role"].get(role, 0.0), 2)
                                for role in sorted(after[3]["role"])},
            # the event loop's share by step of the write requests (the rest: HTTP, asyncio, the kernel)
            "event_loop_by_step": {step: round(after[3]["step"][step] - before[3]["step"].get(step, 0.0), 3)
                                   for step in sorted(after[3]["step"])},
        }
        httpx.post(f"{es}/{index}/_refresh", timeout=60)
        count = httpx.get(f"{es}/{index}/_count", timeout=60).json()["count"]
        out["proxy"]["documents_in_elasticsearch"] = count
    finally:
        stop_service(proc)
        httpx.delete(f"{es}/{index}", timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    out["proxy_vs_in_process_es"] = round(out["proxy"]["docs_per_s"] / out["in_process_es"]["docs_per_s"], 2)
    alone = out["fingerprint_alone"]["docs_per_s"]
    out["proxy_vs_fingerprint_alone"] = round(out["proxy"]["docs_per_s"] / alone, 2)
    out["proxy_vs_fingerprint_alone_cpu"] = round(
        out["fingerprint_alone"]["cpu_s"] / out["proxy"]["cpu_s"]["service_and_workers"], 2)
    out["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
