#!/usr/bin/env python3
"""Scale benchmark: does the cost of a document stay flat as the embedded store grows?

One command runs embedded ``dedupe`` (fingerprint pool + decisions into a LevelDB store, the same code
as the CLI) over the real corpora of ``../shared/data`` shuffled with a fixed seed, and over a generated
corpus (scripts/gen_scale_corpus.py) of ``--generated`` documents, and reports per window of documents:
throughput, candidates verified per document (p50/p99/max: records the verification rule was asked
about, near-duplicate candidates and cluster centres), and at the end the block-bucket size distribution,
the share of documents whose fingerprint is one term's hash, store bytes per document and peak RSS.
With ``--append`` a dated section with the load average goes to docs/benchmarks.md.

    python3 scripts/bench_scale.py --generated 200000 --append
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pickle
import random
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import fingerprint_indexer.engine.rules as rules_mod
import fingerprint_indexer.store.exact as exact_mod
from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintResult, fingerprint_many
from fingerprint_indexer.fingerprint.simhash import term_hashes
from fingerprint_indexer.pipeline import Pipeline
from fingerprint_indexer.verify import Evidence, Verdict

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
REAL = ("zh_news", "zh_xwlb", "zh_toutiao_titles", "en_reuters")


def load_real(seed: int, data: Path = DATA) -> list[Document]:
    """The real corpora, ids prefixed by corpus, shuffled with ``seed``."""
    docs = []
    for name in REAL:
        with gzip.open(data / f"{name}.jsonl.gz", "rt", encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                row["id"] = f"{name}/{row['id']}"
                docs.append(Document.from_mapping(row))
    random.Random(seed).shuffle(docs)
    return docs


class CandidateCounter:
    """Counts the records the verification rule is asked about per document (benchmark-only hook:
    wraps the rule's entry points where the store and the pipeline call them)."""

    def __init__(self) -> None:
        self.current = 0
        self._many = exact_mod.check_many
        self._one = rules_mod.check

    def __enter__(self) -> CandidateCounter:
        def many(query: Evidence, candidates: Sequence[Evidence], k: int) -> list[Verdict]:
            self.current += len(candidates)
            return self._many(query, candidates, k)

        def one(a: Evidence, b: Evidence, k: int) -> Verdict:
            self.current += 1
            return self._one(a, b, k)

        exact_mod.check_many = many
        rules_mod.check = one
        return self

    def __exit__(self, *exc: object) -> None:
        exact_mod.check_many = self._many
        rules_mod.check = self._one

    def take(self) -> int:
        n, self.current = self.current, 0
        return n


@dataclass
class Run:
    name: str
    docs: int = 0
    windows: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[int] = field(default_factory=list)
    decide_s: float = 0.0
    collapsed: int = 0  # document fingerprint == one term's hash
    indexed: int = 0
    decisions: Counter[str] = field(default_factory=Counter)
    buckets: dict[str, Any] = field(default_factory=dict)
    store_bytes: int = 0
    peak_rss_mb: float = 0.0
    elapsed_s: float = 0.0


def _pct(values: Iterable[int], q: float) -> float:
    arr = np.fromiter(values, dtype=np.int64)
    return float(np.percentile(arr, q)) if len(arr) else 0.0


def _collapsed(res: FingerprintResult) -> bool:
    return bool(res.top_terms) and int(term_hashes([res.top_terms[0][0]])[0]) == res.fingerprint


def bucket_distribution(pipe: Pipeline) -> dict[str, Any]:
    """Entries per block bucket of the document index (the cost a query would pay without a budget)."""
    arr = np.sort(pipe.store.index.all_bucket_sizes())
    if not len(arr):
        return {}
    return {"buckets": len(arr), "p50": float(np.percentile(arr, 50)), "p99": float(np.percentile(arr, 99)),
            "max": int(arr.max()), "over_256": int((arr > 256).sum()), "over_4096": int((arr > 4096).sum())}


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def run_dedupe(name: str, docs: Iterator[Document], store: Path, window: int, processes: int,
               batch: int = 256, cache: Path | None = None, decide_docs: bool = True) -> Run:
    """Embedded dedupe of ``docs`` into a fresh ``store``, measured per window."""
    run = Run(name)
    shutil.rmtree(store, ignore_errors=True)
    started = time.perf_counter()
    with Pipeline(store, processes=processes) as pipe, CandidateCounter() as counter:
        pairs = fingerprinted(docs, cache, processes, pipe.fingerprinter)
        w_start, w_decide, w_cpu, w_cands = time.perf_counter(), 0.0, 0.0, []
        w_all = time.process_time()
        buf: list[tuple[Document, FingerprintResult]] = []

        def decide(buf: list[tuple[Document, FingerprintResult]]) -> None:
            nonlocal w_decide, w_cpu
            t, c = time.perf_counter(), time.process_time()
            tx = pipe.store.batch()
            for doc, res in buf:
                out = pipe.engine.decide(tx, doc, res)[0]
                w_cands.append(counter.take())
                run.decisions[out.decision] += 1
            tx.commit()
            w_decide += time.perf_counter() - t
            w_cpu += time.process_time() - c

        for doc, res in pairs:
            run.docs += 1
            run.indexed += not res.degenerate
            run.collapsed += (not res.degenerate) and _collapsed(res)
            buf.append((doc, res))
            if len(buf) == batch or run.docs % window == 0:
                if decide_docs:
                    decide(buf)
                buf = []
            if run.docs % window == 0:
                now = time.perf_counter()
                run.windows.append(_window(run.docs, window, now - w_start, w_decide, w_cpu, w_cands,
                                           time.process_time() - w_all))
                print(f"{name}: {run.windows[-1]}", file=sys.stderr, flush=True)
                run.candidates += w_cands
                run.decide_s += w_decide
                w_start, w_decide, w_cpu, w_cands = now, 0.0, 0.0, []
                w_all = time.process_time()
        if buf and decide_docs:
            decide(buf)
        if w_cands:
            now = time.perf_counter()
            run.windows.append(_window(run.docs, len(w_cands), now - w_start, w_decide, w_cpu, w_cands,
                                       time.process_time() - w_all))
            run.candidates += w_cands
            run.decide_s += w_decide
        run.buckets = bucket_distribution(pipe)
    run.elapsed_s = time.perf_counter() - started
    run.store_bytes = dir_bytes(store)
    run.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return run


SHARD = 10_000


def fingerprinted(docs: Iterator[Document], cache: Path | None, processes: int,
                  fingerprinter: Any) -> Iterator[tuple[Document, FingerprintResult]]:
    """(document, fingerprint) pairs of ``docs``. With a ``cache`` folder, whole shards of pairs saved there
    by an earlier run are read back instead of fingerprinted (the corpus is deterministic; the folder
    name must say which corpus and algorithm), and new shards are saved, so that the embedded run,
    the Elasticsearch load and the 10M-fingerprint index run fingerprint a corpus once."""
    if cache is None:
        pending: deque[Document] = deque()
        remembered = _remember(docs, pending)
        for res in fingerprint_many(remembered, processes=processes, fingerprinter=fingerprinter):
            yield pending.popleft(), res
        return
    cache.mkdir(parents=True, exist_ok=True)
    shard_no = 0
    while (path := cache / f"shard-{shard_no:05d}.pkl").exists():
        with path.open("rb") as fh:
            pairs: list[tuple[Document, FingerprintResult]] = pickle.load(fh)
        for pair in pairs:
            doc = next(docs, None)  # advances the generator in step
            if doc is None:
                return
            if doc.id != pair[0].id or pair[1].version != fingerprinter.version:
                raise SystemExit(f"{path} holds {pair[0].id!r} of {pair[1].version} where the corpus has "
                                 f"{doc.id!r} of {fingerprinter.version}: another corpus, seed or "
                                 "algorithm; use another --fingerprints folder")
            yield pair
        shard_no += 1
    buf: list[tuple[Document, FingerprintResult]] = []
    for pair in fingerprinted(docs, None, processes, fingerprinter):
        buf.append(pair)
        yield pair
        if len(buf) == SHARD:
            _save_shard(cache / f"shard-{shard_no:05d}.pkl", buf)
            shard_no, buf = shard_no + 1, []
    if buf:
        _save_shard(cache / f"shard-{shard_no:05d}.pkl", buf)


def _save_shard(path: Path, pairs: list[tuple[Document, FingerprintResult]]) -> None:
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        pickle.dump(pairs, fh, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.replace(path)


def _remember(docs: Iterator[Document], pending: deque[Document]) -> Iterator[Document]:
    for doc in docs:
        pending.append(doc)
        yield doc


def _window(end: int, n: int, wall: float, decide: float, cpu: float, cands: list[int], all_cpu: float
            ) -> dict[str, Any]:
    """Figures of one window; decide CPU (this process, LevelDB's threads included) moves less with the
    machine's load than wall time does."""
    return {"end": end, "docs_per_s": round(n / wall, 1), "decide_ms_per_doc": round(1000 * decide / n, 3),
            "decide_cpu_ms_per_doc": round(1000 * cpu / n, 3),
            # this process's CPU per document over the window: with --processes 1 and no cache,
            # fingerprinting and deciding, i.e. dedupe's own cost whatever else the machine runs
            "cpu_ms_per_doc": round(1000 * all_cpu / n, 3),
            "cand_p50": _pct(cands, 50), "cand_p99": _pct(cands, 99), "cand_max": max(cands, default=0)}


def summary(run: Run) -> dict[str, Any]:
    w = run.windows
    ratio = round(w[-1]["docs_per_s"] / w[1]["docs_per_s"], 2) if len(w) >= 3 else None
    cpu_ratio = round(w[1]["cpu_ms_per_doc"] / w[-1]["cpu_ms_per_doc"], 2) if len(w) >= 3 else None
    return {
        "name": run.name, "docs": run.docs, "elapsed_s": round(run.elapsed_s, 1),
        "decisions": dict(run.decisions), "last_vs_second_window": ratio,
        "last_vs_second_by_cpu": cpu_ratio,
        "decide_ms_per_doc": round(1000 * run.decide_s / max(run.docs, 1), 3),
        "candidates": {"p50": _pct(run.candidates, 50), "p99": _pct(run.candidates, 99),
                       "max": max(run.candidates, default=0)},
        "collapsed_share": round(run.collapsed / max(run.indexed, 1), 4),
        "buckets": run.buckets, "store_bytes_per_doc": round(run.store_bytes / max(run.docs, 1), 1),
        "peak_rss_mb": round(run.peak_rss_mb, 1), "windows": w,
    }


def es_hot_bucket(url: str, n: int, member_page: int = 1000, seed: int = 5) -> dict[str, Any]:
    """``es dedupe`` of an index whose block_0 holds one bucket of ``n`` members (two groups of near
    copies, interleaved, and far-apart singletons; fingerprint fields bulk-loaded): time and the peak of
    memory traced in this process."""
    import tracemalloc

    from elasticsearch import Elasticsearch

    from fingerprint_indexer.elastic.es_batch_dedupe import batch_dedupe
    from fingerprint_indexer.fingerprint.blocks import BlockLayout
    from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex

    rng = random.Random(seed)
    top = 0xBEEF << 48
    low = (1 << 48) - 1
    centres = [top | rng.getrandbits(48), top | rng.getrandbits(48)]
    docs = []
    for i in range(n):
        if i % 3 == 2:
            fp = top | rng.getrandbits(48)
        else:
            fp = top | ((centres[i % 3] ^ (1 << rng.randrange(48))) & low)
        docs.append((f"h{i:07d}", fp, {"content_digest": f"h{i}"}))
    client = Elasticsearch(url, request_timeout=600)
    name = "bench-scale-hot-bucket"
    client.options(ignore_status=404).indices.delete(index=name)
    try:
        t = time.perf_counter()
        index = ElasticsearchIndex(client, name, BlockLayout())
        index.add_many(docs)
        index.refresh()
        load_s = time.perf_counter() - t
        tracemalloc.start()
        t = time.perf_counter()
        report = batch_dedupe(client, name, k=3, member_page=member_page)
        dedupe_s = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    finally:
        client.options(ignore_status=404).indices.delete(index=name)
    return {"members": n, "load_s": round(load_s, 1), "dedupe_s": round(dedupe_s, 1),
            "groups": report.groups, "documents_in_groups": report.documents_in_groups,
            "written": report.written, "peak_traced_mb": round(peak / 2**20, 1),
            "whole_bucket_xor_matrix_gb": round(n * n * 8 / 2**30, 1)}


def markdown(results: list[dict[str, Any]], command: str, load: tuple[str, str]) -> str:
    day = time.strftime("%Y-%m-%d")
    out = [f"### Scale run ({day})", "", "```", command, "```", "",
           f"Load average {load[0]} at the start, {load[1]} at the end.", "",
           "| corpus | docs | docs/s last / second window | decide ms/doc | candidates p50 / p99 / max "
           "| fingerprint = one term's hash | buckets p99 / max | store bytes/doc | peak RSS |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        w, c, b = r["windows"], r["candidates"], r["buckets"]
        rate = (f"{w[-1]['docs_per_s']} / {w[1]['docs_per_s']} = {r['last_vs_second_window']}x"
                if len(w) >= 3 else "-")
        out.append(f"| {r['name']} | {r['docs']:,} | {rate} | {r['decide_ms_per_doc']} | "
                   f"{c['p50']:.0f} / {c['p99']:.0f} / {c['max']} | {100 * r['collapsed_share']:.1f} % | "
                   f"{b.get('p99', 0):.0f} / {b.get('max', 0)} | {r['store_bytes_per_doc']:.0f} | "
                   f"{r['peak_rss_mb']:.0f} MB |")
    out.append("")
    for r in results:
        out.append(f"Windows of {r['name']} (end: docs/s, decide wall / CPU ms per doc, candidates p99): "
                   + "; ".join(f"{w['end']:,}: {w['docs_per_s']}, {w['decide_ms_per_doc']} / "
                               f"{w.get('decide_cpu_ms_per_doc', '-')}, {w['cand_p99']:.0f}"
            for w in r["windows"]))
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--real", action=argparse.BooleanOptionalAction, default=True,
                    help="run the ~89k real documents (default on)")
    ap.add_argument("--limit", type=int, default=0, help="first N of the shuffled real documents (0: all)")
    ap.add_argument("--generated", type=int, default=0, help="documents of the generated corpus (0: none)")
    ap.add_argument("--window", type=int, default=10_000)
    ap.add_argument("--gen-window", type=int, default=0, help="window of the generated run (default N/10)")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--work", type=Path, default=None, help="folder for the stores (default: a temp dir)")
    ap.add_argument("--es-hot", type=int, default=0,
                    help="also es dedupe one block bucket of this many members (needs ES_URL)")
    ap.add_argument("--fingerprints", type=Path, default=None,
                    help="folder caching the corpora's fingerprints between runs (fingerprint once)")
    ap.add_argument("--fingerprint-only", action="store_true",
                    help="only fill the --fingerprints cache: no store, no decisions")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--append", action="store_true", help="append a dated section to docs/benchmarks.md")
    args = ap.parse_args(argv)
    load0 = f"{os.getloadavg()[0]:.2f}"
    if args.fingerprint_only and not args.fingerprints:
        ap.error("--fingerprint-only needs --fingerprints")

    def cache(corpus: str) -> Path | None:
        return args.fingerprints / f"{corpus}-seed{args.seed}" if args.fingerprints else None

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    results = []
    try:
        if args.real:
            docs = load_real(args.seed)
            docs = docs[: args.limit] if args.limit else docs
            results.append(summary(run_dedupe("real (4 corpora, shuffled)", iter(docs), work / "real",
                                              args.window, args.processes, cache=cache("real"),
                                              decide_docs=not args.fingerprint_only)))
            print(json.dumps(results[-1]), flush=True)
        if args.generated:
            sys.path.insert(0, str(ROOT / "scripts"))
            from gen_scale_corpus import generate

            window = args.gen_window or max(args.generated // 10, 1)
            gen = (Document.from_mapping(d) for d in generate(args.generated, seed=args.seed))
            results.append(summary(run_dedupe(f"generated {args.generated:,}", gen, work / "generated",
                                              window, args.processes, cache=cache("generated"),
                                              decide_docs=not args.fingerprint_only)))
            print(json.dumps(results[-1]), flush=True)
        if args.es_hot:
            hot = es_hot_bucket(os.environ["ES_URL"], args.es_hot)
            print(json.dumps({"es_hot_bucket": hot}), flush=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    load1 = f"{os.getloadavg()[0]:.2f}"
    command = "python3 scripts/bench_scale.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = markdown(results, command.strip(), (load0, load1))
    print(text)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.append:
        with (ROOT / "docs" / "benchmarks.md").open("a", encoding="utf-8") as fh:
            fh.write("\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
