"""The verification rule's compiled comparisons against their reference: generated facts that reach every
branch of the fact steps, and the candidates real decisions verify."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.corpus import DATA_DIR, EN_BBC, ZH_NEWS, require

from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.fingerprint.sketch import BAND_ROWS, BANDS
from fingerprint_indexer.verification import compare, rule
from fingerprint_indexer.verification.compare import FactDiff
from fingerprint_indexer.verification.policy import DEFAULT_POLICY

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_native_verification.py"
pytestmark = pytest.mark.skipif(native.core() is None,
                                reason="the compiled core is not built or is switched off (FPI_NATIVE=0)")

NAMES = ["江苏", "江苏省", "李明", "王刚", "网售", "揭网售", "<franklin federal fund>", "<franklin fund>",
         "franklin", "federal", "fund", "Smith", "SMITH CO", "<vstr>", "vstr",
         "<franklin federal\x1ffund>", "<franklin\u3000federal fund>"]  # words split as str.split() does
OCCURRENCES = ["第2次", "第3次", "14届", "13届", "2023年", "2024年", "3月5日", "3月6日", "神舟20号", "Q3"]
FIGURES = ["250", "251", "1972", "1927", "600000", "606000", "12.5", "1,5", "5万", "３２", "３３", "²3", "²²",
           "²³"]
POLICIES = [DEFAULT_POLICY,
            replace(DEFAULT_POLICY, edits_forgive_dates=False, edits_forgive_frames=True, max_edit_share=0.5),
            replace(DEFAULT_POLICY, max_figure_change=0.1, max_name_change=0.1, min_refilled=1,
                    max_refilled_share=0.1, min_one_sided_name_share=0.5)]  # fmt: skip


def _days() -> st.SearchStrategy[str]:
    iso = st.dates(dt.date(2020, 1, 1), dt.date(2025, 12, 31)).map(lambda d: "%" + d.isoformat())
    other = st.sampled_from(["%20240102", "%2024-W01-2"])  # other writings: the reference reads them
    return st.one_of(iso, iso, other)


def _facts() -> st.SearchStrategy[list[str]]:
    plain = st.one_of(st.sampled_from(NAMES).map(lambda n: "@" + n),
                      st.sampled_from(OCCURRENCES).map(lambda o: "#" + o),
                      st.sampled_from(FIGURES).map(lambda f: "=" + f),
                      st.integers(10, 99).map(lambda n: f"={n}"))  # fmt: skip
    titled = plain.map(lambda f: "^" + f)
    many = st.lists(st.integers(0, 10**6).map(lambda n: f"={n}"), min_size=0, max_size=70)  # full samples
    return st.tuples(st.lists(st.one_of(plain, plain, titled), max_size=30), many,
                     st.lists(_days(), max_size=1)).map(lambda t: t[2] + t[0] + t[1])


def _frames() -> st.SearchStrategy[list[int]]:
    line = st.tuples(st.integers(0, 6), st.integers(0, 4)).map(lambda t: t[0] << 32 | t[1])
    return st.lists(line, max_size=70)


def _reference(a: Evidence, b: Evidence, policy: Any) -> tuple[str, FactDiff]:
    apart = compare.days_apart_reference(a.facts, b.facts)
    step, _reason, diff = rule.fact_steps_reference(a, b, policy, apart[0] if apart else None)
    return step, diff


def _compiled(a: Evidence, b: Evidence, policy: Any) -> tuple[str, FactDiff] | None:
    return rule.fact_steps_compiled(a, b, policy, compare.days_apart_reference(a.facts, b.facts))


@settings(max_examples=400, deadline=None)
@given(fa=_facts(), fb=_facts(), shared=_facts(), frames_a=_frames(), frames_b=_frames(),
       short=st.booleans(), policy=st.sampled_from(POLICIES))
def test_fact_steps_reject_at_the_reference_step_with_its_comparison(fa, fb, shared, frames_a, frames_b,
                                                                     short, policy):  # fmt: skip
    """Which step rejects a pair ("" for none) and the comparison of its facts, as the reference gives them,
    or no answer (the reference's to give)."""
    a = Evidence([1] if short else [1, 2], facts=shared + fa, frames=frames_a)
    b = Evidence([1, 2], facts=shared + fb, frames=frames_b)
    try:
        want = _reference(a, b, policy)
    except ValueError:  # a day the reference cannot read either: the compiled steps never see it
        return
    got = _compiled(a, b, policy)
    if got is not None:
        assert got == want


def test_fact_steps_answer_for_ordinary_facts_and_leave_non_decimal_numerals_to_the_reference():
    a = Evidence([1, 2], facts=["%2024-03-05", "^@李明", "#第2次", "=250", "=1972", "@江苏"],
                 frames=[1 << 32 | 1])
    b = Evidence([1, 2], facts=["%2024-03-01", "^@李明", "#第2次", "=251", "=1972", "@江苏省"],
                 frames=[1 << 32 | 2])
    for policy in POLICIES:
        assert _compiled(a, b, policy) == _reference(a, b, policy)
    full_width = Evidence([1, 2], facts=["=３２", "=1972"])  # decimal digits: settled
    other = replace(full_width, facts=["=３３", "=1972"])
    assert _compiled(full_width, other, DEFAULT_POLICY) == _reference(full_width, other, DEFAULT_POLICY)
    superscript = Evidence([1, 2], facts=["=²²", "=1972"])  # digits to Python, not decimal: not settled
    assert _compiled(superscript, replace(superscript, facts=["=²³", "=1972"]), DEFAULT_POLICY) is None


@settings(max_examples=200, deadline=None)
@given(a=st.lists(st.one_of(_days(), st.just("=12"), st.just("%2023-02-29")), max_size=4),
       b=st.lists(st.one_of(_days(), st.just("@x")), max_size=4))
def test_days_apart_equals_its_reference(a, b):
    try:
        want = compare.days_apart_reference(a, b)
    except ValueError as exc:  # an impossible day: the compiled reader leaves it to the reference
        with pytest.raises(ValueError, match=str(exc)):
            compare.days_apart(a, b)
        return
    assert compare.days_apart(a, b) == want


def _sketch(seed: int, size: int) -> bytes:
    return bytes((seed * 7 + i * 13) % 256 for i in range(4 * size))


@settings(max_examples=200, deadline=None)
@given(q=st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=4),
       cands=st.lists(st.tuples(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=4),
                                st.sampled_from([0, 1, 2]), st.sampled_from([64, 64, 16, 0]),
                                st.lists(st.integers(0, 255), max_size=3)), min_size=1, max_size=5),
       size=st.sampled_from([64, 64, 0]), empty=st.booleans(), k=st.integers(0, 6))
