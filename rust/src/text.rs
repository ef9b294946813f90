//! Text primitives with Python's semantics: what `str.isspace`, the sentence pattern of
//! `fingerprint/chunks.py` and the word pattern of `text/tokenize.py` match. Offsets are bytes.

/// `str.isspace`: Unicode White_Space plus the four information separators Python counts as space.
pub fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// [`py_isspace`] of an ASCII byte (`b < 0x80`), as one shift of a mask and no branch: the ASCII
/// characters `str.isspace` counts are \t to \r, \x1c to \x1f and the space.
#[inline(always)]
pub fn ascii_space(b: u8) -> bool {
    const SPACE: u64 = 0x1_f000_3e00;
    b < 64 && (SPACE >> b) & 1 == 1
}

/// The bytes that may start a character [`py_isspace`] holds: the ASCII ones it holds, and the lead
/// bytes of the others (U+0085 and U+00A0, U+1680, U+2000 to U+205F, U+3000). Continuation bytes are
/// none of them: a text's bytes between two of these are whole characters that are not space.
const MAY_SPACE: ByteSet =
    ByteSet::new(&[b'\t', b'\n', 0x0b, 0x0c, b'\r', 0x1c, 0x1d, 0x1e, 0x1f, b' ', 0xc2, 0xe1, 0xe2, 0xe3]);

/// Whether the character at byte `i` of `text` is space, and its length in bytes, where its first
/// byte is in [`MAY_SPACE`].
#[inline]
fn space_at(text: &str, i: usize) -> (bool, usize) {
    let bytes = text.as_bytes();
    let b = bytes[i];
    if b < 0x80 {
        return (true, 1);
    }
    if b == 0xe3 {
        // U+3000 to U+3FFF (CJK punctuation mostly): only U+3000 is space
        return (bytes[i + 1] == 0x80 && bytes[i + 2] == 0x80, 3);
    }
    let c = text[i..].chars().next().expect("a character");
    (py_isspace(c), c.len_utf8())
}

/// The UTF-8 of `text` without the characters [`py_isspace`] holds (`"".join(text.split())`).
pub fn without_space(text: &str) -> Vec<u8> {
    let mut out = String::with_capacity(text.len());
    push_without_space(text, &mut out);
    out.into_bytes()
}

/// `fn $name($args) -> $ret` calling `$body` (an `#[inline(always)]` function of the same arguments)
/// compiled for AVX2 where the CPU has it: the byte-set searches in it are then inlined, their tables
/// set up once, not once per search.
macro_rules! avx2_variant {
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty = $body:ident) => {
        $(#[$doc])*
        $vis fn $name($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                #[target_feature(enable = "avx2")]
                unsafe fn wide($($arg: $ty),*) -> $ret {
                    $body($($arg),*)
                }
                // SAFETY: the CPU has AVX2 (checked just above)
                return unsafe { wide($($arg),*) };
            }
            $body($($arg),*)
        }
    };
}

avx2_variant! {
    /// `"".join(text.split())` added to `out`.
    pub fn push_without_space(text: &str, out: &mut String) -> () = push_without_space_body
}

/// [`push_without_space`], inlined into its two builds: what is not space is copied a run at a time.
#[inline(always)]
fn push_without_space_body(text: &str, out: &mut String) {
    let bytes = text.as_bytes();
    let mut kept = 0; // text[kept..i] stays and is not written yet
    let mut i = 0;
    while i < bytes.len() {
        let j = MAY_SPACE.find(bytes, i);
        if j == bytes.len() {
            break;
        }
        let (space, len) = space_at(text, j);
        if space {
            out.push_str(&text[kept..j]);
            kept = j + len;
        }
        i = j + len;
    }
    out.push_str(&text[kept..]);
}

