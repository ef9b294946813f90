"""The one verification rule: is a near-duplicate candidate the same story, and if not, why not.

The block index returns candidates whose document, lead or chunk fingerprints lie within Hamming
distance ``k``. Every writer and reader (embedded pipeline, ``similar``, ``es index``, ``es dedupe``,
the sidecar) accepts a candidate only through :func:`check` / :func:`check_many`, which apply, in order
(the step names of :data:`~fingerprint_indexer.verification.policy.STEPS`):

1. **distance**: some fingerprint pair within ``k``, or else a band of sketch minima in common (the
   MinHash LSH keys of :func:`fingerprint_indexer.fingerprint.sketch.band_keys`: an edit moves the
   SimHash of a headline or a short wire item by more than ``k`` bits, not its 5-gram set);
2. **text**: the MinHash sketches of the two (boilerplate-stripped) texts agree on enough of their
   minima, by the kind of evidence found (:meth:`VerifyPolicy.text_need`): least for document
   fingerprints within ``k``, more for a shared passage, more again for a band-only match or a text of
   one passage; and for that weaker evidence, more the farther apart in time the two were published
   (graded, never a cliff: time is evidence, not a veto);
3. **title**, **ordinals**, **facts**, **frames**: the two texts do not state other facts beyond an
   edit. Template news (daily bulletins, earnings tables, recurring meetings) passes 1 and 2 while its
   dates and ordinals, figures or names differ; a repost, an excerpt or a corrected figure keeps nearly
   all of them. Headlines that each name someone the other document never names, or give other
   ordinals or figures, are other stories; two different ordinals in the bodies (第2次 vs 第3次) are
   enough; a text published weeks after the other that states facts the other does not is the next
   occurrence of a recurring item (a copy states its original's facts or fewer; the share of new facts
   allowed falls with the days apart); otherwise each kind has its own limit on the share of one-sided
   facts, and lines written from
   one skeleton but filled with other facts ("frames") count too. Two texts whose fact-bearing lines
   mostly stand (same skeleton, same facts) are one text edited, whatever a few changed lines state.

Every threshold is a field of one :class:`~fingerprint_indexer.verification.policy.VerifyPolicy`. A
rejected candidate carries the step and the reason (``facts: figures differ: 569 vs 465``) so
``similar --explain`` and ``/v1/similar`` say why two look-alike items stay apart. docs/quality.md
measures each step.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.fingerprint.facts import FIGURE, MAX_FACTS, MAX_FRAMES, NAME, OCCURRENCE
from fingerprint_indexer.fingerprint.hamming import hamming
from fingerprint_indexer.fingerprint.sketch import (
    BAND_ROWS,
    BANDS,
    from_bytes,
    from_bytes_many,
    shares_band_many,
    similarities,
    similarity,
)
from fingerprint_indexer.verification.compare import (
    READ_DAYS,
    FactDiff,
    compare_facts,
    compare_frames,
    days_apart,
    days_of,
    is_ordinal,
    natural_order,
    title_conflict,
)
from fingerprint_indexer.verification.policy import DEFAULT_POLICY, VerifyPolicy

__all__ = ["Evidence", "Verdict", "check", "check_many", "closest", "closest_many", "explain",
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
    step: str = ""  # the step of the rule that rejected it (policy.STEPS; "" when accepted)
    policy: str = DEFAULT_POLICY.tag  # the tag of the policy that judged

    def to_dict(self) -> dict[str, Any]:
        matched = ("sketch band" if self.band else "document" if self.matched == (0, 0)
                   else f"chunk {self.matched[0]}~{self.matched[1]}")  # fmt: skip
        out: dict[str, Any] = {
            "distance": self.distance,
            "matched": matched,
            "similarity": round(self.similarity, 3),
            "accepted": self.accepted,
            "shared_terms": list(self.shared_terms),
            "policy": self.policy,
        }
        if self.reason:
            out["rejected_at"] = self.step
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


def one_passage(ev: Evidence) -> bool:
    """A text of one passage (a headline, a one-line notice): it has no lead or chunk fingerprint."""
    return len(ev.fingerprints) < 2


def facts_conflict(
    a: Evidence, b: Evidence, policy: VerifyPolicy = DEFAULT_POLICY, diff: FactDiff | None = None,
    days: int | None = READ_DAYS,
) -> tuple[str, str]:
    """``(step, reason)`` why two texts' facts say they report different occurrences (``("", "")`` when
    they do not): the fact steps of the rule."""
    titled = title_conflict(a.facts, b.facts)
    if titled:
        return "title", titled
    days = days_of(a.facts, b.facts, days)
    diff = diff if diff is not None else compare_facts(a.facts, b.facts, policy, days=days)
    occ = diff.of_kind(OCCURRENCE)
    if any(map(is_ordinal, occ.only_a)) and any(map(is_ordinal, occ.only_b)):  # 第2次 here, 第3次 there
        ordinals = FactDiff((), tuple(filter(is_ordinal, occ.only_a)), tuple(filter(is_ordinal, occ.only_b)))
        return "ordinals", ordinals.describe()
    later = _new_in_later(a, b, diff, policy, days)
    if later:
        return "facts", later
    allowance = policy.edit_share(short=one_passage(a) or one_passage(b), days=days)
    replaced = min(len(diff.only_a), len(diff.only_b))
    edited = replaced <= allowance * (replaced + len(diff.shared))
    limits = {OCCURRENCE: policy.max_occurrence_change, FIGURE: policy.max_figure_change,
              NAME: policy.max_name_change}  # fmt: skip
    for kind in (OCCURRENCE, FIGURE, NAME):
        if edited and (kind != OCCURRENCE or policy.edits_forgive_dates):
            continue
        part = diff.of_kind(kind) if kind != NAME else _names(diff, policy)
        if part.two_sided and part.changed >= limits[kind]:
            return "facts", part.describe()
    frames = compare_frames(a.frames, b.frames)
    if (frames.refilled >= policy.min_refilled and frames.share >= policy.max_refilled_share
            and not (edited and policy.edits_forgive_frames)):  # fmt: skip
        return "frames", (f"same template, other facts in {frames.refilled} of {frames.aligned} shared lines"
                          + (f" ({diff.describe()})" if diff.two_sided else ""))  # fmt: skip
    return "", ""


def _new_in_later(a: Evidence, b: Evidence, diff: FactDiff, policy: VerifyPolicy, days: int | None) -> str:
    """Why the later of two texts, ``days`` apart, is another occurrence ("" when it is not): published
    past the grace period, it states more facts its look-alike does not than
    :meth:`VerifyPolicy.new_fact_share` allows (a copy states its original's facts or fewer; this year's
    anniversary, another official, another language edition are new facts)."""
    allowed = policy.new_fact_share(days)
    if allowed >= 1.0:  # undated, or within the grace period: which text is later does not matter
        return ""
    apart = days_apart(a.facts, b.facts)
    if apart is None or apart[1] == apart[2]:
        return ""
    a_later = apart[1] > apart[2]
    names = _real_names(diff)  # every real name counts: one new name is another official, another edition
    own = diff.only_a if a_later else diff.only_b
    new = sorted([f for f in own if not f.startswith(NAME)] + list(names.only_a if a_later else names.only_b),
                 key=natural_order)  # fmt: skip
    if len(new) <= allowed * (len(new) + len(diff.shared)):
        return ""
    shown = ", ".join(f[1:] for f in new[:3])
    return (f"new facts {days} days later: {shown} ({len(new)} of {len(new) + len(diff.shared)} facts, "
            f"at most {allowed:.0%})")


def _real_names(diff: FactDiff) -> FactDiff:
    """The names of a comparison without segmentation artifacts: a one-sided name that holds, or is held
    by, one of the other side (网售 / 揭网售; 江苏 / 江苏省) is the same name, counted as shared."""
    part = diff.of_kind(NAME)
    a = tuple(n for n in part.only_a if not any(n[1:] in m or m[1:] in n for m in part.only_b))
    b = tuple(n for n in part.only_b if not any(n[1:] in m or m[1:] in n for m in part.only_a))
    return FactDiff(part.shared + tuple(n for n in part.only_a if n not in a), a, b)


def _names(diff: FactDiff, policy: VerifyPolicy) -> FactDiff:
    """The names of a comparison, as far as they can speak: a one-sided name that holds, or is held by,
    one of the other side (网售 / 揭网售, a segmentation artifact; 江苏 / 江苏省) is the same name; and a
    side whose one-sided names are under ``policy.min_one_sided_name_share`` of its names states no other
    party, only an edit (a corrected spelling, comments appended to the other copy)."""
    real = _real_names(diff)
    a, b, shared = real.only_a, real.only_b, len(real.shared)
    if len(a) < policy.min_one_sided_name_share * (shared + len(a)):
        a = ()
    if len(b) < policy.min_one_sided_name_share * (shared + len(b)):
        b = ()
    return FactDiff(diff.of_kind(NAME).shared, a, b)


def same_facts(a: Evidence, b: Evidence, policy: VerifyPolicy = DEFAULT_POLICY) -> bool:
    """Whether the facts of two documents agree (the fact steps alone): what a copy must share with the
    canonical document of the group it joins, however far their fingerprints drifted along the chain."""
    return not facts_conflict(a, b, policy)[0]


def joins(ev: Evidence, match_id: str, root_id: str, root: Evidence, policy: VerifyPolicy = DEFAULT_POLICY
          ) -> bool:  # fmt: skip
    """Whether a document whose nearest verified match is ``match_id`` may join that match's group, whose
    canonical is ``root_id``: the canonical's facts must agree with its own too, so that one template
    link (A ~ B) does not make it a copy of a different story B was matched to."""
    return root_id == match_id or same_facts(ev, root, policy)


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


class FactParams(NamedTuple):
    """What the compiled fact steps read for one pair: the policy's thresholds at its days apart, and the
    samples' sizes (a sample this full may have dropped facts above its largest hash)."""

    need_figures: float
    need_facts: float
    new_fact_share: float
    edit_share: float
    max_occurrence_change: float
    max_figure_change: float
    max_name_change: float
    edits_forgive_dates: bool
    edits_forgive_frames: bool
    min_one_sided_name_share: float
    min_refilled: float
    max_refilled_share: float
    max_facts: int = MAX_FACTS
    max_frames: int = MAX_FRAMES


