"""How two documents' facts compare: shared and one-sided facts, refilled lines, days and headlines.

Extraction (what a text states) lives in :mod:`fingerprint_indexer.fingerprint.facts`; this module reads
two extracted samples side by side for the verification rule. Bottom-k samples are compared only below
the smaller sample's cut-off, where both are complete, so an excerpt never looks like a conflict. The
thresholds are the :class:`~fingerprint_indexer.verification.policy.VerifyPolicy`'s.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.facts import (
    DAY,
    FIGURE,
    MAX_FACTS,
    MAX_FRAMES,
    NAME,
    OCCURRENCE,
    TITLE,
    fact_hash,
)
from fingerprint_indexer.verification.policy import DEFAULT_POLICY, VerifyPolicy

KIND_WORDS = {OCCURRENCE: "dates/ordinals", FIGURE: "figures", NAME: "names"}


@dataclass(frozen=True)
class FrameDiff:
    """Lines of the skeletons two texts share, and how many of them hold other facts on each side."""

    aligned: int
    refilled: int

    @property
    def share(self) -> float:
        return self.refilled / self.aligned if self.aligned else 0.0


def compare_frames(a: Sequence[int], b: Sequence[int], limit: int = MAX_FRAMES) -> FrameDiff:
    """Skeletons both texts have (below the smaller bottom-k cut-off), compared line by line.

    A skeleton can fill several lines of one text: the rows of a rate table, a results list. Of a shared
    skeleton filled ``n_a`` and ``n_b`` times, ``min(n_a, n_b)`` lines align, and a line filled on each
    side with facts the other side never puts there is refilled: ``min`` of the two one-sided fillings.
    So a row added or dropped is an edit, and a table whose rows all carry other figures is another
    occurrence. At the cut-off skeleton itself a full sample may hold only some of its fillings, so the
    comparison stops below it.
    """
    cut = min((max(f >> 32 for f in s) if len(s) >= limit else 1 << 32) for s in (a, b))
    fa: dict[int, set[int]] = {}
    fb: dict[int, set[int]] = {}
    for src, dst in ((a, fa), (b, fb)):
        for f in src:
            if f >> 32 < cut:
                dst.setdefault(f >> 32, set()).add(f & 0xFFFFFFFF)
    shared = fa.keys() & fb.keys()
    aligned = sum(min(len(fa[k]), len(fb[k])) for k in shared)
    refilled = sum(min(len(fa[k] - fb[k]), len(fb[k] - fa[k])) for k in shared)
    return FrameDiff(aligned, refilled)


ORDINAL_UNITS = "届次号期批轮"


def is_ordinal(fact: str) -> bool:
    """An ordinal or session (第33次, 14届, 神舟20号): it names which occurrence a text is about."""
    return fact.startswith(OCCURRENCE) and (fact.startswith(OCCURRENCE + "第") or fact[-1:] in ORDINAL_UNITS)


@dataclass(frozen=True)
class FactDiff:
    """How two texts' facts compare, on the facts both samples can speak for."""

    shared: tuple[str, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]

    def of_kind(self, kind: str) -> FactDiff:
        """The same comparison restricted to one kind of fact."""
        def pick(xs: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(x for x in xs if x.startswith(kind))

        return FactDiff(pick(self.shared), pick(self.only_a), pick(self.only_b))

    @property
    def two_sided(self) -> bool:
        """Each text states something the other does not."""
        return bool(self.only_a) and bool(self.only_b)

    @property
    def changed(self) -> float:
        """Share of the compared facts found on one side only (0 when neither text has facts)."""
        union = len(self.shared) + len(self.only_a) + len(self.only_b)
        return (len(self.only_a) + len(self.only_b)) / union if union else 0.0

    def describe(self, most: int = 3) -> str:
        """``figures differ: 569, 34 vs 465, 56`` (what a user reads in ``--explain``)."""
        kinds = {f[0] for f in self.only_a + self.only_b if f}
        words = "/".join(KIND_WORDS[k] for k in (OCCURRENCE, FIGURE, NAME) if k in kinds) or "facts"
        a = ", ".join(f[1:] for f in sorted(self.only_a, key=natural_order)[:most])
        b = ", ".join(f[1:] for f in sorted(self.only_b, key=natural_order)[:most])
        return f"{words} differ: {a or '-'} vs {b or '-'}"


def natural_order(fact: str) -> tuple[str, int, float, str]:
    """Occurrences first, then figures, then names; numbers by value."""
    order = {OCCURRENCE: "0", FIGURE: "1", NAME: "2"}.get(fact[:1], "3")
    try:
        return (order, 0, float(fact[1:].replace(",", ".")), fact)
    except ValueError:
        return (order, 1, 0.0, fact)


#: ``days`` of :func:`compare_facts` and the rule: read the days apart from the two samples' DAY facts.
READ_DAYS = -1


def days_of(a: Sequence[str], b: Sequence[str], days: int | None = READ_DAYS) -> int | None:
    """``days`` when given, else how many days apart the two samples say their documents were published
    (None unless both say)."""
    if days != READ_DAYS:
        return days
    apart = days_apart(a, b)
    return apart[0] if apart is not None else None


def compare_facts(
    a: Sequence[str], b: Sequence[str], policy: VerifyPolicy = DEFAULT_POLICY, limit: int = MAX_FACTS,
    days: int | None = READ_DAYS,
) -> FactDiff:
    """Shared and one-sided facts of two fact samples (the facts :func:`analyse` returns).

    A sample that holds ``limit`` facts may have dropped some above its largest hash, so only facts up to
    the smaller of the two cut-offs are compared: below it both samples are complete. The samples may come
    in any order (Elasticsearch returns doc values sorted by value). ``days`` apart, when the caller has
    read them already (:data:`READ_DAYS`: read them here).
    """
    # a correction is re-sent soon: far apart, it needs more facts that stand
    need_figures, need_facts = policy.correction_needs(days_of(a, b, days))
    a = [f for f in a if f[:1] not in (DAY, TITLE)]  # compared by days_apart and title_conflict
    b = [f for f in b if f[:1] not in (DAY, TITLE)]
    cut = min((max(map(fact_hash, s)) if len(s) >= limit else 1 << 64) for s in (a, b))
    sa = {f for f in a if fact_hash(f) <= cut}
    sb = {f for f in b if fact_hash(f) <= cut}
    only_a, only_b = sa - sb, sb - sa
    pairs = [(x, y) for x in only_a for y in only_b if _one_digit_apart(x, y)]
    figures = sum(f.startswith(FIGURE) for f in sa & sb)
    # a correction fixes one figure among several that stand; many near-equal figures (a table of other
    # days' counts) or one figure of a short notice (another company's dividend) are other facts
    corrected = set(pairs[0]) if len(pairs) == 1 and figures >= need_figures else set()
    # one date or ordinal changed among very many facts that stand is a corrected typo: another
    # occurrence of a template (another day's bulletin, session, launch) changes more than one fact
    occ_a = [f for f in only_a if f.startswith(OCCURRENCE)]
    occ_b = [f for f in only_b if f.startswith(OCCURRENCE)]
    # capitalised Latin words are a table's row and column labels as often as names: they do not make a
    # new day's table a typo
    standing = sum(f[:1] != NAME or not f.isascii() for f in sa & sb)
    if len(occ_a) == 1 and len(occ_b) == 1 and standing >= need_facts:
        corrected |= {occ_a[0], occ_b[0]}
    shared = (sa & sb) | corrected
    return FactDiff(tuple(sorted(shared)), tuple(sorted(only_a - corrected)),
                    tuple(sorted(only_b - corrected)))  # fmt: skip




def _one_digit_apart(x: str, y: str) -> bool:
    """A corrected figure: two figures of one length (two digits or more), one digit changed (1972 / 1927
    is not; 250 / 251 and 600000 / 606000 are). Different occurrences' figures rarely differ so little;
    dates and ordinals (2023年 / 2024年, 13届 / 14届) do, so they are never taken for corrections."""
    if len(x) != len(y) or x[:1] != FIGURE or y[:1] != FIGURE or sum(c.isdigit() for c in x) < 2:
        return False
    diff = [(p, q) for p, q in zip(x, y, strict=True) if p != q]
    return len(diff) == 1 and diff[0][0].isdigit() and diff[0][1].isdigit()


def days_apart(a: Sequence[str], b: Sequence[str]) -> tuple[int, str, str] | None:
    """How many days apart two documents were published, with both days; None unless both say. Compiled
    where both days are written ``YYYY-MM-DD`` (:func:`days_apart_reference` is what it equals)."""
    core = native.core()
    if core is not None:
        got = core.days_apart(a, b)
        if got is not None:
            return None if got[0] is None else got
    return days_apart_reference(a, b)


def days_apart_reference(a: Sequence[str], b: Sequence[str]) -> tuple[int, str, str] | None:
    """:func:`days_apart` in Python."""
    da = next((f[1:] for f in a if f.startswith(DAY)), None)
    db = next((f[1:] for f in b if f.startswith(DAY)), None)
    if da is None or db is None:
        return None
    return abs((dt.date.fromisoformat(da) - dt.date.fromisoformat(db)).days), da, db


def title_conflict(a: Sequence[str], b: Sequence[str]) -> str:
    """Why two headlines say different stories: each names someone or something the other document
    (title or body) never does, each gives an ordinal the other's title lacks, or each gives a figure or
    date the other document never states (``HOGS OPEN UP 0.50 DLR`` / ``1.00 DLR``; "" when none).
    Names match when one holds the other (江苏 / 江苏省)."""
    ta = {f[1:] for f in a if f.startswith(TITLE)}
    tb = {f[1:] for f in b if f.startswith(TITLE)}
    if not ta or not tb:
        return ""
    names_a = {f[1:] for f in ta if f.startswith(NAME)}
    names_b = {f[1:] for f in tb if f.startswith(NAME)}
    known_a = names_a | {f[1:] for f in a if f.startswith(NAME)}
    known_b = names_b | {f[1:] for f in b if f.startswith(NAME)}
    only_a = sorted(n for n in names_a if not _named(n, known_b))
    only_b = sorted(n for n in names_b if not _named(n, known_a))
    if only_a and only_b and len(only_a) == len(names_a) and len(only_b) == len(names_b):
        return f"titles name others: {', '.join(only_a[:3])} vs {', '.join(only_b[:3])}"
    oa = sorted(f[1:] for f in ta - tb if is_ordinal(f))
    ob = sorted(f[1:] for f in tb - ta if is_ordinal(f))
    if oa and ob:
        return f"titles give other ordinals: {', '.join(oa)} vs {', '.join(ob)}"
    fa = sorted(f for f in ta - tb if f[:1] in (FIGURE, OCCURRENCE) and not is_ordinal(f) and _lacks(b, f))
    fb = sorted(f for f in tb - ta if f[:1] in (FIGURE, OCCURRENCE) and not is_ordinal(f) and _lacks(a, f))
    if {_digits(f) for f in fa} != {_digits(f) for f in fb} and fa and fb:  # 11.17 and 1117 agree
        return f"titles give other figures: {', '.join(f[1:] for f in fa)} vs {', '.join(f[1:] for f in fb)}"
    return ""


def _named(name: str, known: set[str]) -> bool:
    """Whether a document whose names are ``known`` names ``name`` too: one holds the other (江苏 /
    江苏省, <vstr> / vstr), or, for a company in angle brackets, the document names each of its words
    (<franklin federal tax-free income fund> is not named by a text of Franklin California ones)."""
    if name.startswith("<") and " " in name:
        symbols = (m for m in known if m.startswith("<"))
        return any(name in m or m in name for m in symbols) or all(w in known for w in name[1:-1].split())
    return any(name in m or m in name for m in known)


def _digits(fact: str) -> str:
    return "".join(c for c in fact if c.isdigit())


def _lacks(facts: Sequence[str], fact: str) -> bool:
    """Whether a document whose facts are ``facts`` does not state ``fact`` anywhere (title or body; a
    full bottom-k body sample speaks only below its cut-off)."""
    if TITLE + fact in facts or fact in facts:
        return False
    body = [f for f in facts if f[:1] not in (DAY, TITLE)]
    return len(body) < MAX_FACTS or fact_hash(fact) <= max(map(fact_hash, body))
