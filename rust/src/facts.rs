//! A text's facts and frames (`analyse`) and its Latin-script names (`latin_body_names`), ported from
//! `fingerprint/facts.py`, the reference. Each regular expression there is a small scanner here that
//! takes the path Python's backtracking takes; character classes are Python's (`unicode.rs`: `\w`,
//! `\d` and digit values; `text::py_isspace`: `\s`). Offsets are bytes where Python's are characters:
//! they are only compared with each other. Where an input takes a path not ported (a sentence the
//! reference cuts into slices, a line whose lower-casing is not character for character), the
//! functions give None and the reference runs.
//!
//! The number patterns are scanned in one pass (each pattern resuming where its own last match ended,
//! as `finditer` does) that also finds where the names start and what the skeletons mask, facts are
//! slices of one buffer, names are masked from where that scan found them, and a unit's skeleton is
//! copied around its masked names and the scan's figures, numerals and number words: the reference's
//! sets and string replacements, without an allocation per fact.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::Range;

use pyo3::prelude::*;
use rustc_hash::FxHashSet;
use xxhash_rust::xxh3::xxh3_64;

use crate::text::{
    ascii_space, leading_bytes, push_sentence_spans, push_without_space, py_isspace, sentence_matches, strip, ByteSet,
};
use crate::unicode::{decimal, is_word};

/// `MAX_SENTENCE` of `fingerprint/chunks.py`: a longer sentence is cut into slices (not ported).
const MAX_SENTENCE: usize = 4096;

/// The kinds of fact, each a fact's first character (`OCCURRENCE`, `FIGURE`, `NAME`, `DAY`, `TITLE` of
/// `fingerprint/facts.py`).
pub(crate) const OCCURRENCE: char = '#';
pub(crate) const FIGURE: char = '=';
pub(crate) const NAME: char = '@';
pub(crate) const DAY: char = '%';
pub(crate) const TITLE: char = '^';

/// What a word of `_EN_NUMBERS` or `_MONTHS` is.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Word {
    Number(u32),
    Month,
}

/// `_EN_NUMBERS` (two to ninety, with their values) and `_MONTHS`, in byte order.
const WORDS: [(&str, Word); 38] = [
    ("april", Word::Month), ("august", Word::Month), ("december", Word::Month), ("eight", Word::Number(8)),
    ("eighteen", Word::Number(18)), ("eighty", Word::Number(80)), ("eleven", Word::Number(11)),
    ("february", Word::Month), ("fifteen", Word::Number(15)), ("fifty", Word::Number(50)),
    ("five", Word::Number(5)), ("forty", Word::Number(40)), ("four", Word::Number(4)),
    ("fourteen", Word::Number(14)), ("january", Word::Month), ("july", Word::Month), ("june", Word::Month),
    ("march", Word::Month), ("may", Word::Month), ("nine", Word::Number(9)), ("nineteen", Word::Number(19)),
    ("ninety", Word::Number(90)), ("november", Word::Month), ("october", Word::Month),
    ("september", Word::Month), ("seven", Word::Number(7)), ("seventeen", Word::Number(17)),
    ("seventy", Word::Number(70)), ("six", Word::Number(6)), ("sixteen", Word::Number(16)),
    ("sixty", Word::Number(60)), ("ten", Word::Number(10)), ("thirteen", Word::Number(13)),
    ("thirty", Word::Number(30)), ("three", Word::Number(3)), ("twelve", Word::Number(12)),
    ("twenty", Word::Number(20)), ("two", Word::Number(2)),
];
/// The shortest and longest of `WORDS` (`two`, `september`), in bytes.
const WORD_LENGTHS: std::ops::RangeInclusive<usize> = 3..=9;
const LONGEST_WORD: usize = 9;

/// A word of up to 16 bytes as one number (its bytes in order from the lowest), to compare at once.
const fn word_key(w: &[u8]) -> u128 {
    let mut key = 0u128;
    let mut i = 0;
    while i < w.len() {
        key |= (w[i] as u128) << (8 * i);
        i += 1;
    }
    key
}

/// The key of each of `WORDS`.
const WORD_KEYS: [u128; WORDS.len()] = {
    let mut keys = [0u128; WORDS.len()];
    let mut i = 0;
    while i < WORDS.len() {
        keys[i] = word_key(WORDS[i].0.as_bytes());
        i += 1;
    }
    keys
};

/// A multiplier under which the keys of `WORDS` fall into distinct slots of `WORD_SLOTS` (checked
/// as the table is built).
const WORD_HASH: u64 = 0x4262_89ba_dfaf_0f0d;

const fn word_slot(key: u128) -> usize {
    ((key as u64 ^ (key >> 64) as u64).wrapping_mul(WORD_HASH) >> 57) as usize
}

/// For each of 128 slots, 1 + the index in `WORDS` of the word there, or 0.
const WORD_SLOTS: [u8; 128] = {
    let mut slots = [0u8; 128];
    let mut i = 0;
    while i < WORDS.len() {
        let slot = word_slot(WORD_KEYS[i]);
        assert!(slots[slot] == 0, "two words in one slot");
        slots[slot] = i as u8 + 1;
        i += 1;
    }
    slots
};

/// The entry of `WORDS` that `w` is.
#[inline]
fn word_of(w: &str) -> Option<(&'static str, Word)> {
    if !WORD_LENGTHS.contains(&w.len()) {
        return None;
    }
    let key = word_key(w.as_bytes());
    let i = WORD_SLOTS[word_slot(key)] as usize;
    (i > 0 && WORD_KEYS[i - 1] == key).then(|| WORDS[i - 1])
}

/// `\d`: ASCII digits without a table search, and none from U+2000 to U+A61F (punctuation, CJK: the
/// tables hold no decimal digit there, see the test `no_digit_in_the_gap`).
#[inline]
fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else if ('\u{2000}'..'\u{a620}').contains(&c) {
        false
    } else {
        decimal(c).is_some()
    }
}

/// `_CN_RUN`: 〇零一二两三四五六七八九十百千万亿.
const CN_RUN: [char; 17] = ['〇', '零', '一', '二', '两', '三', '四', '五', '六', '七', '八', '九', '十', '百', '千', '万', '亿'];

/// A filter of the characters of `_CN_RUN` by their low ten bits: most characters have a clear bit.
const CN_FILTER: [u64; 16] = {
    let mut filter = [0u64; 16];
    let mut i = 0;
    while i < CN_RUN.len() {
        let low = CN_RUN[i] as u32 & 1023;
        filter[(low >> 6) as usize] |= 1 << (low & 63);
        i += 1;
    }
    filter
};

/// Whether `c` is of `_CN_RUN`.
#[inline]
fn is_cn(c: char) -> bool {
    is_cn_code(c as u32)
}

/// Whether the code point `v` is of `_CN_RUN`.
#[inline]
fn is_cn_code(v: u32) -> bool {
    let low = v & 1023;
    CN_FILTER[(low >> 6) as usize] >> (low & 63) & 1 == 1 && CN_RUN.iter().any(|&c| c as u32 == v)
}

/// The code point of the three-byte character that starts at `p` of the UTF-8 `bytes`.
#[inline(always)]
fn code3(bytes: &[u8], p: usize) -> u32 {
    (bytes[p] as u32 & 0x0f) << 12 | (bytes[p + 1] as u32 & 0x3f) << 6 | bytes[p + 2] as u32 & 0x3f
}

/// `_OCCURRENCE_UNITS`: 届次号期批轮年月日时.
fn is_occurrence_unit(c: char) -> bool {
    matches!(c, '届' | '次' | '号' | '期' | '批' | '轮' | '年' | '月' | '日' | '时')
}

