#!/usr/bin/env python3
"""Embedded ``dedupe`` against fingerprinting alone, start-up included, side by side in one run.

Each round runs the two commands as a user would, on the same corpus, one after the other:

  fingerprint   ``fingerprint-indexer fingerprint CORPUS --no-terms`` (output discarded)
  dedupe        ``fingerprint-indexer dedupe CORPUS --store <fresh dir>`` (output discarded)

and reports wall-clock and CPU seconds (user + system of the command), and the ratio of dedupe's
throughput to fingerprinting's (the issue asks for >= 0.8). CPU time is the figure to read on a shared
machine; the load average is printed before and after.

    python3 scripts/bench_dedupe.py --corpus ../shared/data/zh_news.jsonl.gz --rounds 2
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "zh_news.jsonl.gz"
COMMAND = [sys.executable, "-m", "fingerprint_indexer.cli.main"]


def run(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(COMMAND + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    print(f"# {args.corpus.name}; load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    print(f"{'round':<6} {'command':<12} {'wall s':>8} {'CPU s':>8}")
    ratios: list[tuple[float, float]] = []
    for r in range(args.rounds):
        fp = run(["fingerprint", str(args.corpus), "--no-terms"])
        store = Path(tempfile.mkdtemp(prefix="bench-dedupe-"))
        try:
            dd = run(["dedupe", str(args.corpus), "--store", str(store / "s"), "--output", os.devnull])
        finally:
            shutil.rmtree(store, ignore_errors=True)
        for name, (wall, cpu) in (("fingerprint", fp), ("dedupe", dd)):
            print(f"{r:<6} {name:<12} {wall:>8.1f} {cpu:>8.1f}")
        ratios.append((fp[0] / dd[0], fp[1] / dd[1]))
    for r, (wall, cpu) in enumerate(ratios):
        print(f"round {r}: dedupe vs fingerprinting alone: {cpu:.2f}x by CPU time, {wall:.2f}x by wall clock")
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
