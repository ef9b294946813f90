//! `strip_boilerplate` of `text/boilerplate.py`, rule for rule. The patterns that only answer "is there
//! a match" use the `regex` crate; those whose matches are read are scanners with Python's semantics.
//! Text holding a character on which Python's and this crate's Unicode classes could disagree (see
//! [`risky`]) is left to the reference.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;

use crate::text::{py_isspace, sentence_matches_with, CharSet};

const RUNS_ON: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "with", "by", "from", "and", "or", "but", "that",
    "which", "who", "it", "its", "is", "are", "was", "were", "has", "have", "had", "will", "would", "said",
    "says", "as", "than", "be", "been",
];
const FINAL_PUNCT: &[char] = &['\u{3002}', '!', '?', '.', '\u{2026}', '"', '\'', '\u{201d}', '\u{300d}', ')'];

const SHORT_SENTENCE: usize = 80;
const CODE_LINE: usize = 200;
const ASCII_SHARE: f64 = 0.6;
const MIN_KEPT: f64 = 0.2;
const EDGE_LINE: usize = 40;

/// The furniture markers, as `text/boilerplate.py` names them (`MARKERS`, `LINE_MARKERS`): given once
/// by the Python side, so the lists live in one place.
static MARKERS: OnceLock<(Regex, Vec<String>)> = OnceLock::new();

/// Set the markers (the first call wins; later calls with other lists are refused).
pub fn set_markers(markers: &[String], line_markers: &[String]) -> bool {
    let escaped: Vec<String> = markers.iter().map(|m| regex::escape(m)).collect();
    let Ok(any) = Regex::new(&escaped.join("|")) else { return false };
    let got = MARKERS.get_or_init(|| (any, line_markers.to_vec()));
    got.1 == line_markers && got.0.as_str() == escaped.join("|")
}

/// Where Python's \w, \b, \s, \d could answer otherwise than this crate's: connector
/// punctuation but "_", other numbers, the separators Python counts as space, and characters
/// newer than Python's Unicode tables (14.0). Letter numbers (〇 of 二〇二二, Ⅻ) are word
/// characters to both.
const RISKY: &str = r"[\p{Pc}\p{No}\x1c-\x1f[\p{Age=V16_0}--\p{Age=V14_0}]--_]";
/// Combining marks and joiners (an emoji's variation selector, ZWJ): word characters to this
/// crate, never to Python; `is_word` says so, and a line `code_bounded` may read is left to
/// the reference.
const MARKS: &str = r"[\p{M}\p{Join_Control}]";

struct Patterns {
    code: Regex,
    code_bounded: Regex,
    menu: Regex,
    byline: Regex,
    digit: Regex,
    compares: Regex,
    word: Regex,
    risky: CharSet,
    marks: CharSet,
    /// `risky` and `marks` together: text holding neither is answered in one scan
    either: CharSet,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let re = |p: &str| Regex::new(p).expect("a valid pattern");
        Patterns {
            // `_CODE_RE` in two parts: a Unicode word boundary keeps a pattern off the fast engines, so
            // the three alternatives that hold one are tried only where their words occur
            code: re(concat!(
                r"function\s*\(|document\.|window\.|^\s*[{}()\[\];,]+\s*$",
                r"|\}\s*\)\s*\(|https?://|//[a-z0-9-]+\.[a-z]|[a-z-]:\s*[^;]{0,40};\s*[a-z-]+:",
                r"|^/\*.*\*/$|\{\s*\}|^//",
            )),
            code_bounded: re(concat!(
                r"\bvar\s+[\w$]+\s*=|\.(?:js|css|png|jpg|gif)\b",
                r"|^(?:if|else|for|while|switch)\b[^{}]{0,80}\{$",
            )),
            menu: re(r"^(?:[^|]{1,30}\|){3,}[^|]{0,30}$"),
            byline: re(r"^by [^.!?]{2,60}$"),
            digit: re(r"\d"),
            compares: re(r"^[ -~]*\S \s*vs\.? +\S[ -~]*$"),
            word: re(r"^\w$"),
            risky: CharSet::new(RISKY),
            marks: CharSet::new(MARKS),
            either: CharSet::new(&format!("[{RISKY}{MARKS}]")),
        }
    })
}

/// Whether `text` holds a character on which the reference's regular expressions and this module's
/// could disagree; such text is left to the reference.
pub fn risky(text: &str) -> bool {
    patterns().risky.any_in(text)
}

