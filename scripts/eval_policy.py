#!/usr/bin/env python3
"""The verification policy judged where its variables vary: by corpus (held out), by delay, beside peers.

Every labelled pair the project has is scored by the shipped pipeline under a
:class:`~fingerprint_indexer.verification.VerifyPolicy` (an exact copy by content digest first, as the
engine decides; a degenerate text is nobody's near-duplicate; then
:func:`fingerprint_indexer.verification.check` at k = 3):

- the hand-labelled template pairs of ``docs/labels/`` (texts read from ``../shared/data``, with their
  real publication days: ``zh_xwlb``, ``en_reuters``; ``zh_news``, ``zh_toutiao_titles`` and ``en_bbc``
  have none);
- the generated sets of ``scripts/build_labelled_sets.py``: the natural sets and the *dated* repost sets
  (reposts published 0-60 days after their original, negatives at any distance).

It reports:

1. **Leave one corpus out.** Each pair belongs to the corpus its texts come from (the generated sets to
   ``zh_news`` / ``en_bbc``, their sources). For each corpus, the settings of a small grid of the
   policy's time and edit thresholds are chosen on the *other* corpora (the highest recall whose pooled
   template precision is at least 0.95), then scored on the held-out one beside the shipped default.
2. **Recall by delay**: the dated repost sets and the real re-sends of ``en_reuters`` (labelled
   duplicates published 1-3 days apart), per delay bucket, for the default policy and for the peers
   (datasketch MinHash at Jaccard 0.5 and 0.8, the PyPI ``simhash`` package at Hamming 3, the seeds'
   reference at Hamming 3), which do not read time at all.
3. **Each rule's variable**: what switching the time rule or the edit allowance off does, per corpus.

With ``--write docs/quality.md`` the section between the policy markers is replaced.

    python3 scripts/build_labelled_sets.py            # out/labelled, incl. the dated repost sets
    python3 scripts/eval_policy.py --data ../shared/data --write docs/quality.md
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import shlex
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "scripts"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from eval_quality import minhash_score, minhash_sigs, pypi_default, reference_simhash  # noqa: E402
from eval_template_pairs import load_docs, load_labels, wilson_low  # noqa: E402

from fingerprint_indexer.documents import Document  # noqa: E402
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, FingerprintResult  # noqa: E402
from fingerprint_indexer.fingerprint.hamming import hamming  # noqa: E402
from fingerprint_indexer.verification import DEFAULT_POLICY, VerifyPolicy, check  # noqa: E402
from fingerprint_indexer.verification.compare import days_apart  # noqa: E402

START, END = "<!-- policy:start -->", "<!-- policy:end -->"
K = 3
MIN_TEMPLATE_PRECISION = 0.95
#: Delay buckets of the report (days): same day, a re-run, days, weeks, months.
BUCKETS = ((0, 0), (1, 1), (2, 3), (5, 9), (14, 20), (30, 45), (60, 60))
#: The grid searched when a corpus is held out: the thresholds this policy added (time and edits).
GRID = {
    "stale_edit_share": (0.0, 0.05, 0.15),
    "edits_forgive_dates": (False, True),
    "stale_band_similarity": (0.5, 0.8, 0.95),
    "stale_short_band_similarity": (0.65, 0.8, 0.95),
    "stale_short_similarity": (0.3, 0.6, 0.95),
    "stale_figures_for_correction": (3, 30),
    "stale_new_fact_share": (0.05, 0.1, 0.2, 1.0),
}
#: When settings tie on recall to this many decimals, the stricter wins (higher bars, smaller allowance):
#: where the data cannot tell, precision first.
RECALL_DECIMALS = 3


@dataclass(frozen=True)
class Pair:
    corpus: str  # the corpus its texts come from
    source: str  # template | natural | reposts_dated
    a: str
    b: str
    duplicate: bool
    level: str
    days: int | None


@dataclass
class Corpus:
    """Every labelled pair with the fingerprint results of its documents."""

    pairs: list[Pair]
    results: dict[str, FingerprintResult]
    texts: dict[str, str]


def _document(doc_id: str, d: dict[str, Any]) -> Document:
    return Document.from_mapping({**d, "id": doc_id, "content": d.get("content") or d.get("title") or ""})


def load(data: Path, labelled: Path) -> Corpus:
    fpr = Fingerprinter()
    pairs: list[Pair] = []
    docs: dict[str, dict[str, Any]] = {}
    for lang in ("zh", "en"):
        labels = load_labels(lang)
        for (corpus, doc_id), d in load_docs(data, labels).items():
            docs[f"{corpus}:{doc_id}"] = d
        pairs += [Pair(p.corpus, "template", f"{p.corpus}:{p.a}", f"{p.corpus}:{p.b}", p.duplicate,
                       "duplicate" if p.duplicate else "distinct", None) for p in labels]  # fmt: skip
    for name, corpus in (("zh_natural", "zh_news"), ("en_natural", "en_bbc"),
                         ("zh_reposts_dated", "zh_news"), ("en_reposts_dated", "en_bbc")):  # fmt: skip
        folder = labelled / f"{name}.docs.jsonl"
        if not folder.exists():
            raise SystemExit(f"{folder} is missing: run python3 scripts/build_labelled_sets.py first")
        with folder.open(encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                docs[f"{name}:{d['id']}"] = d
        with (labelled / f"{name}.pairs.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                p = json.loads(line)
                pairs.append(Pair(corpus, name.split("_", 1)[1], f"{name}:{p['a']}", f"{name}:{p['b']}",
                                  bool(p["label"]), p["level"], p.get("delay")))  # fmt: skip
    results = {k: fpr.fingerprint_document(_document(k, d)) for k, d in docs.items()}
    texts = {k: str(d.get("content") or d.get("title") or "") for k, d in docs.items()}
    # the template pairs' days are the corpora's own
    pairs = [p if p.days is not None or p.source != "template"
             else dataclasses.replace(p, days=_days(results[p.a], results[p.b])) for p in pairs]  # fmt: skip
    return Corpus(pairs, results, texts)


def _days(a: FingerprintResult, b: FingerprintResult) -> int | None:
    apart = days_apart(a.evidence.facts, b.evidence.facts)
    return apart[0] if apart is not None else None


def judge(c: Corpus, policy: VerifyPolicy) -> list[bool]:
    """The engine's decision for each pair: exact copy, else (not degenerate) the verification rule."""
    out = []
    for p in c.pairs:
        ra, rb = c.results[p.a], c.results[p.b]
        if ra.content_digest == rb.content_digest:
            out.append(True)
        elif ra.degenerate or rb.degenerate:
            out.append(False)
        else:
            out.append(check(ra.evidence, rb.evidence, K, policy).accepted)
    return out


