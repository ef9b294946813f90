#!/usr/bin/env python3
"""Detection quality on labelled pairs: our pipeline under its options, side by side with the peers.

For each labelled set (``<name>.docs.jsonl`` + ``<name>.pairs.jsonl`` from ``build_labelled_sets.py``)
every method scores every labelled pair; a threshold sweep gives precision, recall and F1 per threshold,
and recall / false-positive rate per edit level. Methods:

- ``ours:*``: :class:`fingerprint_indexer.fingerprint.fingerprinter.Fingerprinter` pipelines (the shipped
  default, top_k and IDF variants, and the research variants: boilerplate-line removal, word-shingle
  features, number dropping, a second-stage sketch check on candidates);
- ``reference``: the seeds' approach reimplemented faithfully (``jieba.cut``, ``jieba.analyse.extract_tags``
  top-50 with weights, MD5-derived 64-bit term hashes, a per-bit Python loop);
- ``pypi-simhash`` (the PyPI ``simhash`` package's default character 4-gram features) and
  ``pypi-simhash-jieba`` (the same on jieba tokens);
- ``minhash-5gram``: datasketch MinHash (128 permutations) of character 5-grams, Jaccard threshold sweep.

Writes a Markdown report (default ``docs/quality.md``) with the tables and a PNG plot of precision and
recall against the threshold, and the command line that produced them.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import re
import shlex
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fingerprint_indexer.fingerprint.chunks import (  # noqa: E402
    MIN_CHUNK_TERMS,
    chunk_fingerprints,
    iter_sentences,
    weighted_simhash,
)
from fingerprint_indexer.fingerprint.hamming import hamming  # noqa: E402
from fingerprint_indexer.text.clean import clean  # noqa: E402
from fingerprint_indexer.text.tokenize import Tokenizer  # noqa: E402
from fingerprint_indexer.text.weights import IdfTable, fit_idf, jieba_idf, top_terms  # noqa: E402

HAMMING_THRESHOLDS = list(range(0, 17))
JACCARD_THRESHOLDS = [round(x, 2) for x in np.arange(0.95, 0.0, -0.05)]
POSITIVE_CORE = ("boilerplate", "light_edit", "exact", "same_title")


# --------------------------------------------------------------------------------------------------------
# Labelled data
# --------------------------------------------------------------------------------------------------------


@dataclass
class LabelledSet:
    name: str
    docs: dict[str, dict[str, str]]
    pairs: list[dict[str, Any]]


def load_set(folder: Path, name: str, limit: int | None = None) -> LabelledSet:
    docs = {}
    with (folder / f"{name}.docs.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            docs[d["id"]] = d
    with (folder / f"{name}.pairs.jsonl").open(encoding="utf-8") as fh:
        pairs = [json.loads(line) for line in fh]
    if limit is not None:
        pairs = pairs[:limit]
        used = {p["a"] for p in pairs} | {p["b"] for p in pairs}
        docs = {k: v for k, v in docs.items() if k in used}
    return LabelledSet(name, docs, pairs)


# --------------------------------------------------------------------------------------------------------
# Methods. Each turns the docs into per-doc signatures and scores a pair; ``higher_is_dup`` tells the
# direction of the threshold sweep (distances: lower means duplicate).
# --------------------------------------------------------------------------------------------------------


@dataclass
class Method:
    name: str
    signatures: Callable[[dict[str, dict[str, str]]], dict[str, Any]]
    score: Callable[[Any, Any], float]
    thresholds: list[float]
    higher_is_dup: bool = False
    default_threshold: float | None = None
    note: str = ""


def _body(doc: dict[str, str]) -> str:
    """The text a method sees: the body, or the title when the body is empty (as our pipeline does)."""
    return doc.get("content") or doc.get("title") or ""


# ---- the seeds' reference approach -------------------------------------------------------------------


def _md5_64(term: str) -> int:
    return int.from_bytes(hashlib.md5(term.encode("utf-8")).digest()[:8], "big")


def reference_simhash(text: str, top_k: int = 50) -> int:
    """jieba.cut -> extract_tags(top-50, withWeight) -> per-term MD5 64-bit hash -> per-bit vote loop."""
    import jieba
    import jieba.analyse

    seg = "".join(jieba.cut(text))
    tags = jieba.analyse.extract_tags(seg, topK=top_k, withWeight=True)
    vector = [0.0] * 64
    for term, weight in tags:
        h = _md5_64(term)
        for i in range(64):  # the per-bit loop of the reference implementation (a peer, not our code)
            if (h >> (63 - i)) & 1:
                vector[i] += weight
            else:
                vector[i] -= weight
    fp = 0
    for i, v in enumerate(vector):
        if v > 0:
            fp |= 1 << (63 - i)
    return fp


# ---- the PyPI simhash package ------------------------------------------------------------------------


def pypi_default(docs: dict[str, dict[str, str]]) -> dict[str, int]:
    from simhash import Simhash

    return {k: Simhash(_body(d)).value for k, d in docs.items()}


_PUNCT_SPACE = re.compile(r"^[\W_]+$")


def pypi_jieba(docs: dict[str, dict[str, str]]) -> dict[str, int]:
    import jieba
    from simhash import Simhash

    out = {}
    for k, d in docs.items():
        toks = [t for t in jieba.lcut(_body(d)) if t.strip() and not _PUNCT_SPACE.match(t)]
        out[k] = Simhash(toks).value
    return out


# ---- MinHash on character 5-grams --------------------------------------------------------------------

_WS = re.compile(r"\s+")


def char_shingles(text: str, n: int = 5) -> set[bytes]:
    t = _WS.sub("", text.lower())
    if len(t) < n:
        return {t.encode("utf-8")} if t else set()
    return {t[i : i + n].encode("utf-8") for i in range(len(t) - n + 1)}


def minhash_sigs(docs: dict[str, dict[str, str]], num_perm: int = 128) -> dict[str, Any]:
    from datasketch import MinHash

    out = {}
    for k, d in docs.items():
        m = MinHash(num_perm=num_perm, seed=1)
        sh = char_shingles(_body(d))
        if sh:
            m.update_batch(list(sh))
        out[k] = m
    return out


def minhash_score(a: Any, b: Any) -> float:
    return float(a.jaccard(b))


# ---- our pipeline and its research variants ----------------------------------------------------------


@dataclass(frozen=True)
class OursOptions:
    """One configuration of our pipeline as evaluated here."""

    top_k: int = 64
    idf: str = "jieba"  # "jieba" | "fit" (fitted on the set's own documents)
    boilerplate: bool = False
    shingle: int = 1  # 1 = words; 2 = words + word bigrams; -2 = word bigrams only
    drop_numbers: bool = False
    verify: float | None = None  # second stage: sketch similarity needed on top of the Hamming test
    chunks: int = 0  # > 0: also one SimHash per content-defined chunk of ~this many sentences (min distance)
    lead: int = 0  # > 0: also one SimHash of the first this many sentences (the article's lead)
    weight: str = "tf"  # "tf" (tf-idf), "log" ((1 + ln tf) * idf), "idf" (idf only) for the selected top-K

    def label(self) -> str:
        parts = [f"top{self.top_k}" if self.top_k else "all", f"idf={self.idf}"]
        if self.boilerplate:
            parts.append("strip")
        if self.shingle != 1:
            parts.append({2: "w+bigram", -2: "bigram"}[self.shingle])
        if self.drop_numbers:
            parts.append("nonum")
        if self.verify is not None:
            parts.append(f"verify>={self.verify}")
        if self.weight != "tf":
            parts.append(f"w={self.weight}")
        if self.chunks:
            parts.append(f"chunks{self.chunks}")
        if self.lead:
            parts.append(f"lead{self.lead}")
        return "ours:" + ",".join(parts)


_NUMERIC = re.compile(r"^[0-9.\-']+$")


class OursCache:
    """Cleaned text and token lists per doc, shared by all our variants on one set."""

    def __init__(self, docs: dict[str, dict[str, str]]) -> None:
        self.docs = docs
        self.tokenizer = Tokenizer()
        self._texts: dict[bool, dict[str, str]] = {}
        self._tokens: dict[bool, dict[str, list[str]]] = {}
        self._idf: dict[tuple[bool, int, bool], IdfTable] = {}

    def texts(self, strip: bool) -> dict[str, str]:
        if strip not in self._texts:
            base = {k: clean(_body(d)) for k, d in self.docs.items()} if not strip else None
            if strip:
                from fingerprint_indexer.text.boilerplate import strip_boilerplate

                base = {k: strip_boilerplate(t) for k, t in self.texts(False).items()}
            assert base is not None
            self._texts[strip] = base
        return self._texts[strip]

    def tokens(self, strip: bool) -> dict[str, list[str]]:
        if strip not in self._tokens:
            self._tokens[strip] = {k: list(self.tokenizer.tokens(t)) for k, t in self.texts(strip).items()}
        return self._tokens[strip]

    def features(self, opts: OursOptions) -> dict[str, Counter[str]]:
        out = {}
        for k, toks in self.tokens(opts.boilerplate).items():
            if opts.drop_numbers:
                toks = [t for t in toks if not _NUMERIC.match(t)]
            feats: list[str] = []
            if opts.shingle in (1, 2):
                feats.extend(toks)
            if opts.shingle in (2, -2):
                feats.extend(f"{a} {b}" for a, b in itertools.pairwise(toks))
            out[k] = Counter(feats)
        return out

    def idf(self, opts: OursOptions, feats: dict[str, Counter[str]]) -> IdfTable:
        if opts.idf == "jieba":
            return jieba_idf()
        key = (opts.boilerplate, opts.shingle, opts.drop_numbers)
        if key not in self._idf:
            self._idf[key] = fit_idf(c.keys() for c in feats.values())[0]
        return self._idf[key]


def ours_signatures(cache: OursCache, opts: OursOptions) -> dict[str, Any]:
    feats = cache.features(opts)
    idf = cache.idf(opts, feats)
    out: dict[str, Any] = {}
    sketches = None
    if opts.verify is not None:
        from fingerprint_indexer.fingerprint.sketch import sketch

        sketches = {k: sketch(t) for k, t in cache.texts(opts.boilerplate).items()}

    def weigh(counts: Counter[str] | dict[str, int]) -> list[tuple[str, float]]:
        terms = top_terms(counts, idf, opts.top_k or len(counts))
        if opts.weight == "log":
            return [(t, (1.0 + math.log(counts[t])) * idf.weight(t)) for t, _ in terms]
        if opts.weight == "sq":
            return [(t, counts[t] ** 2 * idf.weight(t)) for t, _ in terms]
        if opts.weight.startswith("p"):  # tf^p * idf: concentrates the vote on the article's main terms
            power = float(opts.weight[1:])
            return [(t, counts[t] ** power * idf.weight(t)) for t, _ in terms]
        if opts.weight == "tf2":
            kept = [(t, w) for t, w in terms if counts[t] >= 2]
            return kept if len(kept) >= 8 else terms
        if opts.weight == "idf":
            return [(t, idf.weight(t)) for t, _ in terms]
        return terms

    texts = cache.texts(opts.boilerplate)
    for k, counts in feats.items():
        fps = [weighted_simhash(weigh(counts))]
        if opts.chunks:
            fps += chunk_fingerprints(texts[k], cache.tokenizer.count, weigh, every=opts.chunks)
        if opts.lead:
            lead = cache.tokenizer.count(" ".join(itertools.islice(iter_sentences(texts[k]), opts.lead)))
            if len(lead) >= MIN_CHUNK_TERMS:
                fps.append(weighted_simhash(weigh(lead)))
        out[k] = (fps, sketches[k] if sketches is not None else None)
    return out


def product_signatures(docs: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The shipped default, exactly as `dedupe` computes it: Fingerprinter() over Document bodies, kept
    as the evidence the verification rule reads."""
    from fingerprint_indexer.documents import Document
    from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter

    fpr = Fingerprinter()
    out: dict[str, Any] = {}
    for k, d in docs.items():
        doc = Document(id=k, title=d.get("title") or "", content=_body(d))
        out[k] = fpr.fingerprint_document(doc).evidence
    return out


