#!/usr/bin/env python3
"""Precision where it is hardest: real pairs of template news labelled by hand, our rule beside the peers.

The pairs (``docs/labels/template_{zh,en}.jsonl``: ids, label, one-line reason, and a second reading
where there was one) were drawn by ``scripts/build_template_pairs.py`` from what the systems flag on the
real corpora of ``../shared/data``; the texts are read from the corpora in place. Every method judges
every labelled pair:

- ``ours:default``: the shipped fingerprinter and :func:`fingerprint_indexer.verification.check` (fingerprint
  pair within 3, sketch, facts);
- ``ours:no-facts``: the same fingerprints with the fact check off (what the previous rule accepted);
- ``minhash@J``: datasketch MinHash (128 permutations) of character 5-grams at Jaccard >= 0.5 / 0.7 / 0.8;
- ``pypi-simhash``: the PyPI ``simhash`` package's default fingerprint at Hamming <= 3;
- ``reference``: the seeds' jieba + top-50 TF-IDF + MD5 SimHash at Hamming <= 3.

Precision comes with the lower end of its 95 % Wilson interval. With ``--write`` the tables replace the
section between the template markers of docs/quality.md.

    python3 scripts/eval_template_pairs.py --data ../shared/data --write docs/quality.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "scripts"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from eval_quality import minhash_score, minhash_sigs, pypi_default, reference_simhash  # noqa: E402

from fingerprint_indexer.documents import Document  # noqa: E402
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter  # noqa: E402
from fingerprint_indexer.fingerprint.hamming import hamming  # noqa: E402
from fingerprint_indexer.verification import check  # noqa: E402

LABELS = REPO / "docs" / "labels"
START, END = "<!-- template-pairs:start -->", "<!-- template-pairs:end -->"
K = 3


@dataclass(frozen=True)
class Pair:
    pair: str
    corpus: str
    a: str
    b: str
    duplicate: bool
    reason: str
    round: int = 1


#: What each round of ``scripts/build_template_pairs.py`` drew.
ROUNDS = {1: "flagged by our distance path, MinHash or PyPI simhash", 2: "our band candidates",
          3: "our near-duplicate decisions (fingerprint v4)",
          4: "decisions changed by dropping the date veto, and samples of v7 decisions",
          5: "zh_xwlb near duplicates of v7, every one read"}  # fmt: skip


def load_labels(lang: str) -> list[Pair]:
    with (LABELS / f"template_{lang}.jsonl").open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [Pair(r["pair"], r["corpus"], r["a"], r["b"], r["label"] == "duplicate", r["reason"],
                 int(r.get("round", 1))) for r in rows]  # fmt: skip


def load_docs(data: Path, pairs: Sequence[Pair]) -> dict[tuple[str, str], dict[str, Any]]:
    wanted: dict[str, set[str]] = {}
    for p in pairs:
        wanted.setdefault(p.corpus, set()).update((p.a, p.b))
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for corpus, ids in wanted.items():
        with gzip.open(data / f"{corpus}.jsonl.gz", "rt", encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                if str(d["id"]) in ids:
                    out[(corpus, str(d["id"]))] = d
    missing = {(p.corpus, x) for p in pairs for x in (p.a, p.b)} - out.keys()
    if missing:
        raise SystemExit(f"{len(missing)} labelled documents are not in the corpora: {sorted(missing)[:3]}")
    return out


def body(doc: dict[str, Any]) -> str:
    return str(doc.get("content") or doc.get("title") or "")


def ours(config: FingerprintConfig) -> Callable[[dict[str, dict[str, Any]]], Callable[[str, str], bool]]:
    def build(docs: dict[str, dict[str, Any]]) -> Callable[[str, str], bool]:
        fpr = Fingerprinter(config)
        # as `dedupe` reads them: title, body and publication day (``published_at`` or ``date``)
        docs_ = {k: Document.from_mapping({**d, "id": k, "content": body(d)}) for k, d in docs.items()}
        res = {k: fpr.fingerprint_document(doc) for k, doc in docs_.items()}
        ev = {k: r.evidence for k, r in res.items()}
        # as the pipeline decides: a degenerate text (no terms left: a page of code, a bare caption) is
        # never anyone's near-duplicate, only an exact copy
        return lambda a, b: not (res[a].degenerate or res[b].degenerate) and check(ev[a], ev[b], K).accepted

    return build


def minhash(threshold: float) -> Callable[[dict[str, dict[str, Any]]], Callable[[str, str], bool]]:
    def build(docs: dict[str, dict[str, Any]]) -> Callable[[str, str], bool]:
        sigs = minhash_sigs({k: {"content": body(d)} for k, d in docs.items()})
        return lambda a, b: minhash_score(sigs[a], sigs[b]) >= threshold

    return build


def simhash_at_k(fingerprint: Callable[[dict[str, dict[str, str]]], dict[str, int]]):  # type: ignore[no-untyped-def]
    def build(docs: dict[str, dict[str, Any]]) -> Callable[[str, str], bool]:
        fps = fingerprint({k: {"content": body(d)} for k, d in docs.items()})
        return lambda a, b: hamming(fps[a], fps[b]) <= K

    return build


def _reference(docs: dict[str, dict[str, str]]) -> dict[str, int]:
    return {k: reference_simhash(d["content"]) for k, d in docs.items()}


METHODS: dict[str, Callable[[dict[str, dict[str, Any]]], Callable[[str, str], bool]]] = {
    "ours:default": ours(FingerprintConfig()),
    "ours:no-facts": ours(FingerprintConfig(facts=False)),
    "minhash@0.5": minhash(0.5),
    "minhash@0.7": minhash(0.7),
    "minhash@0.8": minhash(0.8),
    "pypi-simhash": simhash_at_k(pypi_default),
    "reference": simhash_at_k(_reference),
}


def wilson_low(successes: int, n: int, z: float = 1.96) -> float:
    """Lower end of the Wilson score interval of a proportion."""
    if n == 0:
        return float("nan")
    p = successes / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - margin) / (1 + z * z / n)


def score(pairs: Sequence[Pair], said: Sequence[bool]) -> dict[str, Any]:
    tp = sum(p.duplicate and s for p, s in zip(pairs, said, strict=True))
    fp = sum(not p.duplicate and s for p, s in zip(pairs, said, strict=True))
    fn = sum(p.duplicate and not s for p, s in zip(pairs, said, strict=True))
    prec = tp / (tp + fp) if tp + fp else 1.0
    rec = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": prec, "recall": rec, "f1": f1,
            "precision_low": wilson_low(tp, tp + fp)}  # fmt: skip


def evaluate(data: Path, methods: Sequence[str]) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for lang in ("zh", "en"):
        pairs = load_labels(lang)
        raw = load_docs(data, pairs)
        docs = {f"{c}\x1f{i}": d for (c, i), d in raw.items()}
        res: dict[str, Any] = {"pairs": len(pairs), "duplicates": sum(p.duplicate for p in pairs),
                               "round_pairs": {n: sum(p.round == n for p in pairs)
                                               for n in sorted({p.round for p in pairs})},
                               "methods": {}}  # fmt: skip
        for name in methods:
            judge = METHODS[name](docs)
            said = [judge(f"{p.corpus}\x1f{p.a}", f"{p.corpus}\x1f{p.b}") for p in pairs]
            by_corpus = {c: score([p for p in pairs if p.corpus == c],
                                  [s for p, s in zip(pairs, said, strict=True) if p.corpus == c])
                         for c in sorted({p.corpus for p in pairs})}  # fmt: skip
            by_round = {n: score([p for p in pairs if p.round == n],
                                 [s for p, s in zip(pairs, said, strict=True) if p.round == n])
                        for n in sorted({p.round for p in pairs})}  # fmt: skip
            res["methods"][name] = {"all": score(pairs, said), "corpora": by_corpus, "rounds": by_round,
                                    "false_positives": [p.reason for p, s in zip(pairs, said, strict=True)
                                                        if s and not p.duplicate]}  # fmt: skip
        results[lang] = res
    return results


def fmt(x: float) -> str:
    return "-" if x != x else f"{x:.3f}"


def _cells(res: dict[str, Any], part: str, key: Any) -> str:
    """P / R / F1 of the three methods the breakdown tables show, for one corpus or round."""
    cells = []
    for name in ("ours:default", "ours:no-facts", "minhash@0.5"):
        if name in res["methods"]:
            s = res["methods"][name][part][key]
            cells.append(f"{fmt(s['precision'])} / {fmt(s['recall'])} / {fmt(s['f1'])}")
    return " | ".join(cells)


def report(results: dict[str, dict[str, Any]], command: str) -> str:
    out = [START, "", f"Produced by `{command}` (labels: `docs/labels/`, pairs drawn by "
           "`scripts/build_template_pairs.py`).", ""]  # fmt: skip
    for lang, res in results.items():
        out += [f"#### template_{lang}: {res['pairs']} pairs, {res['duplicates']} labelled duplicate", "",
                "| method | P | P low (95 %) | R | F1 | TP | FP | FN |", "|---|---|---|---|---|---|---|---|"]
        for name, m in res["methods"].items():
            a = m["all"]
            out.append(f"| {name} | {fmt(a['precision'])} | {fmt(a['precision_low'])} | {fmt(a['recall'])} | "
                       f"{fmt(a['f1'])} | {a['tp']} | {a['fp']} | {a['fn']} |")
        out += ["", "Per corpus (P / R / F1, `ours:default` | `ours:no-facts` | `minhash@0.5`):", "",
                "| corpus | ours:default | ours:no-facts | minhash@0.5 |", "|---|---|---|---|"]
        for c in next(iter(res["methods"].values()))["corpora"]:
            out.append(f"| {c} | " + _cells(res, "corpora", c) + " |")
        rounds = next(iter(res["methods"].values()))["rounds"]
        if len(rounds) > 1:
            out += ["", "Per round of drawing (P / R / F1, pairs):", "",
                    "| round | ours:default | ours:no-facts | minhash@0.5 |", "|---|---|---|---|"]
            for n in rounds:
                out.append(f"| {n}: {ROUNDS.get(n, '')} ({res['round_pairs'][n]} pairs) | "
                           + _cells(res, "rounds", n) + " |")
        fps = res["methods"].get("ours:default", {}).get("false_positives", [])
        if fps:
            out += ["", "Pairs `ours:default` still calls duplicate, as the reader described them:", ""]
            out += [f"- {r}" for r in fps]
        out.append("")
    out.append(END)
    return "\n".join(out)


def write_section(path: Path, section: str) -> None:
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        raise SystemExit(f"{path} has no {START} ... {END} section to replace")
    path.write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated, of: " + ", ".join(METHODS))
    ap.add_argument("--json", type=Path, help="also write the full results here")
    ap.add_argument("--write", type=Path, help="replace the template section of this Markdown file")
    args = ap.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        ap.error(f"unknown methods: {unknown}")
    results = evaluate(args.data, methods)
    given = argv if argv is not None else sys.argv[1:]
    command = "python3 scripts/eval_template_pairs.py " + " ".join(shlex.quote(a) for a in given)
    section = report(results, command.strip())
    print(section)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    if args.write:
        write_section(args.write, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
