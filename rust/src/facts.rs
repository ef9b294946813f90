//! A text's facts and frames (`analyse`) and its Latin-script names (`latin_body_names`), ported from
//! `fingerprint/facts.py`, the reference. Each regular expression there is a small scanner here that
//! takes the path Python's backtracking takes; character classes are Python's (`unicode.rs`: `\w`,
//! `\d` and digit values; `text::py_isspace`: `\s`). Offsets are bytes where Python's are characters:
//! they are only compared with each other. Where an input takes a path not ported (a sentence the
//! reference cuts into slices, a line whose lower-casing is not character for character), the
//! functions give None and the reference runs.

use std::collections::HashSet;

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use pyo3::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

use crate::text::{py_isspace, sentence_matches, sentence_spans, strip};
use crate::unicode::{decimal, is_word};

/// `MAX_SENTENCE` of `fingerprint/chunks.py`: a longer sentence is cut into slices (not ported).
const MAX_SENTENCE: usize = 4096;

const OCCURRENCE: char = '#';
const FIGURE: char = '=';
const NAME: char = '@';

const OCCURRENCE_UNITS: &str = "届次号期批轮年月日时";
const CN_RUN: &str = "〇零一二两三四五六七八九十百千万亿";
const CN_CLASSIFIERS: &str = "届次号期批轮年月日时个项名位人家条艘架枚颗元岁天周座所份种倍例米吨";
const EN_NUMBERS: [(&str, u32); 26] = [
    ("two", 2), ("three", 3), ("four", 4), ("five", 5), ("six", 6), ("seven", 7), ("eight", 8),
    ("nine", 9), ("ten", 10), ("eleven", 11), ("twelve", 12), ("thirteen", 13), ("fourteen", 14),
    ("fifteen", 15), ("sixteen", 16), ("seventeen", 17), ("eighteen", 18), ("nineteen", 19),
    ("twenty", 20), ("thirty", 30), ("forty", 40), ("fifty", 50), ("sixty", 60), ("seventy", 70),
    ("eighty", 80), ("ninety", 90),
];
const MONTHS: [&str; 12] = [
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december",
];

fn is_digit(c: char) -> bool {
    decimal(c).is_some()
}

fn is_cn(c: char) -> bool {
    CN_RUN.contains(c)
}

fn cn_digit(c: char) -> Option<u128> {
    Some(match c {
        '〇' | '零' => 0,
        '一' => 1,
        '二' | '两' => 2,
        '三' => 3,
        '四' => 4,
        '五' => 5,
        '六' => 6,
        '七' => 7,
        '八' => 8,
        '九' => 9,
        _ => return None,
    })
}

fn char_at(text: &str, p: usize) -> Option<char> {
    text[p..].chars().next()
}

fn char_before(text: &str, p: usize) -> Option<char> {
    text[..p].chars().next_back()
}

/// Where the run of characters satisfying `test` that starts at `p` ends.
fn run_end(text: &str, p: usize, test: impl Fn(char) -> bool) -> usize {
    text[p..].char_indices().find(|&(_, c)| !test(c)).map_or(text.len(), |(i, _)| p + i)
}

/// Whether a `\b` before a word character at `p` holds (the character before is none or no word's).
fn word_starts(text: &str, p: usize) -> bool {
    !char_before(text, p).is_some_and(is_word)
}

/// The end of `\d+(?:[.,]\d+)*` from `p` (a digit), with `\s*` after each separator when `spaced`.
fn figure_end(text: &str, p: usize, spaced: bool) -> usize {
    let mut e = run_end(text, p, is_digit);
    while matches!(char_at(text, e), Some('.' | ',')) {
        let k = if spaced { run_end(text, e + 1, py_isspace) } else { e + 1 };
        if !char_at(text, k).is_some_and(is_digit) {
            break;
        }
        e = run_end(text, k, is_digit);
    }
    e
}