def product_score(a: Any, b: Any) -> float:
    """The shipped rule (:func:`fingerprint_indexer.verification.check`) as a distance to sweep: the smallest
    threshold of the sweep at which the rule accepts the pair (0 for one accepted through a shared sketch
    band, which any threshold accepts), else 99. The rule's similarity needs depend on the threshold, so
    each is asked rather than derived from one distance."""
    from fingerprint_indexer.verification import check

    return next((float(t) for t in HAMMING_THRESHOLDS if check(a, b, t).accepted), 99.0)


def ours_score(verify: float | None) -> Callable[[Any, Any], float]:
    def score(a: Any, b: Any) -> float:
        d = min(hamming(x, y) for x in a[0] for y in b[0])
        if verify is None:
            return float(d)
        from fingerprint_indexer.fingerprint.sketch import similarity

        return float(d) if similarity(a[1], b[1]) >= verify else 99.0

    return score


# --------------------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------------------


@dataclass
class Result:
    method: str
    set_name: str
    scores: np.ndarray
    labels: np.ndarray
    levels: list[str]
    thresholds: list[float]
    higher_is_dup: bool
    default_threshold: float | None
    seconds: float
    sweep: list[dict[str, Any]] = field(default_factory=list)

    def predict(self, t: float) -> np.ndarray:
        return self.scores >= t if self.higher_is_dup else self.scores <= t

    def at(self, t: float, only_levels: Sequence[str] | None = None) -> dict[str, Any]:
        pred = self.predict(t)
        mask = np.ones(len(self.labels), dtype=bool)
        if only_levels is not None:
            # A subset: the named positive levels plus every negative.
            mask = np.array(
                [(lvl in only_levels) or not lab for lvl, lab in zip(self.levels, self.labels, strict=True)]
            )
        y, p = self.labels[mask], pred[mask]
        tp = int(np.sum(y & p))
        fp = int(np.sum(~y & p))
        fn = int(np.sum(y & ~p))
        prec = tp / (tp + fp) if tp + fp else 1.0
        rec = tp / (tp + fn) if tp + fn else 1.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        per_level: dict[str, float] = {}
        for lvl in sorted(set(self.levels)):
            idx = np.array([x == lvl for x in self.levels])
            lab = self.labels[idx]
            # positives: recall; negatives: false-positive rate
            per_level[lvl] = float(np.mean(pred[idx])) if len(lab) else math.nan
        return {
            "threshold": t,
            "precision": prec,
            "recall": rec,
            "f1": f1,
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "levels": per_level,
        }

    def best(self, min_precision: float = 0.0, core: bool = False) -> dict[str, Any]:
        """Threshold of best F1 (on the core levels when ``core``), among those reaching ``min_precision``."""
        rows = [self.at(t, POSITIVE_CORE if core else None) | {"all": self.at(t)} for t in self.thresholds]
        ok = [r for r in rows if r["all"]["precision"] >= min_precision] or rows
        return max(ok, key=lambda r: (r["f1"], -abs(r["threshold"])))


