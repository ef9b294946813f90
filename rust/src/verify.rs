//! The verification rule's comparisons (`verification/rule.py` and `verification/compare.py` are the
//! reference): a query's distances, sketch agreement and shared bands against its candidates, the days
//! between two texts, and whether the fact steps (title, ordinals, facts, frames) reject a pair.
//!
//! The fact steps answer only "rejected or not" and the comparison of facts (shared, one-sided); the
//! reason of a rejection is the reference's. Where a character's Python `isdigit` is not settled here (a
//! numeral that is not a decimal digit, such as a superscript) or a date is not written as `YYYY-MM-DD`,
//! the functions answer None and the reference runs. The samples' sizes and the sketch's bands come from
//! the Python side with each call, as they do to the pass.

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyString, PyTuple};
use rustc_hash::{FxHashMap, FxHashSet};
use xxhash_rust::xxh3::xxh3_64;

use crate::facts::{DAY, FIGURE, NAME, OCCURRENCE, TITLE};
use crate::text::py_isspace;
use crate::unicode::decimal;

const ORDINAL_UNITS: &str = "届次号期批轮";

/// A question the port leaves to the reference.
struct Unsure;

type Sure<T> = Result<T, Unsure>;

/// `f[1:]`.
fn rest(f: &str) -> &str {
    let mut chars = f.chars();
    chars.next();
    chars.as_str()
}

/// `f[:1] == c` (and `f.startswith(c)`).
fn kind_is(f: &str, c: char) -> bool {
    f.starts_with(c)
}

/// Python's `str.isdigit` of one character: decimal digits and non-numerals are settled, other numerals
/// (superscripts and circled digits are digits to Python, fractions are not) are not.
fn is_digit(c: char) -> Sure<bool> {
    if c.is_ascii() {
        Ok(c.is_ascii_digit())
    } else if decimal(c).is_some() {
        Ok(true) // every decimal digit is a digit
    } else if !c.is_numeric() {
        Ok(false) // every character Python calls a digit is a number (Nd or No)
    } else {
        Err(Unsure)
    }
}

fn fact_hash(f: &str) -> u64 {
    xxh3_64(f.as_bytes())
}

/// `compare.is_ordinal`.
fn is_ordinal(f: &str) -> bool {
    kind_is(f, OCCURRENCE)
        && (rest(f).starts_with('第') || f.chars().next_back().is_some_and(|c| ORDINAL_UNITS.contains(c)))
}

/// Sorted, without repeats.
fn sorted_set<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort_unstable();
    v.dedup();
    v
}

/// (only in `a`, only in `b`) of two sorted sets, as counts.
fn one_sided_counts(a: &[u64], b: &[u64]) -> (usize, usize) {
    let (mut i, mut j, mut both) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                both += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (a.len() - both, b.len() - both)
}

/// `compare.compare_frames`: (aligned, refilled).
fn compare_frames(a: &[u64], b: &[u64], limit: usize) -> (usize, usize) {
    let cut_of = |s: &[u64]| if s.len() >= limit { s.iter().map(|f| f >> 32).max().unwrap_or(0) } else { 1 << 32 };
    let cut = cut_of(a).min(cut_of(b));
    // (skeleton, filling) sorted: each skeleton's fillings are one run
    let (fa, fb) = (
        sorted_set(a.iter().copied().filter(|f| f >> 32 < cut).collect::<Vec<u64>>()),
        sorted_set(b.iter().copied().filter(|f| f >> 32 < cut).collect::<Vec<u64>>()),
    );
    let runs = |s: &[u64]| -> Vec<(u64, usize, usize)> {
        let mut out: Vec<(u64, usize, usize)> = Vec::new();
        for (n, f) in s.iter().enumerate() {
            match out.last_mut() {
                Some(run) if run.0 == f >> 32 => run.2 = n + 1,
                _ => out.push((f >> 32, n, n + 1)),
            }
        }
        out
    };
    let (ra, rb) = (runs(&fa), runs(&fb));
    let (mut aligned, mut refilled) = (0, 0);
    let (mut i, mut j) = (0, 0);
    while i < ra.len() && j < rb.len() {
        let ((ka, a0, a1), (kb, b0, b1)) = (ra[i], rb[j]);
        match ka.cmp(&kb) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                aligned += (a1 - a0).min(b1 - b0);
                let (x, y) = one_sided_counts(&fa[a0..a1], &fb[b0..b1]);
                refilled += x.min(y);
                i += 1;
                j += 1;
            }
        }
    }
    (aligned, refilled)
}