def test_candidates_compare_as_the_reference_matrices(q, cands, size, empty, k):
    """Distances, where the closest pair lies, sketch agreement and shared bands (a sketch of another
    size, none, one whose banded minima are all empty), as the reference's matrices give them."""
    sketch = b"\xff" * 128 + _sketch(0, size)[128:] if empty and size else _sketch(0, size)
    query = Evidence(q, sketch)
    evs = []
    for fps, seed, their_size, edits in cands:
        s = bytearray(_sketch(seed, their_size))
        for e in edits:
            if s:
                s[e % len(s)] ^= 1
        evs.append(Evidence(fps, bytes(s)))
    core = native.core()
    assert core is not None
    got = core.compare_candidates(q, sketch, [(c.fingerprints, c.sketch) for c in evs], k, BANDS, BAND_ROWS)
    want = rule.compare_candidates_reference(query, evs, k)
    assert got is not None and len(got) == len(want)
    for (d, i, j, sim, band), ref in zip(got, want, strict=True):
        where = (i, j) if d <= k and sim >= DEFAULT_POLICY.min_similarity else (0, 0)
        assert (d, *where, sim, band) == ref


@pytest.mark.parametrize("corpus", [ZH_NEWS, EN_BBC, DATA_DIR / "en_reuters.jsonl.gz"], ids=lambda p: p.name)
def test_real_candidates_get_the_reference_verdicts(corpus):
    """Every candidate the pipeline verifies deciding 2,000 real documents gets the verdict the reference
    gives it (distance, where, similarity, step, reason, facts): the check script, run on a sample."""
    got = subprocess.run([sys.executable, str(SCRIPT), str(require(corpus)), "--limit", "2000"],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert got.returncode == 0, got.stdout + got.stderr
    line = got.stdout.strip()
    assert re.search(r": [1-9]\d* verifications, [1-9]\d* candidate pairs, 0 differences", line), line
