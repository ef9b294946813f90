"""Every threshold of verification in one frozen object, and the tag that names it.

A decision says which rule made it: stores, index mappings and every decision carry
:attr:`VerifyPolicy.tag` beside the fingerprint version. The tag is derived from the values, so a policy
with any threshold changed is a different rule with a different tag. docs/quality.md says which corpus
each threshold was chosen on and what it does on the others.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields
from functools import cached_property
from typing import Any

#: Steps of the rule, in the order they run; a rejection names the step that made it.
STEPS = ("distance", "text", "title", "ordinals", "facts", "frames")


@dataclass(frozen=True)
class VerifyPolicy:
    """The thresholds of :func:`fingerprint_indexer.verification.check`, each with the variable it keys on.

    Text (5-gram sketch similarity a candidate needs, by the kind of fingerprint evidence found):
    """

    #: document fingerprints within ``k``: the two texts are mostly the same words.
    min_similarity: float = 0.3
    #: only a lead or chunk pair within ``k`` (a shared passage): the rest must agree too, or it is a
    #: follow-up retelling one paragraph of an earlier story.
    min_passage_similarity: float = 0.375
    #: only a shared sketch band (every fingerprint farther than ``k``): the 5-grams alone show the copy.
    min_band_similarity: float = 0.5
    #: the same for two texts of one passage each (headlines, one-line notices), whose few 5-grams are
    #: half a stock opening in other one-line items; a one-passage excerpt of a long text is not held to
    #: it (its 5-grams are a small part of the long text's, so a stock opening alone never reaches 0.5).
    min_short_band_similarity: float = 0.65

    # Time (keys on the publication days of the two documents, when both give one). Time is evidence,
    # never a veto: a copy by text and facts is a copy at any distance in time. Weaker evidence (a
    # band-only match, a text of one passage, a shared passage) needs more similarity the farther apart
    # the two were published, growing with the logarithm of the days beyond a grace period.
    #: days apart that count as "together" (a re-run, a crawl of the next morning).
    time_grace_days: int = 1
    #: days apart at which the bar reaches its ``stale_*`` value; it grows no further.
    time_horizon_days: int = 30
    #: band-only match, at the horizon.
    stale_band_similarity: float = 0.8
    #: band-only match of two one-passage texts (recurring notices: a daily rate, a weekly tender), at
    #: the horizon.
    stale_short_band_similarity: float = 0.95
    #: two one-passage texts matched by fingerprint, at the horizon: only the same words repeat a notice
    #: weeks later.
    stale_short_similarity: float = 0.95
    #: a shared passage (lead or chunk) only, at the horizon.
    stale_passage_similarity: float = 0.375

    # Facts (keys on what the two texts state; fingerprint_indexer.fingerprint.facts extracts them).
    #: share of one-sided dates and ordinals at which two texts are other occurrences.
    max_occurrence_change: float = 0.3
    #: share of one-sided figures at which two texts are other occurrences.
    max_figure_change: float = 0.4
    #: share of one-sided names at which two texts name other parties.
    max_name_change: float = 0.4
    #: share of its own names each side must state alone for names to conflict (one name among many
    #: that stand is a corrected spelling or an added place).
    min_one_sided_name_share: float = 0.15
    #: shared figures a text must state for one figure one digit off to count as its correction.
    min_figures_for_correction: int = 3
    #: shared facts (Latin names aside) for one changed date or ordinal to count as a corrected typo.
    min_facts_for_occurrence_correction: int = 30
    #: the same two counts for documents published ``time_horizon_days`` or more apart (graded in
    #: between): a figure one digit off in a re-send of the same day is a correction, in a notice of a
    #: week later it is the next occurrence (the Fed's 1.5 then 2.5 billion of repurchases).
    stale_figures_for_correction: int = 30
    stale_facts_for_occurrence_correction: int = 120

    # Frames (keys on fact-bearing lines: a line's skeleton with numbers and names masked, and its facts).
    #: lines of one skeleton filled with other facts: other occurrences at this many ...
    min_refilled: int = 2
    #: ... and this share of the aligned lines.
    max_refilled_share: float = 0.3

    # Edits (keys on the length of the texts, on how many facts stand and on the days between them): a
    # long text that states a few facts in place of the other's, among many facts both state, is one
    # story edited (a corrected figure, a changed name, a mistyped date); a short notice that does is
    # another occurrence, and so, more and more, is a long one published weeks later (a monthly table).
    # Ordinals are never forgiven this way: they name the occurrence.
    #: largest share of replaced facts (``min`` of the two sides' one-sided facts, over those plus the
    #: shared ones) that two texts of more than one passage may have and still be one story edited.
    max_edit_share: float = 0.15
    #: the same for texts published ``time_horizon_days`` or more apart (graded in between).
    stale_edit_share: float = 0.05
    #: whether the edit allowance also forgives lines refilled with other facts (frames).
    edits_forgive_frames: bool = False
    #: whether it also forgives dates (never ordinals) replaced among many standing facts.
    edits_forgive_dates: bool = True

    # New facts (keys on the days between the two documents and on which one is later): a copy states
    # what its original states, or less (an excerpt); a text published weeks later that states facts its
    # look-alike does not is the next occurrence of a recurring item (this year's anniversary, another
    # official expelled, another language edition), however many words the template shares. A re-send
    # or an update of the next days may add facts freely; the share allowed falls with the logarithm of
    # the days, as the other time thresholds do.
    #: largest share of the later text's compared facts that it may state alone, from the horizon on
    #: (within the grace period it may state any; 1.0 switches the rule off).
    stale_new_fact_share: float = 0.1

    name: str = "default"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not (0.0 <= value <= 1.0):
                raise ValueError(f"VerifyPolicy.{f.name} must lie in [0, 1], not {value}")
            if isinstance(value, int) and not isinstance(value, bool) and value < 0:
                raise ValueError(f"VerifyPolicy.{f.name} must not be negative, not {value}")
        if self.time_horizon_days <= self.time_grace_days:
            raise ValueError("VerifyPolicy.time_horizon_days must exceed time_grace_days")

    @cached_property
    def tag(self) -> str:
        """``default@1a2b3c4d``: the name and a digest of every threshold (what decisions record)."""
        values = {k: v for k, v in asdict(self).items() if k != "name"}
        digest = hashlib.blake2b(json.dumps(values, sort_keys=True).encode(), digest_size=4).hexdigest()
        return f"{self.name}@{digest}"

    def staleness(self, days: int | None) -> float:
        """0 for documents published within the grace period (or without days), rising with the
        logarithm of the days beyond it to 1 at the horizon."""
        if days is None or days <= self.time_grace_days:
            return 0.0
        span = self.time_horizon_days - self.time_grace_days
        return min(1.0, math.log1p(days - self.time_grace_days) / math.log1p(span))

    def text_need(self, *, band: bool, short: bool, whole: bool, days: int | None,
                  notices: bool | None = None) -> float:  # fmt: skip
        """The sketch similarity a candidate needs, given how it was found (``band``: through a sketch
        band only; ``whole``: its document fingerprints are within k), whether either text is one
        passage (``short``), whether both are (``notices``: two one-passage items, what a recurring
        template writes; default ``short``) and how many days apart the two were published."""
        notices = short if notices is None else notices
        if band:
            base = self.min_short_band_similarity if notices else self.min_band_similarity
            stale = self.stale_short_band_similarity if notices else self.stale_band_similarity
        elif notices:
            base, stale = self.min_similarity, self.stale_short_similarity
        elif whole:
            return self.min_similarity  # the same words throughout: strong at any distance in time
        else:
            base, stale = self.min_passage_similarity, self.stale_passage_similarity
        return max(base, self.graded(base, stale, days))  # a bar never falls with time

    def graded(self, base: float, stale: float, days: int | None) -> float:
        """``base`` within the grace period, ``stale`` from the horizon on, and in between moved from one
        toward the other by :meth:`staleness`: how every threshold that keys on time is graded."""
        stale_share = self.staleness(days)
        return stale if stale_share >= 1.0 else base + stale_share * (stale - base)

    def edit_share(self, *, short: bool, days: int | None) -> float:
        """The share of replaced facts an edit may have (0 for a text of one passage)."""
        if short:
            return 0.0
        # an allowance never grows with time
        return min(self.max_edit_share, self.graded(self.max_edit_share, self.stale_edit_share, days))

    def new_fact_share(self, days: int | None) -> float:
        """The share of its compared facts the later of two texts may state alone, ``days`` apart (1.0,
        any, within the grace period or without days)."""
        return self.graded(1.0, self.stale_new_fact_share, days)

    def correction_needs(self, days: int | None) -> tuple[float, float]:
        """Shared figures, and shared facts, that a one-digit figure change, and a single changed date or
        ordinal, need to count as corrections, ``days`` apart."""
        # what a correction needs never falls with time
        figures = max(self.min_figures_for_correction, self.graded(
            self.min_figures_for_correction, self.stale_figures_for_correction, days))
        facts = max(self.min_facts_for_occurrence_correction, self.graded(
            self.min_facts_for_occurrence_correction, self.stale_facts_for_occurrence_correction, days))
        return float(figures), float(facts)

    def to_dict(self) -> dict[str, Any]:
        """Every threshold, the name and the tag (what ``fingerprint-indexer policy`` prints)."""
        return {**asdict(self), "tag": self.tag}


#: The shipped policy.
DEFAULT_POLICY = VerifyPolicy()
