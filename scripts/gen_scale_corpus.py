#!/usr/bin/env python3
"""Generate a deterministic news-like corpus of any size for scale benchmarks (JSON lines, .gz optional).

Real corpora stop at ~89k documents here; the cost of deduplication depends on statistics, not on
meaning, so this keeps the ones that drive cost, fitted to the four real corpora of ``../shared/data``
(zh_news, zh_xwlb, zh_toutiao_titles, en_reuters; fitted on 3,000 documents of each with the project's
tokenizer):

- the mix of kinds (14 / 22 / 43 / 21 %) and each kind's length distribution (log-normal: median 886,
  420, 23 and 552 characters; log standard deviation 1.27, 0.72, 0.36, 0.86);
- vocabulary and term frequencies: Chinese words from jieba's dictionary ranked by its frequencies,
  English pseudo-words, drawn by Zipf's law with each kind's fitted exponent (1.04, 1.23, 0.61, 1.26;
  with a flatter head, rank + 30, so that no word is in every document);
- the concentration of dominant terms: a third of each document's words come from its own topic (100
  words of the vocabulary, Zipf among them), so its heaviest term holds a few per cent of its tokens,
  as in the real news (median 4.5-6.5 %);
- stock phrases: a fixed pool of 2,000 formulaic sentences that 15 % of each bulletin's sentences (kind
  ``xwlb``) and 2 % of the other articles' are drawn from (Zipf over the pool), as in zh_xwlb;
- planted duplicates at known rates: ``--exact`` exact copies and ``--near`` near copies (a word
  changed in a few sentences, a line added at the top, or the end cut off) of a recent document (or,
  one time in ten, of any earlier one); each copy names its original in ``planted_of`` and the edit in
  ``planted``.

    python3 scripts/gen_scale_corpus.py 1000000 -o out/gen-1m.jsonl.gz --seed 11
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

KINDS = ("news", "xwlb", "title", "en")
MIX = (0.14, 0.22, 0.43, 0.21)
MEDIAN_CHARS = {"news": 886, "xwlb": 420, "title": 23, "en": 552}
LOG_SD = {"news": 1.27, "xwlb": 0.72, "title": 0.36, "en": 0.86}
ZIPF = {"news": 1.04, "xwlb": 1.23, "title": 0.61, "en": 1.26}
STOCK_SHARE = {"news": 0.02, "xwlb": 0.15, "title": 0.0, "en": 0.02}
MAX_CHARS = 20_000
HEAD = 30.0  # Zipf-Mandelbrot offset: the head of real term frequencies is flatter than pure Zipf
TOPIC_WORDS, TOPIC_SHARE = 100, 0.35  # a document's own words (Zipf 1.0 among them) and their share
TOPIC_CDF = np.cumsum(np.arange(1, TOPIC_WORDS + 1, dtype=np.float64) ** -1.0) / np.sum(
    np.arange(1, TOPIC_WORDS + 1, dtype=np.float64) ** -1.0)
STOCK_POOL = 2000
RECENT = 5_000  # a planted copy's original is one of the last 5-10k documents (9 times in 10)
EN_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou", "er")]


def _zh_words() -> list[str]:
    """Words of jieba's dictionary (2-4 Han characters), most frequent first."""
    import jieba

    path = Path(jieba.__file__).parent / "dict.txt"
    words: list[tuple[int, str]] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            parts = line.split()
            han = all("\u4e00" <= ch <= "\u9fff" for ch in parts[0]) if parts else False
            if len(parts) >= 2 and 2 <= len(parts[0]) <= 4 and han:
                words.append((int(parts[1]), parts[0]))
    words.sort(key=lambda x: (-x[0], x[1]))
    return [w for _, w in words[:60_000]]


def _en_words(n: int, rng: np.random.Generator) -> list[str]:
    """``n`` distinct pronounceable pseudo-words (the English tokenizer takes any run of letters)."""
    out: dict[str, None] = {}
    while len(out) < n:
        k = int(rng.integers(2, 4))
        out["".join(EN_SYLLABLES[i] for i in rng.integers(0, len(EN_SYLLABLES), k))] = None
    return list(out)


@dataclass
class _Vocab:
    words: list[str]
    cdf: np.ndarray

    @classmethod
    def zipf(cls, words: list[str], s: float, q: float = 0.0) -> _Vocab:
        """Zipf-Mandelbrot: the word of rank r drawn with probability proportional to (r + q)^-s."""
        p = (np.arange(1, len(words) + 1, dtype=np.float64) + q) ** -s
        return cls(words, np.cumsum(p / p.sum()))

    def draw(self, rng: np.random.Generator, n: int) -> list[str]:
        idx = np.searchsorted(self.cdf, rng.random(n), side="right")
        return [self.words[min(i, len(self.words) - 1)] for i in idx.tolist()]


