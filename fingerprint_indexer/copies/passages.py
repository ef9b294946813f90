"""Copied passages between two texts, from their shared block hashes.

Shared blocks are paired (a hash repeated within one text pairs at most ``MAX_REPEATS`` times), grouped
by diagonal (term position in A minus term position in B: a copied passage keeps it constant) and cut
into runs where consecutive blocks are more than a window apart; runs that touch on both sides (a word
inserted or dropped in the copy shifts the diagonal) are joined. With all blocks of both texts a run
is the exact extent of the shared terms; with winnowed marks only (a store keeps no text) a passage may
start or end up to ``w - 1`` terms inside the real one.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.fingerprint.winnow import Marks, WinnowParams

MAX_REPEATS = 8


@dataclass(frozen=True)
class Passage:
    """A passage of A found in B: ``[a_start, a_end)`` and ``[b_start, b_end)`` are character offsets
    into the texts as given; ``length`` is the passage's length in A (characters), ``terms`` in terms."""

    a_start: int
    a_end: int
    b_start: int
    b_end: int
    length: int
    terms: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pairs(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> tuple[npt.NDArray[np.int64],
                                                                        npt.NDArray[np.int64]]:
    """Index pairs ``(i, j)`` with ``a[i] == b[j]``, at most MAX_REPEATS per ``i``."""
    order = np.argsort(b, kind="stable")
    sb = b[order]
    lo = np.searchsorted(sb, a, "left")
    cnt = np.minimum(np.searchsorted(sb, a, "right") - lo, MAX_REPEATS)
    total = int(cnt.sum())
    if total == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    i = np.repeat(np.arange(a.size, dtype=np.int64), cnt)
    first = np.repeat(np.cumsum(cnt) - cnt, cnt)
    j = order[np.repeat(lo, cnt) + (np.arange(total) - first)]
    return i, j.astype(np.int64)


@dataclass
class _Run:
    a0: int  # first block's term position in A
    a1: int  # last block's term position in A
    b0: int
    b1: int
    a_start: int
    a_end: int
    b_start: int
    b_end: int
    seeded: set[int]  # the seeds (distinct hashes) the run holds
    marked: set[int]  # the winnowed hashes of A the run holds


def find_passages(
    a: Marks,
    b: Marks,
    params: WinnowParams,
    min_terms: int | None = None,
    seeds: Collection[int] | None = None,
    min_seeds: int = 1,
    min_share: float = 0.0,
) -> list[Passage]:
    """Passages of A copied in B, in A's order.

    ``min_terms`` (default ``g``) drops shorter passages; ``seeds``, when given, keeps only passages
    holding at least ``min_seeds`` distinct ones of those hashes (winnowed marks that are evidence of
    copying), and at least ``min_share`` of the passage's distinct winnowed marks of A.
    """
    k, gap = params.k, params.w
    min_terms = params.g if min_terms is None else min_terms
    i, j = _pairs(a.hashes, b.hashes)
    if i.size == 0:
        return []
    pa, pb = a.pos[i], b.pos[j]
    diag = pa - pb
    order = np.lexsort((pa, diag))
    i, j, pa, pb, diag = i[order], j[order], pa[order], pb[order], diag[order]
    cut = np.flatnonzero((np.diff(diag) != 0) | (np.diff(pa) > gap)) + 1
    bounds = np.concatenate(([0], cut, [i.size]))
    hit = (np.isin(a.hashes[i], np.fromiter(seeds, dtype=np.uint64, count=len(seeds)))
           if seeds is not None else None)
    runs = []
    for s, e in itertools.pairwise(bounds.tolist()):
        sl = slice(int(s), int(e))
        ii, jj = i[sl], j[sl]
        held = ({-1} if hit is None  # no seeds given: every run counts
                else set(np.unique(a.hashes[ii][hit[sl]]).tolist()))
        kept = a.hashes[ii] if a.kept is None else a.hashes[ii][a.kept[ii]]
        runs.append(_Run(int(pa[s]), int(pa[e - 1]), int(pb[s]), int(pb[e - 1]),
                         int(a.start[ii].min()), int(a.end[ii].max()), int(b.start[jj].min()),
                         int(b.end[jj].max()), held, set(np.unique(kept).tolist())))
    runs.sort(key=lambda r: (r.a0, r.b0))
    merged: list[_Run] = []
    for r in runs:
        last = merged[-1] if merged else None
        if (last is not None and -k <= r.a0 - last.a1 <= gap and -k <= r.b0 - last.b1 <= gap
                and r.a1 >= last.a1 and r.b1 >= last.b1):
            last.a1, last.b1 = r.a1, r.b1
            last.a_start, last.a_end = min(last.a_start, r.a_start), max(last.a_end, r.a_end)
            last.b_start, last.b_end = min(last.b_start, r.b_start), max(last.b_end, r.b_end)
            last.seeded |= r.seeded
            last.marked |= r.marked
        else:
            merged.append(r)
    out = []
    for r in merged:
        terms = r.a1 - r.a0 + k
        enough = hit is None or (len(r.seeded) >= min_seeds and len(r.seeded) >= min_share * len(r.marked))
        if enough and terms >= min_terms:
            out.append(Passage(r.a_start, r.a_end, r.b_start, r.b_end, r.a_end - r.a_start, terms))
    return out


def covered(passages: list[Passage]) -> int:
    """Characters of A inside any passage (overlaps counted once)."""
    total, reach = 0, -1
    for p in sorted(passages, key=lambda p: p.a_start):
        if p.a_end > reach:
            total += p.a_end - max(p.a_start, reach)
            reach = p.a_end
    return total
