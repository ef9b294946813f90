#!/usr/bin/env python3
"""Elasticsearch benchmark, side by side in one run on one node.

(a) ingest: our pipeline (fingerprint + decide against the index + bulk, as the `index` command runs it)
    vs plain ``helpers.bulk`` of the same documents without fingerprints vs fingerprinting alone;
(b) near-duplicate query latency (p50/p99) at N indexed fingerprints, single queries and msearch batches,
    vs fetching every fingerprint and scanning them on the client;
(c) reindex of an index that has no fingerprints yet.

Usage:
    scripts/es-local start                      # or point ES_URL at a cluster
    ES_URL=$(scripts/es-local url) python scripts/bench_es.py [--docs N] [--fingerprints 1000000]

``--instructions N --cache FILE`` counts instead the client's machine instructions of deciding and writing
the first N documents of zh_news as the ``index`` command does (fingerprinted once into ``FILE``, the cache
of ``bench_dedupe.py --decide``; valgrind's callgrind, a run of no documents subtracted): a figure the
load of a shared machine does not move. ``--baseline DIR`` counts another checkout beside it.

    ES_URL=$(scripts/es-local url) python scripts/bench_es.py --instructions 2000 --cache zh_news.pkl

``--commands R`` runs instead, R rounds one after the other, the two commands as a user runs them, start-up
counted (as ``bench_dedupe.py`` runs ``dedupe``): ``fingerprint-indexer fingerprint CORPUS --no-terms`` and
``fingerprint-indexer es index CORPUS`` into a fresh index (deleted after), each with its default
fingerprinting threads and its output discarded; it reports each command's CPU seconds (user + system of
the process; the node's own CPU is apart) and their ratio per round and the median. Run the node on its
own cores and this script on the others (``taskset``), as the target means. ``es index`` starts slower
than ``fingerprint`` by the import of the Elasticsearch client, whose transport imports every HTTP
library it finds installed (aiohttp, requests and httpx, besides urllib3): the run names those present.
Run it with the interpreter of an environment that holds the package's own dependencies only to measure
what a user's install starts with:

    ES_URL=$(scripts/es-local url) taskset -c 0 python scripts/bench_es.py --commands 5
    python3 -m venv V && V/bin/pip install .
    ES_URL=$(scripts/es-local url) taskset -c 0 V/bin/python scripts/bench_es.py --commands 5

Reads ../shared/data/zh_news.jsonl.gz in place. Creates and deletes indices named bench-*.
Prints one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from bench_dedupe import DEFAULT_CORPUS, fingerprinted, run  # beside this script
from callgrind import per_document, report, require_valgrind
from elasticsearch import Elasticsearch, helpers

from fingerprint_indexer.collector import long_run
from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.es_ingest import EsDecider, pipelined
from fingerprint_indexer.elastic.es_setup import setup_index
from fingerprint_indexer.elastic.reindex import reindex
from fingerprint_indexer.es.connection import connect
from fingerprint_indexer.es.mapping import force_merge, load_index_body
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, fingerprint_many
from fingerprint_indexer.fingerprint.hamming import to_unsigned
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("FPI_SHARED_DATA", REPO.parent / "shared" / "data"))


def load_docs(limit: int | None) -> list[Document]:
    out = []
    with gzip.open(DATA / "zh_news.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            try:
                out.append(Document.from_mapping(rec))
            except ValueError:
                continue
            if limit and len(out) >= limit:
                break
    return out


def fresh(client: Elasticsearch, name: str) -> str:
    client.options(ignore_status=404).indices.delete(index=name)
    return name


def batched(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


# ------------------------------------------------------------------------------------------ (a) ingest
def _fingerprint_only(docs: list[Document], processes: int, threads: int, fpr: Fingerprinter) -> float:
    t = time.perf_counter()
    for _ in fingerprint_many(iter(docs), processes=processes, fingerprinter=fpr, threads=threads):
        pass
    return time.perf_counter() - t


def _plain_bulk(client: Elasticsearch, docs: list[Document], batch: int) -> float:
    name = fresh(client, "bench-plain")
    client.indices.create(index=name, **load_index_body())
    actions = (
        {"_index": name, "_id": d.id, "_source": {"title": d.title, "content": d.content}} for d in docs
    )
    t = time.perf_counter()
    helpers.bulk(client, actions, chunk_size=batch)
    client.indices.refresh(index=name)
    elapsed = time.perf_counter() - t
    fresh(client, name)
    return elapsed


class _TimedWrites(EsDecider):
    """The command's decider, adding up the CPU of its bulk writes on the writer thread."""

    writing = 0.0

    def write(self, actions: list[Any]) -> list[tuple[str, str]]:  # the forms of any checkout counted
        c = time.thread_time()
        try:
            return super().write(actions)
        finally:
            self.writing += time.thread_time() - c