/// `_SPLIT_FIGURE.sub(r"\1", text)`: a break inside a figure (`82.\n7`) is dropped.
pub fn join_split_figures(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut prev: Option<char> = None;
    let mut p = 0;
    while p < text.len() {
        let c = char_at(text, p).expect("a character");
        if matches!(c, '.' | ',') && prev.is_some_and(is_digit) {
            let k = run_end(text, p + 1, py_isspace);
            if k > p + 1 && char_at(text, k).is_some_and(is_digit) {
                out.push(c);
                prev = char_before(text, k);
                p = k;
                continue;
            }
        }
        out.push(c);
        prev = Some(c);
        p += c.len_utf8();
    }
    out
}

/// `_THOUSANDS.match(token)` on a token of `_ARABIC` (digit runs joined by `.` or `,`): a run of one
/// to three digits, groups of `,` and three digits, then perhaps `.` and digits.
fn thousands(token: &str) -> bool {
    let (mut runs, mut seps, mut run) = (Vec::new(), Vec::new(), 0usize);
    for c in token.chars() {
        if matches!(c, '.' | ',') {
            runs.push(run);
            seps.push(c);
            run = 0;
        } else {
            run += 1;
        }
    }
    runs.push(run);
    let commas = if seps.last() == Some(&'.') { seps.len() - 1 } else { seps.len() };
    commas >= 1
        && seps[..commas].iter().all(|&s| s == ',')
        && (1..=3).contains(&runs[0])
        && runs[1..=commas].iter().all(|&r| r == 3)
}

/// `_arabic`: `1,796,121` -> `1796121`; `007` -> `7`; `4.50` -> `4.5`; a decimal comma stays.
fn arabic(token: &str) -> String {
    let token = if thousands(token) { token.replace(',', "") } else { token.to_owned() };
    if token.contains(',') {
        return token;
    }
    if let Some((whole, frac)) = token.split_once('.') {
        if frac.contains('.') {
            return token;
        }
        let frac = frac.trim_end_matches('0');
        let whole = match whole.trim_start_matches('0') {
            "" => "0",
            w => w,
        };
        return if frac.is_empty() { whole.to_owned() } else { format!("{whole}.{frac}") };
    }
    match token.trim_start_matches('0') {
        "" => "0".to_owned(),
        t => t.to_owned(),
    }
}

/// `chinese_number`: the value of a run of `_CN_RUN` characters, as Python prints it; None when the
/// run is no numeral. `Err` when it leaves 128 bits (not ported).
fn chinese_number(run: &str) -> Result<Option<String>, ()> {
    if run.chars().all(|c| cn_digit(c).is_some()) {
        let digits: String = run.chars().map(|c| char::from(b'0' + cn_digit(c).unwrap() as u8)).collect();
        return Ok(Some(match digits.trim_start_matches('0') {
            "" => "0".to_owned(),
            d => d.to_owned(),
        }));
    }
    let (mut total, mut section, mut digit) = (0u128, 0u128, 0u128);
    let mut seen_digit = false;
    for c in run.chars() {
        if let Some(d) = cn_digit(c) {
            (digit, seen_digit) = (d, true);
        } else if let Some(unit) = match c { '十' => Some(10), '百' => Some(100), '千' => Some(1000), _ => None } {
            let add = (if seen_digit { digit } else { 1 }).checked_mul(unit).ok_or(())?;
            section = section.checked_add(add).ok_or(())?;
            (digit, seen_digit) = (0, false);
        } else if let Some(big) = match c { '万' => Some(10_000u128), '亿' => Some(100_000_000), _ => None } {
            section = section.checked_add(digit).ok_or(())?;
            if section == 0 {
                return Ok(None);
            }
            total = total.checked_add(section.checked_mul(big).ok_or(())?).ok_or(())?;
            (section, digit, seen_digit) = (0, 0, false);
        } else {
            return Ok(None);
        }
    }
    let value = total.checked_add(section).and_then(|v| v.checked_add(digit)).ok_or(())?;
    Ok(Some(value.to_string()))
}