/// A set of byte values, for finding the next byte of a text that is one of them: 32 bytes at a time
/// where the CPU has AVX2 (each byte's two halves looked up in two 16-entry tables), else one by one.
pub struct ByteSet {
    table: [bool; 256],
    /// per low half: the groups of high halves it is in the set with (one bit per group)
    lo: [u8; 16],
    /// per high half: its group's bit (high halves of one group pair with the same low halves)
    hi: [u8; 16],
}

impl ByteSet {
    /// The set of `bytes`; its high halves may pair with at most eight different sets of low halves.
    pub const fn new(bytes: &[u8]) -> Self {
        let mut table = [false; 256];
        let mut i = 0;
        while i < bytes.len() {
            table[bytes[i] as usize] = true;
            i += 1;
        }
        // the low halves each high half pairs with, and one bit per distinct such set
        let mut masks = [0u16; 16];
        let mut b = 0;
        while b < 256 {
            if table[b] {
                masks[b >> 4] |= 1 << (b & 15);
            }
            b += 1;
        }
        let (mut lo, mut hi) = ([0u8; 16], [0u8; 16]);
        let mut groups = [0u16; 8];
        let mut n = 0;
        let mut h = 0;
        while h < 16 {
            if masks[h] != 0 {
                let mut g = 0;
                while g < n && groups[g] != masks[h] {
                    g += 1;
                }
                if g == n {
                    assert!(n < 8, "a byte set of more than eight groups");
                    groups[n] = masks[h];
                    n += 1;
                }
                hi[h] = 1 << g;
                let mut l = 0;
                while l < 16 {
                    if masks[h] & (1 << l) != 0 {
                        lo[l] |= 1 << g;
                    }
                    l += 1;
                }
            }
            h += 1;
        }
        ByteSet { table, lo, hi }
    }

    #[inline(always)]
    pub fn has(&self, b: u8) -> bool {
        self.table[b as usize]
    }

    /// The first position from `from` on whose byte is in the set, or `bytes.len()`. Inlined, so that
    /// in a function compiled for AVX2 ([`avx2_variant`]) the wide search is inlined too.
    #[inline(always)]
    pub fn find(&self, bytes: &[u8], from: usize) -> usize {
        let mut i = from;
        // a byte of the set at once (dense sets, short gaps) without the wide search
        if bytes.get(i).is_some_and(|&b| self.has(b)) {
            return i;
        }
        #[cfg(target_arch = "x86_64")]
        if bytes.len() >= i + 32 && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above)
            i = unsafe { self.find_avx2(bytes, i) };
        }
        while i < bytes.len() && !self.has(bytes[i]) {
            i += 1;
        }
        i
    }

    /// [`ByteSet::find`] over whole blocks of 32 bytes: the first position in the set, or where the
    /// blocks end (the caller reads the rest one by one).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn find_avx2(&self, bytes: &[u8], from: usize) -> usize {
        use std::arch::x86_64::*;
        let lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(self.lo.as_ptr().cast()));
        let hi = _mm256_broadcastsi128_si256(_mm_loadu_si128(self.hi.as_ptr().cast()));
        let nibble = _mm256_set1_epi8(0x0f);
        let mut i = from;
        while i + 32 <= bytes.len() {
            // SAFETY: the 32 bytes at `i` are in `bytes`
            let x = _mm256_loadu_si256(bytes.as_ptr().add(i).cast());
            let l = _mm256_shuffle_epi8(lo, _mm256_and_si256(x, nibble));
            let h = _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16::<4>(x), nibble));
            let hit = _mm256_cmpeq_epi8(_mm256_and_si256(l, h), _mm256_setzero_si256());
            let found = !(_mm256_movemask_epi8(hit) as u32);
            if found != 0 {
                return i + found.trailing_zeros() as usize;
            }
            i += 32;
        }
        i
    }
}