/// `compare._one_digit_apart`.
fn one_digit_apart(x: &str, y: &str) -> Sure<bool> {
    if x.chars().count() != y.chars().count() || !kind_is(x, FIGURE) || !kind_is(y, FIGURE) {
        return Ok(false);
    }
    let mut digits = 0;
    for c in x.chars() {
        digits += is_digit(c)? as usize;
    }
    if digits < 2 {
        return Ok(false);
    }
    let mut diff = x.chars().zip(y.chars()).filter(|(p, q)| p != q);
    match (diff.next(), diff.next()) {
        (Some((p, q)), None) => Ok(is_digit(p)? && is_digit(q)?),
        _ => Ok(false),
    }
}

/// A fact and the Python string it came from (what the comparison's tuples are made of).
type Fact<'a, 'py> = (&'a str, &'a Bound<'py, PyString>);

/// How two samples' facts compare (`compare.FactDiff`), each side sorted.
struct Diff<'a, 'py> {
    shared: Vec<Fact<'a, 'py>>,
    only_a: Vec<Fact<'a, 'py>>,
    only_b: Vec<Fact<'a, 'py>>,
}

fn count_kind(facts: &[Fact], kind: char) -> usize {
    facts.iter().filter(|f| kind_is(f.0, kind)).count()
}

fn is_body(f: &str) -> bool {
    !(kind_is(f, DAY) || kind_is(f, TITLE))
}

/// `compare.compare_facts` with the policy's `correction_needs` for the days apart.
fn compare_facts<'a, 'py>(
    a: &[Fact<'a, 'py>], b: &[Fact<'a, 'py>], need_figures: f64, need_facts: f64, max_facts: usize,
) -> Sure<Diff<'a, 'py>> {
    let hashed = |s: &[Fact<'a, 'py>]| -> Vec<(u64, Fact<'a, 'py>)> {
        s.iter().filter(|f| is_body(f.0)).map(|&f| (fact_hash(f.0), f)).collect()
    };
    let (ha, hb) = (hashed(a), hashed(b));
    let cut_of = |h: &[(u64, Fact)]| -> u128 {
        if h.len() >= max_facts {
            h.iter().map(|x| x.0).max().unwrap_or(0) as u128
        } else {
            1 << 64
        }
    };
    let cut = cut_of(&ha).min(cut_of(&hb));
    let below = |h: Vec<(u64, Fact<'a, 'py>)>| -> Vec<Fact<'a, 'py>> {
        let mut v: Vec<Fact> = h.into_iter().filter(|x| x.0 as u128 <= cut).map(|x| x.1).collect();
        v.sort_unstable_by(|x, y| x.0.cmp(y.0)); // UTF-8 byte order is Python's code point order
        v.dedup_by(|x, y| x.0 == y.0);
        v
    };
    let (sa, sb) = (below(ha), below(hb));
    let (mut both, mut only_a, mut only_b) = (Vec::new(), Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < sa.len() || j < sb.len() {
        match (sa.get(i), sb.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                both.push(*x);
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                only_a.push(*x);
                i += 1;
            }
            (Some(x), None) => {
                only_a.push(*x);
                i += 1;
            }
            (_, Some(y)) => {
                only_b.push(*y);
                j += 1;
            }
            (None, None) => break,
        }
    }
    // the one-digit corrections: only figures of one length can be, so only those are paired
    let mut by_length: FxHashMap<usize, Vec<&str>> = FxHashMap::default();
    for y in only_b.iter().filter(|f| kind_is(f.0, FIGURE)) {
        by_length.entry(y.0.chars().count()).or_default().push(y.0);
    }
    let mut pairs = 0;
    let mut pair = ("", "");
    for x in only_a.iter().filter(|f| kind_is(f.0, FIGURE)) {
        for &y in by_length.get(&x.0.chars().count()).map_or(&[][..], Vec::as_slice) {
            if one_digit_apart(x.0, y)? {
                pairs += 1;
                pair = (x.0, y);
            }
        }
    }
    let mut corrected: Vec<&str> = Vec::new();
    if pairs == 1 && count_kind(&both, FIGURE) as f64 >= need_figures {
        corrected.extend([pair.0, pair.1]);
    }
    let occ_a: Vec<&str> = only_a.iter().filter(|f| kind_is(f.0, OCCURRENCE)).map(|f| f.0).collect();
    let occ_b: Vec<&str> = only_b.iter().filter(|f| kind_is(f.0, OCCURRENCE)).map(|f| f.0).collect();
    let standing = both.iter().filter(|f| !kind_is(f.0, NAME) || !f.0.is_ascii()).count();
    if occ_a.len() == 1 && occ_b.len() == 1 && standing as f64 >= need_facts {
        corrected.extend([occ_a[0], occ_b[0]]);
    }
    if !corrected.is_empty() {
        let fixed = |f: &Fact| corrected.contains(&f.0);
        both.extend(only_a.iter().chain(&only_b).filter(|f| fixed(f)).copied());
        both.sort_unstable_by(|x, y| x.0.cmp(y.0));
        both.dedup_by(|x, y| x.0 == y.0);
        only_a.retain(|f| !fixed(f));
        only_b.retain(|f| !fixed(f));
    }
    Ok(Diff { shared: both, only_a, only_b })
}

/// `compare._named`.
fn named(name: &str, known: &FxHashSet<&str>) -> bool {
    let held = |m: &str| name.contains(m) || m.contains(name);
    if name.starts_with('<') && name.contains(' ') {
        if known.iter().any(|m| m.starts_with('<') && held(m)) {
            return true;
        }
        let mut inner = name.chars();
        inner.next();
        inner.next_back();
        // `str.split()`: runs of Python's whitespace, no empty words
        return inner.as_str().split(py_isspace).filter(|w| !w.is_empty()).all(|w| known.contains(w));
    }
    known.iter().any(|m| held(m))
}

/// `compare._digits`.
fn digits(f: &str) -> Sure<String> {
    let mut out = String::new();
    for c in f.chars() {
        if is_digit(c)? {
            out.push(c);
        }
    }
    Ok(out)
}

/// A document's facts, and what `compare._lacks` reads of them: the largest hash of its body sample,
/// when the sample is full (None: it speaks for every hash).
struct Facts<'s, 'a> {
    all: &'s [&'a str],
    body_cut: Option<u64>,
}