/// `_qualified`: `第` + 33 + `次` -> `#第33次`; 569 + `例` -> `=569` (only occurrence units are kept).
fn qualified(ordinal: bool, value: &str, unit: Option<char>) -> String {
    let unit = unit.filter(|&u| OCCURRENCE_UNITS.contains(u));
    if ordinal || unit.is_some() {
        let mut out = String::from(OCCURRENCE);
        if ordinal {
            out.push('第');
        }
        out.push_str(value);
        out.extend(unit);
        out
    } else {
        format!("{FIGURE}{value}")
    }
}

fn month_at(text: &str, p: usize) -> Option<&'static str> {
    MONTHS.iter().copied().find(|m| text[p..].starts_with(m))
}

/// The end of a maximal run of word characters from `p`.
fn word_end(text: &str, p: usize) -> usize {
    run_end(text, p, is_word)
}

/// `_number_facts`: (start, end, fact) of every match of `_ARABIC`, `_CN_NUMERAL`, `_CN_PART`,
/// `_EN_DATE` and `_EN_WORD`, pattern by pattern, each in text order.
fn number_facts(text: &str) -> Result<Vec<(usize, usize, String)>, ()> {
    let mut out = Vec::new();
    let first = |p: usize| char_at(text, p).expect("a character");
    // _ARABIC: (第)?(\d+(?:[.,]\d+)*)([occurrence units])?
    let mut p = 0;
    while p < text.len() {
        let c = first(p);
        let digits = if c == '第' && char_at(text, p + c.len_utf8()).is_some_and(is_digit) {
            Some(p + c.len_utf8())
        } else if is_digit(c) {
            Some(p)
        } else {
            None
        };
        let Some(d) = digits else {
            p += c.len_utf8();
            continue;
        };
        let e = figure_end(text, d, false);
        let unit = char_at(text, e).filter(|&u| OCCURRENCE_UNITS.contains(u));
        let end = e + unit.map_or(0, char::len_utf8);
        out.push((p, end, qualified(d > p, &arabic(&text[d..e]), unit)));
        p = end;
    }
    // _CN_NUMERAL: (第)?([_CN_RUN]+)(?=([classifiers])?)
    p = 0;
    while p < text.len() {
        let c = first(p);
        let run = if c == '第' && char_at(text, p + c.len_utf8()).is_some_and(is_cn) {
            Some(p + c.len_utf8())
        } else if is_cn(c) {
            Some(p)
        } else {
            None
        };
        let Some(r) = run else {
            p += c.len_utf8();
            continue;
        };
        let e = run_end(text, r, is_cn);
        let ordinal = r > p;
        let classifier = char_at(text, e).filter(|&u| CN_CLASSIFIERS.contains(u));
        let numeral = &text[r..e];
        if ordinal || (classifier.is_some() && !matches!(numeral, "一" | "两")) {
            if let Some(value) = chinese_number(numeral)? {
                out.push((p, e + classifier.map_or(0, char::len_utf8), qualified(ordinal, &value, classifier)));
            }
        }
        p = e;
    }
    // _CN_PART: \(([_CN_RUN]{1,4})\)
    p = 0;
    while p < text.len() {
        let c = first(p);
        if c == '(' {
            let e = run_end(text, p + 1, is_cn);
            let n = text[p + 1..e].chars().count();
            if (1..=4).contains(&n) && char_at(text, e) == Some(')') {
                if let Some(value) = chinese_number(&text[p + 1..e])? {
                    out.push((p, e + 1, format!("{OCCURRENCE}第{value}")));
                }
                p = e + 1;
                continue;
            }
        }
        p += c.len_utf8();
    }
    // _EN_DATE: \b(?:(month)\s+(\d{1,2})|(\d{1,2})\s+(month))\b
    p = 0;
    while p < text.len() {
        let c = first(p);
        if let Some((end, month, day)) = en_date(text, p, c) {
            out.push((p, end, format!("{OCCURRENCE}{month} {day}")));
            p = end;
        } else {
            p += c.len_utf8();
        }
    }
    // _EN_WORD: \b(two|...|ninety|january|...|december, "may" aside)\b
    p = 0;
    while p < text.len() {
        let c = first(p);
        if is_word(c) && word_starts(text, p) {
            let e = word_end(text, p);
            let w = &text[p..e];
            if let Some(&(_, v)) = EN_NUMBERS.iter().find(|(n, _)| *n == w) {
                out.push((p, e, format!("{FIGURE}{v}")));
            } else if w != "may" && MONTHS.contains(&w) {
                out.push((p, e, format!("{FIGURE}{w}")));
            }
            p = e; // no word boundary inside the run
        } else {
            p += c.len_utf8();
        }
    }
    Ok(out)
}

