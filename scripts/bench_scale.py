#!/usr/bin/env python3
"""Scale benchmark: does the cost of a document stay flat as the embedded store grows?

One command runs embedded ``dedupe`` (fingerprint pool + decisions into a LevelDB store, the same code
as the CLI) over the real corpora of ``../shared/data`` shuffled with a fixed seed, and over a generated
corpus (scripts/gen_scale_corpus.py) of ``--generated`` documents, and reports per window of documents:
throughput, candidates verified per document (p50/p99/max: records the verification rule was asked
about, near-duplicate candidates and cluster centres), and at the end the block-bucket size distribution,
the share of documents whose fingerprint is one term's hash, store bytes per document and peak RSS.
With ``--append`` a dated section with the load average goes to docs/benchmarks.md.
``--es-scale N`` (with ``ES_URL`` and a filled ``--fingerprints`` cache) measures Elasticsearch at N
generated documents: bulk load, ``es index`` of real documents there against an empty index, and ``es
similar`` there against a 10k index.

    python3 scripts/bench_scale.py --generated 200000 --append
    ES_URL=$(scripts/es-local url) python3 scripts/bench_scale.py --no-real --es-scale 1000000 \\
        --fingerprints FPC
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import pickle
import random
import re
import resource
import shutil
import subprocess
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
import fingerprint_indexer.store.near as near_mod
from fingerprint_indexer.documents import Document
from fingerprint_indexer.engine.rules import Decision
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintResult, fingerprint_many
from fingerprint_indexer.fingerprint.simhash import term_hashes
from fingerprint_indexer.pipeline import BATCH_SIZE, Pipeline
from fingerprint_indexer.store.embedded import StoreBatch
from fingerprint_indexer.verification import Evidence, Verdict

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
        self._many = near_mod.check_many
        self._one = rules_mod.check

    def __enter__(self) -> CandidateCounter:
        def many(query: Evidence, candidates: Sequence[Evidence], k: int) -> list[Verdict]:
            self.current += len(candidates)
            return self._many(query, candidates, k)

        def one(a: Evidence, b: Evidence, k: int) -> Verdict:
            self.current += 1
            return self._one(a, b, k)

        near_mod.check_many = many
        rules_mod.check = one
        return self

    def __exit__(self, *exc: object) -> None:
        near_mod.check_many = self._many
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
               batch: int = BATCH_SIZE, cache: Path | None = None, decide_docs: bool = True) -> Run:
    """Embedded dedupe of ``docs`` into a fresh ``store``, measured per window."""
    run = Run(name)
    shutil.rmtree(store, ignore_errors=True)
    started = time.perf_counter()
    with Pipeline(store, processes=processes) as pipe, CandidateCounter() as counter:
        pairs = fingerprinted(docs, cache, processes, pipe.fingerprinter)
        w_start, w_decide, w_cpu, w_cands = time.perf_counter(), 0.0, 0.0, []
        w_all = time.process_time()
        buf: list[tuple[Document, FingerprintResult]] = []

        decide_one = pipe.decide

        def counted(tx: StoreBatch, doc: Document, res: FingerprintResult) -> Decision:
            """The pipeline's own step for one document, its candidates counted after it."""
            out = decide_one(tx, doc, res)
            w_cands.append(counter.take())
            run.decisions[out.decision] += 1
            return out

        pipe.decide = counted  # type: ignore[method-assign]  # decide_batch calls it for each document

        def decide(buf: list[tuple[Document, FingerprintResult]]) -> None:
            nonlocal w_decide, w_cpu
            t, c = time.perf_counter(), time.process_time()
            pipe.decide_batch(buf)
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


ES_QUERY_FIELDS = ("id", "title", "content", "html", "url", "published_at")


Pair = tuple[Document, FingerprintResult]