def evaluate(ls: LabelledSet, method: Method) -> Result:
    t0 = time.perf_counter()
    used = {p["a"] for p in ls.pairs} | {p["b"] for p in ls.pairs}
    sigs = method.signatures({k: v for k, v in ls.docs.items() if k in used})
    scores = np.array([method.score(sigs[p["a"]], sigs[p["b"]]) for p in ls.pairs], dtype=float)
    labels = np.array([bool(p["label"]) for p in ls.pairs])
    return Result(
        method.name,
        ls.name,
        scores,
        labels,
        [p["level"] for p in ls.pairs],
        method.thresholds,
        method.higher_is_dup,
        method.default_threshold,
        time.perf_counter() - t0,
    )


def build_methods(
    ls: LabelledSet, variants: Iterable[OursOptions], peers: bool, k_default: int
) -> list[Method]:
    cache = OursCache(ls.docs)
    methods: list[Method] = [
        Method(
            PRODUCT,
            product_signatures,
            product_score,
            HAMMING_THRESHOLDS,
            default_threshold=k_default,
        )
    ]
    for opts in variants:
        methods.append(
            Method(
                opts.label(),
                lambda docs, o=opts: ours_signatures(cache, o),
                ours_score(opts.verify),
                HAMMING_THRESHOLDS,
                default_threshold=k_default,
            )
        )
    if peers:
        methods.append(
            Method(
                "reference",
                lambda docs: {k: reference_simhash(_body(d)) for k, d in docs.items()},
                lambda a, b: float(hamming(a, b)),
                HAMMING_THRESHOLDS,
                default_threshold=3,
            )
        )
        methods.append(
            Method(
                "pypi-simhash",
                pypi_default,
                lambda a, b: float(hamming(a, b)),
                HAMMING_THRESHOLDS,
                default_threshold=3,
            )
        )
        methods.append(
            Method(
                "pypi-simhash-jieba",
                pypi_jieba,
                lambda a, b: float(hamming(a, b)),
                HAMMING_THRESHOLDS,
                default_threshold=3,
            )
        )
        methods.append(
            Method(
                "minhash-5gram",
                minhash_sigs,
                minhash_score,
                JACCARD_THRESHOLDS,
                higher_is_dup=True,
                default_threshold=0.5,
            )
        )
    return methods