/// A match of `_EN_DATE` at `p` (character `c`): its end, the month and the day's value.
fn en_date(text: &str, p: usize, c: char) -> Option<(usize, &'static str, u32)> {
    if !is_word(c) || !word_starts(text, p) {
        return None;
    }
    // one or two digits at `d`: (end, value) when `follows` holds after them
    let day = |d: usize, follows: &dyn Fn(Option<char>) -> bool| -> Option<(usize, u32)> {
        let c1 = char_at(text, d)?;
        let v1 = decimal(c1)?;
        let e1 = d + c1.len_utf8();
        match char_at(text, e1).and_then(|c2| decimal(c2).map(|v2| (c2, v2))) {
            Some((c2, v2)) => {
                let e2 = e1 + c2.len_utf8();
                follows(char_at(text, e2)).then_some((e2, v1 * 10 + v2))
            }
            None => follows(char_at(text, e1)).then_some((e1, v1)),
        }
    };
    if let Some(month) = month_at(text, p) {
        // (month)\s+(\d{1,2})\b
        let s = p + month.len();
        let k = run_end(text, s, py_isspace);
        if k == s {
            return None;
        }
        let (end, v) = day(k, &|next| !next.is_some_and(is_word))?;
        return Some((end, month, v));
    }
    // (\d{1,2})\s+(month)\b
    let (s, v) = day(p, &|next| next.is_some_and(py_isspace))?;
    let k = run_end(text, s, py_isspace);
    let month = month_at(text, k)?;
    let end = k + month.len();
    (!char_at(text, end).is_some_and(is_word)).then_some((end, month, v))
}

/// `_MASK_NUMBERS.sub("#", unit)` with the spaces dropped (`"".join(x.split())`).
fn skeleton(unit: &str) -> String {
    let mut out = String::with_capacity(unit.len());
    let mut p = 0;
    while p < unit.len() {
        let c = char_at(unit, p).expect("a character");
        let masked = if is_digit(c) {
            Some(figure_end(unit, p, true))
        } else if is_cn(c) {
            Some(run_end(unit, p, is_cn))
        } else if is_word(c) && word_starts(unit, p) {
            let e = word_end(unit, p);
            let w = &unit[p..e];
            (EN_NUMBERS.iter().any(|(n, _)| *n == w) || MONTHS.contains(&w)).then_some(e)
        } else {
            None
        };
        match masked {
            Some(e) => {
                out.push('#');
                p = e;
            }
            None => {
                if !py_isspace(c) {
                    out.push(c);
                }
                p += c.len_utf8();
            }
        }
    }
    out
}

/// Python's `bisect_right(starts, x) - 1`, with -1 as the last index (Python's `list[-1]`).
fn unit_of(spans: &[(usize, usize)], x: usize) -> Option<usize> {
    let i = spans.partition_point(|&(a, _)| a <= x);
    if i > 0 { Some(i - 1) } else { spans.len().checked_sub(1) }
}

type Unit<'t, 'n> = (&'t str, HashSet<String>, Vec<&'n str>);