@functools.lru_cache(maxsize=4096)
def _fact_params(policy: VerifyPolicy, days: int | None, short: bool) -> FactParams:
    need_figures, need_facts = policy.correction_needs(days)
    return FactParams(need_figures, need_facts, policy.new_fact_share(days),
                      policy.edit_share(short=short, days=days), policy.max_occurrence_change,
                      policy.max_figure_change, policy.max_name_change, policy.edits_forgive_dates,
                      policy.edits_forgive_frames, policy.min_one_sided_name_share, policy.min_refilled,
                      policy.max_refilled_share)  # fmt: skip


def fact_steps_compiled(a: Evidence, b: Evidence, policy: VerifyPolicy, apart: tuple[int, str, str] | None
                        ) -> tuple[str, FactDiff] | None:  # fmt: skip
    """``(step, comparison)`` of the fact steps for two texts ``apart`` (:func:`days_apart`) by the
    compiled port: the step that rejects the pair ("" when none does) and :func:`compare_facts`'s
    comparison; None when the compiled core is off or leaves the pair to :func:`fact_steps_reference`."""
    core = native.core()
    if core is None:
        return None
    days = apart[0] if apart is not None else None
    later = None if apart is None or apart[1] == apart[2] else apart[1] > apart[2]
    short = one_passage(a) or one_passage(b)
    got = core.fact_steps(a.facts, b.facts, a.frames, b.frames, later, _fact_params(policy, days, short))
    return None if got is None else (got[0], FactDiff(got[1], got[2], got[3]))