/// `_CN_CLASSIFIERS`: the occurrence units and 个项名位人家条艘架枚颗元岁天周座所份种倍例米吨.
fn is_classifier(c: char) -> bool {
    is_occurrence_unit(c)
        || matches!(c, '个' | '项' | '名' | '位' | '人' | '家' | '条' | '艘' | '架' | '枚' | '颗' | '元' | '岁'
            | '天' | '周' | '座' | '所' | '份' | '种' | '倍' | '例' | '米' | '吨')
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

#[inline]
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

/// Whether `\b` holds before a word character whose predecessor is `prev` (none at the start).
#[inline]
fn boundary_after(prev: Option<char>) -> bool {
    !prev.is_some_and(|c| if c.is_ascii() { c.is_ascii_alphanumeric() || c == '_' } else { is_word(c) })
}

/// Whether `\b` holds before a word character at `p` of `text`.
#[inline]
fn word_starts_at(text: &str, p: usize) -> bool {
    match p.checked_sub(1).map(|q| text.as_bytes()[q]) {
        None => true,
        Some(b) if b < 0x80 => !(b.is_ascii_alphanumeric() || b == b'_'),
        Some(_) => boundary_after(char_before(text, p)),
    }
}

/// The end of `\d+(?:[.,]\d+)*` from `p` (a digit), with `\s*` after each separator when `spaced`.
fn figure_end(text: &str, p: usize, spaced: bool) -> usize {
    let mut e = run_end(text, p, is_digit);
    while matches!(text.as_bytes().get(e), Some(b'.' | b',')) {
        let k = if spaced { run_end(text, e + 1, py_isspace) } else { e + 1 };
        if !char_at(text, k).is_some_and(is_digit) {
            break;
        }
        e = run_end(text, k, is_digit);
    }
    e
}

// ------------------------------------------------------------------------------- split figures

/// Where a match of `_SPLIT_FIGURE` (`(?<=\d)([.,])\s+(?=\d)`) whose separator is at `p` ends (the
/// digit after the spaces), or None when none starts there.
fn split_figure_at(text: &str, p: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if !matches!(bytes[p], b'.' | b',') || bytes.get(p + 1).is_some_and(|&b| b.is_ascii() && !ascii_space(b)) {
        return None; // no separator, or no space after it
    }
    if !char_before(text, p).is_some_and(is_digit) {
        return None;
    }
    let k = run_end(text, p + 1, py_isspace);
    (k > p + 1 && char_at(text, k).is_some_and(is_digit)).then_some(k)
}

/// The separators of a figure, where `_SPLIT_FIGURE` may match.
const SEPARATORS: ByteSet = ByteSet::new(b".,");

/// `_SPLIT_FIGURE.sub(r"\1", text)`: a break inside a figure (`82.\n7`) is dropped; the text itself
/// when it has none.
pub fn join_split_figures(text: &str) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    let mut copied = 0; // text[..copied] is in `out`
    let bytes = text.as_bytes();
    let mut p = SEPARATORS.find(bytes, 0);
    while p < bytes.len() {
        if let Some(k) = split_figure_at(text, p) {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
            out.push_str(&text[copied..=p]);
            copied = k;
            p = k;
        } else {
            p += 1;
        }
        p = SEPARATORS.find(bytes, p);
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
    }
}

// ------------------------------------------------------------------------------------- values

/// `_THOUSANDS.match(token)` on a token of `_ARABIC` (digit runs joined by `.` or `,`): a run of one
/// to three digits, groups of `,` and three digits, then perhaps `.` and digits.
fn thousands(token: &str) -> bool {
    let (head, frac) = token.split_once('.').map_or((token, ""), |(h, f)| (h, f));
    if frac.contains(['.', ',']) {
        return false;
    }
    let mut groups = head.split(',');
    let first = groups.next().map_or(0, |g| g.chars().count());
    let mut commas = 0;
    for g in groups {
        if g.chars().count() != 3 {
            return false;
        }
        commas += 1;
    }
    commas >= 1 && (1..=3).contains(&first)
}

/// `_arabic`, written to `out`: `1,796,121` -> `1796121`; `007` -> `7`; `4.50` -> `4.5`; a decimal
/// comma stays.
fn push_arabic(token: &str, out: &mut String) {
    let thousands = thousands(token);
    if !thousands && token.contains(',') {
        out.push_str(token); // `if "," in token: return token`
        return;
    }
    let (whole, frac) = match token.split_once('.') {
        Some((_, frac)) if frac.contains('.') => {
            out.push_str(token); // a version or date such as 1.2.3: as written (no commas here)
            return;
        }
        Some((whole, frac)) => (whole, frac.trim_end_matches('0')),
        None => (token, ""),
    };
    // `whole.lstrip("0") or "0"`, the thousands' commas dropped
    let whole = whole.trim_start_matches(['0', ',']);
    if whole.is_empty() {
        out.push('0');
    } else {
        out.extend(whole.chars().filter(|&c| c != ','));
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
}

/// `chinese_number`: the value of a run of `_CN_RUN` characters, written to `out` as Python prints
/// it; false (nothing written) when the run is no numeral. `Err` when it leaves 128 bits (not ported).
fn push_chinese_number(run: &str, out: &mut String) -> Result<bool, ()> {
    if run.chars().all(|c| cn_digit(c).is_some()) {
        // digit by digit: int("".join(...)) drops the leading zeros
        let digits = run.chars().map(|c| cn_digit(c).expect("a digit") as u8);
        let mut seen = false;
        for d in digits {
            seen |= d != 0;
            if seen {
                out.push(char::from(b'0' + d));
            }
        }
        if !seen {
            out.push('0');
        }
        return Ok(true);
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
                return Ok(false);
            }
            total = total.checked_add(section.checked_mul(big).ok_or(())?).ok_or(())?;
            (section, digit, seen_digit) = (0, 0, false);
        } else {
            return Ok(false);
        }
    }
    let value = total.checked_add(section).and_then(|v| v.checked_add(digit)).ok_or(())?;
    write!(out, "{value}").expect("a string takes any write");
    Ok(true)
}

// ------------------------------------------------------------------------------------ number facts

/// The number facts of a text: each match's span, the unit it goes to and its fact (a slice of
/// `arena`); and what the skeleton masks (`_MASK_NUMBERS`: each figure, run of Chinese numerals and
/// whole number word or month), in order.
#[derive(Default)]
struct NumberFacts {
    arena: String,
    found: Vec<Found>,
    marks: Vec<(usize, usize)>,
}

struct Found {
    start: usize,
    end: usize,
    unit: usize,
    fact: Range<usize>,
}

impl NumberFacts {
    fn fact(&self, k: usize) -> &str {
        &self.arena[self.found[k].fact.clone()]
    }

    /// `_qualified(ordinal, value, unit)` as a fact of `start..end`: `#第33次`, `#5月`, `=569`; `value`
    /// writes the number (false: there is none, and no fact).
    fn push(
        &mut self, start: usize, end: usize, ordinal: bool, unit: Option<char>,
        value: impl FnOnce(&mut String) -> Result<bool, ()>,
    ) -> Result<(), ()> {
        let mark = self.arena.len();
        let unit = unit.filter(|&u| is_occurrence_unit(u));
        self.arena.push(if ordinal || unit.is_some() { OCCURRENCE } else { FIGURE });
        if ordinal {
            self.arena.push('第');
        }
        if !value(&mut self.arena)? {
            self.arena.truncate(mark);
            return Ok(());
        }
        self.arena.extend(unit);
        self.found.push(Found { start, end, unit: 0, fact: mark..self.arena.len() });
        Ok(())
    }

    /// A fact written as it stands (`#march 5`, `=20`).
    fn push_text(&mut self, start: usize, end: usize, parts: std::fmt::Arguments<'_>) {
        let mark = self.arena.len();
        self.arena.write_fmt(parts).expect("a string takes any write");
        self.found.push(Found { start, end, unit: 0, fact: mark..self.arena.len() });
    }
}

/// Where each pattern of `_number_facts` may match next: `finditer` goes on from the end of its last
/// match (`_EN_WORD` needs none: its matches are whole word runs).
#[derive(Default)]
struct Resume {
    arabic: usize,
    chinese: usize,
    part: usize,
    date: usize,
}

/// `_number_facts(text)`: every match of `_ARABIC`, `_CN_NUMERAL`, `_CN_PART`, `_EN_DATE` and
/// `_EN_WORD` with its fact, in one pass (matches in order of their start): at each character only the
/// patterns that can start with it are tried. `Err` where a numeral leaves 128 bits (not ported).
fn number_facts(text: &str, out: &mut NumberFacts) -> Result<(), ()> {
    number_facts_visiting(text, out, |_| {})
}