/// The first `n` bytes of `s` (at most eight; zeros after a shorter string) as a number in the high
/// bytes of a word: it orders as the strings do wherever two differ, so strings are compared whole only
/// where these are equal.
pub fn leading_bytes(s: &str, n: usize) -> u64 {
    let mut word = [0u8; 8];
    let n = s.len().min(n).min(8);
    word[..n].copy_from_slice(&s.as_bytes()[..n]);
    u64::from_be_bytes(word)
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

/// The bytes that may start a character ending a sentence: `!?;.`, and the lead bytes of `。` (0xe3)
/// and `…` (0xe2).
const STOPS: ByteSet = ByteSet::new(&[b'!', b'?', b';', b'.', 0xe2, 0xe3]);

/// The first byte from `from` on that may start a character ending a sentence, or the end.
fn next_stop(bytes: &[u8], from: usize) -> usize {
    STOPS.find(bytes, from)
}

/// The matches of `_SENTENCE` (`.+?(?:[。!?;…]+[closers]*|\.[closers]*(?=\s)|$)`, DOTALL) in `text`,
/// as byte ranges, in order. `text` holds no line break (the callers replace them by spaces).
pub fn sentence_matches(text: &str) -> Vec<(usize, usize)> {
    sentence_matches_with(text, false)
}

avx2_variant! {
    /// The matches of the sentence pattern; `dot_at_end`: a period also ends a sentence at the end of the
    /// text (`(?=\s|$)`, the boilerplate stripper's `SENTENCE_RE`), not only before a space.
    pub fn sentence_matches_with(text: &str, dot_at_end: bool) -> Vec<(usize, usize)> = sentence_matches_body
}

/// [`sentence_matches_with`], inlined into its two builds.
#[inline(always)]
fn sentence_matches_body(text: &str, dot_at_end: bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    each_sentence_match(text, dot_at_end, |a, b| {
        out.push((a, b));
        true
    });
    out
}

/// Calls `visit` with each match of the sentence pattern (see [`sentence_matches_with`]) in order,
/// until it returns false.
#[inline(always)]
fn each_sentence_match(text: &str, dot_at_end: bool, mut visit: impl FnMut(usize, usize) -> bool) {
    let n = text.len();
    // the character at byte `i` and where the next one starts
    let at = |i: usize| -> (char, usize) {
        let c = text[i..].chars().next().expect("a character");
        (c, i + c.len_utf8())
    };
    let bytes = text.as_bytes();
    let mut pos = 0;
    while pos < n {
        let mut e = at(pos).1; // `.+?` takes one character at least
        let end = loop {
            if e >= n {
                break n;
            }
            e = next_stop(bytes, e);
            if e >= n {
                break n;
            }
            let (c, next) = at(e);
            if FINAL.contains(&c) {
                let mut j = e;
                while j < n && FINAL.contains(&at(j).0) {
                    j = at(j).1;
                }
                while j < n && CLOSERS.contains(&at(j).0) {
                    j = at(j).1;
                }
                break j;
            }
            if c == '.' {
                let mut j = next;
                while j < n && DOT_CLOSERS.contains(&at(j).0) {
                    j = at(j).1;
                }
                if (j < n && py_isspace(at(j).0)) || (dot_at_end && j == n) {
                    break j;
                }
            }
            e = next;
        };
        if !visit(pos, end) {
            return;
        }
        pos = end;
    }
}

/// `sentence_spans` of `fingerprint/chunks.py`: where each stripped, non-empty sentence lies; None when
/// one is longer than `max_chars` characters (the reference then cuts it into slices).
pub fn sentence_spans(text: &str, max_chars: usize) -> Option<Vec<(usize, usize)>> {
    let mut spans = Vec::new();
    push_sentence_spans(text, 0, max_chars, &mut spans).then_some(spans)
}

avx2_variant! {
    /// [`sentence_spans`] of `text` added to `out`, each moved by `offset` (where `text` lies in a
    /// longer one); false when a sentence is too long (what was added is then to be ignored).
    pub fn push_sentence_spans(text: &str, offset: usize, max_chars: usize, out: &mut Vec<(usize, usize)>) -> bool = push_sentence_spans_body
}

/// [`push_sentence_spans`], inlined into its two builds.
#[inline(always)]
fn push_sentence_spans_body(text: &str, offset: usize, max_chars: usize, out: &mut Vec<(usize, usize)>) -> bool {
    let mut fits = true;
    each_sentence_match(text, false, |a, b| {
        let (s, e) = strip(text, a, b);
        if e - s > max_chars && text[s..e].chars().count() > max_chars {
            fits = false;
        } else if e > s {
            out.push((offset + s, offset + e));
        }
        fits
    });
    fits
}

fn word_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// The bytes [`word_byte`] holds.
const WORD_BYTES: ByteSet = ByteSet::new(b"abcdefghijklmnopqrstuvwxyz0123456789");

/// The matches of `_LATIN_WORD` (`[a-z0-9]+(?:['.\-][a-z0-9]+)*`) in `text[a..b]`, as byte ranges.
pub fn latin_words(text: &str, a: usize, b: usize, out: &mut Vec<(usize, usize)>) {
    let bytes = &text.as_bytes()[..b];
    let mut i = a;
    loop {
        i = WORD_BYTES.find(bytes, i);
        if i >= b {
            break;
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
    fn ascii_space_is_py_isspace() {
        for b in 0u8..0x80 {
            assert_eq!(ascii_space(b), py_isspace(b as char), "{b:#x}");
        }
    }

    #[test]
    fn sentences() {
        let t = "a. b。。」c d.e f";
        let m: Vec<&str> = sentence_matches(t).iter().map(|&(a, b)| &t[a..b]).collect();
        assert_eq!(m, vec!["a.", " b。。」", "c d.e f"]);
    }

    #[test]
    fn sentence_spans_pushed_with_offset() {
        let t = "  a. b。。」 c d.e f  ";
        let spans = sentence_spans(t, 100).expect("short sentences");
        let got: Vec<&str> = spans.iter().map(|&(a, b)| &t[a..b]).collect();
        assert_eq!(got, vec!["a.", "b。。」", "c d.e f"]);
        let mut pushed = vec![(0, 1)];
        assert!(push_sentence_spans(t, 7, 100, &mut pushed));
        let moved: Vec<(usize, usize)> = spans.iter().map(|&(a, b)| (a + 7, b + 7)).collect();
        assert_eq!(pushed[1..], moved[..]);
        // a sentence of more than `max_chars` characters: none after it is added
        assert_eq!(sentence_spans(t, 6), None);
        let mut pushed = Vec::new();
        assert!(!push_sentence_spans("ab. cdefgh. i.", 0, 4, &mut pushed));
        assert_eq!(pushed, vec![(0, 3)]);
    }

    #[test]
    fn nfkc_by_stretches() {
        use unicode_normalization::UnicodeNormalization;
        let whole = |t: &str| t.nfkc().collect::<String>();
        for t in ["e\u{301}x", "\u{301}abc", "x\u{323}\u{301}y", "\u{1100}\u{1161}\u{11a8}", "ﬁ①Ａ\u{301}", "가\u{11a8}"] {
            assert_eq!(nfkc(t), whole(t), "{t:?}");
        }
        // every character of the first planes after a letter, and before and after combining marks
        for c in (0..0x3_0000).filter_map(char::from_u32) {
            for t in [format!("a{c}\u{301}\u{323}"), format!("{c}\u{315}b"), format!("\u{1100}{c}")] {
                assert_eq!(nfkc(&t), whole(&t), "{t:?}");
            }
        }
    }

    #[test]
    fn char_sets_answer_as_their_patterns() {
        for p in [r"[\p{M}\p{Pc}\p{No}\p{Nl}\p{Join_Control}\x1c-\x1f[\p{Age=V16_0}--\p{Age=V14_0}]--_]",
                  r"[\p{Age=V16_0}--\p{Age=V14_0}]", r"[\x{9fa5}\x{4d00}\p{No}]", r"[\x{4d00}\p{No}]"] {
            let (set, re) = (CharSet::new(p), regex::Regex::new(p).unwrap());
            for c in (0..0x11_0000).filter_map(char::from_u32) {
                let t = format!("a{c}b");
                assert_eq!(set.any_in(&t), re.is_match(&t), "{c:?}");
                assert_eq!(set.any_in(&t), re.is_match(&t), "{c:?} again");
            }
        }
    }

    #[test]
    fn lowercase_as_the_standard_library() {
        for c in (0..0x11_0000).filter_map(char::from_u32) {
            for t in [format!("{c}"), format!("A{c}\u{3a3}"), format!("\u{3a3}{c}x"), format!("ab{c}"), format!("{c}\u{3a3}")] {
                assert_eq!(to_lowercase(&t), t.to_lowercase(), "{t:?}");
            }
        }
        for t in ["ΣΑΣ ΟΔΟΣ", "Άλλος Σ.", "中文ABC“Ⅻ”Ω", "", "aΣ"] {
            assert_eq!(to_lowercase(t), t.to_lowercase(), "{t:?}");
        }
    }

    #[test]
    fn without_space_as_split() {
        for c in (0..0x11_0000).filter_map(char::from_u32) {
            let t = format!("a {c}\u{3000}b{c}\u{85}x\n");
            let want: String = t.split(py_isspace).collect();
            assert_eq!(without_space(&t), want.as_bytes(), "{c:?}");
        }
    }

    #[test]
    fn byte_sets_find_as_a_scan() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for set in [&STOPS, &MAY_SPACE, &MAY_CHANGE, &MAY_COMPOSE, &WORD_BYTES] {
            for b in 0..=255u8 {
                let one = [b];
                assert_eq!(set.find(&[b; 40], 0) == 0, set.has(b), "{b:#x}");
                assert_eq!(set.find(&one, 0) == 0, set.has(b), "{b:#x}");
            }
            for len in [0, 1, 31, 32, 33, 64, 100, 300] {
                for _ in 0..50 {
                    let bytes: Vec<u8> = (0..len)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            // mostly bytes outside the sets, so that runs are long
                            if x % 16 == 0 { (x >> 8) as u8 } else { 0x41 + (x >> 8) as u8 % 4 + 0x20 }
                        })
                        .collect();
                    for from in [0, 1.min(len), len / 2, len] {
                        let want = (from..len).find(|&i| set.has(bytes[i])).unwrap_or(len);
                        assert_eq!(set.find(&bytes, from), want);
                    }
                }
            }
        }
        assert!(STOPS.has(b'.') && !STOPS.has(b',') && STOPS.has(0xe3) && !STOPS.has(0xe4));
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

/// A set of characters given by a pattern of one character class, asked of many texts: each character
/// of the first plane is tried against the pattern once, then read from a table.
pub struct CharSet {
    pattern: regex::Regex,
    ascii: [bool; 128],
    /// two bits per character below U+10000 (32 to a word): 0 not yet tried, 1 outside the set, 2 in it
    known: Vec<std::sync::atomic::AtomicU64>,
    /// whether the set holds none of U+4E00 to U+9FFF (the Han of most Chinese text), which are then
    /// passed over by their lead byte alone
    no_han: bool,
}

impl CharSet {
    pub fn new(pattern: &str) -> Self {
        let pattern = regex::Regex::new(pattern).expect("a valid pattern");
        let ascii = std::array::from_fn(|b| pattern.is_match(&(b as u8 as char).to_string()));
        let known = (0..0x10000 / 32).map(|_| std::sync::atomic::AtomicU64::new(0)).collect();
        // the pattern is one character class: it matches in the block's text when it holds one of them
        let han: String = ('\u{4e00}'..='\u{9fff}').collect();
        let no_han = !pattern.is_match(&han);
        CharSet { pattern, ascii, known, no_han }
    }

    #[inline]
    fn holds(&self, c: u32) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let Some(word) = self.known.get(c as usize >> 5) else {
            let c = char::from_u32(c).expect("a character");
            return self.pattern.is_match(c.encode_utf8(&mut [0; 4]));
        };
        let shift = (c & 31) * 2;
        match (word.load(Relaxed) >> shift) & 3 {
            1 => false,
            2 => true,
            _ => {
                let ch = char::from_u32(c).expect("a character");
                let inside = self.pattern.is_match(ch.encode_utf8(&mut [0; 4]));
                word.fetch_or((1 + inside as u64) << shift, Relaxed);
                inside
            }
        }
    }

    /// Whether a character of `text` is in the set (whether the pattern matches in `text`).
    pub fn any_in(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            // the code point decoded here (the text is valid UTF-8)
            let (c, len) = if b < 0x80 {
                if self.ascii[b as usize] {
                    return true;
                }
                i += 1;
                continue;
            } else if self.no_han && (0xe4..=0xe9).contains(&b) {
                i += 3; // U+4000 to U+9FFF: those below U+4E00 are looked up
                if b > 0xe4 || bytes[i - 2] >= 0xb8 {
                    continue;
                }
                ((b as u32 & 0x0f) << 12 | (bytes[i - 2] as u32 & 0x3f) << 6 | (bytes[i - 1] as u32 & 0x3f), 0)
            } else if b < 0xe0 {
                ((b as u32 & 0x1f) << 6 | (bytes[i + 1] as u32 & 0x3f), 2)
            } else if b < 0xf0 {
                ((b as u32 & 0x0f) << 12 | (bytes[i + 1] as u32 & 0x3f) << 6 | (bytes[i + 2] as u32 & 0x3f), 3)
            } else {
                let c = text[i..].chars().next().expect("a character");
                (c as u32, 4)
            };
            if self.holds(c) {
                return true;
            }
            i += len;
        }
        false
    }
}