impl<'s, 'a> Facts<'s, 'a> {
    fn new(all: &'s [&'a str], max_facts: usize) -> Self {
        let body: Vec<u64> = all.iter().filter(|f| is_body(f)).map(|f| fact_hash(f)).collect();
        let body_cut = if body.len() < max_facts { None } else { body.iter().copied().max() };
        Facts { all, body_cut }
    }

    /// `compare._lacks(self, fact)`.
    fn lacks(&self, fact: &str) -> bool {
        if self.all.iter().any(|f| *f == fact || (kind_is(f, TITLE) && rest(f) == fact)) {
            return false;
        }
        self.body_cut.is_none_or(|cut| fact_hash(fact) <= cut)
    }
}

/// `[f[1:] for f in facts if f.startswith(kind)]`.
fn of_kind<'a>(facts: &[&'a str], kind: char) -> Vec<&'a str> {
    facts.iter().filter(|f| kind_is(f, kind)).map(|f| rest(f)).collect()
}

/// Whether `compare.title_conflict` finds a reason.
fn title_conflict(a: &[&str], b: &[&str], max_facts: usize) -> Sure<bool> {
    let (ta, tb) = (sorted_set(of_kind(a, TITLE)), sorted_set(of_kind(b, TITLE)));
    if ta.is_empty() || tb.is_empty() {
        return Ok(false);
    }
    let (names_a, names_b) = (of_kind(&ta, NAME), of_kind(&tb, NAME));
    let known_a: FxHashSet<&str> = names_a.iter().copied().chain(of_kind(a, NAME)).collect();
    let known_b: FxHashSet<&str> = names_b.iter().copied().chain(of_kind(b, NAME)).collect();
    let only_a = names_a.iter().filter(|n| !named(n, &known_b)).count();
    let only_b = names_b.iter().filter(|n| !named(n, &known_a)).count();
    if only_a > 0 && only_b > 0 && only_a == names_a.len() && only_b == names_b.len() {
        return Ok(true);
    }
    let new_a: Vec<&str> = ta.iter().copied().filter(|f| tb.binary_search(f).is_err()).collect();
    let new_b: Vec<&str> = tb.iter().copied().filter(|f| ta.binary_search(f).is_err()).collect();
    if new_a.iter().any(|f| is_ordinal(f)) && new_b.iter().any(|f| is_ordinal(f)) {
        return Ok(true);
    }
    // each side's title figures and dates the other document never states, as their digits
    let figures = |mine: &[&str], other: &Facts| -> Sure<(bool, FxHashSet<String>)> {
        let (mut any, mut out) = (false, FxHashSet::default());
        for f in mine {
            if (kind_is(f, FIGURE) || kind_is(f, OCCURRENCE)) && !is_ordinal(f) && other.lacks(f) {
                any = true;
                out.insert(digits(f)?);
            }
        }
        Ok((any, out))
    };
    let ((any_a, fa), (any_b, fb)) = (figures(&new_a, &Facts::new(b, max_facts))?, figures(&new_b, &Facts::new(a, max_facts))?);
    Ok(any_a && any_b && fa != fb)
}

