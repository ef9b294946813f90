"""The one verification rule: distance, sketch, then facts; and its vectorised form."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.templates import DAY_1, DAY_2

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.fingerprint.sketch import sketch, to_bytes
from fingerprint_indexer.verification import (
    DEFAULT_POLICY,
    VerifyPolicy,
    check,
    check_many,
    closest,
    document_distance,
    explain,
    joins,
)

MIN_BAND_SIMILARITY = DEFAULT_POLICY.min_band_similarity
MIN_PASSAGE_SIMILARITY = DEFAULT_POLICY.min_passage_similarity
MIN_SHORT_BAND_SIMILARITY = DEFAULT_POLICY.min_short_band_similarity

A = "国际学校的教师通常来自国外,他们希望通过教书的方式体验其他国家。" * 4
B = "火箭在客场以96-88战胜芝加哥公牛,哈登第三节两分钟内连得11分。" * 4

def _ev(text: str) -> Evidence:
    return Fingerprinter().fingerprint(text).evidence


def test_closest_finds_the_chunk_pair() -> None:
    d, where = closest([0xFFFF_0000_0000_0000, 0x1234], [0x0F0F, 0x1235])
    assert (d, where) == (1, (1, 1))
    with pytest.raises(ValueError):
        closest([], [1])


def test_check_accepts_similar_and_rejects_different_text() -> None:
    ok = explain(Evidence([1], to_bytes(sketch(A))), Evidence([3], to_bytes(sketch(A + "责任编辑"))), k=3,
                 terms_a=["教师", "国外"], terms_b=["教师"])  # fmt: skip
    assert ok.accepted and ok.distance == 1 and ok.shared_terms == ("教师",) and not ok.reason
    assert ok.to_dict()["matched"] == "document"
    bad = check(Evidence([1], to_bytes(sketch(A))), Evidence([1], to_bytes(sketch(B))), k=3)
    assert not bad.accepted and bad.similarity < 0.3 and bad.reason.startswith("texts differ")
    far = check(Evidence([0], to_bytes(sketch(A))), Evidence([0xFFFF], to_bytes(sketch(B))), k=3)
    assert not far.accepted and far.reason == "distance 16 > 3"


def test_a_shared_sketch_band_finds_what_the_fingerprints_miss() -> None:
    headline = "网售滞销水果悲情牌套路：“滞销大爷”被滥用,多地果农并未滞销"
    edited = "揭" + headline
    near = check(Evidence([0], to_bytes(sketch(headline))), Evidence([0xFFFF], to_bytes(sketch(edited))), k=3)
    assert near.accepted and near.band and near.to_dict()["matched"] == "sketch band"
    assert near.similarity >= MIN_BAND_SIMILARITY
    # a band alone is not enough: the 5-grams must agree as much as MIN_BAND_SIMILARITY says
    weak = check(Evidence([0], to_bytes(sketch(A))), Evidence([0xFFFF], to_bytes(sketch(A[:40] + B))), k=3)
    assert not weak.accepted


def test_template_bulletins_of_different_days_are_not_duplicates() -> None:
    one, two = _ev(DAY_1), _ev(DAY_2)
    assert check(one, one, 3).accepted
    v = check(one, two, 3)
    assert v.distance <= 3 and v.similarity >= 0.3, "the two bulletins look alike to fingerprint and sketch"
    assert not v.accepted
    assert "differ" in v.reason or "same template" in v.reason
    assert v.to_dict()["rejected_because"] == v.reason


def test_a_wrapped_copy_and_an_excerpt_stay_duplicates() -> None:
    wrapped = "新华网北京消息\n" + DAY_1 + "\n责任编辑:王伟"
    assert check(_ev(DAY_1), _ev(wrapped), 3).accepted
    # an excerpt: the facts of the part are facts of the whole (the fingerprints of so short a text are
    # not what is tested here, so both sides get the same one)
    excerpt = DAY_1.split("\n")[0] + "\n" + DAY_1.split("\n")[1]
    whole, part = replace(_ev(DAY_1), fingerprints=(1,)), replace(_ev(excerpt), fingerprints=(1,))
    v = check(whole, part, 3)
    assert v.accepted, v.reason
    assert v.facts is not None and not v.facts.only_b


def test_a_corrected_figure_is_an_edit_not_another_story() -> None:
    corrected = DAY_1.replace("5074", "5079")
    assert check(_ev(DAY_1), _ev(corrected), 3).accepted


_fps = st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=4)
_sketch = st.sampled_from([b"", to_bytes(sketch(A)), to_bytes(sketch(B)), to_bytes(sketch(A + B))])
_facts = st.lists(st.sampled_from(["=1", "=2", "#3月", "#4日", "@北京", "=569"]), max_size=4, unique=True)
_evidence = st.builds(Evidence, _fps, _sketch, _facts.map(sorted))


@settings(max_examples=150, deadline=None)
@given(_evidence, st.lists(_evidence, max_size=6), st.integers(0, 6))
def test_check_many_is_check_of_each(query: Evidence, candidates: list[Evidence], k: int) -> None:
    many = check_many(query, candidates, k)
    one = [check(query, c, k) for c in candidates]
    def seen(vs: list) -> list:
        return [(v.accepted, v.distance, v.reason) for v in vs]

    assert seen(many) == seen(one)


def test_document_distance() -> None:
    assert document_distance(0b1011, 0b0001) == 2


def test_a_copy_joins_a_group_only_when_the_canonical_states_its_facts() -> None:
    one, two = _ev(DAY_1), _ev(DAY_2)
    assert joins(two, "b", "b", one), "the match is the canonical itself: the pair check already ran"
    assert joins(one, "b", "a", one)
    assert not joins(two, "b", "a", one), "linked through b, but a is another day's bulletin"


def test_a_copy_is_a_copy_whenever_it_was_published() -> None:
    """Time is evidence, not a veto: the same text a year later is still the same text."""
    fpr = Fingerprinter()

    def ev(published: str | None) -> Evidence:
        return fpr.fingerprint_document(Document(id="x", content=DAY_1, published_at=published)).evidence

    one = ev("2023-09-29")
    for later in ("2023-09-29", "2023-10-01T08:00:00", "2023-10-29", "2024-09-29", None):
        assert check(one, ev(later), 3).accepted, later


def test_headlines_naming_other_ordinals_are_other_stories() -> None:
    fpr = Fingerprinter()

    def ev(title: str) -> Evidence:
        return fpr.fingerprint_document(Document(id="x", title=title, content=DAY_1)).evidence

    a, b, c = ev("主席团举行第一次会议"), ev("主席团举行第二次会议"), ev("主席团举行第一次会议 - 新华网")
    v = check(a, b, 3)
    assert not v.accepted and v.reason.startswith("titles give other ordinals")
    assert check(a, c, 3).accepted


def test_a_shared_passage_needs_more_of_the_rest_than_a_shared_whole() -> None:
    import numpy as np

    from fingerprint_indexer.fingerprint.sketch import from_bytes

    a, b = from_bytes(to_bytes(sketch(A))), from_bytes(to_bytes(sketch(B))).copy()
    b[::3] = a[::3]  # 22 of 64 minima agree: similarity 0.34
    sa, sb = to_bytes(a), to_bytes(np.asarray(b, dtype=np.uint32))
    whole = check(Evidence([0, 7], sa), Evidence([1, 9], sb), 3)  # the documents themselves are close
    passage = check(Evidence([0, 7], sa), Evidence([0xFFFF, 7], sb), 3)  # only a chunk is
    assert whole.accepted and 0.3 <= whole.similarity < MIN_PASSAGE_SIMILARITY
    assert not passage.accepted and passage.reason.startswith("texts differ")


def test_one_line_items_need_more_of_a_band_than_longer_texts() -> None:
    one = _ev("央视网消息（新闻联播）：江泽民同志永垂不朽。")
    other = _ev("央视网消息（新闻联播）：江泽民同志因病在上海逝世。")
    v = check(one, other, 3)
    assert len(one.fingerprints) == 1 and v.band and not v.accepted
    assert MIN_BAND_SIMILARITY <= v.similarity < MIN_SHORT_BAND_SIMILARITY


# Two wire items of one template (a bond issue), written for these tests: only the issuer, the amount,
# the dates and the manager differ.
ISSUE = ("{issuer} is issuing a {amount} mln dlr eurobond due June 25, 1992 paying 8-1/4 pct and\n"
         "priced at 100-1/2 pct, lead manager {manager} said.\n"
         "    The non-callable bond is available in denominations of 1,000 and 10,000 dlrs and will be\n"
         "listed in Luxembourg. The selling concession is 1-1/4 pct while management and underwriting\n"
         "combined pays 5/8 pct.\n"
         "    The payment date is June 25.\n"
         " REUTER\n")


def _wire(title: str, body: str, date: str = "1-JUN-1987 10:12:40.70") -> Evidence:
    return Fingerprinter().fingerprint_document(Document.from_mapping(
        {"id": title, "title": title, "content": body, "date": date})).evidence


def test_wire_items_of_one_template_naming_other_parties_are_other_stories() -> None:
    a = _wire("EUROBOND", ISSUE.format(issuer="Mercedes-Benz Credit Corp", amount=100,
                                       manager="Deutsche Bank Capital Markets"))
    b = _wire("EUROBOND", ISSUE.format(issuer="The Sanwa Finance Corp", amount=100,
                                       manager="Nomura International Ltd"))
    v = check(a, b, 3)
    assert not v.accepted and v.reason.startswith("names differ"), v
    # a repost that corrects one name among those that stand is still the same item
    c = _wire("EUROBOND", ISSUE.format(issuer="Mercedes-Benz Credit Corp", amount=100,
                                       manager="Deutsche Bank Capital Markets Ltd"))
    assert check(a, c, 3).accepted


def test_headlines_giving_other_figures_are_other_stories() -> None:
    body = "Hog prices opened higher at the start of trade, private sources said. Top 51.00 dlrs per cwt."
    a, b = _wire("HOGS OPEN UP 0.50 DLR", body), _wire("HOGS OPEN UP 1.00 DLR", body)
    v = check(a, b, 3)
    assert not v.accepted and v.reason == "titles give other figures: 0.5 vs 1"
    # the same figure written otherwise, or a figure the other body states, is no conflict
    assert check(_wire("DEBUT 11.17", body), _wire("DEBUT 1117", body), 3).accepted
    assert check(_wire("HOGS TOP 51 DLRS", body), _wire("HOGS TOP 51.00 DLRS", body), 3).accepted
    assert check(_wire("HOGS TOP 51 DLRS", body), _wire("HOGS TOP 52 DLRS", body), 3).accepted  # one-sided


def test_headline_companies_in_angle_brackets_are_names() -> None:
    body = ("Shr 1.13 dlrs vs 87 cts\n    Net 1,064,489 vs 780,712\n"
            "    Note: 4th qtr data not given.\n Reuter\n")
    a, b = _wire("<STERLING BANCORP> YEAR NET", body), _wire("VESTAR INC <VSTR> YEAR LOSS", body)
    v = check(a, b, 3)
    assert not v.accepted and v.reason == "titles name others: <sterling bancorp> vs <vstr>"
    # a body that names each word of the bracketed company names it
    named = body.replace("data", "data of Sterling Bancorp")
    a, c = _wire("<STERLING BANCORP> YEAR NET", named), _wire("STERLING BANCORP <STB> YEAR NET", named)
    assert check(a, c, 3).accepted


def test_weak_evidence_needs_more_of_the_text_the_farther_apart_in_time() -> None:
    """A text of one passage is weak evidence: its bar rises with the logarithm of the days beyond the
    grace period, up to the horizon; the same text itself is accepted at any distance in time."""
    p = DEFAULT_POLICY
    needs = [p.text_need(band=False, short=True, whole=True, days=d) for d in (None, 0, 1, 4, 30, 366)]
    assert needs[0] == needs[1] == needs[2] == p.min_similarity  # undated, or within the grace period
    assert needs[2] < needs[3] < needs[4] == needs[5] == p.stale_short_similarity
    assert p.text_need(band=False, short=False, whole=True, days=366) == p.min_similarity  # strong evidence
    text = "Japan bought 5,000 tonnes of Canadian rapeseed overnight for May shipment, trade sources said."
    edited = "Japan bought 5,000 tonnes of Canadian rapeseed overnight, for shipment in May, dealers said."
    a = _wire("RAPESEED", text, "8-APR-1987 12:16:15.69")
    for date, accepted in (("9-APR-1987 09:00:00", True), ("8-APR-1988 09:00:00", False)):
        b = _wire("RAPESEED", edited, date)
        v = check(replace(a, fingerprints=[0]), replace(b, fingerprints=[1]), 3)  # within k, one passage
        assert p.min_similarity <= v.similarity < p.stale_short_similarity, v
        assert v.accepted is accepted, v
        if not accepted:
            assert v.step == "text" and v.reason.endswith("published 366 days apart")
        same = _wire("RAPESEED", text, date)
        assert check(replace(a, fingerprints=[0]), replace(same, fingerprints=[0]), 3).accepted


def test_only_two_one_line_items_are_held_to_the_stock_opening_bar() -> None:
    p = DEFAULT_POLICY
    assert p.text_need(band=True, short=True, notices=True, whole=False, days=0) == MIN_SHORT_BAND_SIMILARITY
    assert p.text_need(band=True, short=True, notices=False, whole=False, days=0) == MIN_BAND_SIMILARITY


def test_a_policy_can_raise_every_kind_of_weak_evidence_with_time() -> None:
    """The band bars are graded the same way when a policy raises them (the shipped one keeps them flat:
    docs/quality.md)."""
    p = VerifyPolicy(stale_band_similarity=0.8, stale_short_band_similarity=0.9, stale_passage_similarity=0.6)
    for kind, base, stale in ((dict(band=True, short=False, whole=False), 0.5, 0.8),
                              (dict(band=True, short=True, whole=False), 0.65, 0.9),
                              (dict(band=False, short=False, whole=False), 0.375, 0.6)):  # fmt: skip
        got = [p.text_need(**kind, days=d) for d in (0, 1, 2, 10, 30, 60)]
        assert got[0] == got[1] == base and got[-2] == got[-1] == stale
        assert got == sorted(got)
    with pytest.raises(ValueError):
        VerifyPolicy(min_similarity=1.5)
    with pytest.raises(ValueError):
        VerifyPolicy(time_grace_days=30, time_horizon_days=30)


def test_a_long_text_with_a_few_facts_replaced_among_many_is_one_story_edited() -> None:
    """The edit allowance keys on length and on how many facts stand: one figure replaced among many
    that stand in a text of several passages is an edit; the same change in a short notice is not."""
    p = DEFAULT_POLICY
    assert p.edit_share(short=True, days=0) == 0.0
    assert p.edit_share(short=False, days=0) == p.max_edit_share
    assert p.edit_share(short=False, days=400) == p.stale_edit_share
    assert VerifyPolicy(stale_edit_share=0.05).edit_share(short=False, days=400) == 0.05
    people = ["Anders", "Beaumont", "Castellano", "Dubois", "Eriksen", "Fontaine", "Gallagher", "Haverford",
              "Olsen", "Petrov", "Quinlan", "Rasmussen", "Salazar", "Tanaka", "Ulrich", "Valdez", "Whitlock",
              "Yamada", "Ingleby", "Jansen", "Kowalski", "Lindqvist", "Moreau", "Nakamura"]
    sentences = [f"On the river plan, the delegate from {p} spoke after the one from {q} had left the hall."
                 for p, q in itertools.pairwise(people)]
    sentences[3] += " The budget was 120 million euros."
    sentences[8] += " Work starts in 14 weeks."
    long_a = " ".join(sentences)
    long_b = long_a.replace("120 million", "95 million")
    a, b = _wire("PLAN", long_a), _wire("PLAN", long_b)
    assert len(a.fingerprints) > 1
    v = check(a, b, 3)
    assert v.accepted, v  # one figure replaced among 24 names and a figure that stand
    strict = VerifyPolicy(max_edit_share=0.0, stale_edit_share=0.0)
    assert check(a, b, 3, strict).reason == "figures differ: 120 vs 95"
    short_a = _wire("DIV", "Qtly div 7.1 cts vs 6.8 cts prior, the company said on its regular schedule.")
    short_b = _wire("DIV", "Qtly div 9.25 cts vs 6.8 cts prior, the company said on its regular schedule.")
    v = check(short_a, short_b, 3)
    assert len(short_a.fingerprints) == 1 and not v.accepted and v.step == "facts", v


def test_every_rejection_names_its_step_and_every_verdict_its_policy() -> None:
    a, b = _ev(A), _ev(B)
    v = check(a, b, 3)
    assert not v.accepted and v.step in ("distance", "text") and v.policy == DEFAULT_POLICY.tag
    assert v.to_dict()["rejected_at"] == v.step and v.to_dict()["policy"] == DEFAULT_POLICY.tag
    other = VerifyPolicy(name="strict", min_similarity=0.5)
    assert check(a, a, 3, other).policy == other.tag != DEFAULT_POLICY.tag
    assert check(a, a, 3).step == ""


# A rate notice written for these tests: a table whose rows a later notice of the same day refills.
RATES = ("The Home Loan Board set the rates on its discount notes as follows:\n"
         "    TERM   NEW RATE  OLD RATE\n{rows} Reuter\n")


def _rates(rows: list[tuple[str, str, str]]) -> str:
    return RATES.format(rows="".join(f"  {term} days  {new} pct  {old} pct\n" for term, new, old in rows))


def test_a_rate_table_with_other_rows_is_another_notice() -> None:
    """The later notice states no figure the first lacks (its old rates are the first's new ones): only
    its rows, compared one by one, show two rates changed again."""
    first = [("30-174", "5.00", "5.00"), ("175-190", "5.85", "5.82"), ("191-270", "5.00", "5.00"),
             ("271-288", "5.92", "5.85"), ("289-360", "5.00", "5.00")]  # fmt: skip
    later = [("30-174", "5.00", "5.00"), ("175-190", "5.92", "5.85"), ("191-270", "5.00", "5.00"),
             ("271-288", "5.92", "5.92"), ("289-360", "5.00", "5.00")]  # fmt: skip
    a = _wire("DISCOUNT NOTE RATES", _rates(first), "9-APR-1987 10:21:12.37")
    b = _wire("DISCOUNT NOTE RATES", _rates(later), "9-APR-1987 11:00:08.03")
    v = check(a, b, 3)
    assert v.similarity >= 0.3 and not (v.facts and v.facts.two_sided), "looks alike, no figure of its own"
    assert not v.accepted and v.reason.startswith("same template, other facts in 2 of 5"), v
    # one rate corrected, or a row added, is the same notice
    corrected = [*first[:4], ("289-360", "5.01", "5.00")]
    assert check(a, _wire("DISCOUNT NOTE RATES", _rates(corrected), "9-APR-1987 11:00:00.00"), 3).accepted
    longer = [*first, ("361-400", "5.00", "5.00")]
    assert check(a, _wire("DISCOUNT NOTE RATES", _rates(longer), "9-APR-1987 11:00:00.00"), 3).accepted


PAYOUT = ("Mthly div {div} cts vs {div} cts prior\n    Pay May 29\n    Record May 14\n"
          "    NOTE: {fund} Fund.\n Reuter\n")


def test_payout_notices_of_other_funds_with_other_figures_are_other_stories() -> None:
    """The figures sit in short top lines, which were stripped as a headline and datelines: only the
    NOTE lines were compared, and one fund name more read as an edit."""
    a = _wire("ACME INCOME SETS PAYOUT", PAYOUT.format(div="7.1", fund="Acme Insured Tax-Free Income"))
    b = _wire("ACME OREGON SETS PAYOUT", PAYOUT.format(div="6.4", fund="Acme Oregon Insured Tax-Free Income"))
    v = check(a, b, 3)
    assert not v.accepted and v.reason.startswith("figures differ"), v
    again = _wire("ACME INCOME SETS PAYOUT", PAYOUT.format(div="7.1", fund="Acme Insured Tax-Free Income"),
                  "1-JUN-1987 11:02:10.00")
    assert check(a, again, 3).accepted


def test_a_text_stating_new_facts_weeks_later_is_the_next_occurrence() -> None:
    """New facts key on the days between two texts and on which is later: a copy states its original's
    facts or fewer at any distance in time; the next morning's update may add some; a text published
    weeks later that adds facts to the same words is this year's edition of a recurring item."""
    p = DEFAULT_POLICY
    assert p.new_fact_share(None) == p.new_fact_share(1) == 1.0
    assert 1.0 > p.new_fact_share(5) > p.new_fact_share(30) == p.new_fact_share(400) == p.stale_new_fact_share
    people = ["Anders", "Beaumont", "Castellano", "Dubois", "Eriksen", "Fontaine", "Gallagher", "Haverford",
              "Olsen", "Petrov", "Quinlan", "Rasmussen"]
    notice = [f"Minister {a} and Minister {b} will lay wreaths at the monument with delegates of the regions."
              for a, b in itertools.pairwise(people)]
    notice.append("The ceremony will be broadcast live on the national channels and the radio networks.")
    original = " ".join(notice)
    next_edition = ("This year marks the 75th anniversary of the Republic and 1,200 guests are invited. "
                    + original)
    excerpt = " ".join(notice[:8])
    a = _wire("CEREMONY", original, "28-SEP-1986 10:00:00")
    for date, accepted in (("29-SEP-1986 10:00:00", True), ("28-OCT-1986 10:00:00", False),
                           ("28-SEP-1987 10:00:00", False)):  # fmt: skip
        v = check(a, _wire("CEREMONY", next_edition, date), 3)
        assert v.accepted is accepted, (date, v)
        if not accepted:
            assert v.step == "facts" and v.reason.startswith("new facts"), v
        # the same in the other order: which text is later comes from the days, not the argument order
        assert check(_wire("CEREMONY", next_edition, date), a, 3).accepted is accepted
    # the earlier text may state more: a copy cut short a year later is still a copy
    assert check(a, _wire("CEREMONY", excerpt, "28-SEP-1987 10:00:00"), 3).accepted
    off = replace(p, stale_new_fact_share=1.0)
    assert check(a, _wire("CEREMONY", next_edition, "28-SEP-1987"), 3, off).accepted
