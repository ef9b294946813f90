#!/usr/bin/env python3
"""Candidate pairs of real news that near-duplicate detectors flag, sampled for labelling by hand.

The labelled sets of ``build_labelled_sets.py`` are generated from real articles by our own edits, so
they share our blind spots: template news (daily bulletins, earnings tables, recurring meetings) that
differs only in its facts is not in them. This builder takes the pairs that the systems actually flag on
the real corpora of ``../shared/data`` and samples them, deterministically, for reading:

- ``ours``: any document / lead / chunk fingerprint pair within Hamming 3 (the shipped fingerprinter)
  whose sketch similarity is at least 0.3: the candidate set of the shipped detector before any fact
  check (so the pairs a stricter verification rejects are in it too);
- ``minhash``: exact Jaccard of character 5-gram sets >= 0.5 (candidates from datasketch's LSH);
- ``pypi``: the PyPI ``simhash`` package's default fingerprint within Hamming 3.

A second round (``--round 2``) draws the pairs that the shipped detector's other candidate path finds,
which the first round could not see:

- ``band``: documents that share a sketch band key (MinHash LSH; a band held by more than 64 documents is
  a stock phrase and passed over, as the stores do), whose fingerprints all lie farther than K apart and
  whose sketches agree on at least 0.5 (the candidates a band alone brings in, before any fact check).

A third round (``--round 3``) draws from what the detector decides, so that the precision of its
decisions is read directly: ``decided``: the (document, ``duplicate_of``) pairs of the
``near_duplicate`` decisions of the default embedded ``dedupe`` of each corpus.

Pairs already labelled (``docs/labels/``) are left out of rounds 2 and 3.

Pairs whose normalised texts are identical (exact duplicates) are left out: they are not in question.
Each corpus has a quota; the pairs are drawn so that every system's flagged pairs are represented
(round robin over the systems, a seeded shuffle within each). Output (``--out``): one JSON line per pair
with the two ids, the corpus and which systems flag it. No text is written: labels live in
``docs/labels/`` as ids, label and reason, and ``scripts/eval_template_pairs.py`` reads the texts from
the corpora in place.

    python3 scripts/build_template_pairs.py --data ../shared/data --out pairs.jsonl
    python3 scripts/build_template_pairs.py --data ../shared/data --round 2 --out band_pairs.jsonl
    python3 scripts/build_template_pairs.py --data ../shared/data --round 3 --out decided_pairs.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fingerprint_indexer.documents import Document  # noqa: E402
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter  # noqa: E402
from fingerprint_indexer.fingerprint.sketch import from_bytes, similarity  # noqa: E402
from fingerprint_indexer.index.pairs import near_pairs  # noqa: E402

SEED = 20261123
K = 3
MIN_SKETCH = 0.3
MIN_JACCARD = 0.5
CORPORA: list[tuple[str, str]] = [("zh_xwlb", "zh"), ("zh_news", "zh"), ("zh_toutiao_titles", "zh"),
                                   ("en_reuters", "en"), ("en_bbc", "en")]  # fmt: skip
#: Pairs to draw per corpus (in CORPORA's order) in round 1 (flagged by ours, MinHash, PyPI simhash),
#: round 2 (our band candidates) and round 3 (our near-duplicate decisions).
ROUND_QUOTAS: dict[int, tuple[int, ...]] = {1: (220, 60, 40, 250, 70), 2: (30, 15, 20, 60, 15),
                                            3: (30, 25, 25, 70, 20)}  # fmt: skip
QUOTAS = [(c, lang, q) for (c, lang), q in zip(CORPORA, ROUND_QUOTAS[1], strict=True)]
SYSTEMS = ("ours", "minhash", "pypi")
MIN_BAND_SKETCH = 0.5
MAX_BAND_DOCS = 64
LABELS = REPO / "docs" / "labels"
_WS = re.compile(r"\s+")


def read_corpus(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if limit is not None and len(out) >= limit:
                break
    return out


def body(doc: dict[str, Any]) -> str:
    """What every system reads: the body, or the title when the body is empty (as the pipeline does)."""
    return str(doc.get("content") or doc.get("title") or "")


def compact(text: str) -> str:
    return _WS.sub("", text.lower())


def _doc_pairs(owner: np.ndarray, i: np.ndarray, j: np.ndarray) -> set[tuple[int, int]]:
    a, b = owner[i], owner[j]
    keep = a != b
    return {(int(min(x, y)), int(max(x, y))) for x, y in zip(a[keep].tolist(), b[keep].tolist(), strict=True)}


def ours_pairs(docs: list[dict[str, Any]]) -> dict[tuple[int, int], float]:
    """Document pairs with a fingerprint pair within K whose sketches agree on MIN_SKETCH (score: sketch)."""
    fpr = Fingerprinter()
    owner: list[int] = []
    flat: list[int] = []
    sketches: list[bytes] = []
    for n, d in enumerate(docs):
        res = fpr.fingerprint_document(Document(id=str(d["id"]), title=d.get("title") or "", content=body(d)))
        sketches.append(res.sketch)
        if res.degenerate:
            continue
        owner += [n] * len(res.fingerprints)
        flat += list(res.fingerprints)
    i, j, _ = near_pairs(np.array(flat, dtype=np.uint64), K)
    pairs = sorted(_doc_pairs(np.array(owner), i, j))
    if not pairs:
        return {}
    out = {}
    for a, b in pairs:
        sim = similarity(from_bytes(sketches[a]), from_bytes(sketches[b]))
        if sim >= MIN_SKETCH:
            out[(a, b)] = round(sim, 3)
    return out


def band_pairs(docs: list[dict[str, Any]]) -> dict[tuple[int, int], float]:
    """Document pairs that share a sketch band key, have no fingerprint pair within K, and whose sketches
    agree on MIN_BAND_SKETCH (score: sketch)."""
    from fingerprint_indexer.fingerprint.sketch import band_keys
    from fingerprint_indexer.verification import closest

    fpr = Fingerprinter()
    results = [fpr.fingerprint_document(Document.from_mapping({**d, "id": str(d["id"]), "content": body(d)}))
               for d in docs]
    holders: dict[str, list[int]] = {}
    for n, res in enumerate(results):
        for key in band_keys(res.sketch):
            holders.setdefault(key, []).append(n)
    out: dict[tuple[int, int], float] = {}
    for members in holders.values():
        if len(members) > MAX_BAND_DOCS:
            continue
        for x, a in enumerate(members):
            for b in members[x + 1 :]:
                if (a, b) in out:
                    continue
                if closest(results[a].fingerprints, results[b].fingerprints)[0] <= K:
                    continue
                sim = similarity(from_bytes(results[a].sketch), from_bytes(results[b].sketch))
                if sim >= MIN_BAND_SKETCH:
                    out[(a, b)] = round(sim, 3)
    return out


def labelled_pairs() -> set[str]:
    """The ``pair`` keys of every pair labelled so far."""
    out: set[str] = set()
    for path in sorted(LABELS.glob("template_*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            out |= {json.loads(line)["pair"] for line in fh if line.strip()}
    return out


def build_round(data: Path, quotas: Iterable[tuple[str, str, int]], system: str, limit: int | None = None,
                ) -> list[dict[str, Any]]:  # fmt: skip
    """Round 2 (``band``) or 3 (``decided``): that system's pairs not labelled yet, a seeded sample per
    corpus."""
    finder = band_pairs if system == "band" else decided_pairs
    done = labelled_pairs()
    rows: list[dict[str, Any]] = []
    for corpus, lang, quota in quotas:
        docs = read_corpus(data / f"{corpus}.jsonl.gz", limit)
        texts = [compact(body(d)) for d in docs]
        found = finder(docs)
        keys = sorted(p for p in found if texts[p[0]] != texts[p[1]]
                      and f"{corpus}:{docs[p[0]]['id']}|{docs[p[1]]['id']}" not in done)
        print(f"{corpus}: {system} {len(found)}, new {len(keys)}", file=sys.stderr)
        random.Random(f"{SEED}:{system}:{corpus}").shuffle(keys)
        for a, b in keys[:quota]:
            rows.append({
                "pair": f"{corpus}:{docs[a]['id']}|{docs[b]['id']}",
                "corpus": corpus, "lang": lang, "a": str(docs[a]["id"]), "b": str(docs[b]["id"]),
                "flagged_by": {system: found[(a, b)]},
            })
    return rows


def decided_pairs(docs: list[dict[str, Any]]) -> dict[tuple[int, int], float]:
    """(earlier, later) index pairs of the default pipeline's near-duplicate decisions (score: distance)."""
    import tempfile

    from fingerprint_indexer.pipeline import Pipeline

    at = {str(d["id"]): n for n, d in enumerate(docs)}
    out: dict[tuple[int, int], float] = {}
    with tempfile.TemporaryDirectory() as tmp, Pipeline(Path(tmp) / "store") as pipe:
        inputs = (Document.from_mapping({**d, "id": str(d["id"])}) for d in docs)
        for dec in pipe.process_many(inputs):
            if dec.decision == "near_duplicate" and dec.duplicate_of in at:
                a, b = sorted((at[dec.id], at[dec.duplicate_of]))
                out[(a, b)] = float(dec.distance or 0)
    return out