class Generator:
    """Documents of the scale corpus, one at a time, reproducible from ``seed``."""

    def __init__(self, seed: int = 11, exact: float = 0.03, near: float = 0.05) -> None:
        self.rng = np.random.default_rng(seed)
        self.exact, self.near = exact, near
        zh = _zh_words()
        en = _en_words(30_000, np.random.default_rng(seed + 1))
        self.vocab = {k: _Vocab.zipf(en if k == "en" else zh, ZIPF[k], HEAD) for k in KINDS}
        self.zh, self.en = zh, en
        stock_rng = np.random.default_rng(seed + 2)
        self.stock = {
            "zh": [self._sentence("xwlb", stock_rng, []) for _ in range(STOCK_POOL)],
            "en": [self._sentence("en", stock_rng, []) for _ in range(STOCK_POOL)],
        }
        p = np.arange(1, STOCK_POOL + 1, dtype=np.float64) ** -1.1
        self.stock_cdf = np.cumsum(p / p.sum())
        self.recent: list[dict[str, Any]] = []
        self.older: list[dict[str, Any]] = []
        self.seen_older = 0
        self.count = 0

    def _sentence(self, kind: str, rng: np.random.Generator, topic: list[str]) -> str:
        n = int(rng.integers(8, 21))
        words = self.vocab[kind].draw(rng, n)
        if topic:  # a share of the words comes from the document's own topic, heaviest first
            idx = np.searchsorted(TOPIC_CDF, rng.random(n), side="right").clip(0, len(topic) - 1)
            take = rng.random(n) < TOPIC_SHARE
            words = [topic[j] if t else w for w, j, t in zip(words, idx.tolist(), take.tolist(), strict=True)]
        if kind == "en":
            return " ".join(words).capitalize() + "."
        return "".join(words) + "。"

    def _text(self, kind: str) -> str:
        rng = self.rng
        target = min(int(np.exp(rng.normal(np.log(MEDIAN_CHARS[kind]), LOG_SD[kind]))) + 1, MAX_CHARS)
        words = self.en if kind == "en" else self.zh
        topic = [words[int(i)] for i in rng.integers(100, len(words), TOPIC_WORDS)]
        if kind == "title":
            return "".join(self.vocab[kind].draw(rng, max(1, target // 3)))[: max(target, 4)]
        pool = self.stock["en" if kind == "en" else "zh"]
        out: list[str] = []
        size = 0
        while size < target:
            if rng.random() < STOCK_SHARE[kind]:
                s = pool[int(np.searchsorted(self.stock_cdf, rng.random(), side="right")) % STOCK_POOL]
            else:
                s = self._sentence(kind, rng, topic)
            out.append(s)
            size += len(s)
        sep = " " if kind == "en" else ""
        paragraphs = [sep.join(out[i : i + 4]) for i in range(0, len(out), 4)]
        return "\n".join(paragraphs)

    def _edit(self, text: str, kind: str) -> tuple[str, str]:
        rng = self.rng
        how = ("words", "header", "cut")[int(rng.integers(0, 3))]
        if how == "header":
            words = self.en if kind == "en" else self.zh
            head = (" " if kind == "en" else "").join(words[int(i)] for i in rng.integers(0, 5000, 6))
            return f"{head}\n{text}", how
        if how == "cut" and len(text) > 200:
            return text[: int(len(text) * rng.uniform(0.6, 0.85))], how
        chars = list(text)
        for _ in range(max(1, len(chars) // 300)):
            i = int(rng.integers(0, len(chars)))
            chars[i] = "的" if kind != "en" else "x"
        return "".join(chars), "words"

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        rng = self.rng
        self.count += 1
        doc_id = f"g{self.count:08d}"
        r = rng.random()
        if self.recent and r < self.exact + self.near:
            pool = self.recent if rng.random() < 0.9 or not self.older else self.older
            orig = pool[int(rng.integers(0, len(pool)))]
            doc = {"id": doc_id, "title": orig["title"], "content": orig["content"], "kind": orig["kind"],
                   "planted_of": orig["id"], "planted": "exact"}
            if r >= self.exact:
                doc["content"], doc["planted"] = self._edit(orig["content"], orig["kind"])
        else:
            kind = KINDS[int(np.searchsorted(np.cumsum(MIX), rng.random(), side="right")) % len(KINDS)]
            content = self._text(kind)
            title = content[:20] if kind == "title" else self._sentence(kind, rng, [])[:30]
            doc = {"id": doc_id, "title": title, "content": content, "kind": kind}
        self.recent.append({k: doc[k] for k in ("id", "title", "content", "kind")})
        if len(self.recent) > 2 * RECENT:
            for old in self.recent[:RECENT]:  # a uniform sample of everything older (reservoir)
                self.seen_older += 1
                if len(self.older) < RECENT:
                    self.older.append(old)
                elif (j := int(rng.integers(0, self.seen_older))) < RECENT:
                    self.older[j] = old
            self.recent = self.recent[RECENT:]
        return doc


def generate(n: int, seed: int = 11, exact: float = 0.03, near: float = 0.05) -> Iterator[dict[str, Any]]:
    """``n`` documents of the scale corpus (see the module docstring)."""
    gen = Generator(seed, exact, near)
    for _ in range(n):
        yield next(gen)


def _open(path: str) -> IO[str]:
    if path == "-":
        return sys.stdout
    if path.endswith(".gz"):
        return gzip.open(path, "wt", encoding="utf-8", compresslevel=3)
    return open(path, "w", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("n", type=int, help="number of documents")
    ap.add_argument("-o", "--output", default="-", help="JSON lines file (.gz compresses), - for stdout")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--exact", type=float, default=0.03, help="share of planted exact copies")
    ap.add_argument("--near", type=float, default=0.05, help="share of planted near copies")
    args = ap.parse_args(argv)
    fh = _open(args.output)
    try:
        for doc in generate(args.n, args.seed, args.exact, args.near):
            fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
    finally:
        if fh is not sys.stdout:
            fh.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