/// Whether `text` holds a character not assigned in Unicode 14.0 (the tables of Python 3.11's
/// `unicodedata`): normalisation and case mapping of such text are left to the reference. Unassigned
/// code points count too: the normalisation and case tables here may be of a version newer than the
/// regex crate's age table knows (Unicode 17's subscript letters fold to Latin ones here, not there).
pub fn newer_than_reference(text: &str) -> bool {
    use std::sync::OnceLock;
    static NEW: OnceLock<CharSet> = OnceLock::new();
    !text.is_ascii() && NEW.get_or_init(|| CharSet::new(r"[^\p{Age=V14_0}]")).any_in(text)
}

/// How a character stands in NFKC's stretches: NFKC of a text is that of the stretches starting at
/// characters nothing before composes or reorders with, one after the other.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stretch {
    /// the character joins the stretch before it
    Joins,
    /// it starts a stretch and NFKC leaves it alone (NFKC_QC=Yes and canonical combining class 0)
    Alone,
    /// it starts a stretch that NFKC changes: its compatibility decomposition is ASCII (a full-width
    /// form, the ideographic space, the ellipsis), and no character composes with an ASCII one after it
    Ascii,
}

/// The [`Stretch`] of each character of the first plane, two bits per character, 32 to a word (made
/// once).
fn first_plane() -> &'static [u64] {
    use std::sync::OnceLock;
    static FIRST_PLANE: OnceLock<Vec<u64>> = OnceLock::new();
    FIRST_PLANE.get_or_init(|| {
        (0..0x10000u32 / 32)
            .map(|w| {
                (0..32).fold(0u64, |bits, k| {
                    let kind = char::from_u32(w * 32 + k).map_or(Stretch::Joins, stretch_by_tables);
                    bits | (kind as u64) << (2 * k)
                })
            })
            .collect()
    })
}