def _ours(client: Elasticsearch, docs: list[Document], processes: int, threads: int, batch: int,
          fpr: Fingerprinter, counts: dict[str, int], cpu: list[float],
          threads_cpu: list[dict[str, float]] | None = None) -> float:  # fmt: skip
    """Wall time of the ``index`` command's pipeline (its collector settings too); appends the CPU seconds
    of this (main) process, deciding and writing, to ``cpu`` (fingerprinting workers are other processes;
    fingerprinting threads, with one process, are counted in it), and to ``threads_cpu`` the CPU of the
    deciding thread (this one), of the bulk writes and of the rest (fingerprinting)."""
    name = fresh(client, "bench-ours")
    client.options(ignore_status=404).indices.delete(index=f"{name}-000001")
    setup_index(client, name)
    decider = _TimedWrites(ElasticsearchIndex(client, name), k=3)
    counts.clear()
    # as the command reads (imported here: --baseline runs the counted part of this script on older code)
    from fingerprint_indexer.elastic.es_ingest import fingerprinted_batches

    t, c, own = time.perf_counter(), time.process_time(), time.thread_time()
    batches = fingerprinted_batches(iter(docs), fpr, batch, processes, threads)
    with long_run():  # the collector settings of the command
        for result in pipelined(decider, batches, "index"):
            for d in result.decisions:
                counts[d.decision] = counts.get(d.decision, 0) + 1
    elapsed = time.perf_counter() - t
    cpu.append(time.process_time() - c)
    if threads_cpu is not None:
        deciding = time.thread_time() - own
        threads_cpu.append({"deciding": deciding, "writing": decider.writing,
                            "rest": cpu[-1] - deciding - decider.writing})
    client.indices.delete(index=f"{name}-000001")
    return elapsed