/// `number_facts`, calling `visit` at the start of each character (so that another scan of the text
/// rides on this one).
#[inline(always)]
fn number_facts_visiting(text: &str, out: &mut NumberFacts, mut visit: impl FnMut(usize)) -> Result<(), ()> {
    let mut resume = Resume::default();
    let mut next = 0;
    while next < text.len() {
        let p = next;
        let (c, n) = decode(text, p);
        next += n;
        visit(p);
        // of ASCII characters only digits, `(` and lower-case letters at a word start begin a pattern,
        // of the others only digits, 第 and those of Chinese numerals
        let starts = if n == 1 {
            c.is_ascii_digit() || c == '(' || (c.is_ascii_lowercase() && word_starts_at(text, p))
        } else {
            c == '第' || is_cn(c) || is_digit(c)
        };
        if !starts {
            continue;
        }
        let digit = is_digit(c);
        if (digit || c == '第') && p >= resume.arabic {
            resume.arabic = arabic_at(text, p, c, out).unwrap_or(resume.arabic);
        }
        if (c == '第' || is_cn(c)) && p >= resume.chinese {
            resume.chinese = chinese_at(text, p, c, out)?.unwrap_or(resume.chinese);
        }
        if c == '(' && p >= resume.part {
            resume.part = part_at(text, p, out)?.unwrap_or(resume.part);
        }
        if c.is_ascii_lowercase() {
            // a word start (see above): both patterns take a number word or month whole
            if let Some((w, kind)) = lower_run(text, p).and_then(word_of) {
                if kind == Word::Month && p >= resume.date {
                    resume.date = date_at(text, p, out).unwrap_or(resume.date);
                }
                en_word_at(text, p, w, kind, out);
            }
        } else if digit && p >= resume.date && word_starts_at(text, p) {
            resume.date = date_at(text, p, out).unwrap_or(resume.date);
        }
    }
    Ok(())
}

/// `_numbers(text)`: the number, date and ordinal facts of `text` (figures split by a break are not
/// joined here), in order of their start, repeats kept; None where a numeral leaves 128 bits (not
/// ported).
pub fn numbers(text: &str) -> Option<Vec<String>> {
    let mut out = NumberFacts::default();
    number_facts(text, &mut out).ok()?;
    Some((0..out.found.len()).map(|k| out.fact(k).to_owned()).collect())
}

/// `_ARABIC` (`(第)?(\d+(?:[.,]\d+)*)([occurrence units])?`) at `p` (character `c`): its end.
fn arabic_at(text: &str, p: usize, c: char, out: &mut NumberFacts) -> Option<usize> {
    let d = if c == '第' { p + c.len_utf8() } else { p };
    if d > p && !char_at(text, d).is_some_and(is_digit) {
        return None;
    }
    let e = figure_end(text, d, false);
    // the skeleton's figure allows spaces after a separator, but the text has no such figure left
    // (`join_split_figures`)
    out.marks.push((d, e));
    let unit = char_at(text, e).filter(|&u| is_occurrence_unit(u));
    let end = e + unit.map_or(0, char::len_utf8);
    out.push(p, end, d > p, unit, |s| {
        push_arabic(&text[d..e], s);
        Ok(true)
    })
    .expect("a figure always has a value");
    Some(end)
}

/// `_CN_NUMERAL` (`(第)?([_CN_RUN]+)(?=([classifiers])?)`) at `p` (character `c`): the end of the
/// match (the look-ahead aside); its fact when it counts something (see `_number_facts`).
fn chinese_at(text: &str, p: usize, c: char, out: &mut NumberFacts) -> Result<Option<usize>, ()> {
    let r = if c == '第' { p + c.len_utf8() } else { p };
    if r > p && !char_at(text, r).is_some_and(is_cn) {
        return Ok(None);
    }
    let e = run_end(text, r, is_cn);
    out.marks.push((r, e));
    let ordinal = r > p;
    let classifier = char_at(text, e).filter(|&u| is_classifier(u));
    let numeral = &text[r..e];
    if ordinal || (classifier.is_some() && !matches!(numeral, "一" | "两")) {
        let end = e + classifier.map_or(0, char::len_utf8); // max(m.end(), m.end(3))
        out.push(p, end, ordinal, classifier, |s| push_chinese_number(numeral, s))?;
    }
    Ok(Some(e))
}

/// `_CN_PART` (`\(([_CN_RUN]{1,4})\)`) at `p` (a `(`): its end, its fact `#第N` when a numeral.
fn part_at(text: &str, p: usize, out: &mut NumberFacts) -> Result<Option<usize>, ()> {
    let e = run_end(text, p + 1, is_cn);
    let n = text[p + 1..e].chars().count();
    if !(1..=4).contains(&n) || text.as_bytes().get(e) != Some(&b')') {
        return Ok(None);
    }
    let mark = out.arena.len();
    out.arena.push(OCCURRENCE);
    out.arena.push('第');
    if push_chinese_number(&text[p + 1..e], &mut out.arena)? {
        out.found.push(Found { start: p, end: e + 1, unit: 0, fact: mark..out.arena.len() });
    } else {
        out.arena.truncate(mark);
    }
    Ok(Some(e + 1))
}

/// `_EN_DATE` at `p`, a word start: its end, with the fact `#march 5`.
fn date_at(text: &str, p: usize, out: &mut NumberFacts) -> Option<usize> {
    let (end, month, day) = en_date(text, p)?;
    out.push_text(p, end, format_args!("{OCCURRENCE}{month} {day}"));
    Some(end)
}

/// `_EN_WORD` at `p`, a word start where the run of lower-case letters is `w`, of `WORDS`: the fact
/// `=20` or `=april` when `w` is the whole word run and not `may`.
fn en_word_at(text: &str, p: usize, w: &str, kind: Word, out: &mut NumberFacts) {
    let end = p + w.len();
    if char_at(text, end).is_some_and(is_word) {
        return;
    }
    out.marks.push((p, end));
    match kind {
        Word::Number(v) => out.push_text(p, end, format_args!("{FIGURE}{v}")),
        Word::Month if w != "may" => out.push_text(p, end, format_args!("{FIGURE}{w}")),
        Word::Month => {}
    }
}

/// The run of ASCII lower-case letters at `p`, when it is no longer than the longest of `WORDS`.
#[inline]
fn lower_run(text: &str, p: usize) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut n = 0;
    while n <= LONGEST_WORD && bytes.get(p + n).is_some_and(u8::is_ascii_lowercase) {
        n += 1;
    }
    (n <= LONGEST_WORD).then(|| &text[p..p + n])
}

/// The run of word characters at `p` when it is ASCII lower-case letters and no longer than the
/// longest of `WORDS` (the only runs `_EN_WORD` and `_MASK_NUMBERS` may take whole).
#[inline]
fn lower_word_at(text: &str, p: usize) -> Option<&str> {
    lower_run(text, p).filter(|w| !char_at(text, p + w.len()).is_some_and(is_word))
}

/// The month at `p` that `\s` or `\b` may follow (all `_EN_DATE` asks of a month): the run of
/// lower-case letters at `p` when it is one. No month starts another, so a longer run puts a letter
/// after any month it starts with, where neither holds.
#[inline]
fn month_at(text: &str, p: usize) -> Option<&'static str> {
    match lower_run(text, p).and_then(word_of) {
        Some((m, Word::Month)) => Some(m),
        _ => None,
    }
}

/// A match of `_EN_DATE` (`\b(?:(month)\s+(\d{1,2})|(\d{1,2})\s+(month))\b`) at `p`, a word start:
/// its end, the month and the day's value.
fn en_date(text: &str, p: usize) -> Option<(usize, &'static str, u32)> {
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

// ------------------------------------------------------------------------------------------ units

const LINE_BREAK: ByteSet = ByteSet::new(b"\n");

/// `text.split('\n')`, the line breaks looked for a block of bytes at a time.
fn lines(text: &str) -> impl Iterator<Item = &str> + '_ {
    let bytes = text.as_bytes();
    let mut at = Some(0); // where the next line starts, None after the last
    std::iter::from_fn(move || {
        let a = at?;
        let b = LINE_BREAK.find(bytes, a);
        at = (b < bytes.len()).then_some(b + 1);
        Some(&text[a..b])
    })
}