/// `_units_with_facts`: each line's sentences with their number facts and the names that may occur in
/// them (longest first); the whole text's matches go to the units they lie in, else unit by unit.
fn units_with_facts<'t, 'n>(text: &'t str, longest_first: &[&'n str]) -> Result<Vec<Unit<'t, 'n>>, ()> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut a = 0;
    for line in text.split('\n') {
        if !line.is_empty() {
            // `sentence_spans` of a line; a longer sentence would be cut into slices (not ported)
            let got = sentence_spans(line, MAX_SENTENCE).ok_or(())?;
            spans.extend(got.into_iter().map(|(s, e)| (a + s, a + e)));
        }
        a += line.len() + 1;
    }
    let one_by_one = || -> Result<Vec<Unit<'t, 'n>>, ()> {
        spans
            .iter()
            .map(|&(a, b)| {
                let unit = &text[a..b];
                let here = number_facts(unit)?.into_iter().map(|(_, _, f)| f).collect();
                Ok((unit, here, longest_first.to_vec()))
            })
            .collect()
    };
    let mut found: Vec<HashSet<String>> = vec![HashSet::new(); spans.len()];
    for (start, end, fact) in number_facts(text)? {
        let i = spans.partition_point(|&(a, _)| a <= start);
        if i == 0 || end > spans[i - 1].1 {
            return one_by_one();
        }
        found[i - 1].insert(fact);
    }
    // the units each name occurs in, in the order of `longest_first`: all occurrences of all names in
    // one scan (the reference searches the text once per name, from each unit it found it in on)
    let mut named_ids: Vec<Vec<usize>> = vec![Vec::new(); spans.len()];
    if !longest_first.is_empty() {
        // a contiguous NFA: a DFA's build costs more than the one scan it serves
        let names = AhoCorasick::builder()
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(longest_first)
            .map_err(|_| ())?;
        for m in names.find_overlapping_iter(text) {
            let i = unit_of(&spans, m.start()).ok_or(())?; // no unit: the reference fails
            named_ids[i].push(m.pattern().as_usize());
        }
    }
    let named: Vec<Vec<&'n str>> = named_ids
        .into_iter()
        .map(|mut ids| {
            ids.sort_unstable();
            ids.dedup();
            ids.into_iter().map(|p| longest_first[p]).collect()
        })
        .collect();
    Ok(spans
        .iter()
        .zip(found)
        .zip(named)
        .map(|((&(a, b), here), names)| (&text[a..b], here, names))
        .collect())
}

fn by_hash(items: HashSet<String>, limit: usize) -> Vec<String> {
    let mut keyed: Vec<(u64, String)> = items.into_iter().map(|f| (xxh3_64(f.as_bytes()), f)).collect();
    keyed.sort_unstable();
    keyed.into_iter().take(limit).map(|(_, f)| f).collect()
}

/// `analyse(text, names, max_facts, max_frames, latin, terms_are_names=True)`: the facts (bottom
/// `max_facts` by hash) and frames (the `max_frames` smallest) of `text`; None where the reference
/// must run.
pub fn analyse(
    text: &str, names: &[&str], latin: &[&str], max_facts: usize, max_frames: usize,
) -> Option<(Vec<String>, Vec<u64>)> {
    if names.iter().any(|n| n.is_empty()) {
        return None;
    }
    let found: HashSet<&str> = names.iter().copied().collect();
    let mut longest_first: Vec<(usize, &str)> = found.iter().map(|n| (n.chars().count(), *n)).collect();
    longest_first.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let longest_first: Vec<&str> = longest_first.into_iter().map(|(_, n)| n).collect();
    let mut facts: HashSet<String> = found.iter().chain(latin).map(|n| format!("{NAME}{n}")).collect();
    let mut frames: Vec<u64> = Vec::new();
    let joined = join_split_figures(text);
    for (unit, mut here, candidates) in units_with_facts(&joined, &longest_first).ok()? {
        facts.extend(here.iter().cloned());
        let mut unit = unit.to_owned();
        for n in candidates {
            if unit.contains(n) {
                here.insert(format!("{NAME}{n}"));
                unit = unit.replace(n, "@");
            }
        }
        if here.is_empty() {
            continue;
        }
        let mut filled: Vec<&str> = here.iter().map(String::as_str).collect();
        filled.sort_unstable();
        let filled = xxh3_64(filled.join("\x1f").as_bytes()) & 0xFFFF_FFFF;
        frames.push((xxh3_64(skeleton(&unit).as_bytes()) & 0xFFFF_FFFF) << 32 | filled);
    }
    frames.sort_unstable();
    frames.dedup();
    frames.truncate(max_frames);
    Some((by_hash(facts, max_facts), frames))
}

