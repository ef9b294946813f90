//! Copy marks (`fingerprint/winnow.py`): a text's terms with their character spans in the text as
//! given, Karp-Rabin hashes of every block of `k` terms, robust winnowing's selection and the records
//! `Marks.to_bytes` writes. The Python module is the reference; this ports `marked` operation for
//! operation (`slices`, `normalize_mapped`, `Tokenizer.spans`, `term_hashes`, `block_hashes`, `select`).

use jieba_rs::Jieba;
use unicode_normalization::UnicodeNormalization;
use xxhash_rust::xxh3::xxh3_64;

use crate::pass::Settings;
use crate::text::{all_cjk, has_cjk, latin_words, newer_than_reference};

const BASE: u64 = 0x100_0000_01B3;
const M1: u64 = 0xBF58_476D_1CE4_E5B9;
const M2: u64 = 0x94D0_49BB_1331_11EB;
/// The size of one record of `_RECORD`: hash u64, pos u32, start u32, end u32, kept u8 (packed).
const RECORD: usize = 21;

/// `slices` of `text/tokenize.py`: byte ranges of about `size` characters, cut after a line break (or
/// a space) where possible.
pub fn slices(text: &str, size: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let rest = &text[start..];
        // a slice of at most `size` bytes holds at most `size` characters: no need to count them
        let mut end = if rest.len() <= size {
            text.len()
        } else {
            rest.char_indices().nth(size).map_or(text.len(), |(i, _)| start + i)
        };
        if end < text.len() {
            let window = &text[start..end];
            let cut = window.rfind('\n').filter(|&c| c > 0).or_else(|| window.rfind(' ').filter(|&c| c > 0));
            if let Some(c) = cut {
                end = start + c + 1;
            }
        }
        out.push((start, end));
        start = end;
    }
    out
}

/// Han characters NFKC and lower-casing leave alone (the compatibility ideographs are not among them).
fn plain_han(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}')
}

/// `normalize_mapped` of `text/clean.py` appended to `norm`: each character NFKC'd and lower-cased on
/// its own; `origin` gets, for every byte added, the offset (in characters, plus `base`) of the
/// character of `part` it came from.
fn normalize_mapped(part: &str, base: u32, norm: &mut String, origin: &mut Vec<u32>) {
    let mut buf = String::new();
    for (i, c) in part.chars().enumerate() {
        let at = base + i as u32;
        if c.is_ascii() {
            norm.push(c.to_ascii_lowercase());
        } else if plain_han(c) {
            norm.push(c);
        } else {
            buf.clear();
            buf.extend(std::iter::once(c).nfkc());
            let mut chars = buf.chars();
            match (chars.next(), chars.next()) {
                // one character: no context for a final sigma, as the reference's `str.lower`
                (Some(one), None) => norm.extend(one.to_lowercase()),
                _ => norm.push_str(&buf.to_lowercase()),
            }
        }
        origin.resize(norm.len(), at);
    }
}

/// `Tokenizer.spans(norm)` as term hashes and byte spans in `norm`, appended. A segmenter token is
/// looked for from where the last one ended, as the reference's `find`; None when it is not there.
fn spans(
    jieba: &Jieba, s: &Settings, norm: &str, slice_chars: usize, out: &mut Vec<(u64, usize, usize)>,
) -> Option<()> {
    let cjk = has_cjk(norm);
    let mut found: Vec<(usize, usize, &str)> = Vec::new();
    let mut words = Vec::new();
    for (a, b) in slices(norm, slice_chars) {
        found.clear();
        let chunk = &norm[a..b];
        // a chunk without Han characters has no token the segmenter's check keeps
        if cjk && has_cjk(chunk) {
            let mut pos = 0;
            for t in jieba.cut(chunk, true) {
                let start = if t.byte_start == pos { pos } else { pos + chunk[pos..].find(t.word)? };
                pos = start + t.word.len();
                if all_cjk(t.word) {
                    found.push((a + start, a + pos, t.word));
                }
            }
        }
        words.clear();
        latin_words(norm, a, b, &mut words);
        found.extend(words.iter().map(|&(x, y)| (x, y, &norm[x..y])));
        found.sort_by_key(|&(x, _, _)| x); // stable: the segmenter's first, as the reference's sort
        for &(x, y, w) in &found {
            if let Some(term) = s.keep(w) {
                out.push((xxh3_64(term.as_bytes()), x, y));
            }
        }
    }
    Some(())
}

/// splitmix64's finaliser (`_mix`).
fn mix(mut h: u64) -> u64 {
    h ^= h >> 30;
    h = h.wrapping_mul(M1);
    h ^= h >> 27;
    h = h.wrapping_mul(M2);
    h ^ (h >> 31)
}

/// `block_hashes`: the Karp-Rabin hash (mod 2^64) of every run of `k` consecutive term hashes, mixed.
pub fn block_hashes(terms: &[u64], k: usize) -> Vec<u64> {
    if k == 0 || terms.len() < k {
        return Vec::new();
    }
    terms
        .windows(k)
        .map(|w| mix(w.iter().fold(0u64, |h, &t| h.wrapping_mul(BASE).wrapping_add(t))))
        .collect()
}