/// The [`Stretch`] of the character at byte `p` of `bytes` (UTF-8, the character not ASCII), and where
/// the next one starts; `table`: [`first_plane`].
#[inline(always)]
fn stretch_at(bytes: &[u8], p: usize, table: &[u64]) -> (Stretch, usize) {
    let b = bytes[p] as u32;
    let (c, next) = if b < 0xe0 {
        ((b & 0x1f) << 6 | (bytes[p + 1] as u32 & 0x3f), p + 2)
    } else if b < 0xf0 {
        ((b & 0x0f) << 12 | (bytes[p + 1] as u32 & 0x3f) << 6 | (bytes[p + 2] as u32 & 0x3f), p + 3)
    } else {
        let c = (b & 0x07) << 18 | (bytes[p + 1] as u32 & 0x3f) << 12 | (bytes[p + 2] as u32 & 0x3f) << 6;
        let c = char::from_u32(c | (bytes[p + 3] as u32 & 0x3f)).expect("a character");
        return (stretch_by_tables(c), p + 4);
    };
    let kind = match table[c as usize / 32] >> (2 * (c % 32)) & 3 {
        0 => Stretch::Joins,
        1 => Stretch::Alone,
        _ => Stretch::Ascii,
    };
    (kind, next)
}

/// The [`Stretch`] of `c` as the normaliser's tables answer it.
fn stretch_by_tables(c: char) -> Stretch {
    use unicode_normalization::char::{canonical_combining_class, decompose_compatible};
    use unicode_normalization::{is_nfkc_quick, IsNormalized};
    if canonical_combining_class(c) == 0 && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes {
        return Stretch::Alone;
    }
    let mut ascii = true;
    decompose_compatible(c, |d| ascii &= d.is_ascii());
    if ascii { Stretch::Ascii } else { Stretch::Joins }
}