/// Whether `cased` is `text` with some ASCII letters capital: byte for byte the same but where
/// `cased` has a capital ASCII letter and `text` its small one.
fn ascii_case_apart(text: &str, cased: &str) -> bool {
    let (t, c) = (text.as_bytes(), cased.as_bytes());
    // in blocks, each compared without branches, so that the comparison is vectorised
    t.len() == c.len()
        && t.chunks(64).zip(c.chunks(64)).all(|(t, c)| {
            t.iter().zip(c).fold(true, |same, (&a, &b)| same & (a == b || (b.wrapping_sub(b'A') < 26 && a == b | 0x20)))
        })
}

fn is_word(c: char) -> bool {
    c == '_' || c.is_ascii_alphanumeric() || (!c.is_ascii() && {
        let mut buf = [0; 4];
        let c = c.encode_utf8(&mut buf);
        !patterns().marks.any_in(c) && patterns().word.is_match(c)
    })
}

/// Whether a line that `code_bounded` may read (its `\w` and `\b`) holds a combining mark or joiner.
fn marks_in_bounded_code(text: &str) -> bool {
    let marks = &patterns().marks;
    marks.any_in(text) && text.split('\n').any(|l| marks.any_in(l) && may_be_bounded_code(py_strip(l)))
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// `_has_css_rule`: `word {... : ... ;` with no `}` in between.
fn has_css_rule(line: &str) -> bool {
    let cs: Vec<char> = line.chars().collect();
    let find = |c: char, from: usize, to: usize| (from..to.min(cs.len())).find(|&i| cs[i] == c);
    let mut pos = 0;
    loop {
        // the first `{` whose preceding non-space character is a word character at or after pos
        let mut brace_end = None;
        for q in pos..cs.len() {
            if cs[q] != '{' {
                continue;
            }
            let mut p = q;
            while p > 0 && py_isspace(cs[p - 1]) {
                p -= 1;
            }
            if p > pos && is_word(cs[p - 1]) {
                brace_end = Some(q + 1);
                break;
            }
        }
        let Some(after) = brace_end else { return false };
        let end = find('}', after, cs.len()).unwrap_or(cs.len());
        if let Some(colon) = find(':', after, end) {
            if find(';', colon + 1, end).is_some() {
                return true;
            }
        }
        pos = end + 1;
        if pos > cs.len() {
            return false;
        }
    }
}

/// Whether a line may match `code_bounded`: it holds one of the words its alternatives need.
fn may_be_bounded_code(line: &str) -> bool {
    line.contains("var")
        || [".js", ".css", ".png", ".jpg", ".gif"].iter().any(|x| line.contains(x))
        || (["if", "else", "for", "while", "switch"].iter().any(|x| line.starts_with(x)) && line.ends_with('{'))
}

/// Whether a line may match `code`: it holds what one of its alternatives needs (a brace, `//` or a
/// leading `/`, a colon and a semicolon, one of its three words, or a first character that a line of
/// brackets alone starts with). Most prose lines hold none, and the pattern's engine is not asked.
fn may_be_code(line: &str) -> bool {
    line.bytes().any(|b| b == b'{' || b == b'}')
        || line.contains("//")
        || line.starts_with('/')
        || (line.contains(':') && line.contains(';'))
        || ["function", "document.", "window."].iter().any(|w| line.contains(w))
        || may_be_brackets_line(line)
}

/// Whether a line may be `code`'s line of brackets alone: its first character is one of them or space.
fn may_be_brackets_line(line: &str) -> bool {
    line.starts_with(|c: char| "{}()[];,".contains(c) || c.is_whitespace())
}

/// Whether a line holds a byte one of the words or signs `may_be_code` and `may_be_bounded_code` look for
/// inside it opens with (all but what they ask of its first character). Lines of Han seldom do, and one
/// pass over them then stands for the dozen searches.
fn holds_code_bytes(line: &str) -> bool {
    // in blocks, each scanned without branches, so that the scan is vectorised
    line.as_bytes().chunks(64).any(|block| {
        block.iter().fold(false, |any, &b| {
            any | matches!(b, b'{' | b'}' | b'/' | b':' | b'f' | b'd' | b'w' | b'v' | b'.')
        })
    })
}

fn is_code(line: &str) -> bool {
    let p = patterns();
    if !holds_code_bytes(line) {
        // only `code`'s line of brackets alone may match
        return may_be_brackets_line(line) && p.code.is_match(line)
            && is_code_sized(line);
    }
    let found = (may_be_code(line) && p.code.is_match(line))
        || (may_be_bounded_code(line) && p.code_bounded.is_match(line))
        || (line.contains('{') && has_css_rule(line));
    found && is_code_sized(line)
}

/// A matching line is code if short or mostly ASCII.
fn is_code_sized(line: &str) -> bool {
    let n = chars(line);
    if n <= CODE_LINE {
        return true;
    }
    line.chars().filter(char::is_ascii).count() as f64 >= ASCII_SHARE * n as f64
}

fn py_strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

/// The line without its short marker-carrying sentences (`_strip_sentences`).
fn strip_sentences<'a>(line: &'a str, marker: &Regex) -> Cow<'a, str> {
    // a stripped line is its sentences end to end, none of them blank: without a marker every one stays
    if !marker.is_match(line) {
        return Cow::Borrowed(line);
    }
    let mut kept = String::new();
    for (a, b) in sentence_matches_with(line, true) {
        let piece = &line[a..b];
        let core = py_strip(piece);
        if core.is_empty() {
            continue;
        }
        if chars(core) > SHORT_SENTENCE || !marker.is_match(piece) {
            kept.push_str(piece);
        }
    }
    Cow::Owned(py_strip(&kept).to_owned())
}

