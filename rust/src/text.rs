//! Text primitives with Python's semantics: what `str.isspace`, the sentence pattern of
//! `fingerprint/chunks.py` and the word pattern of `text/tokenize.py` match. Offsets are bytes.

/// `str.isspace`: Unicode White_Space plus the four information separators Python counts as space.
pub fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The Han ranges of `_CJK_CHAR` in `text/tokenize.py`.
pub fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}')
}

pub fn has_cjk(text: &str) -> bool {
    text.chars().any(is_cjk)
}

/// `_CJK_WORD.fullmatch(token)`: one or more Han characters and nothing else.
pub fn all_cjk(token: &str) -> bool {
    !token.is_empty() && token.chars().all(is_cjk)
}

/// `str.strip()` of `text[a..b]`: the byte range without leading and trailing space.
pub fn strip(text: &str, a: usize, b: usize) -> (usize, usize) {
    let s = &text[a..b];
    let lead = s.len() - s.trim_start_matches(py_isspace).len();
    let trail = s.trim_end_matches(py_isspace).len();
    (a + lead, a + trail.max(lead))
}

const FINAL: [char; 5] = ['\u{3002}', '!', '?', ';', '\u{2026}'];
const CLOSERS: [char; 6] = ['"', '\'', '\u{201d}', '\u{2019}', '\u{300d}', ')'];
const DOT_CLOSERS: [char; 5] = ['"', '\'', '\u{201d}', '\u{2019}', ')'];

/// The matches of `_SENTENCE` (`.+?(?:[。!?;…]+[closers]*|\.[closers]*(?=\s)|$)`, DOTALL) in `text`,
/// as byte ranges, in order. `text` holds no line break (the callers replace them by spaces).
pub fn sentence_matches(text: &str) -> Vec<(usize, usize)> {
    sentence_matches_with(text, false)
}

/// The matches of the sentence pattern; `dot_at_end`: a period also ends a sentence at the end of the
/// text (`(?=\s|$)`, the boilerplate stripper's `SENTENCE_RE`), not only before a space.
pub fn sentence_matches_with(text: &str, dot_at_end: bool) -> Vec<(usize, usize)> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let n = chars.len();
    let at = |i: usize| if i < n { chars[i].0 } else { text.len() };
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < n {
        let mut e = pos + 1;
        let end = loop {
            if e >= n {
                break n;
            }
            let c = chars[e].1;
            if FINAL.contains(&c) {
                let mut j = e;
                while j < n && FINAL.contains(&chars[j].1) {
                    j += 1;
                }
                while j < n && CLOSERS.contains(&chars[j].1) {
                    j += 1;
                }
                break j;
            }
            if c == '.' {
                let mut j = e + 1;
                while j < n && DOT_CLOSERS.contains(&chars[j].1) {
                    j += 1;
                }
                if (j < n && py_isspace(chars[j].1)) || (dot_at_end && j == n) {
                    break j;
                }
            }
            e += 1;
        };
        out.push((at(pos), at(end)));
        pos = end;
    }
    out
}

/// `sentence_spans` of `fingerprint/chunks.py`: where each stripped, non-empty sentence lies; None when
/// one is longer than `max_chars` characters (the reference then cuts it into slices).
pub fn sentence_spans(text: &str, max_chars: usize) -> Option<Vec<(usize, usize)>> {
    let mut spans = Vec::new();
    for (a, b) in sentence_matches(text) {
        let (s, e) = strip(text, a, b);
        if text[s..e].chars().count() > max_chars {
            return None;
        }
        if e > s {
            spans.push((s, e));
        }
    }
    Some(spans)
}

fn word_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// The matches of `_LATIN_WORD` (`[a-z0-9]+(?:['.\-][a-z0-9]+)*`) in `text[a..b]`, as byte ranges.
pub fn latin_words(text: &str, a: usize, b: usize, out: &mut Vec<(usize, usize)>) {
    let bytes = text.as_bytes();
    let mut i = a;
    while i < b {
        if !word_byte(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b && word_byte(bytes[i]) {
            i += 1;
        }
        while i + 1 < b && matches!(bytes[i], b'\'' | b'.' | b'-') && word_byte(bytes[i + 1]) {
            i += 1;
            while i < b && word_byte(bytes[i]) {
                i += 1;
            }
        }
        out.push((start, i));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences() {
        let t = "a. b。。」c d.e f";
        let m: Vec<&str> = sentence_matches(t).iter().map(|&(a, b)| &t[a..b]).collect();
        assert_eq!(m, vec!["a.", " b。。」", "c d.e f"]);
    }

    #[test]
    fn words() {
        let t = "u.s covid-19 abc--def x.";
        let mut out = Vec::new();
        latin_words(t, 0, t.len(), &mut out);
        let w: Vec<&str> = out.iter().map(|&(a, b)| &t[a..b]).collect();
        assert_eq!(w, vec!["u.s", "covid-19", "abc", "def", "x"]);
    }
}
