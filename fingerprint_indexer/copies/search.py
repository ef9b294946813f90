"""Partial-copy search: which stored documents copy at least N characters of this one.

The query's winnowed marks are looked up in an index of marks (the embedded store or Elasticsearch).
A mark held by more than ``max_df`` documents (a cap learnt from the index's size) is a stock phrase
(an official formula, a meeting's standard wording, a disclaimer) and not looked up further. Of the
others, a mark is evidence that a stored document copies the query only when no other story holds it
(``max_stories``, default 1: the reposts of one story, its cluster, count once): a phrase shared by
several stories is a template or a formula, whether it is 200 characters long or 20. The documents
sharing marks are candidates; each is compared passage by passage, and a passage counts only when
``MIN_EVIDENCE_SHARE`` of its distinct winnowed marks (and at least ``MIN_EVIDENCE_MARKS``) are evidence
for its document: a template passage shares mostly marks that other stories hold too, with one or two
of its own where a name or a figure changed; a copied passage holds marks of its source alone.
Defaults chosen by ``scripts/eval_copies.py`` (docs/quality.md). Cost per query is bounded by
``MAX_QUERY_MARKS`` look-ups of at most ``max_df + 2`` postings and ``MAX_CANDIDATES`` comparisons.

A passage quoted by stored documents of several stories is therefore found only with ``max_stories``
raised to that number of stories (docs/quality.md measures the trade-off).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fingerprint_indexer.copies.passages import Passage, covered, find_passages
from fingerprint_indexer.fingerprint.winnow import Marks, WinnowParams

MAX_QUERY_MARKS = 2048  # a huge query looks up its smallest marks: a stable sample
MAX_CANDIDATES = 64
MAX_STORIES = 1  # stories (clusters) per mark above which it is a stock phrase, not evidence
MIN_EVIDENCE_MARKS = 1  # distinct evidence marks a counted passage holds
MIN_EVIDENCE_SHARE = 0.5  # share of a counted passage's winnowed marks that are evidence
SELF_SHARE = 0.8  # a stored document holding this share of the query's marks is a copy of the query
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


@dataclass(frozen=True)
class Candidates:
    """What the look-ups of a query's marks found: the candidate documents (most shared marks first),
    the stock marks, and for each other mark the stories (clusters) of the documents holding it."""

    ids: list[str]
    stock: set[int]
    stories: dict[int, frozenset[str]]
    story_of: dict[str, str]

    def evidence(self, doc_id: str) -> set[int]:
        """The marks that are evidence of ``doc_id`` copying the query: held by its story alone."""
        story = self.story_of.get(doc_id, doc_id)
        return {m for m, held in self.stories.items() if story in held}


def candidates(
    marks: list[int], postings: Callable[[int, int], list[tuple[str, str]]], max_df: int,
    exclude: str | None = None, max_stories: int = MAX_STORIES,
) -> Candidates:
    """Documents sharing a non-stock mark with the query (at most ``MAX_CANDIDATES``). A mark in more
    than ``max_df`` documents or ``max_stories`` stories is stock. ``postings(mark, limit)`` lists
    (document, story) of at most ``limit`` documents.

    Stored copies of the query itself (documents holding ``SELF_SHARE`` of its marks: a pasted text
    that is also stored) do not count as a story of their own beside the others, as ``exclude`` does
    for a query given by id; they are hits wherever no other story holds the mark.
    """
    lists = {m: [(d, c) for d, c in postings(m, max_df + 2) if d != exclude] for m in marks}
    # + 1 beyond the cap, + 1 for the query itself
    held_by = Counter(d for others in lists.values() if len(others) <= max_df for d, _ in others)
    story_of: dict[str, str] = {}
    for others in lists.values():
        story_of.update(others)
    selves = {story_of[d] for d, n in held_by.items() if n >= SELF_SHARE * len(marks)}
    counts: Counter[str] = Counter()
    stock: set[int] = set()
    stories: dict[int, frozenset[str]] = {}
    for m, others in lists.items():
        held = frozenset(c for _, c in others)
        own = held - selves or held  # a mark only the query's stored copies hold is theirs
        if len(others) > max_df or len(own) > max_stories:
            stock.add(m)
            continue
        stories[m] = own
        counts.update(d for d, _ in others)
    ranked = sorted(counts.items(), key=lambda x: (-x[1], x[0]))[:MAX_CANDIDATES]
    return Candidates([d for d, _ in ranked], stock, stories, story_of)


def copies_in(
    query: Marks,
    seeds: Iterable[int] | Callable[[str], set[int]],
    others: Iterable[tuple[str, Marks]],
    params: WinnowParams,
    min_chars: int,
    min_terms: int | None = None,
    min_marks: int = MIN_EVIDENCE_MARKS,
    min_share: float = MIN_EVIDENCE_SHARE,
) -> list[CopyHit]:
    """The documents among ``others`` that copy at least ``min_chars`` characters of the query, most
    first. Only passages holding ``min_marks`` distinct ``seeds`` (the query's evidence marks, or a
    function giving them per document) count, of at least ``min_terms`` terms: by default ``g`` where
    both sides hold every block (exact extents), else ``k`` (winnowed marks only, whose passages start
    and end at kept marks)."""
    fixed = None if callable(seeds) else set(seeds)
    hits = []
    for doc_id, m in others:
        exact = query.kept is not None and m.kept is not None
        least = min_terms if min_terms is not None else params.g if exact else params.k
        own = fixed if fixed is not None else seeds(doc_id)  # type: ignore[operator]
        ps = find_passages(query, m, params, min_terms=least, seeds=own, min_seeds=min_marks,
                           min_share=min_share)
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
    max_stories: int = MAX_STORIES,
) -> tuple[list[CopyHit], int]:
    """Partial-copy search over an index of winnowed marks: the hits and the number of stock marks
    ignored. ``query`` holds all the query's blocks, the winnowed ones flagged (:func:`marked`), as do
    the stored marks."""
    found = candidates(query_marks(query), postings, max_df, exclude, max_stories)
    fetch = stored_marks if callable(stored_marks) else stored_marks.get
    others = ((d, m) for d in found.ids if (m := fetch(d)) is not None)
    return copies_in(query, found.evidence, others, params, min_chars), len(found.stock)


def stored_marks(raw: bytes | None) -> Marks | None:
    """Marks as a store or index returned them (None when it holds none)."""
    return Marks.from_bytes(raw) if raw else None