/// The lines' sentences (`_units_with_facts`' spans): `sentence_spans` of each non-empty line; `Err`
/// where a sentence is longer than the reference's slices (not ported).
fn unit_spans(text: &str) -> Result<Vec<(usize, usize)>, ()> {
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(text.len() / 64 + 4);
    let mut a = 0;
    for line in lines(text) {
        if !line.is_empty() && !push_sentence_spans(line, a, MAX_SENTENCE, &mut spans) {
            return Err(());
        }
        a += line.len() + 1;
    }
    Ok(spans)
}

/// The number facts of each unit (`_units_with_facts`): the whole text's matches go to the units they
/// start in, in order; when one starts before the first unit or runs past its own, each unit is
/// scanned alone (the reference's unit-by-unit way). True when it went unit by unit. `visit` is
/// called at each character of the whole text's scan.
fn unit_numbers(
    text: &str, spans: &[(usize, usize)], out: &mut NumberFacts, visit: impl FnMut(usize),
) -> Result<bool, ()> {
    number_facts_visiting(text, out, visit)?;
    let mut i = 0; // the last unit that starts at or before the match (`bisect_right(starts, start) - 1`)
    let fits = out.found.iter_mut().all(|f| {
        while i + 1 < spans.len() && spans[i + 1].0 <= f.start {
            i += 1;
        }
        f.unit = i;
        spans.get(i).is_some_and(|&(a, b)| a <= f.start && f.end <= b)
    });
    if fits {
        return Ok(false);
    }
    out.arena.clear();
    out.found.clear();
    for (i, &(a, b)) in spans.iter().enumerate() {
        let from = out.found.len();
        number_facts(&text[a..b], out)?;
        out.found[from..].iter_mut().for_each(|f| f.unit = i);
    }
    out.marks.clear(); // each unit's own, not the text's
    Ok(true)
}

/// An occurrence of a name: the unit it starts in, the name (its index in `longest_first`), its start.
type Occurrence = (usize, usize, usize);

/// Where the names occur, by unit (`_units_with_facts`' search of each name in the whole text): every
/// occurrence of every name (`starts`: where each starts, in order of start), sorted (so each unit's
/// names come longest first, and each name's occurrences in order).
fn named_units(spans: &[(usize, usize)], starts: &[(usize, usize)]) -> Result<Vec<Occurrence>, ()> {
    let mut out = Vec::with_capacity(starts.len());
    // the unit of a start (`bisect_right(starts, p) - 1`, -1 being the last), found going forward
    let mut unit = 0;
    let mut before_first = false; // an occurrence before the first unit (it goes to the last)
    for &(p, id) in starts {
        let (first, _) = *spans.first().ok_or(())?; // no unit: the reference fails
        while unit + 1 < spans.len() && spans[unit + 1].0 <= p {
            unit += 1;
        }
        if p < first {
            before_first = true;
            out.push((spans.len() - 1, id, p));
        } else {
            out.push((unit, id, p));
        }
    }
    if before_first {
        out.sort_unstable();
    } else {
        // in order of start, so of unit: each unit's occurrences by name then start
        for run in out.chunk_by_mut(|x, y| x.0 == y.0) {
            if run.len() > 1 {
                run.sort_unstable();
            }
        }
    }
    Ok(out)
}

/// The fewest bytes of a name for `NameKeys`: two Han characters are six.
const MIN_KEY: usize = 4;

/// The names by their first bytes (up to eight, as many as the shortest name has): a filter of their
/// hashes, and the names in 256 buckets by the hash's low bits (`keyed[heads[b]..heads[b + 1]]`: key and
/// index), each in order of index.
struct NameKeys<'n> {
    names: &'n [&'n str],
    width: usize,
    mask: u64,
    filter: [u64; 64],
    heads: [u32; 257],
    keyed: Vec<(u64, usize)>,
}

impl<'n> NameKeys<'n> {
    fn new(names: &'n [&'n str]) -> Self {
        let width = names.iter().map(|n| n.len()).min().unwrap_or(1).clamp(1, 8);
        let mask = if width == 8 { u64::MAX } else { (1u64 << (8 * width)) - 1 };
        let mut keys = NameKeys { names, width, mask, filter: [0; 64], heads: [0; 257], keyed: Vec::new() };
        let loaded: Vec<u64> = names.iter().map(|n| keys.load(n.as_bytes())).collect();
        // the names counted by bucket, then placed (the order within a bucket does not matter)
        for &key in &loaded {
            keys.filter[Self::slot(key) >> 6] |= 1 << (Self::slot(key) & 63);
            keys.heads[(Self::slot(key) & 255) + 1] += 1;
        }
        for b in 0..256 {
            keys.heads[b + 1] += keys.heads[b];
        }
        let mut next = keys.heads;
        keys.keyed = vec![(0, 0); names.len()];
        for (id, &key) in loaded.iter().enumerate() {
            let b = Self::slot(key) & 255;
            keys.keyed[next[b] as usize] = (key, id);
            next[b] += 1;
        }
        keys
    }

    /// Twelve bits of a key's hash.
    #[inline(always)]
    fn slot(key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize
    }

    /// The key of the bytes `at` (zeros after fewer than `width`).
    fn load(&self, at: &[u8]) -> u64 {
        let mut word = [0u8; 8];
        let n = at.len().min(8);
        word[..n].copy_from_slice(&at[..n]);
        u64::from_le_bytes(word) & self.mask
    }

    /// Whether a name may start with the key's bytes.
    #[inline(always)]
    fn may_start(&self, key: u64) -> bool {
        let s = Self::slot(key);
        self.filter[s >> 6] >> (s & 63) & 1 == 1
    }

    /// Each name that starts at `p` (a character start) of `bytes`, added to `out` as (p, name): the
    /// first bytes there are looked up in the filter, and only where it holds are names compared.
    #[inline(always)]
    fn visit(&self, bytes: &[u8], p: usize, out: &mut Vec<(usize, usize)>) {
        if p + self.width > bytes.len() {
            return; // no name fits
        }
        let key = match bytes.get(p..p + 8) {
            Some(word) => u64::from_le_bytes(word.try_into().expect("eight bytes")) & self.mask,
            None => self.load(&bytes[p..]),
        };
        if self.may_start(key) {
            self.names_at(bytes, p, key, out);
        }
    }

    /// Each name that starts at `p` of `bytes` (where the key is `key`), added to `out` as (p, name).
    #[inline(never)]
    fn names_at(&self, bytes: &[u8], p: usize, key: u64, out: &mut Vec<(usize, usize)>) {
        let b = Self::slot(key) & 255;
        for &(k, id) in &self.keyed[self.heads[b] as usize..self.heads[b + 1] as usize] {
            if k == key && bytes[p..].starts_with(self.names[id].as_bytes()) {
                out.push((p, id));
            }
        }
    }
}