def fact_steps_reference(a: Evidence, b: Evidence, policy: VerifyPolicy, days: int | None
                         ) -> tuple[str, str, FactDiff]:  # fmt: skip
    """``(step, reason, comparison)`` of the fact steps (:func:`compare_facts`, :func:`facts_conflict`)
    for two texts ``days`` apart, in Python."""
    diff = compare_facts(a.facts, b.facts, policy, days=days)
    step, reason = facts_conflict(a, b, policy, diff, days)
    return step, reason, diff


def _fact_steps(a: Evidence, b: Evidence, policy: VerifyPolicy, apart: tuple[int, str, str] | None
                ) -> tuple[str, str, FactDiff]:  # fmt: skip
    """``(step, reason, comparison)`` of the fact steps for two texts ``apart``: the compiled port decides
    where it can; a pair it rejects or cannot judge goes to the reference, which gives the reason."""
    got = fact_steps_compiled(a, b, policy, apart)
    if got is not None and not got[0]:
        return "", "", got[1]
    return fact_steps_reference(a, b, policy, apart[0] if apart is not None else None)


def _judge(a: Evidence, b: Evidence, distance: int, where: tuple[int, int], sim: float, k: int,
           band: bool, policy: VerifyPolicy) -> Verdict:  # fmt: skip
    """Steps 2-6 of the rule, given step 1 (the distance, and whether a sketch band is shared) and the
    sketch similarity."""
    tag = policy.tag
    if distance > k and not band:  # callers pass ``band`` only for pairs farther than k
        return Verdict(distance, where, sim, False, f"distance {distance} > {k}", step="distance", policy=tag)
    whole = hamming(a.fingerprints[0], b.fingerprints[0]) <= k
    short, notices = one_passage(a) or one_passage(b), one_passage(a) and one_passage(b)
    apart = days_apart(a.facts, b.facts)
    days = apart[0] if apart is not None else None  # (days_of)
    need = policy.text_need(band=band, short=short, notices=notices, whole=whole, days=days)
    if sim < need:
        when = f", published {days} days apart" if policy.staleness(days) > 0 else ""
        return Verdict(distance, where, sim, False, f"texts differ: similarity {sim:.2f} < {need:.2f}{when}",
                       band=band, step="text", policy=tag)  # fmt: skip
    step, reason, diff = _fact_steps(a, b, policy, apart)
    return Verdict(distance, where, sim, not reason, reason, diff, band=band, step=step, policy=tag)