def counts(pairs: Sequence[Pair], said: Sequence[bool]) -> Counter[str]:
    c: Counter[str] = Counter()
    for p, s in zip(pairs, said, strict=True):
        c["tp" if p.duplicate and s else "fp" if s else "fn" if p.duplicate else "tn"] += 1
    return c


def prf(c: Counter[str]) -> dict[str, float]:
    tp, fp, fn = c["tp"], c["fp"], c["fn"]
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"p": p, "r": r, "f1": 2 * p * r / (p + r) if p + r else 0.0, "p_low": wilson_low(tp, tp + fp),
            "tp": tp, "fp": fp, "fn": fn}  # fmt: skip


def grid_policies() -> list[tuple[dict[str, float], VerifyPolicy]]:
    out = []
    for values in itertools.product(*GRID.values()):
        setting = dict(zip(GRID, values, strict=True))
        kw: dict[str, Any] = dict(setting)
        if kw["stale_figures_for_correction"] <= DEFAULT_POLICY.min_figures_for_correction:  # no time term
            kw["stale_facts_for_occurrence_correction"] = DEFAULT_POLICY.min_facts_for_occurrence_correction
        out.append((setting, VerifyPolicy(name="grid", **kw)))
    return out


def by_group(c: Corpus, said: Sequence[bool]) -> dict[tuple[str, str], Counter[str]]:
    """Counts per (corpus, template | generated)."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, p in enumerate(c.pairs):
        groups[(p.corpus, "template" if p.source == "template" else "generated")].append(i)
    return {g: counts([c.pairs[i] for i in idx], [said[i] for i in idx]) for g, idx in groups.items()}


def strictness(setting: dict[str, Any]) -> float:
    """Higher for higher time bars and a smaller edit allowance."""
    bars = setting["stale_short_band_similarity"] + setting["stale_short_similarity"]
    bars += setting["stale_band_similarity"]
    allowance = setting["stale_edit_share"] - setting["stale_figures_for_correction"] / 100
    allowance += setting["stale_new_fact_share"]
    return bars - allowance - 0.5 * setting["edits_forgive_dates"]


def choose(table: dict[int, dict[tuple[str, str], Counter[str]]], corpora: Iterable[str],
           grid: Sequence[tuple[dict[str, Any], VerifyPolicy]]) -> int:  # fmt: skip
    """The grid setting of highest pooled recall on ``corpora`` whose template precision is at least
    :data:`MIN_TEMPLATE_PRECISION` in each language (ties to :data:`RECALL_DECIMALS`: the stricter
    setting)."""
    keep = set(corpora)
    best, best_key = -1, (-1.0, -1.0, -1e9)
    for i, groups in table.items():
        tpl: dict[str, Counter[str]] = defaultdict(Counter)
        allc: Counter[str] = Counter()
        for (corpus, kind), c in groups.items():
            if corpus in keep:
                allc += c
                if kind == "template":
                    tpl[corpus[:2]] += c  # each language's template pairs: zh, en
        precision = min(prf(c)["p"] for c in tpl.values())
        ok = precision >= MIN_TEMPLATE_PRECISION
        key = (float(ok), round(prf(allc)["r"] if ok else precision, RECALL_DECIMALS), strictness(grid[i][0]))
        if key > best_key:
            best, best_key = i, key
    return best


def bucket(days: int | None) -> str:
    if days is None:
        return "undated"
    for lo, hi in BUCKETS:
        if lo <= days <= hi:
            return f"{lo}" if lo == hi else f"{lo}-{hi}"
    return f">{BUCKETS[-1][1]}" if days > BUCKETS[-1][1] else "other"


def peers(c: Corpus, pairs: Sequence[Pair]) -> dict[str, list[bool]]:
    """The peers' decisions on the same pairs (they read no days)."""
    ids = sorted({x for p in pairs for x in (p.a, p.b)})
    docs = {k: {"content": c.texts[k]} for k in ids}
    mh = minhash_sigs(docs)
    pypi = pypi_default(docs)
    ref = {k: reference_simhash(d["content"]) for k, d in docs.items()}
    return {
        "minhash@0.5": [minhash_score(mh[p.a], mh[p.b]) >= 0.5 for p in pairs],
        "minhash@0.8": [minhash_score(mh[p.a], mh[p.b]) >= 0.8 for p in pairs],
        "pypi-simhash": [hamming(pypi[p.a], pypi[p.b]) <= K for p in pairs],
        "reference": [hamming(ref[p.a], ref[p.b]) <= K for p in pairs],
    }


