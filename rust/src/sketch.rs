//! The MinHash sketch of `fingerprint/sketch.py`: 5-gram code-point shingles of the text without
//! whitespace, FNV-prime polynomial hashes, SplitMix64 mixes against the golden-ratio seeds.

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
        let seeds: Vec<u64> = (1..=size as u64).map(|i| spread(GOLDEN.wrapping_mul(i))).collect();
        minima(&hashes, &seeds, &mut mins);
        for (m, &s) in mins.iter_mut().zip(&seeds) {
            // the minima are of `mix_unfinished`; where the smallest has its top bit clear its high half
            // is that of the smallest whole mix (see `mix_unfinished`), else the seed is done again whole
            *m = if *m >> 63 == 0 { *m } else { hashes.iter().map(|&h| mix_spread(h ^ s)).min().unwrap_or(u64::MAX) };
        }
    }
    mins.iter().flat_map(|m| ((m >> 32) as u32).to_le_bytes()).collect()
}

/// The first step of [`mix`]. It distributes over XOR: `spread(h ^ s) == spread(h) ^ spread(s)`, so
/// the hashes and the seeds are spread once each, not once per pair.
#[inline(always)]
fn spread(x: u64) -> u64 {
    x ^ (x >> 30)
}

/// [`mix`] of `h ^ s` given `spread(h) ^ spread(s)`.
#[inline(always)]
fn mix_spread(x: u64) -> u64 {
    let x = mix_unfinished(x);
    x ^ (x >> 31)
}

/// [`mix_spread`] but its last step, `y ^ (y >> 31)`. That step changes no bit of `y`'s high half but
/// its lowest, by the top bit. Among values whose top bit is clear it keeps their high halves' order,
/// and each of them has a smaller high half after it than any value whose top bit is set: the
/// smallest unfinished value, when its top bit is clear, has the high half of the smallest mix.
#[inline(always)]
fn mix_unfinished(x: u64) -> u64 {
    let x = x.wrapping_mul(0xBF58476D1CE4E5B9);
    (x ^ (x >> 27)).wrapping_mul(0x94D049BB133111EB)
}

/// The code points of `text` but its space (`str.isspace`), decoded here. Every code is written and
/// the end moves past it unless it is space: no branch on the (unpredictable) spaces.
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
        let (c, len) = if b < 0xe0 {
            ((b as u32 & 0x1f) << 6 | (bytes[i + 1] as u32 & 0x3f), 2)
        } else if b < 0xf0 {
            ((b as u32 & 0x0f) << 12 | (bytes[i + 1] as u32 & 0x3f) << 6 | (bytes[i + 2] as u32 & 0x3f), 3)
        } else {
            let c = (b as u32 & 0x07) << 18 | (bytes[i + 1] as u32 & 0x3f) << 12;
            (c | (bytes[i + 2] as u32 & 0x3f) << 6 | (bytes[i + 3] as u32 & 0x3f), 4)
        };
        out[n] = c as u64;
        // only the lead bytes of U+0085, U+00A0, U+1680, U+2000 to U+205F and U+3000 start a space
        n += !(matches!(b, 0xc2 | 0xe1 | 0xe2 | 0xe3) && char::from_u32(c).is_some_and(py_isspace)) as usize;
        i += len;
    }
    out.truncate(n);
    out
}

/// The polynomial hash of every window of `min(SHINGLE, codes.len())` codes, spread ([`spread`]) for
/// the minima. Each window is hashed on its own (wrapping arithmetic: the same value as rolling it
/// from the window before, and no chain from one window to the next).
fn shingle_hashes(codes: &[u64]) -> Vec<u64> {
    let n = SHINGLE.min(codes.len());
    codes.windows(n).map(|w| spread(mix(w.iter().fold(0u64, |h, &c| h.wrapping_mul(P).wrapping_add(c))))).collect()
}

/// Per seed, the smallest [`mix_unfinished`] of a shingle hash with it: every hash against every seed
/// (both spread).
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
            let x = mix_unfinished(h ^ s);
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
                *m = (*m).min(mix_unfinished(h ^ s));
            }
        }
        *mins = m;
        return;
    }
    for &h in hashes {
        for (m, s) in mins.iter_mut().zip(seeds) {
            *m = (*m).min(mix_unfinished(h ^ s));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sketch as `fingerprint/sketch.py` defines it, step by step.
    fn plain(text: &str, size: usize) -> Vec<u8> {
        let codes: Vec<u64> = text.chars().filter(|&c| !py_isspace(c)).map(|c| c as u64).collect();
        let mut mins = vec![u64::MAX; size];
        let n = SHINGLE.min(codes.len());
        for w in codes.windows(n.max(1)).filter(|_| n > 0) {
            let h = mix(w.iter().fold(0u64, |h, &c| h.wrapping_mul(P).wrapping_add(c)));
            for (i, m) in mins.iter_mut().enumerate() {
                *m = (*m).min(mix(h ^ GOLDEN.wrapping_mul(i as u64 + 1)));
            }
        }
        mins.iter().flat_map(|m| ((m >> 32) as u32).to_le_bytes()).collect()
    }

    #[test]
    fn sketch_as_defined() {
        // short texts: few shingles, so that the smallest unfinished mix often has its top bit set
        let mut texts: Vec<String> = ["", " ", "a", "ab c", "abcd", "abcde", "abcdef", "中文 的分词\u{3000}和 sketch 🙂 é\u{85}x"]
            .iter().map(|t| t.to_string()).collect();
        texts.extend((0..2000u32).map(|i| format!("{}{}", char::from_u32(0x4e00 + i).unwrap(), i % 97)));
        texts.push((0..3000u32).filter_map(|i| char::from_u32(0x4e00 + i * 7 % 500)).collect());
        for t in &texts {
            for size in [1, 7, 64, 100] {
                assert_eq!(sketch(t, size), plain(t, size), "{t:?} {size}");
            }
        }
    }

    #[test]
    fn codes_skip_what_python_counts_as_space() {
        for c in (0..0x11_0000).filter_map(char::from_u32) {
            let t = format!("a{c}\u{3000}b{c}");
            let want: Vec<u64> = t.chars().filter(|&c| !py_isspace(c)).map(|c| c as u64).collect();
            assert_eq!(codes(&t), want, "{c:?}");
        }
    }
}