/// The bytes that may start a character not known [`Stretch::Alone`] at once: all lead bytes but those
/// of U+5000 to U+9FFF (Han). ASCII and continuation bytes start none.
const MAY_COMPOSE: ByteSet = {
    let mut set = [0u8; 64 - 5];
    let mut n = 0;
    let mut b = 0xc0u8;
    loop {
        if !(b >= 0xe5 && b <= 0xe9) {
            set[n] = b;
            n += 1;
        }
        if b == 0xff {
            break;
        }
        b += 1;
    }
    ByteSet::new(&set)
};

avx2_variant! {
    /// NFKC of `text`: the stretches NFKC leaves alone are copied, the others normalised (the
    /// normaliser's own result, piece by piece).
    fn nfkc(text: &str) -> String = nfkc_body
}

/// [`nfkc`], inlined into its two builds.
#[inline(always)]
fn nfkc_body(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut copied = 0; // text[..copied] is in `out`
    let mut stretch = 0; // where the current stretch starts
    let mut pending = false; // whether the current stretch is to be normalised
    let table = first_plane();
    let mut p = 0;
    while p < bytes.len() {
        let q = MAY_COMPOSE.find(bytes, p);
        // text[p..q]: characters NFKC leaves alone, each starting a stretch; the last one's is current
        let (kind, next) = if q > p { (Stretch::Alone, q) } else { stretch_at(bytes, p, table) };
        if kind != Stretch::Joins {
            if pending {
                push_nfkc(&text[stretch..p], &mut out);
                copied = p;
                pending = false;
            }
            stretch = next - 1;
            while bytes[stretch] & 0xc0 == 0x80 {
                stretch -= 1;
            }
        }
        if kind != Stretch::Alone && !pending {
            out.push_str(&text[copied..stretch]);
            pending = true;
        }
        p = next;
    }
    if pending {
        push_nfkc(&text[stretch..], &mut out);
    } else {
        out.push_str(&text[copied..]);
    }
    out
}