def cached_pairs(n: int, seed: int, cache: Path, fingerprinter: Any) -> Iterator[Pair]:
    """The first ``n`` (document, fingerprint) pairs of the generated corpus from a complete ``cache`` (read
    through :func:`fingerprinted`); a cache without the fingerprints of ``n`` documents is refused here, at
    the call, rather than filled."""
    last = -(-n // SHARD) - 1
    missing = [i for i in range(last + 1) if not (cache / f"shard-{i:05d}.pkl").exists()]
    if not missing:  # the last shard of a smaller corpus holds less than SHARD pairs
        with (cache / f"shard-{last:05d}.pkl").open("rb") as fh:
            if len(pickle.load(fh)) < n - last * SHARD:
                missing = [last]
    if missing:
        raise SystemExit(f"{cache} lacks the fingerprints of {n:,} documents (shard-{missing[0]:05d}.pkl): "
                         "fill it first (--generated N --fingerprints DIR --fingerprint-only)")
    sys.path.insert(0, str(ROOT / "scripts"))
    from gen_scale_corpus import generate

    gen = (Document.from_mapping(d) for d in generate(n, seed=seed))
    return fingerprinted(gen, cache, 1, fingerprinter)


def new_document_actions(pairs: Iterable[tuple[Document, FingerprintResult]], index: str,
                         layout: Any) -> Iterator[dict[str, Any]]:
    """Bulk actions of fingerprinted documents as a plain ``es index`` of an empty index writes a first
    copy: the document body and the one builder's fields (``decision_fields``) with decision ``new``,
    each document the founder of its own cluster."""
    from fingerprint_indexer.elastic.es_ingest import document_fields
    from fingerprint_indexer.es.codec import decision_fields

    for doc, res in pairs:
        if res.marks:
            raise ValueError("the cached fingerprints carry copy marks; this benchmark loads indexes without")
        source = {**document_fields(doc),
                  **decision_fields(res, layout, cluster_id=doc.id, duplicate_of=None, distance=None,
                                    decision="new", text_length=doc.length)}  # fmt: skip
        yield {"_op_type": "index", "_index": index, "_id": doc.id, "_source": source}


def concrete_indices(client: Any, name: str) -> list[str]:
    """The concrete indices behind ``name`` (an alias or an index; none when absent), resolved by name."""
    if client.indices.exists_alias(name=name):
        return sorted(client.indices.get_alias(name=name).body)
    return [name] if client.indices.exists(index=name) else []


def delete_index(client: Any, name: str) -> None:
    """Delete what ``name`` resolves to, each concrete index by its own name (never a wildcard)."""
    for concrete in concrete_indices(client, name):
        client.indices.delete(index=concrete)


def bulk_load(client: Any, name: str, pairs: Iterable[tuple[Document, FingerprintResult]],
              threads: int = 2, chunk: int = 500, layout: BlockLayout | None = None) -> dict[str, Any]:
    """A fresh index ``name`` (created by ``create_index``, behind an alias as ``es setup`` makes it) loaded
    with ``pairs`` through ``helpers.parallel_bulk``, refresh off during the load and restored after, then
    refreshed: load time and the index's size on disk."""
    from elasticsearch import helpers

    from fingerprint_indexer.es.mapping import ES_LAYOUT, create_index

    delete_index(client, name)
    layout = layout or ES_LAYOUT
    concrete = create_index(client, name, layout, alias=True)
    if concrete is None:
        raise SystemExit(f"index {name!r} was created by someone else meanwhile")
    key = "index.refresh_interval"
    before = client.indices.get_settings(index=concrete, name=key, flat_settings=True).body
    old = before.get(concrete, {}).get("settings", {}).get(key)  # None: the server's default
    client.indices.put_settings(index=concrete, settings={key: "-1"})
    t = time.perf_counter()
    ok, failed = 0, []
    try:
        for success, item in helpers.parallel_bulk(client, new_document_actions(pairs, name, layout),
                                                   thread_count=threads, chunk_size=chunk,
                                                   queue_size=threads, raise_on_error=False):  # fmt: skip
            if success:
                ok += 1
                if ok % 100_000 == 0:
                    print(f"es-scale: loaded {ok:,} into {name} ({time.perf_counter() - t:.0f} s)",
                          file=sys.stderr, flush=True)
            else:
                failed.append(item)
    finally:
        client.indices.put_settings(index=concrete, settings={key: old})
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    client.indices.refresh(index=concrete)
    refresh_s = time.perf_counter() - t
    if failed:
        raise SystemExit(f"{len(failed)} documents failed to load into {name}: {failed[:3]}")
    stats = client.indices.stats(index=concrete, metric="docs,store").body["indices"][concrete]["primaries"]
    return {"index": concrete, "docs": stats["docs"]["count"], "load_s": round(load_s, 1),
            "load_docs_per_s": round(ok / load_s, 1), "refresh_s": round(refresh_s, 1),
            "store_bytes": stats["store"]["size_in_bytes"],
            "store_bytes_per_doc": round(stats["store"]["size_in_bytes"] / max(ok, 1), 1)}


def generated_jsonl(n: int, seed: int, folder: Path) -> Path:
    """The generated corpus of ``n`` documents as JSON lines in ``folder`` (written once, then reused)."""
    path = folder / f"generated-{n}-seed{seed}.jsonl"
    if not path.exists():
        sys.path.insert(0, str(ROOT / "scripts"))
        from gen_scale_corpus import generate

        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".partial")
        with tmp.open("w", encoding="utf-8") as fh:
            for doc in generate(n, seed=seed):
                fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
        tmp.rename(path)
    return path


