#!/usr/bin/env python3
"""Benchmark the near-duplicate index backends side by side.

For each size N: random 64-bit fingerprints with planted near-duplicates (copies of other fingerprints
with 1..k bits flipped), then build time, single-query latency p50/p99 and batch throughput at distance
k for MemoryIndex, LevelDBIndex and NumPy brute force (XOR + popcount over the whole array); the PyPI
``simhash`` package's SimhashIndex at the size given by --simhash-size; batch all-pairs (near_pairs);
and memory per fingerprint. Queries: half perturbed copies of stored fingerprints, half random.

With ``--generated FOLDER`` the fingerprints are instead those of the generated scale corpus, as cached
by ``scripts/bench_scale.py --fingerprints`` (every fingerprint of each indexed document: document, lead
and chunks, in corpus order): their buckets are as uneven as a real corpus makes them, where random ones
spread evenly. A size larger than the cache holds is cut to what it holds.

Quick run:  python scripts/bench_index.py --sizes 100000 --pairs-size 100000 --simhash-size 10000
Full run:   python scripts/bench_index.py            (1M and 10M; several minutes, ~6 GB RAM)
Generated:  python scripts/bench_index.py --generated FOLDER/generated-seed11 --sizes 1000000,4000000

With ``--ingest M`` each size also times steady ingest into the embedded store's in-memory tables
(``NumberedTables``, which the store fills as documents arrive): starting from the first N fingerprints,
the next M are each looked up and then appended, as the decision step does, so appends, merges and the
queries' scan of the unmerged appends are all paid. CPU time per fingerprint; ``PYTHONPATH=<export of
another tree>`` runs the same on the code before.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.index.memory import MemoryIndex, NumberedTables
from fingerprint_indexer.index.pairs import near_pairs
from fingerprint_indexer.store.block_index import BUCKET_BUDGET, LevelDBIndex

U64 = npt.NDArray[np.uint64]


def make_fingerprints(n: int, k: int, planted: float, rng: np.random.Generator) -> U64:
    """Random fingerprints where a fraction ``planted`` are near copies (1..k flipped bits) of others."""
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    m = int(n * planted)
    if m:
        src = rng.integers(0, n, m)
        near = flip_bits(fps[src], rng.integers(1, k + 1, m), rng)
        fps[rng.choice(n, m, replace=False)] = near
    return fps


def load_generated(folder: Path, n: int) -> U64:
    """The first ``n`` fingerprints of the indexed documents of a cached corpus (see the module doc)."""
    parts: list[U64] = []
    got, shard = 0, 0
    while got < n and (path := folder / f"shard-{shard:05d}.pkl").exists():
        with path.open("rb") as fh:
            pairs = pickle.load(fh)
        arr = np.array([f for _, r in pairs if not r.degenerate for f in r.fingerprints], dtype=np.uint64)
        parts.append(arr[: n - got])
        got += len(parts[-1])
        shard += 1
    return np.concatenate(parts) if parts else np.empty(0, np.uint64)


def flip_bits(fps: U64, counts: npt.NDArray[np.int64], rng: np.random.Generator) -> U64:
    """Flip ``counts[i]`` distinct random bits of ``fps[i]``."""
    out = fps.copy()
    for c in range(int(counts.max(initial=0))):
        bits = np.uint64(1) << rng.integers(0, 64, len(fps)).astype(np.uint64)
        out = np.where(counts > c, out ^ bits, out)  # rare repeats of a bit only lower the distance
    return out


def make_queries(fps: U64, q: int, k: int, rng: np.random.Generator) -> U64:
    half = q // 2
    near = flip_bits(fps[rng.integers(0, len(fps), half)], rng.integers(0, k + 1, half), rng)
    return np.concatenate([near, rng.integers(0, 2**64, size=q - half, dtype=np.uint64)])


def latencies(fn: Callable[[int], Any], queries: list[int]) -> tuple[float, float, int]:
    """p50 and p99 in microseconds, and the total number of matches (to check the backends agree)."""
    for qv in queries[:20]:  # warm caches
        fn(qv)
    times, hits = [], 0
    for qv in queries:
        t = time.perf_counter()
        hits += len(fn(qv))
        times.append(time.perf_counter() - t)
    arr = np.array(times) * 1e6
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 99)), hits


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def bench_size(n: int, args: argparse.Namespace, rng: np.random.Generator, workdir: Path) -> dict[str, Any]:
    k = args.k
    fps = args.gen[:n] if args.gen is not None else make_fingerprints(n, k, args.planted, rng)
    n = len(fps)
    queries = make_queries(fps, args.queries, k, rng).tolist()
    # an object array, not a list: a 10M-entry list would make every full GC pass walk it mid-query
    ids = np.array([str(i) for i in range(n)], dtype=object)
    row: dict[str, Any] = {"n": n, "k": k, "queries": len(queries)}

    def brute(qv: int) -> npt.NDArray[np.intp]:
        return np.flatnonzero(np.bitwise_count(fps ^ np.uint64(qv)) <= k)

    bq = queries[: args.brute_queries]
    p50, p99, _ = latencies(brute, bq)
    row["brute"] = {"p50_us": p50, "p99_us": p99}

    rss0 = rss_bytes()
    t = time.perf_counter()
    mem = MemoryIndex(capacity=n)
    mem.add_arrays(ids, fps)
    mem.flush()
    build = time.perf_counter() - t
    rss_growth = rss_bytes() - rss0
    p50, p99, hits = latencies(mem.query, queries)
    t = time.perf_counter()
    mem.query_many(np.array(queries, dtype=np.uint64), k)
    batch_us = (time.perf_counter() - t) / len(queries) * 1e6
    mem_brute_hits = sum(len(brute(qv)) for qv in bq)
    mem_sub_hits = sum(len(mem.query(qv, k)) for qv in bq)
    assert mem_brute_hits == mem_sub_hits, "memory index disagrees with brute force"
    row["memory"] = {
        "build_s": build, "p50_us": p50, "p99_us": p99, "batch_us_per_query": batch_us, "hits": hits,
        "array_bytes_per_fp": mem.nbytes() / n, "rss_bytes_per_fp_with_ids": rss_growth / n,
        "speedup_p50_vs_brute": row["brute"]["p50_us"] / p50,
        "speedup_p99_vs_brute": row["brute"]["p99_us"] / p99,
    }
    del mem

    if n <= args.leveldb_max:
        path = workdir / f"leveldb-{n}"
        t = time.perf_counter()
        with LevelDBIndex(path) as ldb:
            ldb.add_many((i, int(f), None) for i, f in zip(ids.tolist(), fps.tolist(), strict=True))
            ldb.compact()  # part of the build: queries then read compacted tables
        build = time.perf_counter() - t
        with LevelDBIndex(path) as ldb:  # reopened: queries read what is on disk
            p50, p99, lhits = latencies(ldb.query, queries)
        assert lhits == hits, f"leveldb found {lhits} matches, memory {hits}"
        row["leveldb"] = {"build_s": build, "p50_us": p50, "p99_us": p99,
                          "disk_bytes_per_fp": dir_size(path) / n}
        shutil.rmtree(path)

    if args.ingest:
        more = args.gen[n : n + args.ingest] if args.gen is not None else make_fingerprints(
            args.ingest, k, args.planted, rng)
        row["ingest"] = bench_ingest(fps, more, k)

    if n == args.sizes[0] and args.simhash_size:
        row["simhash_pkg"] = bench_simhash(fps[: args.simhash_size], queries, k)
    return row


def bench_ingest(stored: U64, more: U64, k: int, per_doc: int = 4) -> dict[str, Any]:
    """Steady ingest into NumberedTables holding ``stored``: each fingerprint of ``more`` is looked up,
    then appended, ``per_doc`` at a time (one document's fingerprints); CPU microseconds per fingerprint."""
    tables = NumberedTables(BlockLayout(), stored)
    nxt, values = len(stored), more.tolist()
    t = time.process_time()
    for start in range(0, len(values), per_doc):
        group = values[start : start + per_doc]
        for v in group:
            tables.query(v, k, BUCKET_BUDGET)
        tables.put(np.arange(nxt, nxt + len(group)), more[start : start + len(group)])
        nxt += len(group)
    return {"fingerprints": len(values), "us_per_fp": (time.process_time() - t) / max(len(values), 1) * 1e6}


def bench_simhash(fps: U64, queries: list[int], k: int) -> dict[str, Any]:
    """The PyPI simhash package's SimhashIndex (string keys in dicts of sets), at a size it can handle."""
    import logging

    from simhash import Simhash, SimhashIndex

    logging.getLogger().setLevel(logging.ERROR)  # it logs a warning for every big bucket
    t = time.perf_counter()
    index = SimhashIndex([(str(i), Simhash(int(f))) for i, f in enumerate(fps.tolist())], k=k)
    build = time.perf_counter() - t
    p50, p99, _ = latencies(lambda qv: index.get_near_dups(Simhash(qv)), queries[:500])
    return {"n": len(fps), "build_s": build, "p50_us": p50, "p99_us": p99}


def bench_pairs(n: int, k: int, planted: float, rng: np.random.Generator, gen: U64 | None = None
                ) -> dict[str, Any]:
    fps = gen[:n] if gen is not None else make_fingerprints(n, k, planted, rng)
    n = len(fps)
    t = time.perf_counter()
    i, _, _ = near_pairs(fps, k)
    return {"n": n, "k": k, "seconds": time.perf_counter() - t, "pairs": len(i)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000,10000000", help="comma-separated N (default 1M,10M)")
    ap.add_argument("--leveldb-max", type=int, default=10_000_000, help="largest N for the LevelDB backend")
    ap.add_argument("--simhash-size", type=int, default=100_000, help="N for the simhash package (0: skip)")
    ap.add_argument("--pairs-size", type=int, default=1_000_000, help="N for all-pairs (0: skip)")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--brute-queries", type=int, default=50)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--planted", type=float, default=0.1, help="fraction of planted near-duplicates")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--workdir", help="where LevelDB stores go (default: a temporary directory)")
    ap.add_argument("--json", dest="json_path", help="also write the figures as JSON here")
    ap.add_argument("--generated", type=Path, help="fingerprints of a cached generated corpus (see above)")
    ap.add_argument("--ingest", type=int, default=0,
                    help="also time steady ingest of this many more fingerprints at each size (see above)")
    args = ap.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    wanted = max([*args.sizes, args.pairs_size]) + args.ingest
    args.gen = load_generated(args.generated, wanted) if args.generated else None
    rng = np.random.default_rng(args.seed)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-index-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"sizes": [], "python": sys.version.split()[0], "numpy": np.__version__,
                               "cpus": os.cpu_count(), "loadavg_before": os.getloadavg(),
                               "fingerprints": str(args.generated or "random")}
    try:
        for n in args.sizes:
            row = bench_size(n, args, rng, workdir)
            results["sizes"].append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
        if args.pairs_size:
            results["pairs"] = bench_pairs(args.pairs_size, args.k, args.planted, rng, args.gen)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    results["loadavg_after"] = os.getloadavg()
    print_table(results)
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(results, indent=2))