/// `rule._real_names` of a comparison: how many one-sided names of each side hold, or are held by, none
/// of the other side's (the rest count as shared).
fn real_names(diff: &Diff) -> (usize, usize) {
    let a: Vec<&str> = diff.only_a.iter().filter(|f| kind_is(f.0, NAME)).map(|f| f.0).collect();
    let b: Vec<&str> = diff.only_b.iter().filter(|f| kind_is(f.0, NAME)).map(|f| f.0).collect();
    let apart = |n: &str, others: &[&str]| !others.iter().any(|m| m.contains(rest(n)) || n.contains(rest(m)));
    (a.iter().filter(|n| apart(n, &b)).count(), b.iter().filter(|n| apart(n, &a)).count())
}

/// What the fact steps read for one pair (`rule.FactParams`): the policy's thresholds at its days apart,
/// and the samples' sizes.
#[derive(FromPyObject)]
struct Params {
    need_figures: f64,
    need_facts: f64,
    new_fact_share: f64,
    edit_share: f64,
    max_occurrence_change: f64,
    max_figure_change: f64,
    max_name_change: f64,
    edits_forgive_dates: bool,
    edits_forgive_frames: bool,
    min_one_sided_name_share: f64,
    min_refilled: f64,
    max_refilled_share: f64,
    max_facts: usize,
    max_frames: usize,
}

/// (two-sided, changed) of counts of shared and one-sided facts (`FactDiff.two_sided`, `changed`).
fn changed(shared: usize, a: usize, b: usize) -> (bool, f64) {
    let union = shared + a + b;
    (a > 0 && b > 0, if union > 0 { (a + b) as f64 / union as f64 } else { 0.0 })
}

/// The step of `rule.facts_conflict` that rejects a pair ("" when none does), given its comparison.
fn fact_step(a: &[&str], b: &[&str], fa: &[u64], fb: &[u64], diff: &Diff, later: Option<bool>, p: &Params) -> Sure<&'static str> {
    if title_conflict(a, b, p.max_facts)? {
        return Ok("title");
    }
    let ordinal = |s: &[Fact]| s.iter().any(|f| is_ordinal(f.0));
    if ordinal(&diff.only_a) && ordinal(&diff.only_b) {
        return Ok("ordinals");
    }
    let mut real = None; // rule._real_names, read by two steps at most
    if p.new_fact_share < 1.0 {
        if let Some(a_later) = later {
            let (real_a, real_b) = *real.get_or_insert_with(|| real_names(diff));
            let own = if a_later { &diff.only_a } else { &diff.only_b };
            let new = own.iter().filter(|f| !kind_is(f.0, NAME)).count() + if a_later { real_a } else { real_b };
            if new as f64 > p.new_fact_share * (new + diff.shared.len()) as f64 {
                return Ok("facts");
            }
        }
    }
    let replaced = diff.only_a.len().min(diff.only_b.len());
    let edited = replaced as f64 <= p.edit_share * (replaced + diff.shared.len()) as f64;
    for (kind, limit) in [(OCCURRENCE, p.max_occurrence_change), (FIGURE, p.max_figure_change), (NAME, p.max_name_change)] {
        if edited && (kind != OCCURRENCE || p.edits_forgive_dates) {
            continue;
        }
        let shared = count_kind(&diff.shared, kind);
        let (mut one_a, mut one_b) = (count_kind(&diff.only_a, kind), count_kind(&diff.only_b, kind));
        if kind == NAME {
            // rule._names: matched names are shared; a side of few one-sided names states no other party
            let (real_a, real_b) = *real.get_or_insert_with(|| real_names(diff));
            let real_shared = shared + (one_a - real_a);
            let share = p.min_one_sided_name_share;
            one_a = if (real_a as f64) < share * (real_shared + real_a) as f64 { 0 } else { real_a };
            one_b = if (real_b as f64) < share * (real_shared + real_b) as f64 { 0 } else { real_b };
        }
        let (two_sided, share) = changed(shared, one_a, one_b);
        if two_sided && share >= limit {
            return Ok("facts");
        }
    }
    let (aligned, refilled) = compare_frames(fa, fb, p.max_frames);
    let share = if aligned > 0 { refilled as f64 / aligned as f64 } else { 0.0 };
    if refilled as f64 >= p.min_refilled && share >= p.max_refilled_share && !(edited && p.edits_forgive_frames) {
        return Ok("frames");
    }
    Ok("")
}