def cli_dedupe(jsonl: Path, store: Path, processes: int, window: int, every_s: float = 1.0) -> dict[str, Any]:
    """``fingerprint-indexer dedupe`` of ``jsonl`` run as the command (a subprocess, start-up included):
    its resident memory (the command's process, and with its fingerprinting workers) sampled every
    ``every_s`` against the documents decided so far (lines of its output), throughput per ``window``
    documents, the decisions and the store's bytes per document."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_service import children, rss_kb

    out = store.with_suffix(".decisions.jsonl")
    cmd = [sys.executable, "-m", "fingerprint_indexer.cli.main", "dedupe", str(jsonl), "--store", str(store),
           "--processes", str(processes), "--output", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    samples: list[tuple[float, int, dict[str, int], int]] = []  # (s, decided, main RSS KB, tree RSS KB)
    decided, pos, marks = 0, 0, [(0.0, 0)]
    peak: dict[str, int] = {}
    peak_tree = 0
    while proc.poll() is None:
        time.sleep(every_s)
        if out.exists():
            with out.open("rb") as fh:  # count the lines written since the last sample
                fh.seek(pos)
                chunk = fh.read()
                cut = chunk.rfind(b"\n") + 1
                decided += chunk[:cut].count(b"\n")
                pos += cut
        try:
            main = {f: rss_kb(proc.pid, f) for f in ("VmRSS", "RssAnon", "RssFile")}
            tree_kb = main["VmRSS"] + sum(rss_kb(c) for c in children(proc.pid))
        except OSError:  # it (or a worker) exited between poll() and the read
            continue
        if not main["VmRSS"]:  # exited, not yet reaped: no memory left to read
            continue
        peak = {k: max(v, peak.get(k, 0)) for k, v in main.items()}
        peak_tree = max(peak_tree, tree_kb)
        now = time.perf_counter() - t0
        samples.append((now, decided, main, tree_kb))
        while decided >= marks[-1][1] + window:
            marks.append((now, marks[-1][1] + window))
    err = proc.stderr.read() if proc.stderr else ""
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"dedupe failed ({proc.returncode}): {err.strip()[-2000:]}")
    decisions = Counter(json.loads(line)["decision"] for line in out.open(encoding="utf-8"))
    n = sum(decisions.values())
    marks.append((wall, n))
    pairs = itertools.pairwise(marks)
    rates = [round((b[1] - a[1]) / max(b[0] - a[0], 1e-9)) for a, b in pairs if b[1] > a[1]]

    def rss_at(frac: float) -> dict[str, Any]:
        s = next((x for x in samples if x[1] >= frac * n), samples[-1])
        mb = {k: round(v / 1024) for k, v in s[2].items()}
        return {"decided": s[1], "main_mb": mb["VmRSS"], "anon_mb": mb["RssAnon"], "file_mb": mb["RssFile"],
                "tree_mb": round(s[3] / 1024)}

    out.unlink()
    return {"name": f"dedupe command, {n:,} generated documents", "docs": n, "wall_s": round(wall, 1),
            "docs_per_s": round(n / wall, 1), "window": window, "window_docs_per_s": rates,
            "last_vs_second_window": round(rates[-1] / rates[1], 2) if len(rates) >= 3 else None,
            "peak_rss_mb": round(peak.get("VmRSS", 0) / 1024),
            "peak_anon_mb": round(peak.get("RssAnon", 0) / 1024),
            "peak_file_mb": round(peak.get("RssFile", 0) / 1024), "peak_tree_rss_mb": round(peak_tree / 1024),
            "rss_by_progress": [rss_at(f / 10) for f in range(1, 11)], "decisions": dict(decisions),
            "store_bytes_per_doc": round(dir_bytes(store) / max(n, 1), 1),
            "command_says": err.strip().splitlines()[-1] if err.strip() else ""}


def cli_dedupe_markdown(r: dict[str, Any], command: str, load: tuple[str, str]) -> str:
    day = time.strftime("%Y-%m-%d")
    rss = "; ".join(f"{x['decided']:,}: {x['main_mb']} ({x['anon_mb']} + {x['file_mb']}) / {x['tree_mb']} MB"
                    for x in r["rss_by_progress"])
    return "\n".join([
        f"### `dedupe` command over generated documents ({day})", "", "```", command, "```", "",
        f"Load average {load[0]} at the start, {load[1]} at the end.", "",
        "| figure | value |", "|---|---|",
        f"| documents, wall | {r['docs']:,} in {r['wall_s']} s ({r['docs_per_s']} docs/s) |",
        f"| decisions | {r['decisions']} |",
        f"| peak RSS: the command's process / with its workers | {r['peak_rss_mb']} / "
        f"{r['peak_tree_rss_mb']} MB |",
        "| peak of the process's allocated memory (RssAnon) / mapped files (RssFile) | "
        f"{r['peak_anon_mb']} / {r['peak_file_mb']} MB |",
        f"| docs/s per {r['window']:,} window | {', '.join(map(str, r['window_docs_per_s']))} |",
        f"| last window vs second | {r['last_vs_second_window']} |",
        f"| store on disk per document | {r['store_bytes_per_doc']:.0f} B |", "",
        f"RSS as documents are decided (decided: the process (allocated + mapped files) / with its workers): "
        f"{rss}", ""])


def cli_es_index(url: str, name: str, jsonl: Path, processes: int,
                 blocks: int | None = None) -> dict[str, Any]:  # fmt: skip
    """``fingerprint-indexer es index`` of ``jsonl`` into ``name``, run as the command (a subprocess, start-up
    included): wall time, docs/s and the decisions. ``blocks``: a new index of the plain layout of that
    many blocks (else the command's default; an existing index keeps its own)."""
    out = jsonl.with_suffix(f".{name}.decisions.jsonl")
    cmd = [sys.executable, "-m", "fingerprint_indexer.cli.main", "es", "index", str(jsonl), "--index", name,
           "--processes", str(processes), "--output", str(out)]
    cmd += ["--blocks", str(blocks)] if blocks else []
    t = time.perf_counter()
    p = subprocess.run(cmd, env={**os.environ, "ES_URL": url}, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"es index into {name} failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    decisions = Counter(json.loads(line)["decision"] for line in out.read_text(encoding="utf-8").splitlines())
    out.unlink()
    n = sum(decisions.values())
    print(f"es-scale: es index into {name}: {n:,} in {wall:.1f} s", file=sys.stderr, flush=True)
    says = p.stderr.strip().splitlines()[-1]  # "... 12.3 s (456 docs/s)": its own timing, start-up excluded
    own = re.search(r"([\d.]+) s \((\d+) docs/s\)$", says)
    return {"index": name, "docs": n, "wall_s": round(wall, 1), "docs_per_s": round(n / wall, 1),
            "command_docs_per_s": int(own[2]) if own else None, "decisions": dict(decisions),
            "command_says": says}


def shard_work(client: Any, index: str) -> dict[str, int]:
    """Milliseconds the index's shards have spent so far per kind of work (search query and fetch phases,
    indexing, refreshes, merges, and building global ordinals, which servers from Elasticsearch 8.8 on
    report): their difference over an ``es index`` run says where its time went."""
    metrics = "search,indexing,refresh,merge,fielddata"
    t = client.indices.stats(index=index, metric=metrics).body["_all"]["total"]
    ordinals = t.get("fielddata", {}).get("global_ordinals") or {}
    return {"query": int(t["search"]["query_time_in_millis"]),
            "fetch": int(t["search"]["fetch_time_in_millis"]),
            "indexing": int(t["indexing"]["index_time_in_millis"]),
            "refresh": int(t["refresh"]["total_time_in_millis"]),
            "merge": int(t["merges"]["total_time_in_millis"]),
            "global_ordinals": int(ordinals.get("build_time_in_millis", 0))}


def search_stats(client: Any, index: str) -> tuple[int, int, int]:
    """(queries, query milliseconds, fetch milliseconds) the index's shards have served so far."""
    s = client.indices.stats(index=index, metric="search").body["_all"]["total"]["search"]
    return int(s["query_total"]), int(s["query_time_in_millis"]), int(s["fetch_time_in_millis"])


def candidate_counts(client: Any, ix: Any, queries: Sequence[tuple[str, Evidence, str]]) -> list[int]:
    """Per query, the documents its verified look-up fetches and verifies: those sharing a block key with
    one of its fingerprints or a band key (not a hot one) with its sketch."""
    from fingerprint_indexer.fingerprint.sketch import band_keys

    out = []
    for _, ev, _ in queries:
        sketch = bytes(ev.sketch)
        query = ix.candidates_query(ev.fingerprints, sketch=sketch, hot=ix.hot_bands(band_keys(sketch)))
        out.append(int(client.count(index=ix.index, query=query)["count"]))
    return out


def similar_latency(client: Any, names: Sequence[str], queries: Sequence[tuple[str, Evidence, str]],
                    warm: int = 50, k: int = 3) -> dict[str, Any]:
    """``es similar`` (its function, on precomputed evidence: the look-up, not the fingerprinting) of each
    query on each index, interleaved query by query (the order of the indexes alternating), after
    ``warm`` untimed queries on each: p50 / p99 / max latency, documents found, and the query time the
    shards report."""
    from fingerprint_indexer.elastic.similar import similar
    from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex

    indexes = [ElasticsearchIndex(client, n, create=False) for n in names]
    for _, ev, digest in queries[:warm]:
        for ix in indexes:
            similar(client, ix, ev, digest, k)
    times: list[list[float]] = [[] for _ in names]
    found: list[list[int]] = [[] for _ in names]
    shard0 = [search_stats(client, n) for n in names]
    for q, (_, ev, digest) in enumerate(queries):
        order = range(len(names)) if q % 2 == 0 else reversed(range(len(names)))
        for i in order:
            t = time.perf_counter()
            hits = similar(client, indexes[i], ev, digest, k)
            times[i].append(1000 * (time.perf_counter() - t))
            found[i].append(len(hits.matches))
    out: dict[str, Any] = {}
    for i, name in enumerate(names):
        shard1 = search_stats(client, name)
        arr = np.array(times[i])
        cands = candidate_counts(client, indexes[i], queries)
        out[name] = {"queries": len(arr), "p50_ms": round(float(np.percentile(arr, 50)), 2),
                     "p99_ms": round(float(np.percentile(arr, 99)), 2), "max_ms": round(float(arr.max()), 2),
                     "found_mean": round(float(np.mean(found[i])), 2), "found_max": max(found[i]),
                     "shard_queries": shard1[0] - shard0[i][0],
                     "shard_query_ms_per_similar": round((shard1[1] - shard0[i][1]) / len(arr), 2),
                     "shard_fetch_ms_per_similar": round((shard1[2] - shard0[i][2]) / len(arr), 2),
                     "candidates_p50": _pct(cands, 50), "candidates_p99": _pct(cands, 99),
                     "candidates_max": max(cands), "fingerprints_per_query": round(
                         float(np.mean([len(ev.fingerprints) for _, ev, _ in queries])), 1)}
    return out


def node_figures(client: Any) -> dict[str, Any]:
    """The node's heap (max and used) and its version."""
    jvm = next(iter(client.nodes.stats(metric="jvm").body["nodes"].values()))["jvm"]["mem"]
    info = next(iter(client.nodes.info(metric="jvm").body["nodes"].values()))
    return {"heap_max_mb": round(jvm["heap_max_in_bytes"] / 2**20), "heap_used_mb":
            round(jvm["heap_used_in_bytes"] / 2**20), "version": info["version"]}


def settle(client: Any, index: str, timeout_s: float = 1800.0) -> dict[str, Any]:
    """Wait until ``index`` has no merge running (twice in a row, 5 s apart), as an index that has been
    serving for a while: right after a bulk load its merges still take CPU from every request. The wait
    and the segments left, afterwards; no forced merge."""
    t = time.perf_counter()
    quiet = 0
    while quiet < 2 and time.perf_counter() - t < timeout_s:
        merges = client.indices.stats(index=index, metric="merge").body["_all"]["total"]["merges"]
        quiet = quiet + 1 if int(merges["current"]) == 0 else 0
        time.sleep(5)
    from fingerprint_indexer.es.mapping import segment_count

    return {"waited_s": round(time.perf_counter() - t, 1), "segments": segment_count(client, index),
            "merging": quiet < 2}


def es_scale(url: str, n: int, cache: Path, seed: int, real: int = 20_000, small: int = 10_000,
             queries: int = 500, processes: int = 2, keep: bool = False,
             work: Path | None = None, plain: bool = False, merge_to: int = 0) -> dict[str, Any]:  # fmt: skip
    """The Elasticsearch figures at ``n`` documents (see ``--es-scale``): bulk-load the first ``n`` cached
    generated documents and the first ``small`` into two fresh indexes, time ``es similar`` on both, then
    ``es index`` of the first ``real`` shuffled real documents into an empty index, into the ``n`` index
    and into an empty index again (back to back), and take the real documents out of the ``n`` index.
    Every index has the default layout of a new index (permuted keys), or with ``plain`` the 4 x 16-bit
    blocks of the indexes of before. ``merge_to``: then force-merge the ``n`` index to that many segments
    (what a rolled-over, read-only index gets) and time ``es index`` into it once more."""
    from fingerprint_indexer.es.connection import connect
    from fingerprint_indexer.es.mapping import ES_LAYOUT, force_merge
    from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter

    client = connect(url, request_timeout=600)
    fpr = Fingerprinter()
    layout, blocks = (BlockLayout(), 4) if plain else (ES_LAYOUT, None)
    tag = "-plain" if plain else ""
    large, little = f"bench-es-scale{tag}-{n}", f"bench-es-scale{tag}-{small}-of-{n}"
    empties = [f"bench-es-scale{tag}-empty-{i}" for i in (1, 2)]
    out: dict[str, Any] = {"n": n, "small": small, "real": real, "processes": processes,
                           "layout": str(layout), "node_start": node_figures(client)}  # fmt: skip
    reals = load_real(seed)[:real]
    generated_ids = set()
    tmp = Path(tempfile.mkdtemp(prefix="bench-es-scale-", dir=work))
    try:
        if keep and concrete_indices(client, large) and client.count(index=large)["count"] == n:
            out["load"] = {"reused": large}
        else:
            out["load"] = bulk_load(client, large, cached_pairs(n, seed, cache, fpr), layout=layout)
        print(f"es-scale: {json.dumps(out['load'])}", file=sys.stderr, flush=True)
        small_pairs = list(cached_pairs(small, seed, cache, fpr))
        generated_ids = {d.id for d, _ in small_pairs}
        out["load_small"] = bulk_load(client, little, small_pairs, layout=layout)
        out["settled"] = {name: settle(client, name) for name in (large, little)}
        print(f"es-scale: settled {json.dumps(out['settled'])}", file=sys.stderr, flush=True)
        # real ids are "<corpus>/<id>", generated ones "g<number>": the two sets cannot meet
        clash = [d.id for d in reals if d.id in generated_ids or not d.id.partition("/")[2]]
        if clash:
            raise SystemExit(f"real ids that could meet generated ones: {clash[:3]}")
        rng = random.Random(seed)
        picked_real = rng.sample(reals, queries // 2)
        picked_gen = rng.sample(small_pairs, queries - queries // 2)
        real_fps = fingerprint_many(iter(picked_real), processes=1, fingerprinter=fpr)
        qs = [(d.id, res.evidence, res.content_digest) for d, res in zip(picked_real, real_fps, strict=True)]
        qs += [(d.id, res.evidence, res.content_digest) for d, res in picked_gen]
        rng.shuffle(qs)
        out["similar"] = similar_latency(client, [little, large], qs)
        lat = out["similar"]
        lat["p99_ratio"] = round(lat[large]["p99_ms"] / lat[little]["p99_ms"], 2)
        print(f"es-scale: es similar {json.dumps(lat)}", file=sys.stderr, flush=True)
        del small_pairs
        jsonl = tmp / "real.jsonl"
        with jsonl.open("w", encoding="utf-8") as fh:  # dates as given: es index writes them in ISO form
            for d in reals:
                row = {f: getattr(d, f) for f in ES_QUERY_FIELDS if getattr(d, f) is not None}
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        for e in empties:
            delete_index(client, e)
        runs = []
        for name, given in ((empties[0], blocks), (large, None), (empties[1], blocks)):
            before = shard_work(client, name) if concrete_indices(client, name) else {}
            runs.append(cli_es_index(url, name, jsonl, processes, given))
            after = shard_work(client, name)
            runs[-1]["shards_ms"] = {k: v - before.get(k, 0) for k, v in after.items()}
        empty_rate = (runs[0]["docs_per_s"] + runs[2]["docs_per_s"]) / 2
        out["es_index"] = {"empty_1": runs[0], "at_n": runs[1], "empty_2": runs[2],
                           "ratio_n_vs_empty": round(runs[1]["docs_per_s"] / empty_rate, 2)}  # fmt: skip
        if all(r["command_docs_per_s"] for r in runs):
            own = (runs[0]["command_docs_per_s"] + runs[2]["command_docs_per_s"]) / 2
            out["es_index"]["command_ratio_n_vs_empty"] = round(runs[1]["command_docs_per_s"] / own, 2)
        # the real documents out of the n index again, by id (bulk deletes: minimal nodes have no
        # delete-by-query), so that it holds the generated corpus only and can be reused (--es-keep)
        from elasticsearch import helpers

        deletes = ({"_op_type": "delete", "_index": large, "_id": d.id} for d in reals)
        removed, _ = helpers.bulk(client, deletes, chunk_size=1000, raise_on_error=False, stats_only=True)
        client.indices.refresh(index=large)
        out["es_index"]["real_removed_from_n"] = removed
        if merge_to:
            seconds = force_merge(client, large, merge_to)["seconds"]
            merged = {"seconds": seconds, **settle(client, large)}
            print(f"es-scale: force-merged {json.dumps(merged)}", file=sys.stderr, flush=True)
            before = shard_work(client, large)
            run = cli_es_index(url, large, jsonl, processes)
            run["shards_ms"] = {k: v - before.get(k, 0) for k, v in shard_work(client, large).items()}
            deletes = ({"_op_type": "delete", "_index": large, "_id": d.id} for d in reals)
            helpers.bulk(client, deletes, chunk_size=1000, raise_on_error=False, stats_only=True)
            client.indices.refresh(index=large)
            out["es_index"]["merged"] = {"merge": merged, "at_n": run,
                                         "ratio_n_vs_empty": round(run["docs_per_s"] / empty_rate, 2)}
        out["node_end"] = node_figures(client)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for name in [*empties, little] + ([] if keep else [large]):
            delete_index(client, name)
        client.close()
    return out


def es_scale_markdown(r: dict[str, Any], command: str, load: tuple[str, str]) -> str:
    """A dated section of docs/benchmarks.md for one ``--es-scale`` run."""
    day = time.strftime("%Y-%m-%d")
    tag = "-plain" if r.get("layout") == "16x16x16x16" else ""
    big, small = f"bench-es-scale{tag}-{r['n']}", f"bench-es-scale{tag}-{r['small']}-of-{r['n']}"
    s, ix, ld = r["similar"], r["es_index"], r["load"]
    heap = r["node_start"]
    lines = [f"### Elasticsearch at {r['n']:,} documents ({day})", "", "```", command, "```", "",
             f"Load average {load[0]} at the start, {load[1]} at the end; Elasticsearch {heap['version']}, "
             f"heap {heap['heap_max_mb']} MB (used {r['node_end']['heap_used_mb']} MB at the end); block "
             f"layout {r.get('layout', '16x16x16x16')}.", "",
             "| figure | value | target |", "|---|---|---|"]
    if "load_s" in ld:
        lines.append(f"| bulk load of {ld['docs']:,} generated documents | {ld['load_s']} s "
                     f"({ld['load_docs_per_s']:,} docs/s), refresh {ld['refresh_s']} s | |")
        lines.append(f"| index on disk (primaries) | {ld['store_bytes'] / 2**30:.2f} GB "
                     f"({ld['store_bytes_per_doc']:,.0f} B per document) | |")
    e1, en, e2 = ix["empty_1"], ix["at_n"], ix["empty_2"]
    lines.append(f"| `es index` of {en['docs']:,} real documents: empty / at {r['n']:,} / empty again | "
                 f"{e1['docs_per_s']} / {en['docs_per_s']} / {e2['docs_per_s']} docs/s | |")
    lines.append(f"| ratio at {r['n']:,} vs the mean of the empty runs | **{ix['ratio_n_vs_empty']}** "
                 "| >= 0.8 |")
    own = " / ".join(str(x["command_docs_per_s"]) for x in (e1, en, e2))
    lines.append(f"| the same by the command's own timing (start-up excluded): {own} docs/s "
                 f"| {ix.get('command_ratio_n_vs_empty')} | |")
    for name, label in ((small, f"{r['small']:,}"), (big, f"{r['n']:,}")):
        q = s[name]
        lines.append(f"| `es similar` at {label}: p50 / p99 / max ({q['queries']} queries) | {q['p50_ms']} / "
                     f"{q['p99_ms']} / {q['max_ms']} ms (found {q['found_mean']} on average; candidates "
                     f"p50 / p99 {q['candidates_p50']:.0f} / {q['candidates_p99']:.0f}; shards: query "
                     f"{q['shard_query_ms_per_similar']} ms, fetch {q['shard_fetch_ms_per_similar']} ms per "
                     "look-up) | |")
    lines.append(f"| p99 at {r['n']:,} vs at {r['small']:,} | **{s['p99_ratio']}** | <= 2 |")
    if "merged" in ix:
        m = ix["merged"]
        merge = m["merge"]
        lines.append(f"| force-merged to {merge['segments']} segments ({merge['seconds']} s): `es index` at "
                     f"{r['n']:,} | {m['at_n']['docs_per_s']} docs/s, **{m['ratio_n_vs_empty']}** of the "
                     "empty runs | |")
    lines.append("")
    return "\n".join(lines)


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
    ap.add_argument("--es-scale", type=int, default=0,
                    help="Elasticsearch at this many generated documents from the --fingerprints cache: bulk "
                         "load, es index of real documents against an empty index, es similar against a "
                         "small index (needs ES_URL)")
    ap.add_argument("--es-real", type=int, default=20_000, help="real documents of the --es-scale es index")
    ap.add_argument("--es-small", type=int, default=10_000, help="documents of the small --es-scale index")
    ap.add_argument("--es-queries", type=int, default=500, help="es similar queries of --es-scale")
    ap.add_argument("--es-plain", action="store_true",
                    help="--es-scale with the 4 x 16-bit block layout of the indexes of before (default: the "
                         "permuted keys every new index gets)")
    ap.add_argument("--es-merge-to", type=int, default=0,
                    help="--es-scale: then force-merge the large index to this many segments and time es "
                         "index into it again")
    ap.add_argument("--es-keep", action="store_true",
                    help="keep the --es-scale index (and reuse one of the right size)")
    ap.add_argument("--cli-dedupe", type=int, default=0,
                    help="run the dedupe command itself over this many generated documents (JSON lines "
                         "written once into --fingerprints or --work), sampling its memory as it goes")
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
    if args.es_scale and not (args.fingerprints and os.environ.get("ES_URL")):
        ap.error("--es-scale needs ES_URL and --fingerprints (the generated corpus's cached fingerprints)")
    if args.es_scale and args.es_small > args.es_scale:
        ap.error("--es-small must not exceed --es-scale")
    es_run: dict[str, Any] | None = None
    cli_run: dict[str, Any] | None = None

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
        if args.cli_dedupe:
            jsonl = generated_jsonl(args.cli_dedupe, args.seed, args.fingerprints or work)
            cli_run = cli_dedupe(jsonl, work / "cli-store", args.processes,
                                 args.gen_window or max(args.cli_dedupe // 10, 1))
            print(json.dumps({"cli_dedupe": cli_run}), flush=True)
        if args.es_hot:
            hot = es_hot_bucket(os.environ["ES_URL"], args.es_hot)
            print(json.dumps({"es_hot_bucket": hot}), flush=True)
        if args.es_scale:
            folder = args.fingerprints / f"generated-seed{args.seed}"
            es_run = es_scale(os.environ["ES_URL"], args.es_scale, folder, args.seed, args.es_real,
                              args.es_small, args.es_queries, args.processes, args.es_keep,
                              args.work, plain=args.es_plain, merge_to=args.es_merge_to)  # fmt: skip
            print(json.dumps({"es_scale": es_run}), flush=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    load1 = f"{os.getloadavg()[0]:.2f}"
    command = "python3 scripts/bench_scale.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = markdown(results, command.strip(), (load0, load1)) if results else ""
    if cli_run is not None:
        text += ("\n" if text else "") + cli_dedupe_markdown(cli_run, command.strip(), (load0, load1))
    if es_run is not None:
        text += ("\n" if text else "") + es_scale_markdown(es_run, command.strip(), (load0, load1))
    print(text)
    if args.json:
        extra = ([{"cli_dedupe": cli_run}] if cli_run else []) + ([{"es_scale": es_run}] if es_run else [])
        args.json.write_text(json.dumps(results + extra, indent=1))
    if args.append:
        with (ROOT / "docs" / "benchmarks.md").open("a", encoding="utf-8") as fh:
            fh.write("\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