def check(a: Evidence, b: Evidence, k: int, policy: VerifyPolicy = DEFAULT_POLICY) -> Verdict:
    """The rule for one pair (see the module docstring)."""
    d, where = closest(a.fingerprints, b.fingerprints)
    band = d > k and _shares_band(a.sketch, b.sketch)
    return _judge(a, b, d, where, _sketch_similarity(a.sketch, b.sketch), k, band, policy)


def check_many(
    query: Evidence, candidates: Sequence[Evidence], k: int, policy: VerifyPolicy = DEFAULT_POLICY
) -> list[Verdict]:
    """:func:`check` of ``query`` against each candidate: distances, sketches and bands compared first
    (compiled, or as matrices: :func:`compare_candidates_reference`), facts only for the candidates that
    pass both."""
    if not candidates:
        return []
    compared = None
    core = native.core()
    if core is not None:
        try:
            compared = core.compare_candidates(query.fingerprints, query.sketch,
                                               [(c.fingerprints, c.sketch) for c in candidates], k,
                                               BANDS, BAND_ROWS)  # fmt: skip
        except (TypeError, OverflowError):  # not 64-bit fingerprints or not bytes: the reference's to say
            compared = None
    if compared is None:
        compared = compare_candidates_reference(query, candidates, k, policy)
    out = []
    for c, (d, i, j, sim, band) in zip(candidates, compared, strict=True):
        where = (i, j) if _where_matters(d, sim, k, policy) else (0, 0)
        out.append(_judge(query, c, d, where, sim, k, band, policy))
    return out


def _where_matters(distance: int, sim: float, k: int, policy: VerifyPolicy) -> bool:
    """Whether a verdict says where the closest pair of fingerprints lies: only for a candidate near
    enough and alike enough (for the others it is (0, 0), and the reference does not look for it)."""
    return distance <= k and sim >= policy.min_similarity


def compare_candidates_reference(query: Evidence, candidates: Sequence[Evidence], k: int,
                                 policy: VerifyPolicy = DEFAULT_POLICY
                                 ) -> list[tuple[int, int, int, float, bool]]:  # fmt: skip
    """Per candidate: the smallest distance over all fingerprint pairs, where it lies (only for one within
    ``k`` and alike enough, else (0, 0)), the sketches' agreement, and whether a band is shared by one
    farther than ``k``; as matrices."""
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
        if _where_matters(d, sim, k, policy):
            where = closest(query.fingerprints, c.fingerprints)[1]
            out.append((d, where[0], where[1], sim, band))
        else:
            out.append((d, 0, 0, sim, band))
    return out


def explain(
    a: Evidence, b: Evidence, k: int, terms_a: Sequence[str] = (), terms_b: Sequence[str] = (),
    policy: VerifyPolicy = DEFAULT_POLICY,
) -> Verdict:
    """:func:`check`, with the top terms the two documents share (what ``--explain`` shows)."""
    v = check(a, b, k, policy)
    theirs = set(terms_b)
    return replace(v, shared_terms=tuple(t for t in terms_a if t in theirs)[:10])


def document_distance(fp_a: int, fp_b: int) -> int:
    """Hamming distance of the two document fingerprints alone (what a plain k-search reports)."""
    return hamming(fp_a, fp_b)