def _level_recall(c: Corpus, idx: Sequence[int], said: Sequence[bool], level: str) -> float:
    here = [i for i in idx if c.pairs[i].level == level]
    return prf(counts([c.pairs[i] for i in here], [said[i] for i in here]))["r"]


def fmt(x: float) -> str:
    return "-" if x != x else f"{x:.3f}"


def _prf_cell(c: Counter[str]) -> str:
    m = prf(c)
    return f"{fmt(m['p'])} / {fmt(m['r'])} / {fmt(m['f1'])}"


def report(c: Corpus, command: str, with_peers: bool) -> str:
    started = time.perf_counter()
    lines = [f"Produced by `{command}` (labels: `docs/labels/`; generated sets: "
             "`python3 scripts/build_labelled_sets.py`). Policy: "
             f"`{DEFAULT_POLICY.tag}`; k = {K}.", ""]  # fmt: skip
    default_said = judge(c, DEFAULT_POLICY)

    # 1. leave one corpus out
    grid = grid_policies()
    table = {i: by_group(c, judge(c, pol)) for i, (_, pol) in enumerate(grid)}
    corpora = sorted({p.corpus for p in c.pairs})
    default_groups = by_group(c, default_said)
    lines += ["#### Leave one corpus out", "",
              f"The grid ({', '.join(f'`{k}` {list(v)}' for k, v in GRID.items())}; {len(grid)} settings) "
              "is searched on the other corpora for the highest recall with template precision in each "
              "language >= "
              f"{MIN_TEMPLATE_PRECISION}; the held-out corpus is then scored with that setting and with the "
              "shipped default. P / R / F1 of its hand-labelled template pairs, and of its generated pairs "
              "(natural and dated repost sets) where it has any.", "",
              "| held-out corpus | setting chosen on the others | held-out template | default template | "
              "held-out generated | default generated |", "|---|---|---|---|---|---|"]  # fmt: skip
    for held in corpora:
        i = choose(table, [x for x in corpora if x != held], grid)
        setting = ", ".join(f"{k}={v}" for k, v in grid[i][0].items())
        cells = []
        for kind in ("template", "generated"):
            got = table[i].get((held, kind))
            ref = default_groups.get((held, kind))
            cells += [_prf_cell(got) if got else "-", _prf_cell(ref) if ref else "-"]
        lines.append(f"| {held} | {setting} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} |")
    i_all = choose(table, corpora, grid)
    lines += ["", "Chosen on all corpora: " + ", ".join(f"`{k}={v}`" for k, v in grid[i_all][0].items())
              + ".", ""]  # fmt: skip

    # 2. the whole picture under the default, per corpus and kind
    lines += ["#### The shipped policy, per corpus", "",
              "| corpus | pairs | P | P low (95 %) | R | F1 | TP | FP | FN |",
              "|---|---|---|---|---|---|---|---|---|"]
    for (corpus, kind), cnt in sorted(default_groups.items()):
        m = prf(cnt)
        lines.append(f"| {corpus} ({kind}) | {sum(cnt.values())} | {fmt(m['p'])} | {fmt(m['p_low'])} | "
                     f"{fmt(m['r'])} | {fmt(m['f1'])} | {m['tp']} | {m['fp']} | {m['fn']} |")
    for lang in ("zh", "en"):
        tpl = [i for i, p in enumerate(c.pairs) if p.source == "template" and p.corpus.startswith(lang)]
        m = prf(counts([c.pairs[i] for i in tpl], [default_said[i] for i in tpl]))
        lines.append(f"| **template_{lang} (all)** | {len(tpl)} | {fmt(m['p'])} | {fmt(m['p_low'])} | "
                     f"{fmt(m['r'])} | {fmt(m['f1'])} | {m['tp']} | {m['fp']} | {m['fn']} |")
    # the same repost pairs as if no day were given (time then plays no part): the undated repost sets
    undated_said = judge(c, dataclasses.replace(DEFAULT_POLICY, name="undated", time_grace_days=10**6,
                                                time_horizon_days=10**6 + 1))  # fmt: skip
    rows = (("natural", default_said, "natural"), ("reposts_dated", default_said, "reposts_dated"),
            ("reposts_dated", undated_said, "reposts (days not given)"))
    for src, said, label in rows:
        for lang, corpus in (("zh", "zh_news"), ("en", "en_bbc")):
            idx = [i for i, p in enumerate(c.pairs) if p.source == src and p.corpus == corpus]
            levels = sorted({c.pairs[i].level for i in idx if c.pairs[i].duplicate})
            m = prf(counts([c.pairs[i] for i in idx], [said[i] for i in idx]))
            per = ", ".join(f"{lv} {fmt(_level_recall(c, idx, said, lv))}" for lv in levels)
            lines.append(f"| {lang}_{label} | {len(idx)} | {fmt(m['p'])} | {fmt(m['p_low'])} | "
                         f"{fmt(m['r'])} | {fmt(m['f1'])} | {m['tp']} | {m['fp']} | {m['fn']} |")
            lines.append(f"| &nbsp;&nbsp;recall by level | | | | {per} | | | | |")
    lines.append("")

    # 3. recall by delay, ours and peers
    dated = [i for i, p in enumerate(c.pairs) if p.duplicate and p.days is not None
             and (p.source == "reposts_dated" or p.corpus == "en_reuters")]  # fmt: skip
    sets = {"zh_reposts_dated": [i for i in dated if c.pairs[i].corpus == "zh_news"],
            "en_reposts_dated": [i for i in dated if c.pairs[i].corpus == "en_bbc"],
            "en_reuters re-sends (real)": [i for i in dated if c.pairs[i].corpus == "en_reuters"]}
    methods: dict[str, list[bool]] = {"ours": default_said}
    if with_peers:
        sub = [c.pairs[i] for i in dated]
        for name, said in peers(c, sub).items():
            full = [False] * len(c.pairs)
            for i, s in zip(dated, said, strict=True):
                full[i] = s
            methods[name] = full
    names = [f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in BUCKETS]
    lines += ["#### Recall by delay", "",
              "Share of the duplicates found, by days between the two publications (pairs per bucket in "
              "brackets). The peers read no days: their differences across buckets are the texts'.", "",
              "| set | method | " + " | ".join(f"{n} d" for n in names) + " | 5-60 d / same day |",
              "|---|---|" + "---|" * (len(names) + 1)]  # fmt: skip
    for set_name, idx in sets.items():
        for method, said in methods.items():
            cells, same, later = [], None, Counter()
            for n in names:
                here = [i for i in idx if bucket(c.pairs[i].days) == n]
                found = sum(said[i] for i in here)
                cells.append(f"{found / len(here):.3f} ({len(here)})" if here else "-")
                if n == "0" and here:
                    same = found / len(here)
                if here and c.pairs[here[0]].days is not None and c.pairs[here[0]].days >= 5:
                    later["found"] += found
                    later["n"] += len(here)
            ratio = (later["found"] / later["n"]) / same if same and later["n"] else float("nan")
            lines.append(f"| {set_name} | {method} | " + " | ".join(cells) + f" | {fmt(ratio)} |")
    negs = [i for i, p in enumerate(c.pairs) if not p.duplicate and p.source == "reposts_dated"]
    fp = sum(default_said[i] for i in negs)
    lines += ["", f"Negatives of the dated sets called duplicates by ours: {fp} of {len(negs)}.", ""]

    # 4. each rule's variable: switch it off
    variants = {
        "shipped": DEFAULT_POLICY,
        "no time rule (stale = base)": dataclasses.replace(
            DEFAULT_POLICY, name="no-time", stale_band_similarity=DEFAULT_POLICY.min_band_similarity,
            stale_short_band_similarity=DEFAULT_POLICY.min_short_band_similarity,
            stale_short_similarity=DEFAULT_POLICY.min_similarity,
            stale_passage_similarity=DEFAULT_POLICY.min_passage_similarity,
            stale_edit_share=DEFAULT_POLICY.max_edit_share, stale_new_fact_share=1.0),
        "no new-facts rule": dataclasses.replace(DEFAULT_POLICY, name="no-new-facts",
                                                 stale_new_fact_share=1.0),
        "no edit allowance": dataclasses.replace(DEFAULT_POLICY, name="no-edits", max_edit_share=0.0,
                                                 stale_edit_share=0.0),
    }  # fmt: skip
    lines += ["#### What each rule does where its variable varies", "",
              "The time rule keys on days apart (dated pairs only), the edit allowance on length and "
              "standing facts (texts of more than one passage only). P / R / F1 per corpus and kind:", "",
              "| corpus | " + " | ".join(variants) + " |", "|---|" + "---|" * len(variants)]
    judged = {n: by_group(c, judge(c, pol)) for n, pol in variants.items()}
    for g in sorted(default_groups):
        lines.append(f"| {g[0]} ({g[1]}) | " + " | ".join(_prf_cell(judged[n][g]) for n in variants) + " |")
    lines += ["", f"({time.perf_counter() - started:.0f} s)"]
    return "\n".join(lines) + "\n"


def write_section(path: Path, section: str) -> None:
    text = path.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise SystemExit(f"{path} has no {START} ... {END} markers")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{START}\n\n{section}\n{END}{tail}", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--data", default="../shared/data", help="folder of the real corpora")
    ap.add_argument("--labelled", default="out/labelled", help="output of build_labelled_sets.py")
    ap.add_argument("--no-peers", action="store_true", help="leave out the peers' recall by delay")
    ap.add_argument("--write", default=None, help="replace the policy section of this Markdown file")
    args = ap.parse_args(list(argv) if argv is not None else None)
    c = load(Path(args.data), Path(args.labelled))
    command = "python3 scripts/eval_policy.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    section = report(c, command, not args.no_peers)
    if args.write:
        write_section(Path(args.write), section)
    else:
        print(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

