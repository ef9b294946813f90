//! What `Fingerprinter.fingerprint_document` adds to a document's facts besides its body's: the title's
//! names and ordinals (`title_facts` with `latin_names` of `fingerprint/facts.py`) and the publication
//! day (`publication_day`), ported so that a document is fingerprinted in one call without the GIL. The
//! Python functions are the reference; where an input takes a path not ported (a numeral beyond 128
//! bits, a date form other than the two common ones), the functions give None and the reference runs.

use std::borrow::Cow;

use pyo3::prelude::*;
use rustc_hash::FxHashSet;
use xxhash_rust::xxh3::xxh3_64;

use crate::facts::{numbers, DAY, TITLE};
use crate::text::py_isspace;

/// `MAX_TITLE_FACTS` of `fingerprint/facts.py`.
pub const MAX_TITLE_FACTS: usize = 8;

/// A character of `[A-Za-z0-9.&'-]`, what `_SYMBOL` allows in a company's symbol or name.
fn symbol_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'&' | b'\'' | b'-')
}

/// The end of `_SYMBOL` (`<([A-Za-z][A-Za-z0-9.&'-]{0,15}(?: [A-Za-z0-9.&'-]{1,15}){0,5})>`) when a
/// match starts at `p` (a `<`). The runs of symbol characters are maximal wherever the pattern matches
/// (what follows each must be a space or `>`, neither of them a symbol character), so backtracking
/// never finds a match the greedy reading misses.
fn symbol_at(b: &[u8], p: usize) -> Option<usize> {
    let mut i = p + 1;
    if !b.get(i).is_some_and(u8::is_ascii_alphabetic) {
        return None;
    }
    i += 1;
    let run = |from: usize| from + b[from..].iter().take_while(|&&c| symbol_byte(c)).count();
    let e = run(i);
    if e - i > 15 {
        return None;
    }
    i = e;
    for _ in 0..5 {
        if b.get(i) != Some(&b' ') {
            break;
        }
        let e = run(i + 1);
        if !(1..=15).contains(&(e - i - 1)) {
            return None;
        }
        i = e;
    }
    (b.get(i) == Some(&b'>')).then_some(i + 1)
}

/// `latin_names(title)`: the companies in angle brackets (`<NTRS>`, `<Sterling Bancorp>`), lower-cased,
/// brackets kept, distinct.
pub fn latin_names(title: &str) -> Vec<String> {
    let b = title.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut p = 0;
    while let Some(k) = b[p..].iter().position(|&c| c == b'<') {
        let at = p + k;
        match symbol_at(b, at) {
            Some(end) => {
                let name = title[at..end].to_ascii_lowercase();
                if !out.contains(&name) {
                    out.push(name);
                }
                p = end;
            }
            None => p = at + 1,
        }
    }
    out
}

/// A separator of `_SITE_SUFFIX`: `-`, `_`, `|`, en and em dashes, the full-width bar.
fn is_separator(c: char) -> bool {
    matches!(c, '-' | '_' | '|' | '\u{2013}' | '\u{2014}' | '\u{ff5c}')
}

/// `_SITE_SUFFIX.sub("", title)` (`\s*[separators]+\s*[^separators]{1,12}$`): a site or column name
/// after the headline's last run of separators is dropped, with the space before and after the run.
///
/// A match holds no separator after its run of them, so its run is the title's last; the space before
/// the run is where the leftmost match starts. After the run, `\s*` takes the space that follows (as
/// much as still lets `[^separators]{1,12}` reach `$`: the end, or a line break that ends the title).
pub fn drop_site_suffix(title: &str) -> Cow<'_, str> {
    let Some((last, c)) = title.char_indices().rev().find(|&(_, c)| is_separator(c)) else {
        return Cow::Borrowed(title);
    };
    let run_end = last + c.len_utf8();
    let head = title[..last].trim_end_matches(is_separator);
    let start = head.trim_end_matches(py_isspace).len();
    let rest = &title[run_end..];
    let spaces = rest.chars().take_while(|&c| py_isspace(c)).count();
    let total = rest.chars().count();
    // `\s*` takes `s` characters, most first; the tail then takes what is left when that is 1 to 12
    // characters, or all but a closing line break (where `$` also matches)
    for s in (0..=spaces).rev() {
        let left = total - s;
        let end = if (1..=12).contains(&left) {
            rest.len()
        } else if (2..=13).contains(&left) && rest.ends_with('\n') {
            rest.len() - 1
        } else {
            continue;
        };
        let mut out = String::with_capacity(title.len());
        out.push_str(&title[..start]);
        out.push_str(&rest[end..]);
        return Cow::Owned(out);
    }
    Cow::Borrowed(title)
}

/// `title_facts(title, terms, latin)` of a normalised title, its content `terms` and its companies
/// (`latin_names` of the title as given): the names the dictionary tags (`proper`) and the companies
/// that the headline without its site name holds, and that headline's number facts, as TITLE facts
/// (`^@…`, `^#…`, `^=…`), the bottom `MAX_TITLE_FACTS` by hash. None where the number facts are not
/// ported (a numeral beyond 128 bits).
pub fn title_facts(
    title: &str, terms: &[String], latin: &[String], proper: &FxHashSet<Box<str>>,
) -> Option<Vec<String>> {
    let head = drop_site_suffix(title);
    let head: &str = &head;
    let mut found: Vec<String> = terms
        .iter()
        .filter(|n| proper.contains(n.as_str()) && head.contains(n.as_str()))
        .chain(latin.iter().filter(|n| head.contains(n.as_str())))
        .map(|n| format!("@{n}"))
        .collect();
    found.extend(numbers(head)?);
    let mut keyed: Vec<(u64, String)> = found.into_iter().map(|f| (xxh3_64(f.as_bytes()), f)).collect();
    keyed.sort_unstable();
    keyed.dedup();
    Some(keyed.into_iter().take(MAX_TITLE_FACTS).map(|(_, f)| format!("{TITLE}{f}")).collect())
}

