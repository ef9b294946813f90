"""The one verification rule: is a near-duplicate candidate the same story, and if not, why not.

The block index returns candidates whose document, lead or chunk fingerprints lie within Hamming
distance ``k``. Every writer and reader (embedded pipeline, ``similar``, ``es index``, ``es dedupe``,
the sidecar) accepts a candidate only through :func:`check` / :func:`check_many`, which apply, in order:

1. **distance**: some fingerprint pair within ``k``, or else a band of sketch minima in common (the
   MinHash LSH keys of :func:`fingerprint_indexer.fingerprint.sketch.band_keys`: an edit moves the
   SimHash of a headline or a short wire item by more than ``k`` bits, not its 5-gram set);
2. **sketch**: the MinHash sketches of the two (boilerplate-stripped) texts agree on at least
   :data:`MIN_SIMILARITY` of their minima (:data:`MIN_PASSAGE_SIMILARITY` when only a lead or chunk
   matched, :data:`MIN_BAND_SIMILARITY` when only a band did), which
   removes different stories that merely share a chunk, a dominant term or a stock phrase;
3. **facts**: the two texts do not both state facts the other lacks, beyond an edit. Template news
   (daily bulletins, earnings tables, recurring meetings) passes 1 and 2 while its dates and ordinals,
   figures or names differ (:mod:`fingerprint_indexer.fingerprint.facts`); a repost, an excerpt or a
   corrected figure keeps nearly all of them. In order: documents published more than
   :data:`MAX_DAYS_APART` days apart (when both give a day; :data:`MAX_BAND_DAYS_APART` for a pair
   found only through a band) are other occurrences; headlines that each
   name someone the other document never names, or give other ordinals, are other stories; two
   different ordinals in the bodies (第2次 vs 第3次 session) are enough; otherwise each kind has its
   own limit on the share of one-sided facts, and lines written from one skeleton but filled with
   other facts ("frames") count too.

A rejected candidate carries the reason (``facts differ: 569 vs 465``) so ``similar --explain`` and
``/v1/similar`` can say why two look-alike items stay apart. docs/quality.md measures each step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.fingerprint.facts import (
    FIGURE,
    NAME,
    OCCURRENCE,
    FactDiff,
    compare_facts,
    compare_frames,
    days_apart,
    is_ordinal,
    title_conflict,
)
from fingerprint_indexer.fingerprint.hamming import hamming
from fingerprint_indexer.fingerprint.sketch import (
    from_bytes,
    from_bytes_many,
    shares_band_many,
    similarities,
    similarity,
)

#: Least share of equal sketch minima (estimated 5-gram Jaccard) for a candidate to be a copy.
MIN_SIMILARITY = 0.3
#: The same for a candidate whose document fingerprints are farther than ``k`` but a lead or chunk pair
#: is within it: the two share a passage, and the rest must agree too for a copy rather than a follow-up
#: that retells the earlier story's paragraphs (24 of 64 minima).
MIN_PASSAGE_SIMILARITY = 0.375
#: The same for a candidate whose fingerprints are all farther than ``k`` and that shares a sketch band:
#: the 5-grams alone must then show the copy. A text of one passage (a headline, a one-line notice: no
#: lead or chunk fingerprint of its own) needs :data:`MIN_SHORT_BAND_SIMILARITY`: its few 5-grams are
#: half a stock opening ("央视网消息（新闻联播）：") in other one-line items.
MIN_BAND_SIMILARITY, MIN_SHORT_BAND_SIMILARITY = 0.5, 0.65
#: Two texts that each state facts of a kind the other lacks are different stories once at least this
#: share of their facts of that kind is one-sided; below it the difference is an edit (a corrected
#: figure, a dropped line). Dates and ordinals identify an occurrence, so they tolerate the least.
MAX_FACT_CHANGE = {OCCURRENCE: 0.3, FIGURE: 0.4, NAME: 0.4}
#: Share of its own names that each side must state alone for names to conflict: one name among many
#: that stand is an edit (a corrected spelling, a place added to a dateline), not another party.
MIN_ONE_SIDED_NAME_SHARE = 0.15
#: Copies are published close together: re-runs and reposts in the labelled real wires lie at most
#: 3 days apart, while template news of other days (bulletins, daily rates, yearly notices) lies further.
#: Documents without a readable publication day are not judged by it.
MAX_DAYS_APART = 3
#: The same for a pair found only through a sketch band: its SimHash moved beyond ``k``, so the text was
#: edited, and an edited text of a later day is a template's next occurrence (the Fed's daily
#: repurchase forecast, a port's ships loading) far more often than a copy.
MAX_BAND_DAYS_APART = 1
#: Lines of one skeleton filled with other facts: different occurrences once at least this many and
#: this share of the aligned lines are refilled (one refilled line is a correction; the rows of a table
#: count one by one, :func:`~fingerprint_indexer.fingerprint.facts.compare_frames`).
MIN_REFILLED, MAX_REFILLED_SHARE = 2, 0.3

__all__ = ["MAX_BAND_DAYS_APART", "MAX_DAYS_APART", "MAX_FACT_CHANGE", "MAX_REFILLED_SHARE",
           "MIN_BAND_SIMILARITY", "MIN_ONE_SIDED_NAME_SHARE", "MIN_PASSAGE_SIMILARITY", "MIN_REFILLED",
           "MIN_SHORT_BAND_SIMILARITY", "MIN_SIMILARITY",
           "Evidence", "Verdict", "check", "check_many", "closest", "closest_many", "explain",
           "facts_conflict", "joins", "same_facts"]  # fmt: skip


@dataclass(frozen=True)
class Verdict:
    """Why two documents are (or are not) near-duplicates."""

    distance: int  # smallest Hamming distance over the document and chunk fingerprints
    matched: tuple[int, int]  # indexes (in each side's fingerprint list) of the closest pair; 0 = document
    similarity: float  # estimated 5-gram Jaccard from the sketches (1.0 when either side has none)
    accepted: bool
    reason: str = ""  # why a candidate was rejected ("" when accepted)
    facts: FactDiff | None = None
    shared_terms: tuple[str, ...] = ()
    band: bool = False  # found through a shared sketch band (every fingerprint pair farther than k)

    def to_dict(self) -> dict[str, Any]:
        matched = ("sketch band" if self.band else "document" if self.matched == (0, 0)
                   else f"chunk {self.matched[0]}~{self.matched[1]}")  # fmt: skip
        out: dict[str, Any] = {
            "distance": self.distance,
            "matched": matched,
            "similarity": round(self.similarity, 3),
            "accepted": self.accepted,
            "shared_terms": list(self.shared_terms),
        }
        if self.reason:
            out["rejected_because"] = self.reason
        if self.facts is not None and (self.facts.only_a or self.facts.only_b):
            out["facts_only_here"] = list(self.facts.only_a)
            out["facts_only_there"] = list(self.facts.only_b)
        return out


def closest(fps_a: Sequence[int], fps_b: Sequence[int]) -> tuple[int, tuple[int, int]]:
    """Smallest Hamming distance between any fingerprint of ``a`` and any of ``b``, and where it is."""
    if not len(fps_a) or not len(fps_b):
        raise ValueError("each side needs at least one fingerprint")
    a = np.asarray(fps_a, dtype=np.uint64)
    b = np.asarray(fps_b, dtype=np.uint64)
    dist = np.bitwise_count(a[:, None] ^ b[None, :])
    i, j = np.unravel_index(int(np.argmin(dist)), dist.shape)
    return int(dist[i, j]), (int(i), int(j))


def closest_many(
    fps_a: Sequence[int] | npt.NDArray[np.uint64], theirs: npt.NDArray[np.uint64], lengths: npt.ArrayLike
) -> npt.NDArray[np.int64]:
    """:func:`closest` distance of ``a`` to each of several candidates at once.

    ``theirs`` holds the candidates' fingerprints back to back, candidate ``c`` owning the next
    ``lengths[c]`` (at least one each); one XOR + popcount over the whole matrix, then a minimum per owner.
    """
    a = np.asarray(fps_a, dtype=np.uint64)
    counts = np.asarray(lengths, dtype=np.int64)
    if not a.size or (counts.size and int(counts.min()) < 1):
        raise ValueError("each side needs at least one fingerprint")
    b = np.asarray(theirs, dtype=np.uint64)
    if int(counts.sum()) != b.size:
        raise ValueError(f"lengths add up to {int(counts.sum())}, not {b.size} fingerprints")
    if not counts.size:
        return np.zeros(0, dtype=np.int64)
    per_value = np.bitwise_count(b[:, None] ^ a[None, :]).min(axis=1)
    starts = np.cumsum(counts) - counts
    return np.minimum.reduceat(per_value, starts).astype(np.int64)


def facts_conflict(a: Evidence, b: Evidence, diff: FactDiff | None = None, band: bool = False) -> str:
    """Why two texts' facts say they report different occurrences ("" when they do not); ``band``: the
    pair was found only through a sketch band, so it is an edited copy and has fewer days."""
    apart = days_apart(a.facts, b.facts)
    if apart is not None and apart[0] > (MAX_BAND_DAYS_APART if band else MAX_DAYS_APART):
        edited = "edited copy " if band else ""
        return f"{edited}published {apart[0]} days apart: {apart[1]} vs {apart[2]}"
    titled = title_conflict(a.facts, b.facts)
    if titled:
        return titled
    diff = diff if diff is not None else compare_facts(a.facts, b.facts)
    occ = diff.of_kind(OCCURRENCE)
    if any(map(is_ordinal, occ.only_a)) and any(map(is_ordinal, occ.only_b)):  # 第2次 here, 第3次 there
        ordinals = FactDiff((), tuple(filter(is_ordinal, occ.only_a)), tuple(filter(is_ordinal, occ.only_b)))
        return ordinals.describe()
    for kind in (OCCURRENCE, FIGURE, NAME):
        part = diff.of_kind(kind) if kind != NAME else _names(diff)
        if part.two_sided and part.changed >= MAX_FACT_CHANGE[kind]:
            return part.describe()
    frames = compare_frames(a.frames, b.frames)
    if frames.refilled >= MIN_REFILLED and frames.share >= MAX_REFILLED_SHARE:
        return (f"same template, other facts in {frames.refilled} of {frames.aligned} shared lines"
                + (f" ({diff.describe()})" if diff.two_sided else ""))
    return ""


def _names(diff: FactDiff) -> FactDiff:
    """The names of a comparison, as far as they can speak: a one-sided name that holds, or is held by,
    one of the other side (网售 / 揭网售, a segmentation artifact; 江苏 / 江苏省) is the same name; and a
    side whose one-sided names are under :data:`MIN_ONE_SIDED_NAME_SHARE` of its names states no other
    party, only an edit (a corrected spelling, comments appended to the other copy)."""
    part = diff.of_kind(NAME)
    a = [n for n in part.only_a if not any(n[1:] in m or m[1:] in n for m in part.only_b)]
    b = [n for n in part.only_b if not any(n[1:] in m or m[1:] in n for m in part.only_a)]
    shared = len(part.shared) + (len(part.only_a) - len(a))
    if len(a) < MIN_ONE_SIDED_NAME_SHARE * (shared + len(a)):
        a = []
    if len(b) < MIN_ONE_SIDED_NAME_SHARE * (shared + len(b)):
        b = []
    return FactDiff(part.shared, tuple(a), tuple(b))


def same_facts(a: Evidence, b: Evidence) -> bool:
    """Whether the facts of two documents agree (the third step alone): what a copy must share with the
    canonical document of the group it joins, however far their fingerprints drifted along the chain."""
    return not facts_conflict(a, b)


def joins(ev: Evidence, match_id: str, root_id: str, root: Evidence) -> bool:
    """Whether a document whose nearest verified match is ``match_id`` may join that match's group, whose
    canonical is ``root_id``: the canonical's facts must agree with its own too, so that one template
    link (A ~ B) does not make it a copy of a different story B was matched to."""
    return root_id == match_id or same_facts(ev, root)


def _sketch_similarity(a: bytes, b: bytes) -> float:
    """Sketch agreement; 1.0 when either side has no sketch (degenerate text: the other checks decide)."""
    if not a or not b:
        return 1.0
    if len(a) != len(b):  # sketches of another size cannot confirm anything
        return 0.0
    return similarity(from_bytes(a), from_bytes(b))


def _shares_band(a: bytes, b: bytes) -> bool:
    if not a or len(a) != len(b):
        return False
    return bool(shares_band_many(from_bytes(a), from_bytes(b)[None, :])[0])


def _judge(a: Evidence, b: Evidence, distance: int, where: tuple[int, int], sim: float, k: int,
           band: bool) -> Verdict:  # fmt: skip
    """Steps 2 and 3 of the rule, given step 1 (the distance, and whether a sketch band is shared) and the
    sketch similarity."""
    if distance > k and not band:  # callers pass ``band`` only for pairs farther than k
        return Verdict(distance, where, sim, False, f"distance {distance} > {k}")
    whole = hamming(a.fingerprints[0], b.fingerprints[0]) <= k
    short = len(a.fingerprints) < 2 or len(b.fingerprints) < 2
    need = ((MIN_SHORT_BAND_SIMILARITY if short else MIN_BAND_SIMILARITY) if band
            else MIN_SIMILARITY if whole else MIN_PASSAGE_SIMILARITY)  # fmt: skip
    if sim < need:
        return Verdict(distance, where, sim, False, f"texts differ: similarity {sim:.2f} < {need}", band=band)
    diff = compare_facts(a.facts, b.facts)
    reason = facts_conflict(a, b, diff, band)
    return Verdict(distance, where, sim, not reason, reason, diff, band=band)


def check(a: Evidence, b: Evidence, k: int) -> Verdict:
    """The rule for one pair (see the module docstring)."""
    d, where = closest(a.fingerprints, b.fingerprints)
    band = d > k and _shares_band(a.sketch, b.sketch)
    return _judge(a, b, d, where, _sketch_similarity(a.sketch, b.sketch), k, band)


def check_many(query: Evidence, candidates: Sequence[Evidence], k: int) -> list[Verdict]:
    """:func:`check` of ``query`` against each candidate: distances, sketches and bands compared as
    matrices, facts only for the candidates that pass both."""
    if not candidates:
        return []
    lengths = [len(c.fingerprints) for c in candidates]
    flat = np.fromiter((f for c in candidates for f in c.fingerprints), dtype=np.uint64, count=sum(lengths))
    dist = closest_many(query.fingerprints, flat, lengths)
    sims = np.ones(len(candidates), dtype=np.float64)
    bands = np.zeros(len(candidates), dtype=np.bool_)
    if query.sketch:
        same = [i for i, c in enumerate(candidates) if len(c.sketch) == len(query.sketch)]
        if same:
            q = from_bytes(query.sketch)
            rows = from_bytes_many([candidates[i].sketch for i in same], q.size)
            sims[same] = similarities(q, rows)
            bands[same] = shares_band_many(q, rows) & (dist[same] > k)
        for i, c in enumerate(candidates):
            if c.sketch and len(c.sketch) != len(query.sketch):
                sims[i] = 0.0
    out = []
    for i, c in enumerate(candidates):
        d, sim, band = int(dist[i]), float(sims[i]), bool(bands[i])
        if d > k or sim < MIN_SIMILARITY:  # where the closest pair lies does not matter for these
            out.append(_judge(query, c, d, (0, 0), sim, k, band))
        else:
            out.append(_judge(query, c, d, closest(query.fingerprints, c.fingerprints)[1], sim, k, band))
    return out


def explain(
    a: Evidence, b: Evidence, k: int, terms_a: Sequence[str] = (), terms_b: Sequence[str] = ()
) -> Verdict:
    """:func:`check`, with the top terms the two documents share (what ``--explain`` shows)."""
    v = check(a, b, k)
    theirs = set(terms_b)
    return replace(v, shared_terms=tuple(t for t in terms_a if t in theirs)[:10])


def document_distance(fp_a: int, fp_b: int) -> int:
    """Hamming distance of the two document fingerprints alone (what a plain k-search reports)."""
    return hamming(fp_a, fp_b)