/// NFKC of one stretch into `out`. A stretch of one full-width ASCII form or the ideographic space
/// (Chinese punctuation: most stretches normalised) is its narrow form, without the normaliser.
fn push_nfkc(stretch: &str, out: &mut String) {
    use unicode_normalization::UnicodeNormalization;
    let mut it = stretch.chars();
    if let (Some(c), None) = (it.next(), it.next()) {
        let narrow = match c {
            '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0),
            '\u{3000}' => Some(' '),
            _ => None,
        };
        if let Some(n) = narrow {
            out.push(n);
            return;
        }
    }
    out.extend(stretch.nfkc());
}

/// `normalize` of `text/clean.py`: NFKC, lower case (when `lower`), `\r` as a line break, runs of other
/// space as one space, blank lines dropped, each line and the whole stripped. None for text that
/// [`newer_than_reference`] leaves to the reference.
pub fn normalize(text: &str, lower: bool) -> Option<String> {
    if newer_than_reference(text) {
        return None;
    }
    let nfkc: String = if text.is_ascii() { text.to_owned() } else { nfkc(text) };
    let cased = if lower { to_lowercase(&nfkc) } else { nfkc };
    Some(fold_space(&cased))
}

/// The bytes that may start a character lower-casing changes: capital ASCII letters and the lead
/// bytes of all but U+3000 to U+9FFF (continuation bytes and other ASCII start none).
const MAY_CHANGE: ByteSet = {
    let mut set = [0u8; 26 + 32 + 3 + 6 + 8];
    let mut n = 0;
    let mut b = 0u8;
    loop {
        if b.is_ascii_uppercase() || (b >= 0xc0 && b <= 0xe2) || (b >= 0xea && b <= 0xf7) {
            set[n] = b;
            n += 1;
        }
        if b == 0xff {
            break;
        }
        b += 1;
    }
    assert!(n == set.len());
    ByteSet::new(&set)
};

