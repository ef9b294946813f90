"""TF-IDF term weights: jieba's IDF table by default, or one fitted on the user's corpus."""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.errors import FingerprintIndexerError
from fingerprint_indexer.text.lexicon import cached_lexicon, values_of

_HEADER = "# fingerprint_indexer idf v1"


class IdfFileError(FingerprintIndexerError, ValueError):
    """An IDF file that cannot be parsed."""


@dataclass(frozen=True)
class IdfTable:
    """Inverse document frequencies; unknown terms get ``default`` (the median, as jieba does)."""

    idf: Mapping[str, float] = field(repr=False)
    default: float
    name: str

    def weight(self, term: str) -> float:
        return self.idf.get(term, self.default)

    def weights(self, terms: Sequence[str]) -> npt.NDArray[np.float64]:
        """:meth:`weight` of each term (one look-up for all on a table from the cache)."""
        return values_of(self.idf, terms, self.default)

    @classmethod
    def from_mapping(cls, idf: Mapping[str, float], name: str) -> IdfTable:
        values = sorted(idf.values())
        default = values[len(values) // 2] if values else 1.0
        return cls(dict(idf), default, name)

    @classmethod
    def load(cls, path: str | Path) -> IdfTable:
        """Read ``term idf`` lines (jieba's format; our own files add a ``#`` header), through the
        per-user cache of the parsed table (:func:`fingerprint_indexer.text.lexicon.cached_lexicon`)."""
        p = Path(path)

        def build(raw: bytes) -> tuple[dict[str, float], dict[str, Any]]:
            table = cls.parse(raw, p)
            return dict(table.idf), {"default": table.default, "name": table.name}

        idf, meta = cached_lexicon("idf", p, build)
        return cls(idf, float(meta["default"]), str(meta["name"]))

    @classmethod
    def parse(cls, raw: bytes, p: Path) -> IdfTable:
        """The table in the bytes ``raw`` of the file ``p`` (named by a digest of those bytes)."""
        idf = _parse_fast(raw) or _parse(raw, p)
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


def _parse(raw: bytes, p: Path) -> dict[str, float]:
    """Line by line, saying which line is wrong."""
    idf: dict[str, float] = {}
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
    return idf


def _parse_fast(raw: bytes) -> dict[str, float] | None:
    """The same table in bulk when every line is plainly ``term idf`` (one space, no comment, no blank
    line: jieba's table and our own files after their header); None to fall back on :func:`_parse`."""
    lines = raw.decode("utf-8").splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    text = "\n".join(lines)
    words = text.split()
    plain = len(words) == 2 * len(lines) and text.count(" ") == len(lines) and "\n#" not in text
    if not lines or not plain:
        return None
    try:
        return dict(zip(words[0::2], map(float, words[1::2]), strict=True))
    except ValueError:
        return None


#: The name of jieba's bundled table in fingerprint versions.
JIEBA_IDF = "jieba"


@cache
def jieba_idf() -> IdfTable:
    """jieba's bundled IDF table (loaded once per process)."""
    table = IdfTable.load(jieba_file("analyse", "idf.txt"))
    return IdfTable(table.idf, table.default, JIEBA_IDF)


def jieba_file(*parts: str) -> Path:
    """A data file shipped in the jieba package, found without importing jieba (a slow import)."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("jieba is not installed")
    return Path(next(iter(spec.submodule_search_locations)), *parts)


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
    terms = sorted(counts)  # columns in the order of the tie-break
    if not terms:
        return []
    order, weights, n = weigh_rows(
        np.array([[counts[t] for t in terms]], dtype=np.int64), idf.weights(terms), k, tf_power, max_share,
    )
    return list(zip([terms[i] for i in order[0, : n[0]].tolist()], weights[0, : n[0]].tolist(), strict=True))


_POWERS: dict[float, npt.NDArray[np.float64]] = {}


def _powers(tf_power: float, upto: int) -> npt.NDArray[np.float64]:
    """``c ** tf_power`` for c = 0..upto at least, as Python's float power computes it (not NumPy's)."""
    table = _POWERS.get(tf_power)
    if table is None or len(table) <= upto:
        size = max(64, 2 * upto + 1)
        powers = [float(c) ** tf_power if c else 0.0 for c in range(size)]  # 0: not a term of the row
        table = _POWERS[tf_power] = np.array(powers, dtype=np.float64)
    return table


def weigh_rows(
    counts: npt.NDArray[np.int64],
    idf: npt.NDArray[np.float64],
    k: int = 0,
    tf_power: float = 1.0,
    max_share: float = 1.0,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64], npt.NDArray[np.intp]]:
    """:func:`top_terms` of several term sets at once (a document and its chunks), one per row.

    ``counts`` is a rows x terms matrix (0 = not in that row), its columns in the order of the term
    strings (the tie-break); ``idf`` is per column. Returns ``(order, weights, n)``: row ``i`` folds
    columns ``order[i, :n[i]]`` with ``weights[i, :n[i]]``, heaviest first. The arithmetic is the same
    IEEE operations in the same order as on Python floats, so the weights are bit-identical.
    """
    rows, width = counts.shape
    if not width:
        return np.zeros((rows, 0), dtype=np.intp), np.zeros((rows, 0)), np.zeros(rows, dtype=np.intp)
    totals = counts.sum(axis=1)
    if tf_power == 1.0:
        powered = counts.astype(np.float64)
        norms = totals.astype(np.float64)
    else:
        powered = _powers(tf_power, int(counts.max()))[counts]
        norms = np.array([float(t) ** tf_power for t in totals.tolist()], dtype=np.float64)
    scored = -powered * idf
    scored[counts == 0] = np.inf
    order = np.argsort(scored, axis=1, kind="stable")
    n = np.count_nonzero(counts, axis=1)
    if k:
        n = np.minimum(n, k)
    w = np.take_along_axis(scored, order, axis=1)
    inside = np.arange(width)[None, :] < n[:, None]
    if max_share < 1.0:
        caps = _share_caps(np.where(inside, -w, 0.0), n, max_share)
        w = np.where(inside & (n[:, None] > 1), np.maximum(w, -caps[:, None]), w)
    with np.errstate(divide="ignore", invalid="ignore"):
        return order, -w / norms[:, None], n


def _share_caps(w: npt.NDArray[np.float64], n: npt.NDArray[np.intp], share: float) -> npt.NDArray[np.float64]:
    """Per row, the weight ``c`` at which capping every weight (``w[i, :n[i]]``, heaviest first, zeros
    after) leaves none above ``share`` of the capped total: the smallest ``m`` with
    ``c = share * rest / (1 - share * m) >= w[m]``, where ``rest`` is the sum of the weights after the
    ``m`` heaviest. With fewer than ``1 / share`` terms no cap can do it, and all weigh the same."""
    rows, width = w.shape
    zero = np.zeros((rows, 1))
    # rest[j] = w[n-1] + w[n-2] + ... + w[j+1], summed in that order (the zeros after n add exactly 0)
    rest = np.concatenate((np.cumsum(w[:, ::-1], axis=1)[:, -2::-1], zero), axis=1)
    m = np.arange(1, width + 1)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        cap = np.where(share * m < 1.0, share * rest / (1.0 - share * m), np.inf)
    nxt = np.concatenate((w[:, 1:], zero), axis=1)
    ok = (cap >= nxt) & (share * m < 1.0) & (m < n[:, None])
    first = ok.argmax(axis=1)
    pick = np.arange(rows)
    return np.where(ok.any(axis=1), cap[pick, first], w[pick, np.maximum(n - 1, 0)])