/// Where each name starts in `text`, as (start, name), in order of start, for names of any length
/// (`NameKeys` takes those of `MIN_KEY` bytes or more along the number scan): at each character only
/// the names that start with it are compared (most characters start none).
fn starts_by_char(text: &str, longest_first: &[&str]) -> Vec<(usize, usize)> {
    // the names by the low twelve bits of their first character: a bit in `starts_some` for each, and
    // in `firsts` the names in 64 buckets (the bits' words), each by character then index
    let bucket = |c: char| (c as usize & 4095) >> 6;
    let bit = |c: char| 1u64 << (c as u32 & 63);
    let mut firsts: Vec<(usize, char, usize)> = longest_first
        .iter()
        .enumerate()
        .map(|(id, n)| {
            let c = n.chars().next().expect("a name is not empty");
            (bucket(c), c, id)
        })
        .collect();
    firsts.sort_unstable();
    let mut starts_some = [0u64; 64];
    let mut bucket_end = [0u32; 64]; // firsts[bucket_end[k - 1]..bucket_end[k]]: bucket k's names
    for (i, &(k, c, _)) in firsts.iter().enumerate() {
        starts_some[k] |= bit(c);
        bucket_end[k] = i as u32 + 1;
    }
    for k in 1..64 {
        bucket_end[k] = bucket_end[k].max(bucket_end[k - 1]);
    }
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    for (p, c) in text.char_indices() {
        let k = bucket(c);
        if starts_some[k] & bit(c) == 0 {
            continue;
        }
        let from = if k == 0 { 0 } else { bucket_end[k - 1] as usize };
        for &(_, f, id) in &firsts[from..bucket_end[k] as usize] {
            if f == c && bytes[p..].starts_with(longest_first[id].as_bytes()) {
                out.push((p, id));
            }
        }
    }
    out
}

/// `"@" + name` of each name (by index in `longest_first`), then of each Latin-script name.
struct NameFacts {
    arena: String,
    ends: Vec<usize>,
}

impl NameFacts {
    fn new<'n>(names: impl Iterator<Item = &'n str>) -> Self {
        let (mut arena, mut ends) = (String::with_capacity(256), Vec::with_capacity(64));
        for n in names {
            arena.push(NAME);
            arena.push_str(n);
            ends.push(arena.len());
        }
        NameFacts { arena, ends }
    }

    fn get(&self, id: usize) -> &str {
        &self.arena[if id == 0 { 0 } else { self.ends[id - 1] }..self.ends[id]]
    }

    fn all(&self) -> impl Iterator<Item = &str> {
        (0..self.ends.len()).map(|id| self.get(id))
    }
}

/// `unit = unit.replace(n, "@")` into `out`; false (and `out` to be ignored) when `n` is not in `unit`.
fn replace_into(unit: &str, n: &str, out: &mut String) -> bool {
    out.clear();
    let mut last = 0;
    let mut found = false;
    for (i, _) in unit.match_indices(n) {
        out.push_str(&unit[last..i]);
        out.push(NAME);
        last = i + n.len();
        found = true;
    }
    if found {
        out.push_str(&unit[last..]);
    }
    found
}

/// The loop of `analyse` over a unit's candidate names: each that is in the unit adds its fact to
/// `here` and is replaced by `@`. The unit as masked: itself when no name was in it, else `buffers.0`.
fn mask_names<'a, 'f>(
    unit: &'a str, candidates: impl Iterator<Item = usize>, longest_first: &[&str], name_facts: &'f NameFacts,
    here: &mut Vec<&'f str>, buffers: &'a mut (String, String),
) -> &'a str {
    let (current, next) = (&mut buffers.0, &mut buffers.1);
    let mut masked = false;
    for id in candidates {
            let source: &str = if masked { current.as_str() } else { unit };
        if replace_into(source, longest_first[id], next) {
            std::mem::swap(current, next);
            masked = true;
            here.push(name_facts.get(id));
        }
    }
    if masked { current.as_str() } else { unit }
}

/// The loop of `analyse` over a unit's names, from where they occur (`occurrences`: the unit's, by
/// name then start) instead of searching: a name is in the unit as masked when one of its occurrences
/// lies inside the unit and overlaps none masked before (no name holds `@`, so masking makes no new
/// occurrence and leaves the others whole), and `str.replace` masks the leftmost of those and each
/// next that starts after the last masked. What the unit `(a, b)` has masked goes to `masked`, in order.
fn mask_occurrences<'f>(
    (a, b): (usize, usize), occurrences: &[Occurrence], longest_first: &[&str], name_facts: &'f NameFacts,
    here: &mut Vec<&'f str>, masked: &mut Vec<(usize, usize)>,
) {
    masked.clear();
    let mut g = 0;
    while g < occurrences.len() {
        let id = occurrences[g].1;
        let len = longest_first[id].len();
        let earlier = masked.len(); // masked[..earlier]: by the names before this one
        let mut last_end = 0;
        let mut found = false;
        while g < occurrences.len() && occurrences[g].1 == id {
            let (start, end) = (occurrences[g].2, occurrences[g].2 + len);
            g += 1;
            if start < a || end > b || masked[..earlier].iter().any(|&(s, e)| start < e && s < end) {
                continue;
            }
            found = true;
            if start >= last_end {
                masked.push((start, end));
                last_end = end;
            }
        }
        if found {
            here.push(name_facts.get(id));
        }
    }
    masked.sort_unstable();
}

/// The character that starts at `p` (a character boundary) of `text` and its length.
#[inline(always)]
fn decode(text: &str, p: usize) -> (char, usize) {
    let b = text.as_bytes()[p];
    if b < 0x80 {
        return (b as char, 1);
    }
    let c = char_at(text, p).expect("a character");
    (c, if b < 0xe0 { 2 } else if b < 0xf0 { 3 } else { 4 })
}

/// `"".join(_MASK_NUMBERS.sub("#", unit).split())`, written to `out`.
fn skeleton_into(unit: &str, out: &mut String) {
    out.clear();
    push_skeleton(unit, out);
}

/// `skeleton_into` of the unit `text[a..b]` with the spans `masked` (in order, inside it) replaced by
/// `@`: the pieces between them are read apart, as no pattern of `_MASK_NUMBERS` reads across a `@`
/// (no word character, space, digit or separator) and after one a word starts as at the start.
/// `marks` are what the skeleton masks in the whole text (see `NumberFacts`), from the first that
/// may reach into the unit (`mark`, moved on as units come in order).
fn masked_skeleton_into(
    text: &str, (a, b): (usize, usize), masked: &[(usize, usize)], marks: &[(usize, usize)], mark: &mut usize,
    out: &mut String,
) {
    out.clear();
    let mut at = a;
    for &(s, e) in masked {
        push_marked_skeleton(text, (at, s), (at > a, true), marks, mark, out);
        out.push(NAME);
        at = e;
    }
    push_marked_skeleton(text, (at, b), (at > a, false), marks, mark, out);
}

/// `push_skeleton` of the piece `text[s..e]`, copied between the `marks` inside it, spaces dropped.
/// The whole text's marks are the piece's unless a name borders it (`names`: one ends at `s`, one
/// starts at `e`): where one cuts a mark or a lower-case word (whether a word starts or ends there
/// then differs), the piece is read alone.
fn push_marked_skeleton(
    text: &str, (s, e): (usize, usize), names: (bool, bool), marks: &[(usize, usize)], mark: &mut usize,
    out: &mut String,
) {
    while *mark < marks.len() && marks[*mark].1 <= s {
        *mark += 1;
    }
    let bytes = text.as_bytes();
    let inside = marks[*mark..].iter().take_while(|&&(x, _)| x < e);
    let cut = (names.0 && bytes.get(s).is_some_and(u8::is_ascii_lowercase))
        || (names.1 && e > s && bytes[e - 1].is_ascii_lowercase())
        || inside.clone().any(|&(x, y)| x < s || y > e);
    if cut {
        push_skeleton(&text[s..e], out);
        return;
    }
    let mut at = s;
    for &(x, y) in inside {
        push_without_space(&text[at..x], out);
        out.push('#');
        at = y;
    }
    push_without_space(&text[at..e], out);
}

