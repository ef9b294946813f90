//! Whether a JSON text is one that orjson reads exactly as the standard library's reader does (with the
//! proxy's refusal of duplicate keys), so that the proxy may read it with orjson: `read_json` of
//! `sidecar/bulk_codec.py`, whose standard-library path is the reference and reads everything else.
//!
//! A text is plain when it is JSON by RFC 8259 with: no object holding a key twice, no key with an
//! escape in it (compared as written, so `"a"` and `"\u0061"` would not be seen as one), no `\u` escape
//! of a surrogate (the standard library keeps a lone one, orjson refuses it), no integer of more than 18
//! digits (orjson reads one beyond 64 bits as a float), no number of more than 17 significant digits or
//! with an exponent beyond 300 either way (the standard library reads `1e400` as infinity, orjson
//! refuses it), and no more than 256 levels of nesting. Every other text, valid or not, is not plain:
//! the reference reads it, and says why it is not JSON. Whether the bytes are UTF-8 is not asked here:
//! orjson refuses what the standard library's strict decoder refuses (surrogates and overlong forms
//! included), and the caller then reads the text the reference's way, which says what is wrong.

use crate::es_json::needs_escape;

/// Nesting deeper than this is left to the reference (orjson stops at 1024, the standard library at
/// the interpreter's recursion limit).
const MAX_DEPTH: usize = 256;
/// An object with more keys than this checks its keys in a hash set rather than by a scan.
const SCAN_KEYS: usize = 16;

struct Scan<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> bool {
        match self.peek() {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => self.string().is_some(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => false,
        }
    }

    /// A string from its opening quote: the span of its contents and whether it holds an escape; None
    /// when it is not valid, or escapes a surrogate.
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        self.i += 1;
        let start = self.i;
        let mut escaped = false;
        loop {
            // runs with no quote, backslash or control character (nearly all text), eight bytes at a time
            while let Some(word) = self.s.get(self.i..self.i + 8) {
                if needs_escape(u64::from_le_bytes(word.try_into().expect("eight bytes"))) {
                    break;
                }
                self.i += 8;
            }
            let b = *self.s.get(self.i)?;
            match b {
                b'"' => {
                    self.i += 1;
                    return Some((start, self.i - 1, escaped));
                }
                b'\\' => {
                    escaped = true;
                    match *self.s.get(self.i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                        b'u' => {
                            let hex = self.s.get(self.i + 2..self.i + 6)?;
                            let text = std::str::from_utf8(hex).ok()?;
                            if !text.bytes().all(|h| h.is_ascii_hexdigit()) {
                                return None;
                            }
                            let unit = u16::from_str_radix(text, 16).ok()?;
                            if (0xD800..=0xDFFF).contains(&unit) {
                                return None;
                            }
                            self.i += 6;
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                _ => self.i += 1,
            }
        }
    }

    fn digits(&mut self) -> usize {
        let from = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - from
    }

    fn number(&mut self) -> bool {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let int = match self.peek() {
            Some(b'0') => {
                self.i += 1;
                1
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return false,
        };
        let mut frac = 0;
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.i += 1;
            frac = self.digits();
            if frac == 0 {
                return false;
            }
            float = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            let from = self.i;
            let n = self.digits();
            if n == 0 || n > 3 || self.s[from..self.i].iter().fold(0u32, |v, d| v * 10 + u32::from(d - b'0')) > 300 {
                return false;
            }
            float = true;
        }
        if float { int + frac <= 17 } else { int <= 18 }
    }

    /// Past an opening bracket: `Some(true)` for an empty array or object (`close` right after it, also
    /// passed), `Some(false)` when members follow, None when nested too deep.
    fn open(&mut self, close: u8) -> Option<bool> {
        self.depth += 1;
        self.i += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        Some(self.close(close))
    }

    /// Whether `close` comes next (then passed, one level up).
    fn close(&mut self, close: u8) -> bool {
        if self.peek() != Some(close) {
            return false;
        }
        self.i += 1;
        self.depth -= 1;
        true
    }

    /// After a member: `Some(true)` at `close` (passed), `Some(false)` past a comma, None otherwise.
    fn after_member(&mut self, close: u8) -> Option<bool> {
        self.ws();
        if self.peek() == Some(b',') {
            self.i += 1;
            return Some(false);
        }
        self.close(close).then_some(true)
    }

    /// An array or object from its opening bracket to `close`, each member read by `member`.
    fn members(&mut self, close: u8, mut member: impl FnMut(&mut Self) -> bool) -> bool {
        match self.open(close) {
            None => return false,
            Some(true) => return true,
            Some(false) => {}
        }
        loop {
            self.ws();
            if !member(self) {
                return false;
            }
            match self.after_member(close) {
                None => return false,
                Some(true) => return true,
                Some(false) => {}
            }
        }
    }

    fn array(&mut self) -> bool {
        self.members(b']', Self::value)
    }

    fn object(&mut self) -> bool {
        let mut keys: Vec<&'a [u8]> = Vec::new();
        let mut set: Option<rustc_hash::FxHashSet<&'a [u8]>> = None;
        self.members(b'}', |scan| {
            if scan.peek() != Some(b'"') {
                return false;
            }
            let Some((from, to, escaped)) = scan.string() else { return false };
            if escaped {
                return false;
            }
            let key = &scan.s[from..to];
            let seen = match &mut set {
                Some(set) => !set.insert(key),
                None if keys.len() < SCAN_KEYS => {
                    let seen = keys.contains(&key);
                    keys.push(key);
                    seen
                }
                None => {
                    let mut all: rustc_hash::FxHashSet<&[u8]> = keys.drain(..).collect();
                    let seen = !all.insert(key);
                    set = Some(all);
                    seen
                }
            };
            if seen {
                return false;
            }
            scan.ws();
            if scan.peek() != Some(b':') {
                return false;
            }
            scan.i += 1;
            scan.ws();
            scan.value()
        })
    }
}

/// Whether `raw` is plain (see the module's documentation).
pub fn plain(raw: &[u8]) -> bool {
    let mut scan = Scan { s: raw, i: 0, depth: 0 };
    scan.ws();
    if !scan.value() {
        return false;
    }
    scan.ws();
    scan.i == raw.len()
}

#[cfg(test)]
mod tests {
    use super::plain;

    #[test]
    fn plain_texts_and_those_left_to_the_reference() {
        for text in [r#"{"a":1,"b":[true,false,null],"c":{"d":"\n\u00e9"}}"#, " 1 ", "-0.5e-3", r#""""#, "[]", "{}"] {
            assert!(plain(text.as_bytes()), "{text}");
        }
        for text in [
            r#"{"a":1,"a":2}"#,
            r#"{"\u0061":1}"#,
            r#""\ud800""#,
            "1e400",
            "12345678901234567890",
            "0.123456789012345678",
            "NaN",
            "[1,]",
            "01",
            "1.",
            "\"\x01\"",
            "",
            "1 2",
        ] {
            assert!(!plain(text.as_bytes()), "{text}");
        }
        assert!(!plain("[".repeat(300).as_bytes()));
    }
}
