"""Partial-copy search: which stored documents copy at least N characters of this one.

The query's winnowed marks are looked up in an index of marks (the embedded store or Elasticsearch).
A mark held by more than ``max_df`` documents (a cap learnt from the index's size), or by documents of
more than ``MAX_STORIES`` different stories (clusters: the reposts of one story count once), is a
stock phrase (an official formula, a meeting's standard wording, a disclaimer), not evidence of
copying. The documents sharing other marks are candidates; each is compared passage by passage, and
only passages holding at least one non-stock shared mark count. Cost per query is bounded by
``MAX_QUERY_MARKS`` look-ups of at most ``max_df + 2`` postings and ``MAX_CANDIDATES`` comparisons.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fingerprint_indexer.copies.passages import Passage, covered, find_passages
from fingerprint_indexer.copies.winnow import Marks, WinnowParams

MAX_QUERY_MARKS = 2048  # a huge query looks up its smallest marks: a stable sample
MAX_CANDIDATES = 64
MAX_STORIES = 3  # clusters per mark above which it is a stock phrase
MIN_MAX_DF = 10
STOCK_SHARE = 0.001  # a mark in more than 0.1 % of the documents (and more than MIN_MAX_DF) is stock
DEFAULT_MIN_CHARS = 100


def default_max_df(n_docs: int) -> int:
    """The document frequency above which a mark is a stock phrase, for an index of ``n_docs``."""
    return max(MIN_MAX_DF, math.ceil(n_docs * STOCK_SHARE))


@dataclass(frozen=True)
class CopyHit:
    """A stored document that copies ``copied`` characters of the query, in these passages (A = the
    query, B = the stored document)."""

    id: str
    copied: int
    passages: list[Passage]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "copied": self.copied, "passages": [p.to_dict() for p in self.passages]}


def query_marks(marks: Marks) -> list[int]:
    """The distinct winnowed marks a query looks up (the smallest ``MAX_QUERY_MARKS``)."""
    return [int(h) for h in np.unique(marks.winnowed().hashes)[:MAX_QUERY_MARKS]]


def candidates(
    marks: list[int], postings: Callable[[int, int], list[tuple[str, str]]], max_df: int,
    exclude: str | None = None,
) -> tuple[list[str], set[int]]:
    """Documents sharing a non-stock mark (most shared first, at most ``MAX_CANDIDATES``), and the stock
    marks. ``postings(mark, limit)`` lists (document, story) of at most ``limit`` documents."""
    counts: Counter[str] = Counter()
    stock: set[int] = set()
    for m in marks:
        found = postings(m, max_df + 2)  # + 1 beyond the cap, + 1 for the query itself
        others = [(d, c) for d, c in found if d != exclude]
        if len(others) > max_df or len({c for _, c in others}) > MAX_STORIES:
            stock.add(m)
        else:
            counts.update(d for d, _ in others)
    ranked = sorted(counts.items(), key=lambda x: (-x[1], x[0]))[:MAX_CANDIDATES]
    return [d for d, _ in ranked], stock


def copies_in(
    query: Marks,
    seeds: Iterable[int],
    others: Iterable[tuple[str, Marks]],
    params: WinnowParams,
    min_chars: int,
    min_terms: int | None = None,
) -> list[CopyHit]:
    """The documents among ``others`` that copy at least ``min_chars`` characters of the query, most
    first. Only passages holding one of ``seeds`` (the query's non-stock marks) count, of at least
    ``min_terms`` terms: by default ``g`` where both sides hold every block (exact extents), else ``k``
    (winnowed marks only, whose passages start and end at kept marks)."""
    seed_set = set(seeds)
    hits = []
    for doc_id, m in others:
        exact = query.kept is not None and m.kept is not None
        least = min_terms if min_terms is not None else params.g if exact else params.k
        ps = find_passages(query, m, params, min_terms=least, seeds=seed_set)
        n = covered(ps)
        if ps and n >= min_chars:
            hits.append(CopyHit(doc_id, n, ps))
    return sorted(hits, key=lambda h: (-h.copied, h.id))


def search(
    query: Marks,
    postings: Callable[[int, int], list[tuple[str, str]]],
    stored_marks: Mapping[str, Marks] | Callable[[str], Marks | None],
    params: WinnowParams,
    min_chars: int = DEFAULT_MIN_CHARS,
    max_df: int = MIN_MAX_DF,
    exclude: str | None = None,
) -> tuple[list[CopyHit], int]:
    """Partial-copy search over an index of winnowed marks: the hits and the number of stock marks
    ignored. ``query`` holds all the query's blocks, the winnowed ones flagged (:func:`marked`), as do
    the stored marks."""
    looked = query_marks(query)
    ids, stock = candidates(looked, postings, max_df, exclude)
    fetch = stored_marks if callable(stored_marks) else stored_marks.get
    others = ((d, m) for d in ids if (m := fetch(d)) is not None)
    return copies_in(query, set(looked) - stock, others, params, min_chars), len(stock)


def stored_marks(raw: bytes | None) -> Marks | None:
    """Marks as a store or index returned them (None when it holds none)."""
    return Marks.from_bytes(raw) if raw else None