/// `str::to_lowercase` (Python's `str.lower` where the reference's tables agree), without a case
/// table search for the characters no mapping changes that news text is mostly made of: ASCII, the
/// general punctuation block (U+2000 to U+20FF) and U+3000 to U+9FFF (CJK punctuation, kana, Han).
pub fn to_lowercase(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut run = 0; // text[run..i] holds no character a mapping changes, not yet copied
    let mut i = 0;
    while i < bytes.len() {
        i = MAY_CHANGE.find(bytes, i);
        if i == bytes.len() {
            break;
        }
        let b = bytes[i];
        let len = if b < 0x80 {
            1
        } else if b == 0xe2 && bytes[i + 1] < 0x84 {
            i += 3;
            continue;
        } else if b >= 0xf0 {
            4
        } else if b >= 0xe0 {
            3
        } else {
            2
        };
        out.push_str(&text[run..i]);
        let c = text[i..].chars().next().expect("a character");
        if c == '\u{3a3}' {
            // a capital sigma lower-cases by its context (final or not): the standard library decides
            return text.to_lowercase();
        }
        out.extend(c.to_lowercase());
        i += len;
        run = i;
    }
    out.push_str(&text[run..]);
    out
}

avx2_variant! {
    /// The space steps of `normalize` in one pass: with `\r` and `\n` as line breaks and every other space
    /// folded, `"\n".join(line.strip() ...).strip()` after `\n\s*\n+` became `\n` is the non-blank lines,
    /// each with its inner space runs as one space, joined by line breaks.
    fn fold_space(text: &str) -> String = fold_space_body
}

/// [`fold_space`], inlined into its two builds.
#[inline(always)]
fn fold_space_body(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut in_line = false; // the current line has had a character that is not space
    let mut space = false; // a space run since that line's last such character
    let mut run = 0; // text[run..i] is the current stretch of such characters, not yet copied
    let mut i = 0;
    while i < bytes.len() {
        // whether the character at i is space, and its length (characters up to the next byte that may
        // start a space count as one that is not)
        let j = MAY_SPACE.find(bytes, i);
        let (is_space, len) = if j > i { (false, j - i) } else { space_at(text, i) };
        if !is_space {
            if run == i {
                // a stretch starts: what separates it from the text before
                if !in_line {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    in_line = true;
                } else if space {
                    out.push(' ');
                }
                space = false;
            }
            i += len;
            continue;
        }
        out.push_str(&text[run..i]);
        if bytes[i] == b'\n' || bytes[i] == b'\r' {
            in_line = false;
        }
        space = in_line;
        i += len;
        run = i;
    }
    out.push_str(&text[run..]);
    out
}
