#!/usr/bin/env python3
"""Start-up of the ``fingerprint-indexer`` commands: median wall time of fresh processes, as JSON.

Each round runs every case once, in a new process, one after the other (rounds interleave the cases, so
a burst of load on a shared machine hits them alike):

  python            ``python -c pass`` (the interpreter alone: the floor of any command)
  numpy             ``python -c 'import numpy'``
  segmenter         ``python -c 'import rjieba; rjieba.cut(...)'`` (rjieba loads its dictionary at import)
  help              ``fingerprint-indexer --help``
  distance-hex      ``fingerprint-indexer distance HEX HEX``
  distance-text-en  ``fingerprint-indexer distance --text A --text B`` on two English sentences
  distance-text-zh  the same on two Chinese sentences (segmenter, IDF table and dictionary)
  distance-text-zh-nocache  the same with the table cache unusable (``FPI_CACHE_DIR`` under a file):
                    the IDF table and the dictionary are parsed from jieba's files, as before the cache
  dedupe            ``fingerprint-indexer dedupe`` of the first ``--docs`` documents of ``--corpus`` into a
                    fresh store (start-up included); skipped without the corpus

and, in this process, the median time to load the IDF table and the dictionary parsed from jieba's
files and from the cache. The load average before and after is in the JSON. ``--baseline DIR`` runs
each command case also against the package in DIR (say ``git archive <commit> | tar -x -C DIR``), in
the same rounds, as ``<case>@baseline``.

    python3 scripts/bench_startup.py --runs 9 > startup.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import islice
from pathlib import Path

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "zh_news.jsonl.gz"
CLI = [sys.executable, "-m", "fingerprint_indexer.cli.main"]
ZH = ("国家统计局今天发布数据，前三季度国内生产总值同比增长百分之五点二。",
      "国家统计局今日公布数据，前三季度国内生产总值同比增长百分之五点二。")
# runs the CLI of the package in the directory argv[1] rather than the installed (editable) one
BASELINE = ("import runpy, sys\n"
            "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]\n"
            "sys.path.insert(0, sys.argv.pop(1))\n"
            "runpy.run_module('fingerprint_indexer.cli.main', run_name='__main__')\n")
EN = ("The central bank raised interest rates by half a point on Tuesday.",
      "The central bank raised its interest rate by half a point on Tuesday.")


def _wall(argv: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def _median(times: list[float]) -> dict[str, float]:
    return {"median_s": round(statistics.median(times), 4), "min_s": round(min(times), 4),
            "max_s": round(max(times), 4)}


def _in_process(runs: int) -> dict[str, dict[str, float]]:
    """Loading the two word tables: parsed from jieba's files against read from the cache."""
    from fingerprint_indexer.fingerprint import facts
    from fingerprint_indexer.text.lexicon import cached_lexicon
    from fingerprint_indexer.text.weights import IdfTable, jieba_file

    idf, words = jieba_file("analyse", "idf.txt"), jieba_file("dict.txt")
    cases: dict[str, Callable[[], object]] = {
        "idf-parse": lambda: IdfTable.parse(idf.read_bytes(), idf),
        "idf-cache": lambda: IdfTable.load(idf),
        "dictionary-parse": lambda: facts._read_dictionary(words.read_bytes()),
        "dictionary-cache": lambda: cached_lexicon("names", words, facts._read_dictionary),
    }
    IdfTable.load(idf)  # the cache built before timing it
    cached_lexicon("names", words, facts._read_dictionary)
    out = {}
    for name, load in cases.items():
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            load()
            times.append(time.perf_counter() - t0)
        out[name] = _median(times)
    return out


def _shown(argv: list[str]) -> str:
    """The command line as a user would type it."""
    if argv[: len(CLI)] == CLI:
        return " ".join(["fingerprint-indexer", *argv[len(CLI):]])
    if argv[1:3] == ["-c", BASELINE]:
        return " ".join(["fingerprint-indexer", *argv[4:]])
    return " ".join(["python3", *argv[1:]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7, help="processes per case (the median is reported)")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--docs", type=int, default=200, help="documents of the corpus for the dedupe case")
    ap.add_argument("--baseline", type=Path, help="also run the commands against the package in this folder")
    args = ap.parse_args()
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        blocker = work / "not-a-dir"
        blocker.write_text("")
        nocache = {**os.environ, "FPI_CACHE_DIR": str(blocker / "cache")}
        cases: dict[str, tuple[list[str], dict[str, str] | None]] = {
            "python": ([sys.executable, "-c", "pass"], None),
            "numpy": ([sys.executable, "-c", "import numpy"], None),
            "segmenter": ([sys.executable, "-c", f"import rjieba; rjieba.cut({ZH[0]!r})"], None),
            "help": ([*CLI, "--help"], None),
            "distance-hex": ([*CLI, "distance", "26210e81000a6620", "2e292f8d108e67a4"], None),
            "distance-text-en": ([*CLI, "distance", "--text", EN[0], EN[1]], None),
            "distance-text-zh": ([*CLI, "distance", "--text", ZH[0], ZH[1]], None),
            "distance-text-zh-nocache": ([*CLI, "distance", "--text", ZH[0], ZH[1]], nocache),
        }
        if args.corpus.is_file():
            sample = work / "sample.jsonl"
            with gzip.open(args.corpus, "rt", encoding="utf-8") as src:
                sample.write_text("".join(islice(src, args.docs)), encoding="utf-8")
            cases["dedupe"] = ([*CLI, "dedupe", str(sample), "--store", str(work / "store"),
                                "--output", os.devnull], None)
        if args.baseline:
            for name, (argv, env) in list(cases.items()):
                if argv[: len(CLI)] == CLI and env is None:
                    base = [sys.executable, "-c", BASELINE, str(args.baseline.resolve())]
                    cases[f"{name}@baseline"] = ([*base, *argv[len(CLI):]], None)
        for argv, env in cases.values():  # warm: the table cache built, files in the page cache
            _wall(argv, env)
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (argv, env) in cases.items():
                shutil.rmtree(work / "store", ignore_errors=True)
                times[name].append(_wall(argv, env))
        report = {
            "runs": args.runs,
            "cpus": os.cpu_count(),
            "load_average_before": [round(x, 2) for x in load_before],
            "commands": {name: {"argv": _shown(argv), **_median(times[name])}
                         for name, (argv, _) in cases.items()},
            "tables_in_process": _in_process(args.runs),
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        }
        for name in cases:
            if name.startswith("dedupe"):
                report["commands"][name]["docs"] = args.docs
    finally:
        shutil.rmtree(work, ignore_errors=True)
    json.dump(report, sys.stdout, indent=1, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