/// The skeleton of `unit` added to `out`: figures (spaces allowed after a separator), Chinese numeral
/// runs and number words or months become `#`, spaces go. What stays is copied a run at a time.
fn push_skeleton(unit: &str, out: &mut String) {
    let bytes = unit.as_bytes();
    let mut kept = 0; // unit[kept..p] stays and is not written yet
    let mut p = 0;
    while p < bytes.len() {
        let b = bytes[p];
        // U+4000 to U+9FFF (Han mostly): neither digits nor spaces, only Chinese numerals count
        if (0xe4..=0xe9).contains(&b) && !is_cn_code(code3(bytes, p)) {
            p += 3;
            continue;
        }
        let masked = if b < 0x80 {
            if ascii_space(b) {
                out.push_str(&unit[kept..p]);
                kept = p + 1;
                None
            } else if b.is_ascii_digit() {
                Some(figure_end(unit, p, true))
            } else if b.is_ascii_lowercase() && word_starts_at(unit, p) {
                lower_word_at(unit, p).filter(|w| word_of(w).is_some()).map(|w| p + w.len())
            } else {
                None
            }
        } else {
            let (c, n) = decode(unit, p);
            if is_digit(c) {
                Some(figure_end(unit, p, true))
            } else if is_cn(c) {
                Some(run_end(unit, p, is_cn))
            } else {
                if py_isspace(c) {
                    out.push_str(&unit[kept..p]);
                    kept = p + n;
                }
                p += n;
                continue;
            }
        };
        match masked {
            Some(e) => {
                out.push_str(&unit[kept..p]);
                out.push('#');
                p = e;
                kept = e;
            }
            None => p += 1,
        }
    }
    out.push_str(&unit[kept..]);
}

/// Facts in order, in one text (no string apiece).
#[derive(Default)]
pub struct Facts {
    text: String,
    ends: Vec<usize>,
}

impl Facts {
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.ends.len()).map(|i| &self.text[if i == 0 { 0 } else { self.ends[i - 1] }..self.ends[i]])
    }
}

/// `_by_hash(facts, limit)`: the distinct facts of smallest `(hash, fact)` (equal facts are neighbours
/// once sorted by hash and fact).
fn by_hash(items: Vec<&str>, limit: usize) -> Facts {
    let mut keyed: Vec<(u64, &str)> = items.into_iter().map(|f| (xxh3_64(f.as_bytes()), f)).collect();
    keyed.sort_unstable();
    keyed.dedup();
    keyed.truncate(limit);
    let mut out = Facts {
        text: String::with_capacity(keyed.iter().map(|(_, f)| f.len()).sum()),
        ends: Vec::with_capacity(keyed.len()),
    };
    for (_, f) in keyed {
        out.text.push_str(f);
        out.ends.push(out.text.len());
    }
    out
}

/// The names, distinct, longest (in characters) first, then in code-point order
/// (`sorted(found, key=lambda n: (-len(n), n))`).
fn longest_first<'n>(names: &[&'n str]) -> Vec<&'n str> {
    let mut keyed: Vec<(usize, u64, &str)> = names.iter().map(|n| (usize::MAX - n.chars().count(), leading_bytes(n, 8), *n)).collect();
    keyed.sort_unstable();
    keyed.dedup();
    keyed.into_iter().map(|(_, _, n)| n).collect()
}

/// `analyse(text, names, max_facts, max_frames, latin, terms_are_names=True)`: the facts (bottom
/// `max_facts` by hash) and frames (the `max_frames` smallest) of `text`; None where the reference
/// must run.
pub fn analyse(
    text: &str, names: &[&str], latin: &[&str], max_facts: usize, max_frames: usize,
) -> Option<(Facts, Vec<u64>)> {
    let text = join_split_figures(text);
    let spans = unit_spans(&text).ok()?;
    analyse_units(&text, &spans, names, latin, max_facts, max_frames)
}

/// `analyse` of `text` (its split figures joined already) and its units `spans`.
fn analyse_units(
    text: &str, spans: &[(usize, usize)], names: &[&str], latin: &[&str], max_facts: usize, max_frames: usize,
) -> Option<(Facts, Vec<u64>)> {
    if names.iter().any(|n| n.is_empty()) {
        return None;
    }
    let longest_first = longest_first(names);
    let mut numbers =
        NumberFacts { arena: String::with_capacity(256), found: Vec::with_capacity(32), marks: Vec::with_capacity(32) };
    // where the names start: found along the number scan by their first bytes, or for names shorter
    // than a key by a scan of their own
    let by_key = !longest_first.is_empty() && longest_first.iter().all(|n| n.len() >= MIN_KEY);
    let keys = by_key.then(|| NameKeys::new(&longest_first));
    let mut starts = Vec::with_capacity(text.len() / 32 + 4);
    let one_by_one = unit_numbers(text, spans, &mut numbers, |p| {
        if let Some(keys) = &keys {
            keys.visit(text.as_bytes(), p, &mut starts);
        }
    })
    .ok()?;
    // unit by unit, every name is a candidate in every unit (the reference returns before its search)
    let named = if one_by_one {
        None
    } else {
        if !by_key && !longest_first.is_empty() {
            starts = starts_by_char(text, &longest_first);
        }
        Some(named_units(spans, &starts).ok()?)
    };
    // masking by occurrence holds while no name holds `@` (see `mask_occurrences`)
    let by_occurrence = !longest_first.iter().any(|n| n.contains(NAME));
    let name_facts = NameFacts::new(longest_first.iter().chain(latin).copied());

    // facts = {NAME + n for n in found} | {NAME + n for n in latin} | every unit's numbers
    let mut facts: Vec<&str> = name_facts.all().collect();
    facts.extend((0..numbers.found.len()).map(|k| numbers.fact(k)));

    let mut frames: Vec<u64> = Vec::with_capacity(spans.len());
    // buffers reused from unit to unit
    let (mut here, mut candidates, mut masked, mut buffers) = (Vec::new(), Vec::new(), Vec::new(), Default::default());
    let (mut skeleton, mut filled) = (String::with_capacity(512), String::with_capacity(256));
    // the next number fact, the next occurrence of a name, the first mark of the skeleton that may
    // reach into the unit
    let (mut k, mut q, mut mark) = (0, 0, 0);
    for (i, &(a, b)) in spans.iter().enumerate() {
        here.clear();
        while k < numbers.found.len() && numbers.found[k].unit == i {
            here.push(numbers.fact(k));
            k += 1;
        }
        let from = q;
        if let Some(named) = &named {
            while q < named.len() && named[q].0 == i {
                q += 1;
            }
        }
        // the unit as masked, or None when what it masked is in `masked`
        let unit = match &named {
            Some(named) if by_occurrence => {
                mask_occurrences((a, b), &named[from..q], &longest_first, &name_facts, &mut here, &mut masked);
                None
            }
            _ => {
                // the names found in the unit, or unit by unit every name (as the reference)
                candidates.clear();
                match &named {
                    Some(named) => candidates.extend(named[from..q].iter().map(|&(_, id, _)| id)),
                    None => candidates.extend(0..longest_first.len()),
                }
                candidates.dedup();
                Some(mask_names(&text[a..b], candidates.iter().copied(), &longest_first, &name_facts, &mut here, &mut buffers))
            }
        };
        if here.is_empty() {
            continue;
        }
        here.sort_unstable_by(|x, y| leading_bytes(x, 8).cmp(&leading_bytes(y, 8)).then_with(|| x.cmp(y)));
        here.dedup();
        match unit {
            Some(unit) => skeleton_into(unit, &mut skeleton),
            None => masked_skeleton_into(text, (a, b), &masked, &numbers.marks, &mut mark, &mut skeleton),
        }
        filled.clear();
        for (j, f) in here.iter().enumerate() {
            if j > 0 {
                filled.push('\x1f');
            }
            filled.push_str(f);
        }
        let filled = xxh3_64(filled.as_bytes()) & 0xFFFF_FFFF;
        frames.push((xxh3_64(skeleton.as_bytes()) & 0xFFFF_FFFF) << 32 | filled);
    }
    frames.sort_unstable();
    frames.dedup();
    frames.truncate(max_frames);
    Some((by_hash(facts, max_facts), frames))
}

// ------------------------------------------------------------------------------------ Latin names

/// `piece.lower()` for the pieces `line[a..b]` of a line in order, given `lower` (`line.lower()`), when
/// lower-casing maps character to character and no context decides (no capital sigma); None otherwise.
struct Lowering<'l> {
    line: &'l str,
    lower: &'l str,
    /// A character boundary of `line` and the same boundary in `lower`; None when they are one.
    at: Option<(usize, usize)>,
}

