#!/usr/bin/env python3
"""Look-up latency of image fingerprints in the memory index, through the path a store takes.

N pictures of random window hashes (``2 * len(windows)`` each: the picture's and its mirror image's)
and random colour grids go into an :class:`~fingerprint_indexer.index.images.ImageIndex` (one entry per
distinct key of a picture's own windows); a look-up is :meth:`ImageIndex.query_arrays` of one picture:
the keys of all its windows in one vectorised ``searchsorted``, the window filter, and the rule on what
remains. Half the queries are a stored picture with one bit flipped in each window hash outside the key
bits (a copy: it must be found), half are random (a new picture). Reports p50/p99 wall time per look-up,
the copies found, build time, entries and the load average at the start and the end.

Run: ``python scripts/bench_images.py [--size 1000000] [--queries 2000]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

import numpy as np

from fingerprint_indexer.fingerprint.image import THRESHOLDS, key_values, windows
from fingerprint_indexer.index.images import ImageIndex


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    load_start = os.getloadavg()
    rng = np.random.default_rng(args.seed)
    width = 2 * len(windows(THRESHOLDS))
    cells = THRESHOLDS.grid_cols * THRESHOLDS.grid_rows
    index = ImageIndex(capacity=args.size)
    t0 = time.perf_counter()
    chunk = 100_000
    for start in range(0, args.size, chunk):
        n = min(chunk, args.size - start)
        probes = rng.integers(0, 2**64, size=(n, width), dtype=np.uint64)
        grids = rng.integers(0, 8, size=(n, cells), dtype=np.uint8)
        index.add_arrays([f"p{i}" for i in range(start, start + n)], probes, grids,
                         np.zeros(n, dtype=bool), [f"d{i}" for i in range(start, start + n)])
    index.flush()
    build = time.perf_counter() - t0
    # a bit of each hash outside the key bits: flipping it leaves every key as it was
    free = [b for b in range(64) if not key_values(np.array([1 << (63 - b)], dtype=np.uint64))[0]]
    gc.collect()
    times: list[float] = []
    cpu: list[float] = []
    copies = found = 0
    for q in range(args.queries):
        if q % 2 == 0:
            row = int(rng.integers(args.size))
            flips = np.uint64(1) << (63 - rng.choice(free, size=width)).astype(np.uint64)
            stored = index.arrays(f"p{row}")
            assert stored is not None
            probes, grid, want = stored[0] ^ flips, stored[1], f"p{row}"
            copies += 1
        else:
            probes = rng.integers(0, 2**64, size=width, dtype=np.uint64)
            grid, want = rng.integers(0, 8, size=cells, dtype=np.uint8), None
        t, c = time.perf_counter(), time.thread_time()
        hits = index.query_arrays(probes, grid, False, f"q{q}")
        times.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
        found += want is not None and any(m.image_id == want for m in hits)
    us, cpu_us = np.array(times) * 1e6, np.array(cpu) * 1e6
    out = {"size": args.size, "windows": width, "entries": index.entries, "queries": args.queries,
           "p50_us": round(float(np.percentile(us, 50)), 1), "p99_us": round(float(np.percentile(us, 99)), 1),
           "max_us": round(float(us.max()), 1), "cpu_p50_us": round(float(np.percentile(cpu_us, 50)), 1),
           "cpu_p99_us": round(float(np.percentile(cpu_us, 99)), 1), "copies_found": f"{found}/{copies}",
           "build_s": round(build, 1), "index_mb": round(index.nbytes() / 2**20),
           "load_average": [round(x, 2) for x in load_start] + [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
