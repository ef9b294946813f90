#!/usr/bin/env python3
"""What a call that gives up the GIL costs when a busy Python thread runs beside it.

The Scrapy pipeline decides on its own thread beside the crawler's reactor; the service decides beside
its event loop; ``dedupe`` and ``es index`` beside their fingerprinting threads. Whenever the working
thread gives up the GIL (a compiled call that releases it, a LevelDB write-batch ``put``) while the
other thread waits for it, the other thread takes it and the working thread waits for its turn: the
hand-over costs CPU as well as time. This script measures each step on the same documents twice, alone
and beside a thread that runs pure Python without pause (a reactor with work queued), and reports the
working thread's CPU and wall seconds:

  put          ``WriteBatch.put`` of plyvel, which releases the GIL for each key, against a dict store
  per doc      ``Fingerprinter.fingerprint_document`` of one document at a time
  per chunk    ``Fingerprinter.fingerprint_documents`` of 32 at a time (one compiled call, one release)
  decide       ``Pipeline.decide_batch`` in batches of ``--batch-size`` into a fresh embedded store

    python3 scripts/bench_gil.py --docs 2000 --rounds 3
"""

from __future__ import annotations

import argparse
import itertools
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "zh_news.jsonl.gz"


def on_a_thread(work: Callable[[], None], busy: bool) -> tuple[float, float]:
    """(CPU, wall) seconds of ``work`` on a thread of its own, with or without a busy thread beside it."""
    stop = threading.Event()

    def spin() -> None:  # pure Python that never waits: it wants the GIL all the time
        x = 0
        while not stop.is_set():
            for i in range(1000):
                x += i

    spinner = threading.Thread(target=spin, daemon=True) if busy else None
    got: list[tuple[float, float]] = []

    def run() -> None:
        t, w = time.thread_time(), time.perf_counter()
        work()
        got.append((time.thread_time() - t, time.perf_counter() - w))

    if spinner is not None:
        spinner.start()
    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    stop.set()
    if spinner is not None:
        spinner.join()
    return got[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64, help="the decision step's batch (the pipeline's)")
    ap.add_argument("--puts", type=int, default=2000, help="write-batch puts timed by the 'put' case")
    args = ap.parse_args()

    import plyvel

    from fingerprint_indexer.io.readers import read_documents
    from fingerprint_indexer.pipeline import Pipeline

    print(f"# {shlex.join([sys.executable, *sys.argv])}")
    print(f"# load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    docs = list(itertools.islice(read_documents([str(args.corpus)]), args.docs))
    work = Path(tempfile.mkdtemp(prefix="bench-gil-"))
    with Pipeline(work / "warm") as warm:
        fpr = warm.fingerprinter.warm()
        pairs = list(zip(docs, fpr.fingerprint_documents(docs), strict=True))
    db = plyvel.DB(str(work / "puts"), create_if_missing=True)
    keys = [b"key%08d" % i for i in range(args.puts)]
    stores: list[Pipeline] = []

    def decide() -> None:
        pipe = Pipeline(work / f"store-{len(stores)}", batch_size=args.batch_size)
        stores.append(pipe)
        it = iter(pairs)
        while batch := list(itertools.islice(it, args.batch_size)):
            pipe.decide_batch(batch)

    def puts() -> None:
        wb = db.write_batch()
        for key in keys:
            wb.put(key, b"value")

    def dict_puts() -> None:
        staged: dict[bytes, bytes] = {}
        for key in keys:
            staged[key] = b"value"

    def per_doc() -> None:
        for doc in docs:
            fpr.fingerprint_document(doc)

    def per_chunk() -> None:
        for i in range(0, len(docs), 32):
            fpr.fingerprint_documents(docs[i : i + 32])

    cases: dict[str, tuple[Callable[[], None], int]] = {
        "put": (puts, args.puts), "dict put": (dict_puts, args.puts), "per doc": (per_doc, len(docs)),
        "per chunk": (per_chunk, len(docs)), "decide": (decide, len(docs)),
    }  # fmt: skip
    got: dict[tuple[str, bool], list[tuple[float, float]]] = {}
    try:
        for _ in range(args.rounds):
            for name, (fn, _n) in cases.items():
                for busy in (False, True):
                    got.setdefault((name, busy), []).append(on_a_thread(fn, busy))
            while stores:
                stores.pop().close()
    finally:
        db.close()
        for pipe in stores:
            pipe.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{len(docs)} documents of {args.corpus.name}; medians of {args.rounds} rounds; µs per call "
          "(a put, a document)")
    print(f"{'case':<12}{'CPU alone':>11}{'CPU beside':>12}{'ratio':>8}{'wall alone':>12}{'wall beside':>13}")
    for name, (_fn, n) in cases.items():
        cpu = [statistics.median(c for c, _w in got[(name, b)]) * 1e6 / n for b in (False, True)]
        wall = [statistics.median(w for _c, w in got[(name, b)]) * 1e6 / n for b in (False, True)]
        ratio = cpu[1] / cpu[0]
        print(f"{name:<12}{cpu[0]:>11.1f}{cpu[1]:>12.1f}{ratio:>7.2f}x{wall[0]:>12.1f}{wall[1]:>13.1f}")
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