def shingles(text: str, n: int = 5) -> set[str]:
    t = compact(text)
    return {t[i : i + n] for i in range(len(t) - n + 1)} if len(t) >= n else ({t} if t else set())


def minhash_pairs(docs: list[dict[str, Any]]) -> dict[tuple[int, int], float]:
    """Pairs whose exact 5-gram Jaccard is >= MIN_JACCARD (LSH candidates, then the exact value)."""
    from datasketch import MinHash, MinHashLSH

    sets = [shingles(body(d)) for d in docs]
    lsh = MinHashLSH(threshold=MIN_JACCARD, num_perm=128)
    sigs = []
    for n, s in enumerate(sets):
        m = MinHash(num_perm=128, seed=1)
        if s:
            m.update_batch([x.encode() for x in s])
        sigs.append(m)
        lsh.insert(str(n), m)
    out = {}
    for n, m in enumerate(sigs):
        for other in lsh.query(m):
            o = int(other)
            if o <= n:
                continue
            a, b = sets[n], sets[o]
            jac = len(a & b) / len(a | b) if a or b else 0.0
            if jac >= MIN_JACCARD:
                out[(n, o)] = round(jac, 3)
    return out


def pypi_pairs(docs: list[dict[str, Any]]) -> dict[tuple[int, int], float]:
    """Pairs whose PyPI ``simhash`` (its default character 4-gram features) lie within Hamming K."""
    from simhash import Simhash

    fps = np.array([Simhash(body(d)).value for d in docs], dtype=np.uint64)
    i, j, dist = near_pairs(fps, K)
    return {(int(a), int(b)): int(x) for a, b, x in zip(i.tolist(), j.tolist(), dist.tolist(), strict=True)}