fn is_edge_furniture(line: &str) -> bool {
    chars(line) <= EDGE_LINE && !line.chars().last().is_some_and(|c| FINAL_PUNCT.contains(&c))
}

fn runs_on(line: &str) -> bool {
    RUNS_ON.iter().any(|w| {
        line.ends_with(w) && {
            let before = &line[..line.len() - w.len()];
            before.chars().last().is_none_or(|c| !is_word(c))
        }
    })
}

fn introduced_table(kept: &str, rows: &[Cow<str>]) -> bool {
    (kept.ends_with(':') || kept.ends_with(" -")) && rows.iter().any(|r| patterns().digit.is_match(r))
}

fn opening_table(rows: &[Cow<str>]) -> Option<usize> {
    let p = patterns();
    let figures: Vec<usize> = (0..rows.len()).filter(|&i| p.digit.is_match(&rows[i])).collect();
    let compares = (0..rows.len()).find(|&i| rows[i].contains("vs") && p.compares.is_match(&rows[i]));
    match compares {
        Some(c) if figures.len() >= 2 => Some(figures[0].min(c)),
        _ => None,
    }
}

/// `strip_boilerplate(text, cased)`; None when `text` or `cased` is [`risky`] or a line of `text` that
/// may be code holds a combining mark or joiner, or before the markers were set.
pub fn strip_boilerplate(text: &str, cased: &str) -> Option<String> {
    let (marker, line_markers) = MARKERS.get()?;
    let suspect = patterns().either.any_in(text) && (risky(text) || marks_in_bounded_code(text));
    // text that is not suspect holds no risky character, nor does `cased` if it is that text but for
    // capital ASCII letters
    if suspect || (!ascii_case_apart(text, cased) && risky(cased)) {
        return None;
    }
    let p = patterns();
    let raw_lines: Vec<&str> = text.split('\n').collect();
    let cased_lines: Vec<&str> = if cased.is_empty() { Vec::new() } else { cased.split('\n').collect() };
    let mut continued = vec![false; raw_lines.len()];
    if cased_lines.len() == raw_lines.len() {
        let mut after = false;
        for i in (0..cased_lines.len()).rev() {
            continued[i] = after;
            let s = py_strip(cased_lines[i]);
            if !s.is_empty() {
                after = s.starts_with(|c: char| c.is_ascii_lowercase());
            }
        }
    }
    let mut lines: Vec<Cow<str>> = Vec::new();
    let mut goes_on: Vec<bool> = Vec::new();
    let mut prose: Vec<&str> = Vec::new();
    for (i, raw) in raw_lines.iter().enumerate() {
        let line = py_strip(raw);
        if line.is_empty() || is_code(line) {
            continue;
        }
        prose.push(line);
        let menu = line.matches('|').count() >= 3 && p.menu.is_match(line);
        let byline = line.starts_with("by ") && p.byline.is_match(line);
        if line_markers.iter().any(|m| line.starts_with(m.as_str())) || menu || byline {
            continue;
        }
        let line = strip_sentences(line, marker); // `line` is stripped
        if !line.is_empty() {
            lines.push(line);
            goes_on.push(continued[i]);
        }
    }
    let (mut start, mut end) = (0usize, lines.len());
    while start + 1 < end && is_edge_furniture(&lines[start]) && !runs_on(&lines[start]) && !goes_on[start] {
        start += 1;
    }
    if end > 0 && start == end - 1 && is_edge_furniture(&lines[start]) {
        start = end;
    } else if start > 0 {
        if let Some(table) = opening_table(&lines[..start]) {
            start = table;
        }
    }
    let last = lines.len();
    while end > start && is_edge_furniture(&lines[end - 1]) {
        end -= 1;
    }
    if start < end && end < last && introduced_table(&lines[end - 1], &lines[end..]) {
        end = last;
    }
    let mut out = lines[start..end].join("\n");
    if out.is_empty() {
        out = lines.join("\n");
    }
    // the prose lines joined by newlines, counted without joining them unless they are returned
    let rest = prose.iter().map(|l| chars(l)).sum::<usize>() + prose.len().saturating_sub(1);
    Some(if chars(&out) as f64 >= MIN_KEPT * rest as f64 { out } else { prose.join("\n") })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repeatable stream of numbers below the bound asked for (xorshift from `seed`), to draw lines.
    fn draws(seed: u64) -> impl FnMut(usize) -> usize {
        let mut state = seed;
        move |n| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        }
    }

    /// Every line `code` matches passes `may_be_code`: lines drawn from pieces of its alternatives and
    /// prose around them.
    #[test]
    fn may_be_code_admits_every_match() {
        const PIECES: [&str; 24] = [
            "function", "document", "window", "http", "s", ":", "//", "/", "*", ";", "{", "}", "(", ")",
            "[", "]", ",", ".", " ", "\u{3000}", "a-b", "x", "中文", "js",
        ];
        let mut next = draws(0x2545_f491_4f6c_dd1d);
        let mut matched = 0;
        for _ in 0..200_000 {
            let len = 1 + next(7);
            let line: String = (0..len).map(|_| PIECES[next(PIECES.len())]).collect();
            if patterns().code.is_match(&line) {
                matched += 1;
                assert!(may_be_code(&line), "{line:?}");
            }
        }
        assert!(matched > 1000, "the lines exercise the pattern ({matched} matched)");
    }

    /// A line without the bytes `holds_code_bytes` looks for passes `may_be_code` only by its first
    /// character, and neither `may_be_bounded_code` nor `has_css_rule`.
    #[test]
    fn code_bytes_cover_the_code_filters() {
        const PIECES: [&str; 22] = [
            "function", "document.", "window.", "var", ".js", ".gif", "if", "else", "switch", "while", "for",
            "//", "/", ":", ";", "{", "}", "(", " ", "中文", "a", "\u{3000}",
        ];
        let mut next = draws(0x2545_f491_4f6c_dd1d);
        let mut without = 0;
        for _ in 0..200_000 {
            let len = 1 + next(6);
            let line: String = (0..len).map(|_| PIECES[next(PIECES.len())]).collect();
            if !holds_code_bytes(&line) {
                without += 1;
                assert_eq!(may_be_code(&line), may_be_brackets_line(&line), "{line:?}");
                assert!(!may_be_bounded_code(&line) && !has_css_rule(&line), "{line:?}");
            }
        }
        assert!(without > 1000, "the lines exercise the filter ({without} without)");
    }

    /// `ascii_case_apart` holds exactly where `cased` is `text` but for capitals of some of its ASCII
    /// letters, character by character.
    #[test]
    fn ascii_case_apart_is_ascii_lowercase() {
        const PIECES: [&str; 12] = ["a", "A", "z", "Z", "@", "[", "`", "{", "中", "Σ", "σ", "\u{1c}"];
        let mut next = draws(0x9e37_79b9_7f4a_7c15);
        let mut apart = 0;
        for _ in 0..100_000 {
            let len = next(90);
            let cased: String = (0..len).map(|_| PIECES[next(PIECES.len())]).collect();
            let mut text = cased.to_ascii_lowercase();
            if next(3) == 0 && !text.is_empty() {
                let i = next(text.len());
                if text.is_char_boundary(i) {
                    text.insert(i, PIECES[next(PIECES.len())].chars().next().unwrap());
                    text.pop();
                }
            }
            let want = text.chars().count() == cased.chars().count()
                && text.chars().zip(cased.chars()).all(|(t, c)| t == c || (c.is_ascii_uppercase() && t == c.to_ascii_lowercase()));
            assert_eq!(ascii_case_apart(&text, &cased), want, "{text:?} {cased:?}");
            apart += want as usize;
        }
        assert!(apart > 10_000 && apart < 100_000, "both answers are exercised ({apart})");
    }
}
