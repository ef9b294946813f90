#!/usr/bin/env python3
"""Look-up latency of image fingerprints in the memory index (the block tables of the embedded store).

N random 64-bit base hashes go into a :class:`~fingerprint_indexer.index.memory.MemoryIndex` of the image
layout (``ImageThresholds.layout``); a look-up is what one picture asks: every probe of its fingerprint
(the windows of the picture and of its mirror image: ``len(windows) * 2`` hashes) at distance
``k_lookup`` in one ``query_many``. Half the queries hold a stored hash with up to ``k_lookup`` bits
flipped among their probes (a copy), half are random (a new picture). Reports p50/p99 wall time per
look-up, build time and the load average.

Run: ``python scripts/bench_images.py [--size 1000000] [--queries 2000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from fingerprint_indexer.fingerprint.image import THRESHOLDS, windows
from fingerprint_indexer.index.memory import MemoryIndex


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    load_start = os.getloadavg()
    rng = np.random.default_rng(args.seed)
    fps = rng.integers(0, 2**64, size=args.size, dtype=np.uint64)
    layout, k = THRESHOLDS.layout, THRESHOLDS.k_lookup
    index = MemoryIndex(layout=layout, capacity=args.size)
    t0 = time.perf_counter()
    index.add_many((f"p{i}", int(fp), None) for i, fp in enumerate(fps.tolist()))
    index.query(0, k)  # merge what is buffered
    build = time.perf_counter() - t0
    n_probes = 2 * len(windows(THRESHOLDS))
    times, found = [], 0
    for q in range(args.queries):
        probes = rng.integers(0, 2**64, size=n_probes, dtype=np.uint64)
        if q % 2 == 0:
            target = int(fps[rng.integers(args.size)])
            for bit in rng.choice(64, size=int(rng.integers(0, k + 1)), replace=False):
                target ^= 1 << int(bit)
            probes[int(rng.integers(n_probes))] = np.uint64(target)
        t = time.perf_counter()
        hits = index.query_many(probes, k)
        times.append(time.perf_counter() - t)
        found += any(hits)
    us = np.array(times) * 1e6
    out = {"size": args.size, "layout": str(layout), "k_lookup": k, "probes": n_probes,
           "queries": args.queries, "p50_us": round(float(np.percentile(us, 50)), 1),
           "p99_us": round(float(np.percentile(us, 99)), 1), "build_s": round(build, 2),
           "queries_with_a_hit": found,
           "load_average": [round(x, 2) for x in load_start] + [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