def draw(
    flagged: dict[str, dict[tuple[int, int], float]], quota: int, rng: random.Random
) -> list[tuple[int, int]]:
    """Round robin over the systems, each in its own seeded order, until ``quota`` distinct pairs."""
    queues = {}
    for name in SYSTEMS:
        keys = sorted(flagged[name])
        rng.shuffle(keys)
        queues[name] = keys
    chosen: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    while len(chosen) < quota and any(queues.values()):
        for name in SYSTEMS:
            q = queues[name]
            while q and q[-1] in seen:
                q.pop()
            if q and len(chosen) < quota:
                p = q.pop()
                seen.add(p)
                chosen.append(p)
    return chosen


def build(
    data: Path, quotas: Iterable[tuple[str, str, int]], limit: int | None = None
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for corpus, lang, quota in quotas:
        docs = read_corpus(data / f"{corpus}.jsonl.gz", limit)
        texts = [compact(body(d)) for d in docs]
        flagged = {"ours": ours_pairs(docs), "minhash": minhash_pairs(docs), "pypi": pypi_pairs(docs)}
        for name in SYSTEMS:  # exact copies are not in question
            flagged[name] = {p: s for p, s in flagged[name].items() if texts[p[0]] != texts[p[1]]}
        print(f"{corpus}: " + ", ".join(f"{n} {len(flagged[n])}" for n in SYSTEMS), file=sys.stderr)
        rng = random.Random(f"{SEED}:{corpus}")
        for a, b in draw(flagged, quota, rng):
            rows.append({
                "pair": f"{corpus}:{docs[a]['id']}|{docs[b]['id']}",
                "corpus": corpus, "lang": lang, "a": str(docs[a]["id"]), "b": str(docs[b]["id"]),
                "flagged_by": {n: flagged[n][(a, b)] for n in SYSTEMS if (a, b) in flagged[n]},
            })
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=None, help="read only the first N documents of each corpus")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every quota (small test runs)")
    ap.add_argument("--round", type=int, choices=(1, 2, 3), default=1,
                    help="1: pairs flagged by our distance path, MinHash and PyPI simhash; 2: our band path; "
                         "3: our near-duplicate decisions")
    args = ap.parse_args(argv)
    chosen = zip(CORPORA, ROUND_QUOTAS[args.round], strict=True)
    quotas = [(c, lang, max(1, round(q * args.scale))) for (c, lang), q in chosen]
    if args.round == 1:
        rows = build(args.data, quotas, args.limit)
    else:
        rows = build_round(args.data, quotas, "band" if args.round == 2 else "decided", args.limit)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"{len(rows)} pairs -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