impl<'l> Lowering<'l> {
    fn new(line: &'l str, lower: &'l str) -> Option<Self> {
        // lower-casing that changes ASCII letters only: each character is lowered to itself or its
        // ASCII small letter (the first character of a character's lowering is never another one
        // unless it is a small letter of ASCII), so boundaries are where they were
        let ascii_only = lower.len() == line.len()
            && (line.is_ascii() || line.bytes().zip(lower.bytes()).all(|(c, l)| c.to_ascii_lowercase() == l));
        if ascii_only {
            return Some(Lowering { line, lower, at: None });
        }
        if line.chars().count() != lower.chars().count() || line.contains('\u{3a3}') {
            return None;
        }
        Some(Lowering { line, lower, at: Some((0, 0)) })
    }

    /// Where `line`'s boundary `to` (at or after the last asked for) lies in `lower`.
    fn advance(&mut self, to: usize) -> usize {
        let Some((mut i, mut j)) = self.at else { return to };
        debug_assert!(to >= i, "pieces come in order");
        while i < to {
            i += char_at(self.line, i).expect("a character").len_utf8();
            j += char_at(self.lower, j).expect("a character").len_utf8();
        }
        self.at = Some((i, j));
        j
    }

    /// `line[a..b].lower()`, for `a` at or after the end of the last slice.
    fn slice(&mut self, a: usize, b: usize) -> &'l str {
        let a = self.advance(a);
        let b = self.advance(b);
        &self.lower[a..b]
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
    let mut window = ['\0'; 6];
    let mut n = 0;
    for c in piece[..at].chars().rev().take(6) {
        window[n] = c;
        n += 1;
    }
    let before = &window[..n];
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

const CAPITALS: ByteSet = ByteSet::new(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ");

/// The first capital ASCII letter of `bytes` from `i` on, or the end.
fn next_capital(bytes: &[u8], i: usize) -> usize {
    CAPITALS.find(bytes, i)
}

/// The matches of `_CASED_WORD` (`[A-Z][A-Za-z0-9&'-]*`) in `text`, as byte ranges.
fn cased_words(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        i = next_capital(bytes, i);
        if i == bytes.len() {
            return None;
        }
        let at = i;
        i += 1;
        while i < bytes.len() && cased_word_byte(bytes[i]) {
            i += 1;
        }
        Some((at, i))
    })
}

/// A cased word as a name has it (`m.group().rstrip("'-")`, not lower-cased yet); a name has two
/// characters at least.
fn name_word(word: &str) -> &str {
    word.trim_end_matches(['\'', '-'])
}

/// `latin_body_names(cased, body, stopwords)`, given `lower` = `cased.lower()`; None where the
/// reference must run.
pub fn latin_body_names(
    cased: &str, lower: &str, body: &str, stopwords: &FxHashSet<String>,
) -> Option<FxHashSet<String>> {
    latin_names_in(cased, lower, body, None, stopwords)
}

/// `latin_body_names`, given the body's sentences (`unit_spans(body)`) when they are known.
fn latin_names_in(
    cased: &str, lower: &str, body: &str, sentences: Option<&[(usize, usize)]>, stopwords: &FxHashSet<String>,
) -> Option<FxHashSet<String>> {
    let mut out = FxHashSet::default();
    // a name starts with a capital ASCII letter: text without one has none (whichever way the
    // reference would read its lines)
    if next_capital(cased.as_bytes(), 0) == cased.len() {
        return Some(out);
    }
    let mut kept_lines: Option<FxHashSet<&str>> = None; // the body's lines, once a line asks
    let mut kept: Option<FxHashSet<&str>> = None;
    let mut name = String::new();
    let mut lowered = lines(lower);
    // the line before, its lower-casing and whether it was kept whole (when that was asked)
    let mut before: Option<(&str, &str, Option<bool>)> = None;
    for line in lines(cased) {
        let low = lowered.next()?;
        let last = before.replace((line, low, None));
        // a line without a cased word of two characters has no name (a sentence's words are its
        // line's: none runs over a sentence's end, which is punctuation and closing quotes)
        if !cased_words(line).any(|(a, b)| name_word(&line[a..b]).len() >= 2) {
            continue;
        }
        let kept_lines = kept_lines.get_or_insert_with(|| {
            let mut set = FxHashSet::with_capacity_and_hasher(64, Default::default());
            set.extend(lines(body));
            set
        });
        // after a dropped line, a closed sentence or a short line (a table row: "Shr 29 cts vs 26
        // cts") a new sentence or row starts; a long unclosed line is prose wrapped in mid-sentence
        let opens = last.is_none_or(|(line, low, whole)| {
            closes(line) || line.len() <= 40 || line.chars().count() <= 40 || !whole.unwrap_or_else(|| kept_lines.contains(low))
        });
        let whole = kept_lines.contains(low);
        before = Some((line, low, Some(whole)));
        let (pieces_of_line, mut lowering) = if whole {
            (Vec::new(), None)
        } else {
            (pieces(line), Some(Lowering::new(line, low)?))
        };
        let whole_line = [(0, line.len())];
        let spans: &[(usize, usize)] = if whole { &whole_line } else { &pieces_of_line };
        for (n, &(a, b)) in spans.iter().enumerate() {
            let first = n == 0 && !opens;
            let piece = &line[a..b];
            if !whole && !cased_words(piece).any(|(x, y)| name_word(&piece[x..y]).len() >= 2) {
                continue; // no name in this sentence, whether it was kept or not
            }
            if let Some(l) = &mut lowering {
                // the sentences of the body's lines (each line's sentences are its units)
                let kept = kept.get_or_insert_with(|| match sentences {
                    Some(sentences) => sentences.iter().map(|&(a, b)| &body[a..b]).collect(),
                    None => kept_lines.iter().flat_map(|x| pieces(x).into_iter().map(|(a, b)| &x[a..b])).collect(),
                });
                if !kept.contains(l.slice(a, b)) {
                    continue;
                }
            }
            for (at, end) in cased_words(piece) {
                if (at == 0 && !first) || opens_before(piece, at) {
                    continue;
                }
                let word = name_word(&piece[at..end]);
                if word.len() >= 2 {
                    name.clear();
                    name.extend(word.chars().map(|c| c.to_ascii_lowercase()));
                    if !stopwords.contains(&name) && !out.contains(&name) {
                        out.insert(name.clone());
                    }
                }
            }
        }
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
    body: &str, names: &[&str], cased: &str, lower: &str, stopwords: &FxHashSet<String>,
    max_facts: usize, max_frames: usize,
) -> Option<(Facts, Vec<u64>)> {
    let text = join_split_figures(body);
    let spans = unit_spans(&text).ok()?;
    // the units are the body's sentences unless a figure was joined
    let sentences = matches!(text, Cow::Borrowed(_)).then_some(&spans[..]);
    let latin = latin_names_in(cased, lower, body, sentences, stopwords)?;
    let latin: Vec<&str> = latin.iter().map(String::as_str).collect();
    analyse_units(&text, &spans, names, &latin, max_facts, max_frames)
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
        let (facts, frames) = analyse(text, &names, &latin, max_facts, max_frames)?;
        Some((facts.iter().map(str::to_owned).collect(), frames))
    })
}