/// `select`: the positions robust winnowing keeps with windows of `w` hashes, ascending. Each window's
/// rightmost minimum; a kept minimum stays kept while it is in the window and the window's minimum
/// does not change.
pub fn select(hashes: &[u64], w: usize) -> Vec<usize> {
    let n = hashes.len();
    if n == 0 {
        return Vec::new();
    }
    let w = w.max(1);
    let rightmost_min = |a: usize, b: usize| (a..b).rev().min_by_key(|&j| hashes[j]).expect("a hash");
    if n <= w {
        return vec![rightmost_min(0, n)];
    }
    // each window's rightmost minimum: a deque of positions of strictly rising hashes
    let nw = n - w + 1;
    let mut right = Vec::with_capacity(nw);
    let mut deque = std::collections::VecDeque::with_capacity(w);
    for j in 0..n {
        while deque.back().is_some_and(|&b: &usize| hashes[b] >= hashes[j]) {
            deque.pop_back();
        }
        deque.push_back(j);
        if j + 1 >= w {
            let i = j + 1 - w;
            while deque.front().is_some_and(|&f| f < i) {
                deque.pop_front();
            }
            right.push(*deque.front().expect("a position"));
        }
    }
    let mut kept = Vec::new();
    let mut i = 0;
    while i < nw {
        let pos = right[i];
        kept.push(pos);
        let min = hashes[pos];
        let mut next = i + 1;
        while next < nw && next <= pos && hashes[right[next]] == min {
            next += 1;
        }
        i = next;
    }
    kept
}

/// What decides a text's marks besides the tokenizer: `WinnowParams`' `k` and `g`, `MAX_STORED_BLOCKS`
/// and the slice size of `text/tokenize.py` (`CHUNK_CHARS`).
#[derive(Clone, Copy)]
pub struct Params {
    pub k: usize,
    pub g: usize,
    pub max_stored: usize,
    pub slice_chars: usize,
}

/// `marked(text, tokenizer, WinnowParams(k, g)).to_bytes()`: every block of `k` terms with the
/// winnowed ones flagged (the winnowed ones only beyond `max_stored` blocks). None where the reference
/// must run: characters newer than its Unicode tables, offsets beyond 32 bits, or segmenter tokens the
/// port does not place.
pub fn marked(jieba: &Jieba, s: &Settings, text: &str, p: &Params) -> Option<Vec<u8>> {
    let Params { k, g, max_stored, slice_chars } = *p;
    if k == 0 || g < k || slice_chars == 0 || text.len() > u32::MAX as usize || newer_than_reference(text) {
        return None;
    }
    let mut terms: Vec<(u64, usize, usize)> = Vec::new();
    let (mut hashes, mut starts, mut ends) = (Vec::new(), Vec::new(), Vec::new());
    let (mut norm, mut origin) = (String::new(), Vec::new());
    let mut base = 0u32;
    for (a, b) in slices(text, slice_chars) {
        let part = &text[a..b];
        norm.clear();
        origin.clear();
        let chars = if part.is_ascii() {
            norm.push_str(&part.to_ascii_lowercase());
            origin.extend(base..base + part.len() as u32);
            part.len() as u32
        } else {
            normalize_mapped(part, base, &mut norm, &mut origin);
            part.chars().count() as u32
        };
        terms.clear();
        spans(jieba, s, &norm, slice_chars, &mut terms)?;
        for &(h, x, y) in &terms {
            hashes.push(h);
            starts.push(origin[x]);
            ends.push(origin[y - 1] + 1);
        }
        base += chars;
    }
    let blocks = block_hashes(&hashes, k);
    let sel = select(&blocks, g - k + 1);
    let record = |out: &mut Vec<u8>, i: usize, kept: bool| {
        out.extend_from_slice(&blocks[i].to_le_bytes());
        out.extend_from_slice(&(i as u32).to_le_bytes());
        out.extend_from_slice(&starts[i].to_le_bytes());
        out.extend_from_slice(&ends[i + k - 1].to_le_bytes());
        out.push(kept as u8);
    };
    let mut out;
    if blocks.len() > max_stored {
        out = Vec::with_capacity(sel.len() * RECORD);
        for &i in &sel {
            record(&mut out, i, true);
        }
    } else {
        let mut flags = vec![false; blocks.len()];
        for &i in &sel {
            flags[i] = true;
        }
        out = Vec::with_capacity(blocks.len() * RECORD);
        for (i, &f) in flags.iter().enumerate() {
            record(&mut out, i, f);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cut_after_breaks() {
        let t = "ab\ncd ef gh";
        let got: Vec<&str> = slices(t, 4).iter().map(|&(a, b)| &t[a..b]).collect();
        assert_eq!(got, vec!["ab\n", "cd ", "ef ", "gh"]);
        let t = "\nabcdef";
        let got: Vec<&str> = slices(t, 4).iter().map(|&(a, b)| &t[a..b]).collect();
        assert_eq!(got, vec!["\nabc", "def"]);
    }

    #[test]
    fn robust_winnowing_keeps_the_kept_minimum() {
        assert_eq!(select(&[5, 1, 1, 1, 7, 1], 3), vec![2, 5]);
        assert_eq!(select(&[3, 2, 4], 5), vec![1]);
        assert_eq!(select(&[2, 2, 2], 5), vec![2]);
        assert_eq!(select(&[4, 3, 2, 1], 2), vec![1, 2, 3]);
    }
}