/// A pair's rejecting step ("" when none) and its facts: shared, only in `a`, only in `b`.
type Judged<'py> = (&'static str, Bound<'py, PyTuple>, Bound<'py, PyTuple>, Bound<'py, PyTuple>);

fn strs<'py>(seq: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyString>>> {
    seq.try_iter().ok()?.map(|f| f.ok()?.cast_into::<PyString>().ok()).collect()
}

/// `(step, shared, only_a, only_b)` of the fact steps of `rule.facts_conflict` for two texts' facts and
/// frames (`later`: whether `a` was published after `b`, None when they do not say or say one day): the
/// step that rejects the pair ("" when none does) and `compare_facts`'s comparison, or None where the
/// reference must run.
#[pyfunction]
fn fact_steps<'py>(
    py: Python<'py>, a: &Bound<'py, PyAny>, b: &Bound<'py, PyAny>, frames_a: &Bound<'py, PyAny>,
    frames_b: &Bound<'py, PyAny>, later: Option<bool>, params: Params,
) -> Option<Judged<'py>> {
    let (pa, pb) = (strs(a)?, strs(b)?);
    let sa: Vec<&str> = pa.iter().map(|f| f.to_str().ok()).collect::<Option<_>>()?;
    let sb: Vec<&str> = pb.iter().map(|f| f.to_str().ok()).collect::<Option<_>>()?;
    let fa: Vec<u64> = frames_a.extract().ok()?;
    let fb: Vec<u64> = frames_b.extract().ok()?;
    let (xa, xb): (Vec<Fact>, Vec<Fact>) = (sa.iter().copied().zip(&pa).collect(), sb.iter().copied().zip(&pb).collect());
    let diff = compare_facts(&xa, &xb, params.need_figures, params.need_facts, params.max_facts).ok()?;
    let step = fact_step(&sa, &sb, &fa, &fb, &diff, later, &params).ok()?;
    let tuple = |xs: &[Fact<'_, 'py>]| PyTuple::new(py, xs.iter().map(|x| x.1)).ok();
    Some((step, tuple(&diff.shared)?, tuple(&diff.only_a)?, tuple(&diff.only_b)?))
}

/// Days since 0001-01-01 of a `YYYY-MM-DD` date (`date.toordinal` - 1); None for any other writing or
/// an impossible date.
fn ordinal_day(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        b[r].iter().try_fold(0i64, |acc, &c| c.is_ascii_digit().then(|| acc * 10 + (c - b'0') as i64))
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let lengths = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if y < 1 || !(1..=12).contains(&m) || d < 1 || d > lengths[(m - 1) as usize] {
        return None;
    }
    let before: i64 = lengths[..(m - 1) as usize].iter().sum();
    let py = y - 1;
    Some(py * 365 + py / 4 - py / 100 + py / 400 + before + d - 1)
}