/// Whether `y-m-d` is a day of the proleptic Gregorian calendar, year 1 to 9999 (`datetime.date`).
fn is_day(y: u32, m: u32, d: u32) -> bool {
    let leap = y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400));
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=9999).contains(&y) && (1..=days).contains(&d)
}

/// The value of a run of ASCII digits.
fn digits(b: &[u8]) -> Option<u32> {
    (!b.is_empty() && b.iter().all(u8::is_ascii_digit))
        .then(|| b.iter().fold(0, |v, &c| v * 10 + u32::from(c - b'0')))
}

/// The month of an English three-letter abbreviation, any case (`%b` of the C locale).
fn month_abbr(b: &[u8]) -> Option<u32> {
    const MONTHS: [&[u8; 3]; 12] =
        [b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov", b"dec"];
    let lower = [b[0].to_ascii_lowercase(), b[1].to_ascii_lowercase(), b[2].to_ascii_lowercase()];
    MONTHS.iter().position(|m| **m == lower).map(|i| i as u32 + 1)
}

/// `publication_day(value)` for the forms it meets most (`2024-09-29`, and the wire archives'
/// `1-APR-1987 11:19:44.38`): `Some(day)` with the DAY fact (`%1987-04-01`) or None when it reads as
/// no day; None where the reference must read `value` (every other form, and non-ASCII text).
pub fn publication_day(value: &str) -> Option<Option<String>> {
    if !value.is_ascii() {
        return None;
    }
    let text = value.trim_matches(py_isspace);
    let b = text.as_bytes();
    if b.is_empty() {
        return Some(None);
    }
    let day = |y: u32, m: u32, d: u32| is_day(y, m, d).then(|| format!("{DAY}{y:04}-{m:02}-{d:02}"));
    // `date.fromisoformat`'s plainest form; a day that does not exist reads as none by `_YMD` either
    if b.len() == 10 && b[4] == b'-' && b[7] == b'-' {
        let (y, m, d) = (digits(&b[..4])?, digits(&b[5..7])?, digits(&b[8..])?);
        return Some(day(y, m, d));
    }
    // `_DMY`: `(\d{1,2})[- ]([A-Za-z]{3})[a-z]*[- ,]+(\d{4})\b` (no ISO form starts so), then
    // `strptime("%d %b %Y")`, whose day is 1 to 31 in one or two digits; the clock does not change the day
    let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if !(1..=2).contains(&n) || !matches!(b.get(n), Some(b'-' | b' ')) {
        return None;
    }
    let letters = b.get(n + 1..n + 4)?;
    if !letters.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    let mut i = n + 4;
    i += b[i..].iter().take_while(|c| c.is_ascii_lowercase()).count();
    let gap = b[i..].iter().take_while(|c| matches!(c, b'-' | b' ' | b',')).count();
    if gap == 0 {
        return None;
    }
    i += gap;
    let year = b.get(i..i + 4).and_then(digits)?;
    if b.get(i + 4).is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_') {
        return None; // no `\b`: the reference reads further forms
    }
    let d = digits(&b[..n])?;
    Some(month_abbr(letters).and_then(|m| day(year, m, d)))
}

/// `publication_day(value)` as `(read, day)`: `read` false where the reference must read `value` (for
/// the equality checks).
#[pyfunction(name = "publication_day")]
fn py_publication_day(value: &str) -> (bool, Option<String>) {
    publication_day(value).map_or((false, None), |day| (true, day))
}

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(py_publication_day, m)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_suffixes() {
        assert_eq!(drop_site_suffix("唐嫣现身机场 - 新浪网"), "唐嫣现身机场");
        assert_eq!(drop_site_suffix("a-b-c"), "a-b");
        assert_eq!(drop_site_suffix("abc - "), "abc");
        assert_eq!(drop_site_suffix("abc -"), "abc -");
        assert_eq!(drop_site_suffix("abc | a very long site name"), "abc | a very long site name");
        assert_eq!(drop_site_suffix("abc | 123456789012\n"), "abc\n");
        assert_eq!(drop_site_suffix("no separator"), "no separator");
    }

    #[test]
    fn companies() {
        assert_eq!(latin_names("STANDARD OIL <SRD> TO FORM <Sterling Bancorp> <a  b> <<X>"),
                   vec!["<srd>", "<sterling bancorp>", "<x>"]);
        assert!(latin_names("<1A> <A1234567890123456>").is_empty());
    }

    #[test]
    fn days() {
        assert_eq!(publication_day("2024-09-29"), Some(Some("%2024-09-29".into())));
        assert_eq!(publication_day("2023-02-29"), Some(None));
        assert_eq!(publication_day(" 1-APR-1987 11:19:44.38"), Some(Some("%1987-04-01".into())));
        assert_eq!(publication_day("31-APR-1987"), Some(None));
        assert_eq!(publication_day("0-APR-1987"), Some(None));
        assert_eq!(publication_day("1-APR-19871"), None);
        assert_eq!(publication_day("Sun, 29 Sep 2024 19:00:00 +0800"), None);
        assert_eq!(publication_day("  "), Some(None));
    }
}