/// `latin_body_names(cased, body, stopwords)` given `lower` = `cased.lower()`, or None where the
/// reference must run (for the equality checks).
#[pyfunction(name = "latin_body_names")]
fn py_latin_body_names(
    py: Python<'_>, cased: &str, lower: &str, body: &str, stopwords: FxHashSet<String>,
) -> Option<FxHashSet<String>> {
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

    fn arabic(token: &str) -> String {
        let mut out = String::new();
        push_arabic(token, &mut out);
        out
    }

    fn chinese_number(run: &str) -> Result<Option<String>, ()> {
        let mut out = String::new();
        Ok(push_chinese_number(run, &mut out)?.then_some(out))
    }

    fn facts_of(text: &str) -> Vec<String> {
        let mut found = NumberFacts::default();
        number_facts(text, &mut found).unwrap();
        (0..found.found.len()).map(|k| found.fact(k).to_owned()).collect()
    }

    #[test]
    fn figures() {
        assert_eq!(arabic("1,796,121"), "1796121");
        assert_eq!(arabic("007"), "7");
        assert_eq!(arabic("4.50"), "4.5");
        assert_eq!(arabic("1,5"), "1,5");
        assert_eq!(arabic("1.2.3"), "1.2.3");
        assert_eq!(arabic("1,234.50"), "1234.5");
        assert_eq!(arabic("0,000.00"), "0");
        assert_eq!(arabic("12,34.5"), "12,34.5");
        assert_eq!(join_split_figures("82.\n7m, 3. 4"), "82.7m, 3.4");
        assert_eq!(join_split_figures("a. 4, b"), "a. 4, b");
    }

    #[test]
    fn chinese() {
        assert_eq!(chinese_number("一百二十七"), Ok(Some("127".into())));
        assert_eq!(chinese_number("二〇二二"), Ok(Some("2022".into())));
        assert_eq!(chinese_number("〇〇"), Ok(Some("0".into())));
        assert_eq!(chinese_number("万"), Ok(None));
        assert_eq!(facts_of("第三十三次会议, 两国, 五个人 (二) 一人"), vec!["#第33次", "=5", "#第2"]);
    }

    #[test]
    fn dates() {
        let t = "on march 5 and 12 may, may 123";
        // in order of their start; at one start, as the reference lists the patterns
        assert_eq!(facts_of(t), vec!["#march 5", "=march", "=5", "=12", "#may 12", "=123"]);
        let mut skeleton = String::new();
        skeleton_into("on march 5, 2 cats 一二", &mut skeleton);
        assert_eq!(skeleton, "on##cats#");
    }

    #[test]
    fn words() {
        assert!(WORDS.windows(2).all(|w| w[0].0 < w[1].0), "in byte order");
        let numbers: Vec<u32> = WORDS.iter().filter_map(|&(_, w)| match w { Word::Number(v) => Some(v), _ => None }).collect();
        assert_eq!(numbers.len(), 26);
        assert_eq!(WORDS.iter().filter(|(_, w)| *w == Word::Month).count(), 12);
        assert!(WORDS.iter().all(|(w, _)| WORD_LENGTHS.contains(&w.len())));
        assert_eq!(word_of("seventeen"), Some(("seventeen", Word::Number(17))));
        assert_eq!(month_at("marching may 5", 0), None);
        assert_eq!(month_at("marching may 5", 9), Some("may"));
    }

    #[test]
    fn units_of_lines() {
        // long lines, so that the searches for separators and line breaks go a block at a time
        let long = "长".repeat(20);
        let text = format!("{long}82.\n7m。 {long} b\n\n  c. d\n{long}3, 4");
        let joined = join_split_figures(&text);
        assert_eq!(joined, format!("{long}82.7m。 {long} b\n\n  c. d\n{long}3,4"));
        let spans = unit_spans(&joined).expect("short sentences");
        let units: Vec<&str> = spans.iter().map(|&(a, b)| &joined[a..b]).collect();
        assert_eq!(units, vec![format!("{long}82.7m。"), format!("{long} b"), "c.".into(), "d".into(), format!("{long}3,4")]);
        assert_eq!(unit_spans(&"长".repeat(MAX_SENTENCE + 1)), Err(()));
        for t in ["", "\n", "a", "a\n", "\na\n\nb", &text, &format!("{text}\n")] {
            assert_eq!(lines(t).collect::<Vec<_>>(), t.split('\n').collect::<Vec<_>>(), "{t:?}");
        }
    }

    #[test]
    fn no_digit_in_the_gap() {
        assert!(crate::unicode::DECIMAL.iter().all(|&(a, b)| b < 0x2000 || a >= 0xa620));
        // nor a space where Han characters are (the skeleton's quick path)
        assert!(('\u{4000}'..='\u{9fff}').all(|c| !py_isspace(c) && !is_digit(c)));
    }

    #[test]
    fn name_starts() {
        let texts = ["北京人民大会堂在北京, abcd北京x 大会堂北", "大会堂", "x北京", "北京x", "abcde", "", "北"];
        let names = ["北京人民大会堂", "北京x", "大会堂", "abcd", "北京"];
        for text in texts {
            let mut naive: Vec<(usize, usize)> = text
                .char_indices()
                .flat_map(|(p, _)| names.iter().enumerate().filter(move |(_, n)| text[p..].starts_with(**n)).map(move |(id, _)| (p, id)))
                .collect();
            naive.sort_unstable();
            let keys = NameKeys::new(&names);
            let mut by_key = Vec::new();
            number_facts_visiting(text, &mut NumberFacts::default(), |p| keys.visit(text.as_bytes(), p, &mut by_key)).unwrap();
            for mut got in [by_key, starts_by_char(text, &names)] {
                got.sort_unstable();
                assert_eq!(got, naive, "{text}");
            }
        }
    }

    #[test]
    fn cased() {
        let text = "abc Ab-' x A B2 de&F ".repeat(3) + "0123456789abcdefghij Xy";
        let words: Vec<&str> = cased_words(&text).map(|(a, b)| &text[a..b]).collect();
        assert_eq!(words[..4], ["Ab-'", "A", "B2", "F"]);
        assert_eq!(words.last(), Some(&"Xy"));
        assert_eq!(words.len(), 13);
        assert_eq!(next_capital(b"abcdefghijklmnopqrstuvwxyz", 0), 26);
        assert_eq!(name_word("Ab-'"), "Ab");
    }

    #[test]
    fn lowering() {
        let mut l = Lowering::new("ÄB 北京 Cd", "äb 北京 cd").expect("char for char");
        assert_eq!((l.slice(0, 3), l.slice(4, 10), l.slice(11, 13)), ("äb", "北京", "cd"));
        let mut l = Lowering::new("X 北京 Cd", "x 北京 cd").expect("ASCII letters only");
        assert!(l.at.is_none());
        assert_eq!(l.slice(2, 8), "北京");
        assert!(Lowering::new("ΑΣ", "ας").is_none());
    }

    #[test]
    fn masked_skeletons() {
        let text = "在3,北京4和一北京二, march北京5 two北京 x北京y 北京北京";
        let masked: Vec<(usize, usize)> = text.match_indices("北京").map(|(i, n)| (i, i + n.len())).collect();
        let (mut got, mut want) = (String::new(), String::new());
        let mut numbers = NumberFacts::default();
        number_facts(text, &mut numbers).expect("small numerals");
        masked_skeleton_into(text, (0, text.len()), &masked, &numbers.marks, &mut 0, &mut got);
        skeleton_into(&text.replace("北京", "@"), &mut want);
        assert_eq!(got, want);
        assert_eq!(got, "在#,@#和#@#,#@##@x@y@@");
        // the whole text's marks where names cut them or words touch names, and where they do not
        let texts = [
            "二十三星期三 三星7 G20峰会 20 3.5亿 一G2 0三星二",
            "北京two 北京seven北京 seven北京 twelve\u{3000}北京 june 5北京 10,北京000",
            " 三 星 march 5 在 1. 5 ８ 千 北京 sixty-two北京sixth 二三星",
        ];
        for text in texts {
            for name in ["三星", "G2", "北京", "星二", "十三", "e北"] {
                let text = join_split_figures(text);
                let masked: Vec<(usize, usize)> = text.match_indices(name).map(|(i, n)| (i, i + n.len())).collect();
                let mut numbers = NumberFacts::default();
                number_facts(&text, &mut numbers).expect("small numerals");
                masked_skeleton_into(&text, (0, text.len()), &masked, &numbers.marks, &mut 0, &mut got);
                skeleton_into(&text.replace(name, "@"), &mut want);
                assert_eq!(got, want, "{text:?} {name}");
            }
        }
    }

    #[test]
    fn masked_names() {
        let lf = ["北京人民大会堂", "北京", "大会"];
        let nf = NameFacts::new(lf.iter().copied());
        let (mut here, mut buffers) = (Vec::new(), Default::default());
        let unit = mask_names("北京人民大会堂在北京", 0..3, &lf, &nf, &mut here, &mut buffers);
        assert_eq!(unit, "@在@");
        assert_eq!(here, vec!["@北京人民大会堂", "@北京"]);
    }
}