// ------------------------------------------------------------------------------------ Latin names

/// Where each character of `line` starts, and the end (a line's byte offsets by character).
fn char_starts(line: &str) -> Vec<usize> {
    line.char_indices().map(|(i, _)| i).chain(std::iter::once(line.len())).collect()
}

/// `piece.lower()` for `line[a..b]`, given `lower` (`line.lower()`), when lower-casing maps character
/// to character and no context decides (no capital sigma); None otherwise.
struct Lowering<'l> {
    line: &'l str,
    lower: &'l str,
    map: Option<(Vec<usize>, Vec<usize>)>,
}

impl<'l> Lowering<'l> {
    fn new(line: &'l str, lower: &'l str) -> Option<Self> {
        if line.is_ascii() && lower.len() == line.len() {
            return Some(Lowering { line, lower, map: None });
        }
        let (from, to) = (char_starts(line), char_starts(lower));
        if from.len() != to.len() || line.contains('\u{3a3}') {
            return None;
        }
        Some(Lowering { line, lower, map: Some((from, to)) })
    }

    fn slice(&self, a: usize, b: usize) -> &'l str {
        match &self.map {
            None => &self.lower[a..b],
            Some((from, to)) => {
                let ia = from.binary_search(&a).expect("a character boundary");
                let ib = from.binary_search(&b).expect("a character boundary");
                debug_assert!(b <= self.line.len());
                &self.lower[to[ia]..to[ib]]
            }
        }
    }
}

/// The stripped, non-empty pieces `SENTENCE_RE.findall(line)` gives, as byte ranges. On a line (no
/// line break) `SENTENCE_RE` matches as `_SENTENCE` does: a period at the end closes the last
/// sentence either way.
fn pieces(line: &str) -> Vec<(usize, usize)> {
    sentence_matches(line).into_iter().map(|(a, b)| strip(line, a, b)).filter(|(a, b)| b > a).collect()
}

const OPENERS: [char; 5] = ['.', '!', '?', ':', ';'];
const QUOTES: [char; 4] = ['"', '\'', ')', ']'];

/// `_OPENS.search(piece, max(0, at - 6), at)`: punctuation, closing quotes, then spaces up to `at`,
/// all within the six characters before it.
fn opens_before(piece: &str, at: usize) -> bool {
    let before: Vec<char> = piece[..at].chars().rev().take(6).collect();
    let spaces = before.iter().take_while(|&&c| py_isspace(c)).count();
    if spaces == 0 {
        return false;
    }
    let quotes = before[spaces..].iter().take_while(|c| QUOTES.contains(c)).count();
    before.get(spaces + quotes).is_some_and(|c| OPENERS.contains(c))
}

/// `_CLOSES.search(line)`: the line ends with punctuation and closing quotes.
fn closes(line: &str) -> bool {
    line.trim_end_matches(QUOTES).chars().next_back().is_some_and(|c| OPENERS.contains(&c))
}

fn cased_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'&' | b'\'' | b'-')
}

/// `latin_body_names(cased, body, stopwords)`, given `lower` = `cased.lower()`; None where the
/// reference must run.
pub fn latin_body_names(
    cased: &str, lower: &str, body: &str, stopwords: &HashSet<String>,
) -> Option<HashSet<String>> {
    let mut out = HashSet::new();
    if cased.is_empty() {
        return Some(out);
    }
    let kept_lines: HashSet<&str> = body.split('\n').collect();
    let mut kept: Option<HashSet<&str>> = None;
    let mut opens = true;
    let mut lowered = lower.split('\n');
    for line in cased.split('\n') {
        let low = lowered.next()?;
        let whole = kept_lines.contains(low);
        let (spans, lowering) = if whole {
            (vec![(0, line.len())], None)
        } else {
            (pieces(line), Some(Lowering::new(line, low)?))
        };
        if !whole && kept.is_none() {
            kept = Some(kept_lines.iter().flat_map(|x| pieces(x).into_iter().map(|(a, b)| &x[a..b])).collect());
        }
        for (n, &(a, b)) in spans.iter().enumerate() {
            let first = n == 0 && !opens;
            if let Some(l) = &lowering {
                if !kept.as_ref().expect("kept sentences").contains(l.slice(a, b)) {
                    continue;
                }
            }
            let piece = &line[a..b];
            let bytes = piece.as_bytes();
            let mut i = 0;
            while i < bytes.len() {
                if !bytes[i].is_ascii_uppercase() {
                    i += 1;
                    continue;
                }
                let at = i;
                i += 1;
                while i < bytes.len() && cased_word_byte(bytes[i]) {
                    i += 1;
                }
                if (at == 0 && !first) || opens_before(piece, at) {
                    continue;
                }
                let name = piece[at..i].trim_end_matches(['\'', '-']).to_ascii_lowercase();
                if name.len() >= 2 && !stopwords.contains(&name) {
                    out.insert(name);
                }
            }
        }
        opens = !whole || closes(line) || line.chars().count() <= 40;
    }
    if lowered.next().is_some() {
        return None;
    }
    Some(out)
}

