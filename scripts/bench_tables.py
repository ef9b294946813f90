#!/usr/bin/env python3
"""Block tables over numbered fingerprints: the NumPy reference (``NumberedTables``) against the compiled
tables (``CompiledNumberedTables``), side by side in one run, µs per call.

For each size, random fingerprints plus a tenth of near copies (3 bits flipped) are loaded into both, then
each is timed on what the embedded store asks of it: ``query_many`` of a decision batch's 2,048
fingerprints (the look-ahead) and of one document's 8, with the store's budget, none and a tight one;
``put`` of 8 entries, 20,000 times (merges included); and the bytes held per entry after those puts.
The best of three timings is kept. Prints one JSON object per size and kind (the reference alone where
the compiled core is not built, or with ``FPI_NATIVE=0``), and the load average.

    python3 scripts/bench_tables.py --sizes 100000,1000000
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable

import numpy as np

from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.index.memory import CompiledNumberedTables, NumberedTables
from fingerprint_indexer.store.block_index import BUCKET_BUDGET


def corpus(rng: np.random.Generator, n: int) -> np.ndarray:
    base = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    src = base[rng.integers(0, n, n // 10)]
    flips = np.bitwise_or.reduce(np.uint64(1) << rng.integers(0, 64, (n // 10, 3), dtype=np.uint64), axis=1)
    return np.concatenate([base, src ^ flips])


def per_call(fn: Callable[[], object], reps: int, seconds: float = 1.0) -> float:
    """Best of three timings of ``fn``, µs per call."""
    fn()
    best = float("inf")
    for _ in range(3):
        start, calls = time.perf_counter(), 0
        while time.perf_counter() - start < seconds / 3:
            for _ in range(reps):
                fn()
            calls += reps
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000", help="fingerprints loaded, comma-separated")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--puts", type=int, default=20_000, help="puts of 8 entries timed")
    ap.add_argument("--seconds", type=float, default=1.0, help="time spent on each look-up timing")
    args = ap.parse_args()
    print(json.dumps({"load_average_start": os.getloadavg()}))
    layout = BlockLayout()
    for n in (int(s) for s in args.sizes.split(",")):
        rng = np.random.default_rng(args.seed)
        fps = corpus(rng, n)
        flips = np.uint64(1) << rng.integers(0, 64, 2048, dtype=np.uint64)
        big = fps[rng.integers(0, len(fps), 2048)] ^ flips
        small = big[:8]
        fresh = rng.integers(0, 2**64 - 1, 8 * args.puts, dtype=np.uint64, endpoint=True)
        kinds: list[tuple[str, type[NumberedTables] | type[CompiledNumberedTables]]] = [
            ("reference", NumberedTables)]
        if native.enabled():
            kinds.append(("compiled", CompiledNumberedTables))
        for name, kind in kinds:
            start = time.perf_counter()
            tables = kind(layout, fps)
            out: dict[str, object] = {"size": len(fps), "tables": name,
                                      "build_s": round(time.perf_counter() - start, 3)}  # fmt: skip
            tables.flush()
            for budget in (BUCKET_BUDGET, None, 4):
                for label, queries, reps in (("2048", big, 2), ("8", small, 50)):
                    out[f"query_{label}_budget_{budget}"] = per_call(
                        lambda t=tables, q=queries, b=budget: t.query_many(q, 3, b), reps, args.seconds)
            first = tables.n
            start = time.perf_counter()
            for i in range(args.puts):
                tables.put(np.arange(first + 8 * i, first + 8 * i + 8), fresh[8 * i : 8 * i + 8])
            out["put_8"] = (time.perf_counter() - start) / max(args.puts, 1) * 1e6
            out["query_8_after_puts"] = per_call(
                lambda t=tables, q=small: t.query_many(q, 3, BUCKET_BUDGET), 50, args.seconds)
            out["bytes_per_entry"] = tables.nbytes() / tables.n
            print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}),
                  flush=True)
    print(json.dumps({"load_average_end": os.getloadavg()}))


if __name__ == "__main__":
    main()