def cpu_clocks(client: Elasticsearch) -> dict[str, float]:
    """CPU seconds so far of this process, of its ended children (the fingerprinting workers, counted once
    their pool is joined) and of the Elasticsearch nodes (every node's JVM, merges and GC included)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    stats = client.nodes.stats(metric="process")["nodes"].values()
    return {"this_process": time.process_time(), "workers": ru.ru_utime + ru.ru_stime,
            "elasticsearch": sum(n["process"]["cpu"]["total_in_millis"] for n in stats) / 1000}


def bench_ingest(
    client: Elasticsearch, docs: list[Document], processes: int, threads: int, batch: int, repeat: int
) -> dict[str, Any]:
    """The three runs interleaved ``repeat`` times; medians (the machine may be shared). Each run's CPU
    seconds are split between this process, the fingerprinting workers and Elasticsearch: on a machine
    whose cores they share, that split says where the time beyond fingerprinting goes."""
    fpr = Fingerprinter()
    counts: dict[str, int] = {}
    runs: dict[str, list[float]] = {"fingerprint_only": [], "plain_bulk": [], "ours": []}
    cpu: dict[str, list[dict[str, float]]] = {k: [] for k in runs}
    ours_cpu: list[float] = []
    ours_threads: list[dict[str, float]] = []

    def timed(name: str, run: Any) -> None:
        before = cpu_clocks(client)
        runs[name].append(run())
        after = cpu_clocks(client)
        cpu[name].append({k: after[k] - before[k] for k in before})

    for _ in range(repeat):
        timed("fingerprint_only", lambda: _fingerprint_only(docs, processes, threads, fpr))
        timed("ours", lambda: _ours(client, docs, processes, threads, batch, fpr, counts, ours_cpu,
                                    ours_threads))
        timed("plain_bulk", lambda: _plain_bulk(client, docs, batch))
    n = len(docs)
    rate = {k: n / statistics.median(v) for k, v in runs.items()}
    return {
        "documents": n,
        "processes": processes,
        "threads": threads if processes <= 1 else 1,
        "repeat": repeat,
        "fingerprint_only_docs_s": round(rate["fingerprint_only"], 1),
        "plain_bulk_docs_s": round(rate["plain_bulk"], 1),
        "ours_docs_s": round(rate["ours"], 1),
        "ours_vs_slower_of_others": round(
            rate["ours"] / min(rate["fingerprint_only"], rate["plain_bulk"]), 3
        ),
        "ours_vs_fingerprint_only_per_round": [
            round(f / o, 3) for f, o in zip(runs["fingerprint_only"], runs["ours"], strict=True)
        ],
        # by CPU: what a node on cores of its own leaves to compare (this process runs both pipelines, and
        # fingerprinting threads are counted in it)
        "ours_vs_fingerprint_only_by_cpu_per_round": [
            round(f["this_process"] / o["this_process"], 3)
            for f, o in zip(cpu["fingerprint_only"], cpu["ours"], strict=True)
        ],
        # CPU µs a document by thread in each round: the deciding thread, the bulk writes, and the rest of
        # the process (the fingerprinting threads, when fingerprinting runs in it)
        "ours_us_per_document_per_round": [
            {part: round(v / len(docs) * 1e6) for part, v in row.items()} for row in ours_threads
        ],
        "ours_main_process_cpu_s": round(statistics.median(ours_cpu), 1),
        "cpu_s": {name: {part: round(statistics.median(r[part] for r in rows), 1) for part in rows[0]}
                  for name, rows in cpu.items()},
        "decisions": counts,
    }


# ------------------------------------------------------------------------------------------- (b) query
def bench_query(client: Elasticsearch, n: int, queries: int, seed: int = 7) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    # a tenth of the queries have planted neighbours at distance 1..3
    name = fresh(client, "bench-fps")
    index = ElasticsearchIndex(client, name, read_your_writes=False, chunk_size=5000)
    client.indices.put_settings(index=name, settings={"refresh_interval": "-1", "number_of_replicas": 0})
    t = time.perf_counter()
    index.add_many((f"d{i}", int(fp), None) for i, fp in enumerate(fps.tolist()))
    client.indices.put_settings(index=name, settings={"refresh_interval": "1s"})
    index.refresh()
    force_merge(client, name, 1)
    load_s = time.perf_counter() - t
    picks = rng.choice(n, size=queries, replace=False)
    flips = rng.integers(0, 4, size=queries)
    qs = []
    for p, f in zip(picks.tolist(), flips.tolist(), strict=True):
        q = int(fps[p])
        for b in rng.choice(64, size=f, replace=False).tolist():
            q ^= 1 << b
        qs.append(q)
    for q in qs[:50]:  # warm-up
        index.query(q, 3)
    lat = []
    found = 0
    for q in qs:
        t = time.perf_counter()
        found += len(index.query(q, 3))
        lat.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    batch_results = index.query_many(qs, 3)
    many_s = time.perf_counter() - t
    assert sum(map(len, batch_results)) == found

    t = time.perf_counter()
    fetched = []
    body = {"query": {"match_all": {}}, "_source": False, "docvalue_fields": ["fingerprint"]}
    for hit in helpers.scan(client, index=name, query=body, size=10_000):
        fetched.append(hit["fields"]["fingerprint"][0])
    fetch_all_s = time.perf_counter() - t
    arr = np.array([to_unsigned(v) for v in fetched], dtype=np.uint64)
    scan_ms = []
    for q in qs[:200]:
        t = time.perf_counter()
        np.flatnonzero(np.bitwise_count(arr ^ np.uint64(q)) <= 3)
        scan_ms.append((time.perf_counter() - t) * 1000)
    fresh(client, name)
    lat.sort()
    return {
        "indexed_fingerprints": n,
        "load_s": round(load_s, 1),
        "load_docs_s": round(n / load_s),
        "queries": queries,
        "matches_found": found,
        "query_p50_ms": round(statistics.median(lat), 2),
        "query_p99_ms": round(lat[int(0.99 * (len(lat) - 1))], 2),
        "query_mean_ms": round(statistics.fmean(lat), 2),
        "msearch_per_query_ms": round(many_s * 1000 / queries, 3),
        "fetch_all_fingerprints_s": round(fetch_all_s, 1),
        "client_scan_per_query_ms": round(statistics.median(scan_ms), 2),
        "naive_fetch_and_scan_per_query_ms": round(fetch_all_s * 1000 + statistics.median(scan_ms), 1),
    }


# ----------------------------------------------------------------------------------------- (c) reindex
def bench_reindex(client: Elasticsearch, docs: list[Document], processes: int, batch: int) -> dict[str, Any]:
    name = fresh(client, "bench-legacy")
    client.indices.create(index=name, mappings={"properties": {"title": {"type": "text"},
                                                               "content": {"type": "text"}}})  # fmt: skip
    helpers.bulk(client, ({"_index": name, "_id": d.id, "_source": {"title": d.title, "content": d.content}}
                          for d in docs), chunk_size=batch, refresh=True)  # fmt: skip
    setup_index(client, name, update_mapping=True)
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        report = reindex(client, name, processes=processes, batch_size=batch,
                         checkpoint=Path(tmp) / "ck.json", progress=False)  # fmt: skip
        elapsed = time.perf_counter() - t
    fresh(client, name)
    return {"documents": report.documents, "missing_source": report.missing_source, "processes": processes,
            "docs_s": round(report.documents / elapsed, 1), "duplicates": report.to_dict()["duplicates"],
            "clusters": report.clusters}  # fmt: skip


def decide_and_write(es: str, cache: Path, n: int, batch: int) -> None:
    """The ``index`` command's decision and writes (its pipeline and collector settings) of the first ``n``
    cached documents into a fresh index, deleted after: the run ``--instructions`` counts."""
    pairs = fingerprinted(DEFAULT_CORPUS, cache)[:n]
    client = connect(es, request_timeout=600)
    name = fresh(client, f"bench-count-{os.getpid()}")
    setup_index(client, name)
    try:
        with long_run():
            for _ in pipelined(EsDecider(ElasticsearchIndex(client, name), k=3), batched(iter(pairs), batch)):
                pass
    finally:
        client.indices.delete(index=f"{name}-000001")


def instructions_main(args: argparse.Namespace) -> None:
    if args.cache is None:
        sys.exit("--instructions needs --cache (the corpus fingerprinted once, outside the count)")
    if not args.es:
        sys.exit("--instructions needs --es or ES_URL")
    require_valgrind()
    if not args.cache.exists():
        fingerprinted(DEFAULT_CORPUS, args.cache)  # written now, outside the count
    n = args.instructions
    client = report(f"# client instructions of es index: the first {n} documents of {args.cache.name}, batch "
                    f"{args.batch_size}",
                    lambda m: [__file__, "--es", args.es, "--cache", str(args.cache), "--batch-size",
                               str(args.batch_size), "--count-only", str(m)], n, args.baseline)  # fmt: skip
    # the target's other side, counted the same way: fingerprinting the same documents
    fp = per_document({m: [__file__, "--cache", str(args.cache), "--fingerprint-only", str(m)]
                       for m in (n, 0)}, n)  # fmt: skip
    print(f"fingerprinting the same documents (this checkout): {fp:,.0f} instructions per document; the "
          f"client's work is {client / fp:.2f} of it ({fp / (fp + client):.2f}x fingerprinting alone, were "
          "instructions time)")


def http_libraries() -> list[str]:
    """The HTTP libraries installed beside the Elasticsearch client that its transport imports when it is
    imported (part of ``es index``'s start-up), each named as present or absent."""
    return [f"{name}{'' if importlib.util.find_spec(name) is not None else ' (absent)'}"
            for name in ("urllib3", "httpx", "aiohttp", "requests")]


def commands_main(es: str, rounds: int, corpus: Path) -> None:
    """``--commands``: fingerprinting alone and ``es index`` as commands, start-up counted, per round."""
    client = connect(es, request_timeout=600)
    print(f"# {corpus.name}; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{os.cpu_count()} CPUs")
    print(f"# HTTP libraries the client's transport imports here: {', '.join(http_libraries())}")
    print(f"{'round':<6} {'command':<12} {'wall s':>8} {'CPU s':>8} {'node CPU s':>11}")
    ratios: list[float] = []
    for r in range(rounds):
        name = fresh(client, f"bench-command-{os.getpid()}")
        got = {}
        for command, args in (("fingerprint", ["fingerprint", str(corpus), "--no-terms"]),
                              ("es index", ["es", "index", str(corpus), "--es", es, "--index", name,
                                            "--output", os.devnull])):  # fmt: skip
            node = cpu_clocks(client)["elasticsearch"]
            got[command] = run(args)
            node = cpu_clocks(client)["elasticsearch"] - node
            print(f"{r:<6} {command:<12} {got[command][0]:>8.1f} {got[command][1]:>8.1f} {node:>11.1f}")
        for index in client.indices.get(index=f"{name}*", expand_wildcards="all"):
            client.indices.delete(index=index)
        ratios.append(got["fingerprint"][1] / got["es index"][1])
        print(f"round {r}: es index vs fingerprinting alone by CPU time: {ratios[-1]:.3f}x")
    if len(ratios) > 2:
        print(f"median of {len(ratios)} rounds: {statistics.median(ratios):.3f}x by CPU time")
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def fingerprint_first(cache: Path, n: int) -> None:
    """Fingerprint the first ``n`` cached documents anew (``Fingerprinter.fingerprint_documents``): the run
    ``--instructions`` counts beside the client's."""
    docs = [doc for doc, _ in fingerprinted(DEFAULT_CORPUS, cache)[:n]]
    Fingerprinter().warm().fingerprint_documents(docs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--es", default=os.environ.get("ES_URL"), help="Elasticsearch URL (default $ES_URL)")
    ap.add_argument("--docs", type=int, default=0, help="articles for (a) and (c); 0 = the whole corpus")
    ap.add_argument("--fingerprints", type=int, default=1_000_000, help="indexed fingerprints for (b)")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--threads", type=int, default=1,
                    help="with --processes 1: fingerprinting threads, as `es index --threads` runs them")
    ap.add_argument("--batch-size", type=int, help="default: the command's --batch-size")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds of (a); medians are reported")
    ap.add_argument("--only", choices=["ingest", "query", "reindex"], action="append")
    ap.add_argument("--instructions", type=int, metavar="N",
                    help="count the client's instructions of indexing the first N documents (needs --cache)")
    ap.add_argument("--cache", type=Path, help="with --instructions: the fingerprinted corpus (a pickle)")
    ap.add_argument("--baseline", type=Path, help="with --instructions: a checkout to count beside this one")
    ap.add_argument("--commands", type=int, metavar="R",
                    help="R rounds of fingerprinting alone and es index as commands, start-up counted")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="with --commands")
    ap.add_argument("--count-only", type=int, help=argparse.SUPPRESS)  # the counted child of --instructions
    ap.add_argument("--fingerprint-only", type=int, help=argparse.SUPPRESS)  # and its fingerprinting child
    args = ap.parse_args()
    if args.batch_size is None:  # (the counted children are always given one: --baseline runs older code)
        from fingerprint_indexer.elastic.es_ingest import DECIDE_BATCH

        args.batch_size = DECIDE_BATCH
    if args.count_only is not None:
        decide_and_write(args.es, args.cache, args.count_only, args.batch_size)
        return 0
    if args.fingerprint_only is not None:
        fingerprint_first(args.cache, args.fingerprint_only)
        return 0
    if args.instructions:
        instructions_main(args)
        return 0
    if args.commands:
        commands_main(args.es, args.commands, args.corpus)
        return 0
    client = connect(args.es, request_timeout=600)
    nodes = client.nodes.info(node_id="_local")["nodes"]
    out: dict[str, Any] = {"server": next(iter(nodes.values()))["version"], "cpus": os.cpu_count(),
                           "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    parts = args.only or ["ingest", "query", "reindex"]
    docs = load_docs(args.docs or None) if {"ingest", "reindex"} & set(parts) else []
    if "ingest" in parts:
        out["ingest"] = bench_ingest(client, docs, args.processes, args.threads, args.batch_size, args.repeat)
        print(json.dumps(out["ingest"]), file=sys.stderr)
    if "query" in parts:
        out["query"] = bench_query(client, args.fingerprints, args.queries)
        print(json.dumps(out["query"]), file=sys.stderr)
    if "reindex" in parts:
        out["reindex"] = bench_reindex(client, docs, args.processes, args.batch_size)
    out["load_average_end"] = [round(x, 2) for x in os.getloadavg()]  # shared machines: note the load
    print(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
