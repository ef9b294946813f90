"""TF-IDF term weights: jieba's IDF table by default, or one fitted on the user's corpus."""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

_HEADER = "# fingerprint_indexer idf v1"


class IdfFileError(ValueError):
    """An IDF file that cannot be parsed."""


@dataclass(frozen=True)
class IdfTable:
    """Inverse document frequencies; unknown terms get ``default`` (the median, as jieba does)."""

    idf: Mapping[str, float] = field(repr=False)
    default: float
    name: str

    def weight(self, term: str) -> float:
        return self.idf.get(term, self.default)

    @classmethod
    def from_mapping(cls, idf: Mapping[str, float], name: str) -> IdfTable:
        values = sorted(idf.values())
        default = values[len(values) // 2] if values else 1.0
        return cls(dict(idf), default, name)

    @classmethod
    def load(cls, path: str | Path) -> IdfTable:
        """Read ``term idf`` lines (jieba's format; our own files add a ``#`` header)."""
        p = Path(path)
        idf: dict[str, float] = {}
        raw = p.read_bytes()
        for lineno, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            term, _, value = line.rpartition(" ")
            try:
                idf[term] = float(value)
            except ValueError:
                raise IdfFileError(f"{p}:{lineno}: expected 'term idf', got {line!r}") from None
            if not term:
                raise IdfFileError(f"{p}:{lineno}: expected 'term idf', got {line!r}")
        if not idf:
            raise IdfFileError(f"{p}: no IDF entries")
        digest = hashlib.blake2b(raw, digest_size=4).hexdigest()
        return cls.from_mapping(idf, f"file-{digest}")

    def save(self, path: str | Path, n_docs: int) -> None:
        """Write the table in jieba's format with a header line recording the corpus size."""
        p = Path(path)
        tmp = p.with_name(p.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as out:
            out.write(f"{_HEADER} docs={n_docs}\n")
            for term, value in sorted(self.idf.items()):
                out.write(f"{term} {value:.6f}\n")
        os.replace(tmp, p)


@cache
def jieba_idf() -> IdfTable:
    """jieba's bundled IDF table (loaded once per process)."""
    import jieba.analyse

    path = Path(jieba.analyse.__file__).with_name("idf.txt")
    table = IdfTable.load(path)
    return IdfTable(table.idf, table.default, "jieba")


def fit_idf(doc_terms: Iterable[Iterable[str]], min_df: int = 1) -> tuple[IdfTable, int]:
    """Smoothed IDF ``ln((N + 1) / (df + 1)) + 1`` from each document's terms; returns (table, N)."""
    df: dict[str, int] = {}
    n_docs = 0
    for terms in doc_terms:
        n_docs += 1
        for t in set(terms):
            df[t] = df.get(t, 0) + 1
    idf = {t: math.log((n_docs + 1) / (c + 1)) + 1.0 for t, c in df.items() if c >= min_df}
    # Named by its file once saved (IdfTable.load); an unsaved table cannot be referred to later.
    return IdfTable.from_mapping(idf, "unsaved"), n_docs


def top_terms(
    counts: Mapping[str, int], idf: IdfTable, k: int = 0, tf_power: float = 1.0, max_share: float = 1.0
) -> list[tuple[str, float]]:
    """Terms by weight ``tf ** tf_power * idf``, heaviest first; the top ``k`` (0 = all).

    ``tf`` is the term's share of the document's tokens; ties are broken by the term so the result is
    deterministic whatever the token order. ``max_share`` < 1 caps every weight at that share of the
    total weight: with ``tf ** 3`` one dominant term would otherwise outvote all others, and every
    article about that term would fold to the term's own hash (one crowded block bucket per word).
    """
    total = sum(counts.values())
    if not total:
        return []
    get, default = idf.idf.get, idf.default
    if tf_power == 1.0:
        scored = sorted([(-c * get(t, default), t) for t, c in counts.items()])
        norm = float(total)
    else:
        scored = sorted([(-(c**tf_power) * get(t, default), t) for t, c in counts.items()])
        norm = float(total) ** tf_power
    if k:
        scored = scored[:k]
    if max_share < 1.0 and len(scored) > 1:
        cap = _share_cap([-w for w, _ in scored], max_share)
        scored = [(max(w, -cap), t) for w, t in scored]
    return [(t, -w / norm) for w, t in scored]


def _share_cap(weights: list[float], share: float) -> float:
    """The weight ``c`` at which capping every weight (heaviest first) leaves none above ``share`` of the
    capped total: the smallest ``m`` with ``c = share * rest / (1 - share * m) >= weights[m]``, where
    ``rest`` is the sum of the weights after the ``m`` heaviest. With fewer than ``1 / share`` terms no
    cap can do it, and all weigh the same."""
    w = np.asarray(weights, dtype=np.float64)
    m = np.arange(1, w.size + 1)
    rest = np.concatenate([np.cumsum(w[::-1])[::-1][1:], [0.0]])  # sum of w[m:] for m = 1..n
    with np.errstate(divide="ignore", invalid="ignore"):
        cap = np.where(share * m < 1.0, share * rest / (1.0 - share * m), np.inf)
    nxt = np.concatenate([w[1:], [0.0]])
    ok = np.flatnonzero((cap >= nxt) & (share * m < 1.0) & (m < w.size))
    return float(cap[ok[0]]) if ok.size else float(w[-1])
