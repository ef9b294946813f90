//! Hexadecimal text of bytes, as Python writes and reads it (`bytes.hex`, `bytes.fromhex`).

/// The value of a hex digit, or 0xFF for any other byte.
const HEX_VALUE: [u8; 256] = {
    let mut t = [0xFFu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// `bytes.fromhex` of text made only of hex digit pairs (None for anything else).
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    let raw = text.as_bytes();
    if !raw.len().is_multiple_of(2) {
        return None;
    }
    let mut out = Vec::with_capacity(raw.len() / 2);
    for pair in raw.chunks_exact(2) {
        let (hi, lo) = (HEX_VALUE[pair[0] as usize], HEX_VALUE[pair[1] as usize]);
        if hi == 0xFF || lo == 0xFF {
            return None;
        }
        out.push(hi << 4 | lo);
    }
    Some(out)
}

/// Whether `text` is lower-case hex digit pairs (the reference's `(?:[0-9a-f]{2})*`).
pub fn lower_hex_pairs(text: &str) -> bool {
    text.len().is_multiple_of(2) && text.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// The lower-case hex digits, by value.
pub const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// The lower-case hex digits of `raw` (Python's `bytes.hex`).
pub fn to_hex(raw: &[u8]) -> String {
    let mut out = String::with_capacity(2 * raw.len());
    for &b in raw {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}