/// The facts and frames of a document's `body` (`Fingerprinter.fingerprint_text`'s facts step): its
/// Latin-script names when `cased` is given, then `analyse` with its `names`.
#[allow(clippy::too_many_arguments)]
pub fn body_facts(
    body: &str, names: &[String], cased: &str, lower: &str, stopwords: &HashSet<String>,
    max_facts: usize, max_frames: usize,
) -> Option<(Vec<String>, Vec<u64>)> {
    let latin = latin_body_names(cased, lower, body, stopwords)?;
    let latin: Vec<&str> = latin.iter().map(String::as_str).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    analyse(body, &names, &latin, max_facts, max_frames)
}

/// `analyse(text, names, max_facts, max_frames, latin, terms_are_names=True)`, or None where the
/// reference must run (for the equality checks).
#[pyfunction(name = "analyse")]
fn py_analyse(
    py: Python<'_>, text: &str, names: Vec<String>, latin: Vec<String>, max_facts: usize, max_frames: usize,
) -> Option<(Vec<String>, Vec<u64>)> {
    py.detach(|| {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let latin: Vec<&str> = latin.iter().map(String::as_str).collect();
        analyse(text, &names, &latin, max_facts, max_frames)
    })
}

/// `latin_body_names(cased, body, stopwords)` given `lower` = `cased.lower()`, or None where the
/// reference must run (for the equality checks).
#[pyfunction(name = "latin_body_names")]
fn py_latin_body_names(
    py: Python<'_>, cased: &str, lower: &str, body: &str, stopwords: HashSet<String>,
) -> Option<HashSet<String>> {
    py.detach(|| latin_body_names(cased, lower, body, &stopwords))
}

/// Adds the functions and the Unicode version of the character tables to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(py_analyse, m)?)?;
    m.add_function(wrap_pyfunction!(py_latin_body_names, m)?)?;
    m.add("UNICODE_VERSION", crate::unicode::VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures() {
        assert_eq!(arabic("1,796,121"), "1796121");
        assert_eq!(arabic("007"), "7");
        assert_eq!(arabic("4.50"), "4.5");
        assert_eq!(arabic("1,5"), "1,5");
        assert_eq!(arabic("1.2.3"), "1.2.3");
        assert_eq!(arabic("1,234.50"), "1234.5");
        assert_eq!(join_split_figures("82.\n7m, 3. 4"), "82.7m, 3.4");
    }

    #[test]
    fn chinese() {
        assert_eq!(chinese_number("一百二十七"), Ok(Some("127".into())));
        assert_eq!(chinese_number("二〇二二"), Ok(Some("2022".into())));
        assert_eq!(chinese_number("万"), Ok(None));
    }

    #[test]
    fn dates() {
        let t = "on march 5 and 12 may, may 123";
        let got: Vec<String> = number_facts(t).unwrap().into_iter().map(|(_, _, f)| f).collect();
        assert_eq!(got, vec!["=5", "=12", "=123", "#march 5", "#may 12", "=march"]);
        assert_eq!(skeleton("on march 5, 2 cats 一二"), "on##cats#");
    }
}
