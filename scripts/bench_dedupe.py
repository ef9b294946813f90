#!/usr/bin/env python3
"""Embedded ``dedupe`` against fingerprinting alone, start-up included, side by side in one run.

Each round runs the two commands as a user would, on the same corpus, one after the other:

  fingerprint   ``fingerprint-indexer fingerprint CORPUS --no-terms`` (output discarded)
  dedupe        ``fingerprint-indexer dedupe CORPUS --store <fresh dir>`` (output discarded)

and reports wall-clock and CPU seconds (user + system of the command), and the ratio of dedupe's
throughput to fingerprinting's (the issue asks for >= 0.8). CPU time is the figure to read on a shared
machine; the load average is printed before and after.

``--decide`` times the decision step alone instead: the corpus is fingerprinted once (in this process, or
read from ``--cache``, a pickle this option writes when it is missing), then each round decides every
document into a fresh store with ``Pipeline.decide_batch`` and reports its CPU time per document
(``time.process_time``: start-up, reading and fingerprinting excluded). ``--profile FILE`` saves a
cProfile of the last round.

``--decide --instructions N`` counts instead the machine instructions of deciding the corpus's first ``N``
documents (valgrind's callgrind, hash seed fixed; a second run that only loads the corpus is subtracted):
a figure that does not move with the load of a shared machine, where a profiler's timings of many small
calls mislead. ``--baseline DIR`` counts the code of another checkout (its compiled core built) beside it.

    python3 scripts/bench_dedupe.py --corpus ../shared/data/zh_news.jsonl.gz --rounds 2
    python3 scripts/bench_dedupe.py --decide --cache zh_news.pkl --rounds 3
    python3 scripts/bench_dedupe.py --decide --cache zh_news.pkl --instructions 3072 --baseline ../old
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import os
import pickle
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from callgrind import report, require_valgrind  # beside this script

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


def fingerprinted(corpus: Path, cache: Path | None) -> list[Any]:
    """(document, fingerprint) pairs of the corpus, in input order (from ``cache`` when it exists)."""
    if cache is not None and cache.exists():
        with cache.open("rb") as f:
            pairs: list[Any] = pickle.load(f)
        return pairs
    from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, fingerprint_stream
    from fingerprint_indexer.io.readers import read_documents

    pairs = list(fingerprint_stream(read_documents([str(corpus)]), Fingerprinter()))
    if cache is not None:
        with cache.open("wb") as f:
            pickle.dump(pairs, f, protocol=pickle.HIGHEST_PROTOCOL)
    return pairs


def decide_round(pairs: list[Any], batch_size: int, profile: cProfile.Profile | None) -> float:
    """CPU seconds of deciding every pair into a fresh store, batch by batch (``decide_batch``), under the
    collector settings of the ``dedupe`` command (``collector.long_run``): the whole fingerprinted corpus
    is alive here, and at the default settings its collections would be counted as the decision step's."""
    from fingerprint_indexer.collector import long_run
    from fingerprint_indexer.pipeline import Pipeline

    store = Path(tempfile.mkdtemp(prefix="bench-decide-"))
    try:
        with Pipeline(store / "s", batch_size=batch_size) as pipe, long_run():
            it = iter(pairs)
            cpu = 0.0
            while batch := list(itertools.islice(it, batch_size)):
                if profile is not None:
                    profile.enable()
                t0 = time.process_time()
                pipe.decide_batch(batch)
                cpu += time.process_time() - t0
                if profile is not None:
                    profile.disable()
        return cpu
    finally:
        shutil.rmtree(store, ignore_errors=True)


def instructions_main(args: argparse.Namespace) -> None:
    if args.cache is None:
        sys.exit("--instructions needs --cache (the corpus fingerprinted once, outside the count)")
    require_valgrind()
    if not args.cache.exists():
        fingerprinted(args.corpus, args.cache)  # written now, outside the count
    n = args.instructions
    report(f"# instructions of the decision step: {args.corpus.name}, the first {n} documents, batch "
           f"{args.batch_size}",
           lambda m: [__file__, "--decide", "--cache", str(args.cache), "--batch-size", str(args.batch_size),
                      "--count-only", str(m)], n, args.baseline)  # fmt: skip


def decide_main(args: argparse.Namespace) -> None:
    if args.batch_size is None:
        from fingerprint_indexer.pipeline import BATCH_SIZE

        args.batch_size = BATCH_SIZE
    if args.count_only is not None:
        decide_round(fingerprinted(args.corpus, args.cache)[: args.count_only], args.batch_size, None)
        return
    if args.instructions:
        instructions_main(args)
        return
    pairs = fingerprinted(args.corpus, args.cache)
    print(f"# decision step alone: {args.corpus.name}, {len(pairs)} documents, batch {args.batch_size}; "
          f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for r in range(args.rounds):
        profile = cProfile.Profile() if args.profile and r == args.rounds - 1 else None
        cpu = decide_round(pairs, args.batch_size, profile)
        print(f"round {r}: {cpu:.2f} CPU s, {cpu / len(pairs) * 1e6:.0f} µs per document")
        if profile is not None:
            profile.dump_stats(args.profile)
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--decide", action="store_true", help="time the decision step alone")
    ap.add_argument("--cache", type=Path, help="with --decide: pickle of the fingerprinted corpus")
    ap.add_argument("--batch-size", type=int, default=None,
                    help="with --decide: documents per commit (default: the dedupe command's)")
    ap.add_argument("--profile", type=Path, help="with --decide: cProfile of the last round to this file")
    ap.add_argument("--instructions", type=int, metavar="N",
                    help="with --decide: count the instructions of deciding the first N documents")
    ap.add_argument("--baseline", type=Path, help="with --instructions: a checkout to count beside this one")
    ap.add_argument("--count-only", type=int, help=argparse.SUPPRESS)  # the counted child of --instructions
    args = ap.parse_args()
    if args.decide:
        decide_main(args)
        return
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
    if len(ratios) > 2:  # a shared machine's speed drifts within a run: the median is the figure to read
        print(f"median of {len(ratios)} rounds: {statistics.median(c for _w, c in ratios):.2f}x by CPU time, "
              f"{statistics.median(w for w, _c in ratios):.2f}x by wall clock")
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