/// `compare.days_apart`: `(days, day_a, day_b)`, `(None, "", "")` when a side states no day, or None
/// where the reference must run (a day not written `YYYY-MM-DD`).
#[pyfunction]
fn days_apart(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> Option<(Option<i64>, String, String)> {
    let day = |seq: &Bound<'_, PyAny>| -> Option<Option<String>> {
        for f in seq.try_iter().ok()? {
            let f = f.ok()?.cast_into::<PyString>().ok()?;
            let s = f.to_str().ok()?;
            if kind_is(s, DAY) {
                return Some(Some(rest(s).to_owned()));
            }
        }
        Some(None)
    };
    let (Some(da), Some(db)) = (day(a)?, day(b)?) else {
        return Some((None, String::new(), String::new()));
    };
    let days = (ordinal_day(&da)? - ordinal_day(&db)?).abs();
    Some((Some(days), da, db))
}

/// A candidate's distance, where it lies (the query's fingerprint, the candidate's), sketch agreement and
/// shared band.
type Compared = (u32, usize, usize, f64, bool);

/// Per candidate of `rule.check_many`: the smallest Hamming distance over all fingerprint pairs, where it
/// lies (the first pair in row order), the sketches' agreement and whether a band is shared (only for a
/// candidate farther than `k`). None where the reference must run (a side without fingerprints, a
/// sketch of no whole minima).
#[pyfunction]
fn compare_candidates(
    fps: Vec<u64>, sketch: &[u8], candidates: Vec<(Vec<u64>, PyBackedBytes)>, k: u32, bands: usize, rows: usize,
) -> Option<Vec<Compared>> {
    if fps.is_empty() || !sketch.len().is_multiple_of(4) {
        return None;
    }
    let minima = |s: &[u8]| -> Vec<u32> { s.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect() };
    let q = minima(sketch);
    let banded = q.len() >= bands * rows && !q[..bands * rows].iter().all(|&m| m == u32::MAX);
    let mut out = Vec::with_capacity(candidates.len());
    for (theirs, their_sketch) in &candidates {
        let their_sketch: &[u8] = their_sketch;
        if theirs.is_empty() {
            return None;
        }
        let (mut best, mut at) = (u32::MAX, (0, 0));
        for (i, &x) in fps.iter().enumerate() {
            for (j, &y) in theirs.iter().enumerate() {
                let d = (x ^ y).count_ones();
                if d < best {
                    (best, at) = (d, (i, j));
                }
            }
        }
        let (mut sim, mut band) = (1.0, false);
        if !sketch.is_empty() {
            if their_sketch.len() == sketch.len() {
                let r = minima(their_sketch);
                sim = q.iter().zip(&r).filter(|(x, y)| x == y).count() as f64 / q.len() as f64;
                band = best > k
                    && banded
                    && (0..bands).any(|n| q[n * rows..(n + 1) * rows] == r[n * rows..(n + 1) * rows]);
            } else if !their_sketch.is_empty() {
                sim = 0.0;
            }
        }
        out.push((best, at.0, at.1, sim, band));
    }
    Some(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fact_steps, m)?)?;
    m.add_function(wrap_pyfunction!(days_apart, m)?)?;
    m.add_function(wrap_pyfunction!(compare_candidates, m)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinal_days_count_from_year_one() {
        assert_eq!(ordinal_day("0001-01-01"), Some(0));
        assert_eq!(ordinal_day("2024-03-01").unwrap() - ordinal_day("2024-02-28").unwrap(), 2);
        assert_eq!(ordinal_day("2023-03-01").unwrap() - ordinal_day("2023-02-28").unwrap(), 1);
        assert_eq!(ordinal_day("2023-02-29"), None);
        assert_eq!(ordinal_day("20230228"), None);
    }

    #[test]
    fn one_digit_apart_is_one_changed_digit_of_equal_figures() {
        assert!(one_digit_apart("=250", "=251").ok().unwrap());
        assert!(!one_digit_apart("=1972", "=1927").ok().unwrap());
        assert!(!one_digit_apart("#2023年", "#2024年").ok().unwrap());
        assert!(one_digit_apart("=１２", "=１３").ok().unwrap()); // decimal digits, full-width
        assert!(one_digit_apart("=²²", "=²³").is_err()); // superscripts: digits to Python, not decimal
    }

    #[test]
    fn frames_align_per_skeleton() {
        let a = [1u64 << 32 | 1, 1 << 32 | 2, 2 << 32 | 5];
        let b = [1u64 << 32 | 1, 1 << 32 | 3, 2 << 32 | 6];
        assert_eq!(compare_frames(&a, &b, 64), (3, 2));
    }
}