# --------------------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------------------


def fmt(x: float) -> str:
    return "-" if isinstance(x, float) and math.isnan(x) else f"{x:.3f}"


def level_cols(results: list[Result]) -> tuple[list[str], list[str]]:
    pos, neg = set(), set()
    for r in results:
        for lvl, lab in zip(r.levels, r.labels, strict=True):
            (pos if lab else neg).add(lvl)
    order = ["exact", "same_title", "boilerplate", "light_edit", "medium_edit", "excerpt"]
    return sorted(pos, key=lambda x: (order.index(x) if x in order else 99, x)), sorted(neg)


def table(results: list[Result], mode: str) -> list[str]:
    """mode: 'default' (each method at its default threshold) or 'best' (best F1 at precision >= 0.99)."""
    pos, neg = level_cols(results)
    head = [
        "method",
        "thr",
        "P",
        "R",
        "F1",
        "F1 core",
        *[f"R {x}" for x in pos],
        *[f"FP {x}" for x in neg],
        "s",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        if mode == "default":
            if r.default_threshold is None:
                continue
            t = r.default_threshold
        else:
            t = r.best(min_precision=0.99, core=True)["threshold"]
        a, core = r.at(t), r.at(t, POSITIVE_CORE)
        cells = [r.method, f"{t:g}", fmt(a["precision"]), fmt(a["recall"]), fmt(a["f1"]), fmt(core["f1"])]
        cells += [fmt(a["levels"][x]) if x in a["levels"] else "-" for x in pos]
        cells += [
            f"{a['levels'][x] * sum(1 for lv in r.levels if lv == x):.0f}" if x in a["levels"] else "-"
            for x in neg
        ]
        cells.append(f"{r.seconds:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def sweep_table(r: Result) -> list[str]:
    pos, _ = level_cols([r])
    head = ["thr", "P", "R", "F1", *[f"R {x}" for x in pos], "FP"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in r.thresholds:
        a = r.at(t)
        lines.append(
            "| "
            + " | ".join(
                [
                    f"{t:g}",
                    fmt(a["precision"]),
                    fmt(a["recall"]),
                    fmt(a["f1"]),
                    *[fmt(a["levels"][x]) for x in pos],
                    str(a["fp"]),
                ]
            )
            + " |"
        )
    return lines


def plot(all_results: dict[str, list[Result]], path: Path, focus: Sequence[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(all_results)
    fig, axes = plt.subplots(2, len(names), figsize=(4.2 * len(names), 7), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for col, set_name in enumerate(names):
        rs = all_results[set_name]
        ham = [r for r in rs if not r.higher_is_dup and r.method in focus]
        jac = [r for r in rs if r.higher_is_dup]
        ax = axes[0][col]
        for i, r in enumerate(ham):
            prec = [r.at(t)["precision"] for t in r.thresholds]
            rec = [r.at(t)["recall"] for t in r.thresholds]
            ax.plot(r.thresholds, prec, "-", color=colors[i % len(colors)], label=f"{r.method} P")
            ax.plot(r.thresholds, rec, "--", color=colors[i % len(colors)], label=f"{r.method} R")
        ax.set_title(set_name)
        ax.set_xlabel("Hamming threshold (duplicate if distance <= t)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax2 = axes[1][col]
        for i, r in enumerate(jac):
            ax2.plot(
                r.thresholds,
                [r.at(t)["precision"] for t in r.thresholds],
                "-",
                color=colors[i],
                label=f"{r.method} P",
            )
            ax2.plot(
                r.thresholds,
                [r.at(t)["recall"] for t in r.thresholds],
                "--",
                color=colors[i],
                label=f"{r.method} R",
            )
        ax2.set_xlabel("Jaccard threshold (duplicate if estimate >= t)")
        ax2.set_ylim(0, 1.02)
        ax2.invert_xaxis()
        ax2.grid(alpha=0.3)
    axes[0][0].set_ylabel("precision (solid) / recall (dashed)")
    axes[1][0].set_ylabel("precision (solid) / recall (dashed)")
    axes[0][-1].legend(fontsize=6, loc="lower right")
    axes[1][-1].legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse_variant(spec: str) -> OursOptions:
    """``top_k=64,idf=fit,boilerplate=1,shingle=2,drop_numbers=1,verify=0.5`` -> options."""
    kw: dict[str, Any] = {}
    for item in filter(None, spec.split(",")):
        key, _, value = item.partition("=")
        if key in ("top_k", "shingle", "chunks", "lead"):
            kw[key] = int(value)
        elif key in ("boilerplate", "drop_numbers"):
            kw[key] = value not in ("0", "false", "")
        elif key == "verify":
            kw[key] = float(value)
        elif key in ("idf", "weight"):
            kw[key] = value
        else:
            raise SystemExit(f"unknown variant option {key!r}")
    return OursOptions(**kw)


CURRENT = "top_k=64"
RECOMMENDED = "top_k=0,boilerplate=1,weight=p3,chunks=4,lead=3,verify=0.3"
PRODUCT = "ours:default"  # the shipped FingerprintConfig() with the pipeline's verification rule
DEFAULT_VARIANTS = [
    CURRENT,
    RECOMMENDED,
    "top_k=64,idf=fit",
    "top_k=64,boilerplate=1",
    "top_k=0,boilerplate=1",
    "top_k=0,boilerplate=1,weight=p3,verify=0.3",
    "top_k=0,boilerplate=1,weight=p3,chunks=4",
]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument(
        "--labelled", default="out/labelled", help="folder with <set>.docs.jsonl / <set>.pairs.jsonl"
    )
    ap.add_argument("--sets", default="zh_natural,zh_reposts,en_natural,en_reposts")
    ap.add_argument(
        "--variant",
        action="append",
        default=None,
        help="an ours variant, e.g. 'top_k=64,idf=fit,boilerplate=1' (repeatable)",
    )
    ap.add_argument("--no-peers", action="store_true", help="skip the reference and peer methods")
    ap.add_argument(
        "--k", type=int, default=3, help="the default Hamming threshold reported for our pipeline"
    )
    ap.add_argument("--limit", type=int, default=None, help="evaluate only the first N pairs of each set")
    ap.add_argument("--report", default="docs/quality.md")
    ap.add_argument("--plot", default="docs/quality_pr.png")
    ap.add_argument("--json", default=None, help="also write all sweeps as JSON here")
    args = ap.parse_args(list(argv) if argv is not None else None)

    variants = [parse_variant(v) for v in (args.variant or DEFAULT_VARIANTS)]
    folder = Path(args.labelled)
    all_results: dict[str, list[Result]] = {}
    aris: dict[str, tuple[float, int]] = {}
    for name in args.sets.split(","):
        ls = load_set(folder, name, args.limit)
        results = []
        for m in build_methods(ls, variants, not args.no_peers, args.k):
            r = evaluate(ls, m)
            results.append(r)
            d = r.at(r.default_threshold) if r.default_threshold is not None else {}
            print(
                f"{name:12s} {m.name:48s} P={d.get('precision', 0):.3f} R={d.get('recall', 0):.3f} "
                f"F1={d.get('f1', 0):.3f} ({r.seconds:.1f}s)",
                file=sys.stderr,
            )
        all_results[name] = results
        aris[name] = dedupe_clusters_ari(ls)
        ari, n_docs = aris[name]
        print(f"{name:12s} dedupe clusters ARI={ari:.3f} over {n_docs} docs", file=sys.stderr)

    command = "python scripts/eval_quality.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    focus = [PRODUCT, *(v.label() for v in variants[:2])]
    write_report(all_results, Path(args.report), Path(args.plot), command, focus, aris)
    if args.json:
        dump = {s: {r.method: [r.at(t) for t in r.thresholds] for r in rs} for s, rs in all_results.items()}
        Path(args.json).write_text(json.dumps(dump, indent=1), encoding="utf-8")
    return 0


def adjusted_rand_index(truth: Sequence[int], pred: Sequence[int]) -> float:
    """Hubert-Arabie adjusted Rand index of two labelings of the same items."""
    from math import comb

    pairs: Counter[tuple[int, int]] = Counter(zip(truth, pred, strict=True))
    sum_ij = sum(comb(n, 2) for n in pairs.values())
    sum_a = sum(comb(n, 2) for n in Counter(truth).values())
    sum_b = sum(comb(n, 2) for n in Counter(pred).values())
    total = comb(len(truth), 2)
    expected = sum_a * sum_b / total if total else 0.0
    top = (sum_a + sum_b) / 2
    return 1.0 if top == expected else (sum_ij - expected) / (top - expected)


def dedupe_clusters_ari(ls: LabelledSet) -> tuple[float, int]:
    """ARI of the ``dedupe`` pipeline's clusters (default settings, fresh store) against the labels.

    Truth: connected components of the positive pairs and of shared ``story`` ids (the real article a
    generated document was made from); every other labelled document alone.
    """
    import tempfile

    from fingerprint_indexer.documents import Document
    from fingerprint_indexer.pipeline import Pipeline

    used = sorted({p["a"] for p in ls.pairs} | {p["b"] for p in ls.pairs})
    parent = {d: d for d in used}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in ls.pairs:
        if p["label"] == 1:
            parent[find(p["a"])] = find(p["b"])
    stories: dict[str, str] = {}
    for d in used:
        story = ls.docs[d].get("story")
        if story is not None:
            parent[find(d)] = find(stories.setdefault(story, d))
    with tempfile.TemporaryDirectory() as tmp, Pipeline(tmp) as pipe:
        docs = [Document(id=d, title=ls.docs[d].get("title") or "", content=_body(ls.docs[d])) for d in used]
        clusters = {dec.id: dec.cluster_id for dec in pipe.process_many(docs)}
    roots = {r: i for i, r in enumerate(sorted({find(d) for d in used}))}
    ids = {c: i for i, c in enumerate(sorted(set(clusters.values())))}
    return adjusted_rand_index([roots[find(d)] for d in used], [ids[clusters[d]] for d in used]), len(used)


GENERATED = "<!-- everything below is generated by scripts/eval_quality.py -->"


def write_report(
    all_results: dict[str, list[Result]],
    report: Path,
    png: Path,
    command: str,
    focus_methods: Sequence[str],
    aris: dict[str, tuple[float, int]] | None = None,
) -> None:
    """Write the tables and plot; text above the ``GENERATED`` marker of an existing report is kept."""
    focus = [*focus_methods, "reference", "pypi-simhash", "pypi-simhash-jieba"]
    plot(all_results, png, focus)
    keep = ""
    if report.is_file():
        old = report.read_text(encoding="utf-8")
        if GENERATED in old:
            keep = old.split(GENERATED, 1)[0]
    out = [
        GENERATED,
        "",
        f"Produced by `{command}` on the sets written by `python scripts/build_labelled_sets.py`.",
        "",
        "Columns: P/R/F1 over all labelled pairs of the set; *F1 core* counts only the positives of the "
        "levels the target names (exact, same_title, boilerplate, light_edit) against all negatives; "
        "*R level* is the recall on that level's positives; *FP level* the number of that level's "
        "negatives wrongly reported as duplicates; *s* the seconds the method took on the set.",
        "",
        f"![precision and recall against the threshold]({png.name})",
        "",
    ]
    for set_name, rs in all_results.items():
        out += [
            f"### {set_name}",
            "",
            "At each method's default threshold (SimHash family: Hamming <= 3; MinHash: Jaccard >= 0.5):",
            "",
        ]
        out += table(rs, "default")
        if aris and set_name in aris:
            ari, n = aris[set_name]
            out += ["", f"Clusters of the `dedupe` pipeline at default settings against the labelled groups "
                        f"(connected components of positive pairs and of documents made from one article) "
                        f"over {n} documents: adjusted Rand index "
                        f"**{ari:.3f}**."]
        out += ["", "At each method's best threshold for core F1 among those with precision >= 0.99:", ""]
        out += table(rs, "best")
        for name in focus_methods:
            r = next((r for r in rs if r.method == name), None)
            if r is not None:
                out += ["", f"Threshold sweep of `{name}`:", ""]
                out += sweep_table(r)
        out.append("")
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(keep + "\n".join(out) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
