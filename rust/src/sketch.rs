//! The MinHash sketch of `fingerprint/sketch.py`: 5-gram code-point shingles of the text without
//! whitespace, rolling FNV-prime polynomial hashes, SplitMix64 mixes against the golden-ratio seeds.

use crate::text::{ascii_space, py_isspace};

const P: u64 = 0x100000001B3;
const GOLDEN: u64 = 0x9E3779B97F4A7C15;
pub const SHINGLE: usize = 5;

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D049BB133111EB);
    x ^ (x >> 31)
}

/// `size` minima as little-endian uint32 bytes (all 0xFFFFFFFF for a text without shingles). Repeated
/// shingles cannot change a minimum, so the hashes go to the minima as they come (no sort, no dedup).
pub fn sketch(text: &str, size: usize) -> Vec<u8> {
    let codes = codes(text);
    let mut mins = vec![u64::MAX; size];
    if !codes.is_empty() {
        let hashes = shingle_hashes(&codes);
        let seeds: Vec<u64> = (1..=size as u64).map(|i| GOLDEN.wrapping_mul(i)).collect();
        minima(&hashes, &seeds, &mut mins);
    }
    mins.iter().flat_map(|m| ((m >> 32) as u32).to_le_bytes()).collect()
}

/// The code points of `text` but its space (`str.isspace`), ASCII without decoding. Every code is
/// written and the end moves past it unless it is space: no branch on the (unpredictable) spaces.
fn codes(text: &str) -> Vec<u64> {
    let bytes = text.as_bytes();
    let mut out = vec![0u64; bytes.len()];
    let (mut i, mut n) = (0, 0);
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            out[n] = b as u64;
            n += !ascii_space(b) as usize;
            i += 1;
            continue;
        }
        let c = text[i..].chars().next().expect("a character");
        out[n] = c as u64;
        n += !py_isspace(c) as usize;
        i += c.len_utf8();
    }
    out.truncate(n);
    out
}

/// The mixed polynomial hash of every window of `min(SHINGLE, codes.len())` codes, rolled from one
/// window to the next (wrapping arithmetic: removing the oldest code's term is exact).
fn shingle_hashes(codes: &[u64]) -> Vec<u64> {
    let n = SHINGLE.min(codes.len());
    let top = (1..n).fold(1u64, |p, _| p.wrapping_mul(P)); // P ** (n - 1)
    let mut h = codes[..n].iter().fold(0u64, |h, &c| h.wrapping_mul(P).wrapping_add(c));
    let mut out = Vec::with_capacity(codes.len() - n + 1);
    out.push(mix(h));
    for (&old, &new) in codes.iter().zip(&codes[n..]) {
        h = h.wrapping_sub(old.wrapping_mul(top)).wrapping_mul(P).wrapping_add(new);
        out.push(mix(h));
    }
    out
}

/// Per seed, the smallest mix of a shingle hash with it: every hash against every seed.
fn minima(hashes: &[u64], seeds: &[u64], mins: &mut [u64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512dq") {
        // SAFETY: the CPU has the features the function is compiled for (checked just above)
        unsafe { minima_avx512(hashes, seeds, mins) };
        return;
    }
    minima_portable(hashes, seeds, mins);
}

#[inline(always)]
fn minima_portable(hashes: &[u64], seeds: &[u64], mins: &mut [u64]) {
    for &h in hashes {
        for (m, s) in mins.iter_mut().zip(seeds) {
            let x = mix(h ^ s);
            if x < *m {
                *m = x;
            }
        }
    }
}

/// The same loop where the CPU multiplies eight 64-bit lanes at once (AVX-512DQ).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
unsafe fn minima_avx512(hashes: &[u64], seeds: &[u64], mins: &mut [u64]) {
    // the default size as fixed arrays: the minima and seeds stay in registers across the hashes
    if let (Ok(seeds), Ok(mins)) = (<&[u64; 64]>::try_from(seeds), <&mut [u64; 64]>::try_from(&mut *mins)) {
        let mut m = *mins;
        for &h in hashes {
            for (m, s) in m.iter_mut().zip(seeds) {
                *m = (*m).min(mix(h ^ s));
            }
        }
        *mins = m;
        return;
    }
    for &h in hashes {
        for (m, s) in mins.iter_mut().zip(seeds) {
            *m = (*m).min(mix(h ^ s));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_skip_what_python_counts_as_space() {
        for c in (0..0x11_0000).filter_map(char::from_u32) {
            let t = format!("a{c}\u{3000}b{c}");
            let want: Vec<u64> = t.chars().filter(|&c| !py_isspace(c)).map(|c| c as u64).collect();
            assert_eq!(codes(&t), want, "{c:?}");
        }
    }
}