def print_table(results: dict[str, Any]) -> None:
    print("| N | backend | build s | p50 µs | p99 µs | notes |")
    print("|---:|---|---:|---:|---:|---|")
    for row in results["sizes"]:
        n = f"{row['n']:,}"
        b = row["brute"]
        print(f"| {n} | numpy brute force | - | {b['p50_us']:.0f} | {b['p99_us']:.0f} | XOR + popcount |")
        m = row["memory"]
        print(f"| {n} | memory | {m['build_s']:.2f} | {m['p50_us']:.1f} | {m['p99_us']:.1f} | "
              f"{m['speedup_p50_vs_brute']:.0f}x/{m['speedup_p99_vs_brute']:.0f}x vs brute (p50/p99); "
              f"batch {m['batch_us_per_query']:.1f} µs/query; arrays {m['array_bytes_per_fp']:.1f} B/fp, "
              f"RSS with string ids {m['rss_bytes_per_fp_with_ids']:.0f} B/fp |")
        if "leveldb" in row:
            lv = row["leveldb"]
            print(f"| {n} | leveldb | {lv['build_s']:.1f} | {lv['p50_us']:.0f} | {lv['p99_us']:.0f} | "
                  f"{lv['disk_bytes_per_fp']:.0f} B/fp on disk |")
        if "ingest" in row:
            g = row["ingest"]
            print(f"| {n} | embedded tables, steady ingest | - | - | - | {g['us_per_fp']:.1f} µs CPU per "
                  f"fingerprint (look-up + append) over the next {g['fingerprints']:,} |")
        if "simhash_pkg" in row:
            s = row["simhash_pkg"]
            print(f"| {s['n']:,} | simhash SimhashIndex | {s['build_s']:.1f} | {s['p50_us']:.0f} | "
                  f"{s['p99_us']:.0f} | PyPI simhash 2.x |")
    print(f"\nload average (1/5/15 min) before: {results['loadavg_before']}, "
          f"after: {results['loadavg_after']} on {results['cpus']} CPUs "
          "(tail latencies include time slices lost to other processes)")
    if "pairs" in results:
        p = results["pairs"]
        print(f"\nall-pairs near_pairs: N={p['n']:,}, k={p['k']}: {p['seconds']:.2f} s, {p['pairs']:,} pairs")


if __name__ == "__main__":
    main()
