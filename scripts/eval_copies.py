#!/usr/bin/env python3
"""Measure passage-level copy detection on real articles (docs/quality.md, "Copied passages").

For each corpus, real articles are deduplicated into a fresh embedded store (the partial-copy index is
written as in production). Then, with a fixed seed, passages of 50-2,000 characters are cut from
stored articles and planted at a line break of other real articles that are not stored and copy
nothing stored themselves; each such text is the query of a partial-copy search. Reported:

- recall: planted passages of at least g terms found (a hit on the source whose passage overlaps the
  planted span), next to the recall on all planted passages;
- hits on other documents than the source and its stored copies (they share a run of g terms or more
  of the planted passage: another article quoting the same text, or a stock phrase);
- precision per reported character: characters of the query inside reported passages that lie in the
  planted span and belong to a hit on the source, on a stored copy of it (its cluster in the store),
  or in a passage of at least g terms of another stored article (a run of g identical terms is a
  quote or a copy, not chance: the corpora hold articles quoting one notice or speech);
- stock phrases (zh_xwlb): items of formulaic series (titles equal up to numbers: sessions of one
  meeting, daily reports, signed decrees) are real distinct articles that share stock phrases; every
  search hit between two items of one series is listed.

Usage: python3 scripts/eval_copies.py [--corpora zh_news en_bbc zh_xwlb en_reuters] [--trials 300]
       [--stored 4000] [--k 4 --g 10] [--min-chars 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from fingerprint_indexer.copies import CopyFinder
from fingerprint_indexer.copies.search import DEFAULT_MIN_CHARS
from fingerprint_indexer.copies.stored import search_store
from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig
from fingerprint_indexer.fingerprint.winnow import WinnowParams
from fingerprint_indexer.pipeline import Pipeline
from fingerprint_indexer.text.clean import normalize_mapped

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CORPORA = ("zh_news", "en_bbc", "zh_xwlb", "en_reuters")
SEED = 15
MIN_LEN, MAX_LEN = 50, 2000
SERIES_MIN = 5  # a title template shared by this many items is a formulaic series
DIGESTS = re.compile(r"联播快讯")  # news-in-brief digests: many stories in one item, not one series
NUMBERS = re.compile(r"[0-9一二三四五六七八九十百千零两]+")


def load(name: str) -> list[dict[str, Any]]:
    with gzip.open(DATA / f"{name}.jsonl.gz", "rt", encoding="utf-8") as f:
        return [r for r in map(json.loads, f) if len(r.get("content") or "") >= 300]


def overlap(a0: int, a1: int, b0: int, b1: int) -> int:
    return max(0, min(a1, b1) - max(a0, b0))


def _latin(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def plant(rng: random.Random, source: str, host: str) -> tuple[str, int, int, str]:
    """``host`` with a passage of ``source`` inserted at a line break (else a sentence end); the text,
    the planted span in it and the passage."""
    length = min(len(source), round(MIN_LEN * (MAX_LEN / MIN_LEN) ** rng.random()))  # log-uniform
    start = rng.randrange(0, len(source) - length + 1)
    end = start + length
    # an excerpt copies whole words: a cut inside a Latin word moves to the word's edge
    while 0 < start < end and _latin(source[start - 1]) and _latin(source[start]):
        start += 1
    while start < end < len(source) and _latin(source[end - 1]) and _latin(source[end]):
        end -= 1
    passage = source[start:end]
    cuts = [m.end() for m in re.finditer(r"\n|[。！？.!?]\s*", host)] or [len(host)]
    at = rng.choice(cuts)
    return host[:at] + passage + host[at:], at, at + len(passage), passage


def evaluate(name: str, args: argparse.Namespace, params: WinnowParams) -> dict[str, Any]:
    rng = random.Random(f"{SEED}:{name}")
    docs = load(name)
    rng.shuffle(docs)
    # all of zh_xwlb (its stock phrases); elsewhere a third at least is left for hosts
    stored = docs if name == "zh_xwlb" else docs[: min(args.stored, len(docs) * 2 // 3)]
    hosts = docs[len(stored) :] if len(docs) > len(stored) else []
    if name == "zh_xwlb":  # every item is stored: hosts come from the other Chinese corpus
        hosts = load("zh_news")
        rng.shuffle(hosts)
    config = FingerprintConfig(winnow=params)
    out: dict[str, Any] = {"corpus": name, "stored": len(stored), "k": params.k, "g": params.g}
    with tempfile.TemporaryDirectory() as tmp, Pipeline(Path(tmp) / "store", config, batch_size=512) as pipe:
        t0 = time.perf_counter()
        for _ in pipe.process_many(Document(id=str(r["id"]), title=r.get("title") or "", content=r["content"])
                                   for r in stored):
            pass
        out["store_seconds"] = round(time.perf_counter() - t0, 1)
        finder = CopyFinder(pipe.fingerprinter.tokenizer, params)
        store = pipe.store

        def cluster_of(doc_id: str) -> str | None:
            rec = store.record(doc_id)
            return rec.cluster_id if rec is not None else None
        n = found = n_g = found_g = 0
        reported = correct = others = 0
        search_ms: list[float] = []
        hi = 0
        for _ in range(args.trials):
            src = rng.choice(stored)
            host = None
            while hi < len(hosts) and host is None:  # a host that copies nothing stored itself
                cand = hosts[hi]
                hi += 1
                hits, _ = search_store(store, finder.marked(cand["content"]), params, 1)
                if not hits:
                    host = cand
            if host is None:
                break
            text, p0, p1, passage = plant(rng, src["content"], host["content"])
            t = time.perf_counter()
            hits, _ = search_store(store, finder.marked(text), params, args.min_chars)
            search_ms.append((time.perf_counter() - t) * 1000)
            long_enough = len(finder.tokenizer.spans(normalize_mapped(passage)[0])) >= params.g
            hit = next((h for h in hits if h.id == str(src["id"])), None)
            ok = hit is not None and any(overlap(p.a_start, p.a_end, p0, p1) for p in hit.passages)
            n += 1
            found += ok
            n_g += long_enough
            found_g += ok and long_enough
            story = cluster_of(str(src["id"]))
            others += sum(1 for h in hits if h.id != str(src["id"]) and cluster_of(h.id) != story)
            for h in hits:
                # the source and its stored copies (its cluster) hold the planted text
                holds = h.id == str(src["id"]) or cluster_of(h.id) == story
                for p in h.passages:
                    reported += p.a_end - p.a_start
                    # another article sharing a run of g terms or more of it quotes the same text
                    if holds or p.terms >= params.g:
                        correct += overlap(p.a_start, p.a_end, p0, p1)
        search_ms.sort()
        out.update(planted=n, recall_all=round(found / n, 4) if n else None, planted_ge_g=n_g,
                   recall_ge_g=round(found_g / n_g, 4) if n_g else None, reported_chars=reported,
                   precision_chars=round(correct / reported, 4) if reported else None, other_hits=others,
                   search_ms_p50=round(search_ms[len(search_ms) // 2], 1) if search_ms else None,
                   search_ms_p99=round(search_ms[int(len(search_ms) * 0.99)], 1) if search_ms else None)
        if name == "zh_xwlb":
            out.update(stock_phrases(stored, pipe, finder, params, args))
    return out


def stock_phrases(stored: list[dict[str, Any]], pipe: Pipeline, finder: CopyFinder, params: WinnowParams,
                  args: argparse.Namespace) -> dict[str, Any]:
    """Search hits between distinct items of one formulaic series (default ``min_chars``)."""
    series: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in stored:
        title = r.get("title") or ""
        if not DIGESTS.search(title):
            series[NUMBERS.sub("#", title)].append(r)
    groups = {t: rs for t, rs in series.items() if len(rs) >= SERIES_MIN}
    member = {str(r["id"]): t for t, rs in groups.items() for r in rs}
    queries = hits_total = 0
    examples: list[dict[str, Any]] = []
    for t, rs in groups.items():
        for r in rs:
            queries += 1
            hits, _ = search_store(pipe.store, finder.marked(r["content"]), params, args.stock_min_chars,
                                   exclude=str(r["id"]))
            for h in hits:
                if member.get(h.id) == t:
                    hits_total += 1
                    if len(examples) < 10:
                        p = max(h.passages, key=lambda p: p.length)
                        examples.append({"query": r["id"], "hit": h.id, "copied": h.copied,
                                         "passage": r["content"][p.a_start : p.a_end][:80]})
    return {"stock_series": len(groups), "stock_queries": queries, "stock_hits": hits_total,
            "stock_examples": examples}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=CORPORA)
    ap.add_argument("--trials", type=int, default=300, help="planted passages per corpus")
    ap.add_argument("--stored", type=int, default=4000, help="stored articles per corpus (zh_xwlb: all)")
    ap.add_argument("--k", type=int, default=WinnowParams().k, help="noise threshold (terms)")
    ap.add_argument("--g", type=int, default=WinnowParams().g, help="guarantee threshold (terms)")
    ap.add_argument("--min-chars", type=int, default=1, help="least copied characters of a planted query hit")
    ap.add_argument("--stock-min-chars", type=int, default=DEFAULT_MIN_CHARS,
                    help="least copied characters of a stock-phrase hit (the search's default)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    params = WinnowParams(k=args.k, g=args.g)
    results = []
    for name in args.corpora:
        res = evaluate(name, args, params)
        results.append(res)
        print(json.dumps(res, ensure_ascii=False), file=sys.stderr)
    print("| corpus | stored | planted (>= g terms) | recall >= g | recall all | precision per char | "
          "search p50 / p99 ms | stock-phrase hits |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        stock = f"{r['stock_hits']} hits / {r['stock_queries']} queries" if "stock_hits" in r else "-"
        print(f"| {r['corpus']} | {r['stored']} | {r['planted']} ({r['planted_ge_g']}) | "
              f"{r['recall_ge_g']} | {r['recall_all']} | {r['precision_chars']} | "
              f"{r['search_ms_p50']} / {r['search_ms_p99']} | {stock} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
