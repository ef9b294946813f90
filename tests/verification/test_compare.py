"""How two documents' facts compare: samples cut alike, corrections, refilled lines, days, headlines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint.facts import MAX_FACTS, analyse, fact_hash, latin_names, title_facts
from fingerprint_indexer.verification.compare import compare_facts, compare_frames, days_apart, title_conflict
from fingerprint_indexer.verification.policy import DEFAULT_POLICY

MIN_FACTS_FOR_OCCURRENCE_CORRECTION = DEFAULT_POLICY.min_facts_for_occurrence_correction


def extract_facts(text: str, terms: tuple[str, ...] | list[str] = ()) -> tuple[str, ...]:
    return analyse(text, terms)[0]


def frames(text: str) -> tuple[int, ...]:
    return analyse(text)[1]


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 5000), max_size=150), st.sets(st.integers(0, 5000), max_size=150))
def test_comparing_samples_is_exact_below_the_cut(a: set[int], b: set[int]) -> None:
    """Bottom-k samples compare exactly on the facts below the smaller cut-off, whatever the sizes."""
    fa, fb = extract_facts(" ".join(map(str, a))), extract_facts(" ".join(map(str, b)))
    diff = compare_facts(fa, fb)
    full_a = {f"={n}" for n in a}
    full_b = {f"={n}" for n in b}
    cut = min((fact_hash(s[-1]) if len(s) >= MAX_FACTS else 1 << 64) for s in (fa, fb))
    below = {f for f in full_a | full_b if fact_hash(f) <= cut}
    seen = set(diff.shared) | set(diff.only_a) | set(diff.only_b)
    assert seen == below
    assert set(diff.only_a) <= full_a - full_b and set(diff.only_b) <= full_b - full_a


def test_a_one_digit_correction_counts_as_shared() -> None:
    table = "net {}, shares 250, sales 7300, staff 1200"
    diff = compare_facts(extract_facts(table.format(600000)), extract_facts(table.format(606000)))
    assert not diff.only_a and not diff.only_b, "one figure corrected among several that stand"
    diff = compare_facts(extract_facts("qtly div 45 cts"), extract_facts("qtly div 48 cts"))
    assert diff.only_a == ("=45",) and diff.only_b == ("=48",), "a short notice: another company's figure"
    rows = "hog slaughter {} head versus {} week ago, cattle {}, sheep 5000, goats 700, pigs 800"
    diff = compare_facts(extract_facts(rows.format(131000, 249000, 126000)),
                         extract_facts(rows.format(132000, 248000, 128000)))  # fmt: skip
    assert len(diff.only_a) == 3, "many near-equal figures are another day's table, not a correction"
    diff = compare_facts(extract_facts("net 569"), extract_facts("net 465"))
    assert diff.only_a == ("=569",) and diff.only_b == ("=465",)
    assert diff.describe() == "figures differ: 569 vs 465"


def test_frames_align_template_lines_and_see_other_fillings() -> None:
    a = "全国政协十四届三次会议将于3月4日下午3时在北京开幕。\n届时,电视台将进行现场直播。"
    b = "全国政协十四届四次会议将于3月4日下午3时在北京开幕。\n届时,电视台将进行现场直播。"
    diff = compare_frames(frames(a), frames(b))
    assert (diff.aligned, diff.refilled) == (1, 1)
    same = compare_frames(frames(a), frames("新华网消息\n" + a))
    assert (same.aligned, same.refilled) == (1, 0)


def _table(rows: list[tuple[int, int, str]]) -> str:
    return "Rates as follows:\n" + "".join(f"  {lo}-{hi} days  {rate} pct\n" for lo, hi, rate in rows)


def test_frames_compare_the_rows_of_a_table_one_by_one() -> None:
    """Rows of one skeleton: every row other is another table; one row other is a correction; a row
    added or dropped is an edit."""
    rows = [(30, 69, "5.00"), (70, 88, "5.92"), (89, 123, "5.00"), (124, 150, "5.93")]
    base = frames(_table(rows))
    other = compare_frames(base, frames(_table([(lo + 1, hi + 2, r) for lo, hi, r in rows])))
    assert (other.aligned, other.refilled) == (4, 4)
    corrected = compare_frames(base, frames(_table([*rows[:3], (124, 150, "5.95")])))
    assert (corrected.aligned, corrected.refilled) == (4, 1)
    longer = compare_frames(base, frames(_table([*rows, (151, 360, "5.00")])))
    assert (longer.aligned, longer.refilled) == (4, 0)
    shorter = compare_frames(base, frames(_table(rows[1:])))
    assert (shorter.aligned, shorter.refilled) == (3, 0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 400), min_size=70, max_size=120, unique=True))
def test_frames_at_the_sample_cut_off_compare_equal_to_themselves(days: list[int]) -> None:
    """A full frame sample may hold only some fillings of its last skeleton: a text against itself with
    one row dropped (far more rows than :data:`MAX_FRAMES`) shows no refilled line."""
    rows = [(d, d + 7, f"5.{d % 97:02d}") for d in days]
    diff = compare_frames(frames(_table(rows)), frames(_table(rows[1:])))
    assert diff.refilled == 0


def test_days_apart_needs_both_days() -> None:
    assert days_apart(["%2024-09-29", "=5"], ["%2023-09-29"]) == (366, "2024-09-29", "2023-09-29")
    assert days_apart(["=5"], ["%2023-09-29"]) is None


def test_titles_conflict_on_other_names_or_other_ordinals_only() -> None:
    a, b = ("^@唐嫣",), ("^@秦岚",)
    assert title_conflict(a, b).startswith("titles name others: 唐嫣 vs 秦岚")
    assert title_conflict(a, (*b, "@唐嫣")) == ""  # the other body names her: same story, other headline
    assert title_conflict(("^@江苏",), ("^@江苏省",)) == ""  # one name holds the other
    assert title_conflict(a, ()) == ""  # one headline names nobody: nothing to compare
    assert title_conflict(("^#第1次",), ("^#第2次",)).startswith("titles give other ordinals")
    assert title_conflict(("^#第1次",), ("^#第1次", "^@秦岚")) == ""
    # neither kind takes part in the body comparison
    assert not compare_facts(["^@唐嫣", "%2024-01-01", "=5"], ["^@秦岚", "%2020-01-01", "=5"]).two_sided


def test_latin_headlines_name_parties_by_their_symbols_only() -> None:
    assert latin_names("RENT-A-CENTER <RENT> VOTES 3 FOR 2 SPLIT") == {"<rent>"}
    assert latin_names("Tory backing for ID cards") == set()  # capitals alone are no proof of a name
    a = title_facts("rent-a-center <rent> votes split", [], latin_names("RENT-A-CENTER <RENT> VOTES SPLIT"))
    b = title_facts("sheldahl <shel> votes split", [], latin_names("SHELDAHL <SHEL> VOTES SPLIT"))
    assert title_conflict(a, b) == "titles name others: <rent> vs <shel>"


def test_one_changed_date_among_many_standing_facts_is_a_correction() -> None:
    many = [f"=10{i}" for i in range(MIN_FACTS_FOR_OCCURRENCE_CORRECTION)]
    fixed = compare_facts([*many, "#2017年"], [*many, "#2071年"])
    assert not fixed.only_a and not fixed.only_b
    few = compare_facts([*many[:5], "#2017年"], [*many[:5], "#2071年"])
    assert few.only_a == ("#2017年",) and few.only_b == ("#2071年",)
    two = compare_facts([*many, "#2017年", "#第3次"], [*many, "#2071年", "#第4次"])
    assert len(two.only_a) == 2  # another occurrence changes more than one fact


def test_a_correction_far_apart_in_time_needs_many_more_facts_that_stand() -> None:
    """One figure one digit off among three that stand is a corrected re-send the same day; a week later
    it is the next notice (the Fed's 1.5 then 2.5 billion of repurchases, otherwise word for word)."""
    first, rest = ["%1987-03-02", "=1.5"], ["=16", "=3", "=6"]
    same_day = compare_facts([*first, *rest], ["%1987-03-02", "=2.5", *rest])
    assert not same_day.only_a and not same_day.only_b
    week = compare_facts([*first, *rest], ["%1987-03-09", "=2.5", *rest])
    assert week.only_a == ("=1.5",) and week.only_b == ("=2.5",)
    figures, facts = DEFAULT_POLICY.correction_needs(0)
    assert (figures, facts) == (DEFAULT_POLICY.min_figures_for_correction,
                                DEFAULT_POLICY.min_facts_for_occurrence_correction)
    assert DEFAULT_POLICY.correction_needs(7)[0] > figures and DEFAULT_POLICY.correction_needs(400) == (
        DEFAULT_POLICY.stale_figures_for_correction, DEFAULT_POLICY.stale_facts_for_occurrence_correction)
