//! Block keys as the indexes store them: `BlockLayout.keys_many` of `fingerprint/blocks.py` (the
//! reference) in compiled code. A document's twenty keys of eight fingerprints are 160 short strings,
//! which the reference cuts out of one hex text one slice at a time.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use rustc_hash::FxHashSet;

/// One key of a layout: the (right shift, width) of each of its blocks, the first most significant.
pub type KeyBlocks = Vec<(u32, u32)>;

/// A key's value: its blocks' bits side by side.
#[cfg(test)]
fn key_value(fp: u64, blocks: &[(u32, u32)]) -> u64 {
    Part::of(blocks).iter().fold(0, |v, part| v | part.take(fp))
}

/// One block of a key, as it is moved into the key's value: right shift, mask, left shift.
#[derive(Clone, Copy)]
struct Part {
    shift: u32,
    mask: u64,
    place: u32,
}

impl Part {
    /// The parts of a key's blocks (the first most significant); every shift below 64.
    fn of(blocks: &[(u32, u32)]) -> Vec<Part> {
        let mut place: u32 = blocks.iter().map(|&(_, w)| w).sum();
        blocks
            .iter()
            .map(|&(shift, width)| {
                place -= width;
                let mask = if width >= 64 { u64::MAX } else { (1u64 << width) - 1 };
                Part { shift, mask, place }
            })
            .collect()
    }

    fn take(self, fp: u64) -> u64 {
        ((fp >> self.shift) & self.mask) << self.place
    }
}

/// A layout's keys: per key its blocks and its number of hex digits.
pub struct KeyPlan {
    keys: Vec<(Vec<Part>, usize)>,
}

impl KeyPlan {
    /// `keys`: per key the (right shift, width) of each of its blocks, the first most significant;
    /// `digits`: per key its hex digits.
    pub fn new(keys: Vec<KeyBlocks>, digits: Vec<usize>) -> PyResult<Self> {
        if keys.len() != digits.len() || digits.iter().any(|&d| d == 0 || d > 16) {
            return Err(pyo3::exceptions::PyValueError::new_err("one count of 1 to 16 hex digits per key"));
        }
        if keys.iter().any(|k| k.iter().any(|&(s, w)| s >= 64 || w == 0 || w > 64)
                           || k.iter().map(|&(_, w)| w).sum::<u32>() > 64) {
            return Err(pyo3::exceptions::PyValueError::new_err("blocks inside 64 bits"));
        }
        Ok(KeyPlan { keys: keys.iter().map(|k| Part::of(k)).zip(digits).collect() })
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Into `values`, key `j` of each fingerprint; with `distinct` 1 each key once in first-seen order,
    /// with 2 each once in ascending order (the order of the fixed-width hex strings too). `seen` is
    /// scratch space for many fingerprints (a document's few are compared in turn).
    pub fn column(&self, j: usize, fingerprints: &[u64], distinct: u8, values: &mut Vec<u64>,
                  seen: &mut FxHashSet<u64>) {
        let parts = &self.keys[j].0[..];
        values.clear();
        if fingerprints.len() > 32 {
            seen.clear();
        }
        for &fp in fingerprints {
            let v = parts.iter().fold(0, |v, part| v | part.take(fp));
            let new = match distinct {
                0 => true,
                _ if fingerprints.len() <= 32 => !values.contains(&v),
                _ => seen.insert(v),
            };
            if new {
                values.push(v);
            }
        }
        if distinct == 2 {
            values.sort_unstable();
        }
    }

    /// Key `j`'s stored form of `value`: its digits of lowercase hex, zero-padded, at the start of `hex`.
    pub fn hex<'a>(&self, j: usize, value: u64, hex: &'a mut [u8; 16]) -> &'a str {
        let d = self.digits(j, value, hex);
        // SAFETY: every byte written is an ASCII hex digit
        unsafe { std::str::from_utf8_unchecked(&hex[..d]) }
    }

    /// All sixteen bytes of `hex` written, key `j`'s digits of `value` first; returns how many those are.
    fn digits(&self, j: usize, value: u64, hex: &mut [u8; 16]) -> usize {
        let d = self.keys[j].1;
        *hex = hex16(value << (4 * (16 - d)));
        d
    }

    /// :meth:`hex` of `value` appended to `out` between double quotes.
    pub fn push_quoted_hex(&self, j: usize, value: u64, out: &mut Vec<u8>) {
        let mut digits = [0u8; 16];
        let d = self.digits(j, value, &mut digits);
        out.reserve(18);
        let at = out.len();
        // SAFETY: 18 bytes are reserved past `at`; the first 1 + d + 1 are written before the length
        // covers them, and every byte written is ASCII
        unsafe {
            let p = out.as_mut_ptr().add(at);
            *p = b'"';
            std::ptr::copy_nonoverlapping(digits.as_ptr(), p.add(1), 16);
            *p.add(1 + d) = b'"';
            out.set_len(at + d + 2);
        }
    }
}

/// The sixteen lowercase hex digits of `value`, the most significant first: each nibble spread into a
/// byte of a 128-bit word, then turned into its ASCII digit in every byte at once.
pub fn hex16(value: u64) -> [u8; 16] {
    const LO4: u128 = 0x0f0f_0f0f_0f0f_0f0f_0f0f_0f0f_0f0f_0f0f;
    const ONES: u128 = 0x0101_0101_0101_0101_0101_0101_0101_0101;
    let mut v = value as u128;
    v = (v | (v << 32)) & 0x0000_0000_ffff_ffff_0000_0000_ffff_ffff;
    v = (v | (v << 16)) & 0x0000_ffff_0000_ffff_0000_ffff_0000_ffff;
    v = (v | (v << 8)) & 0x00ff_00ff_00ff_00ff_00ff_00ff_00ff_00ff;
    v = (v | (v << 4)) & LO4;
    let letters = ((v + ONES * 6) >> 4) & ONES; // 1 in each byte whose nibble is 10 or more
    (v + ONES * u128::from(b'0') + letters * u128::from(b'a' - b'0' - 10)).to_be_bytes()
}

/// A layout's keys, made once per layout: called with fingerprints, it gives per key (column) the key of
/// each fingerprint as that key's number of lowercase hex digits, zero-padded.
#[pyclass(frozen, module = "fingerprint_indexer.fingerprint._core")]
pub struct BlockKeys {
    plan: KeyPlan,
}

#[pymethods]
impl BlockKeys {
    /// `keys`: per key the (right shift, width) of each of its blocks, the first most significant;
    /// `digits`: per key its hex digits.
    #[new]
    fn new(keys: Vec<KeyBlocks>, digits: Vec<usize>) -> PyResult<Self> {
        Ok(BlockKeys { plan: KeyPlan::new(keys, digits)? })
    }

    /// Per key, the key of each fingerprint; with `distinct` 1 each key once in first-seen order, with
    /// 2 each once in ascending order (the order of the fixed-width hex strings too).
    #[pyo3(signature = (fingerprints, distinct = 0))]
    fn __call__<'py>(&self, py: Python<'py>, fingerprints: Vec<u64>, distinct: u8) -> PyResult<Bound<'py, PyList>> {
        let mut values = Vec::with_capacity(fingerprints.len());
        let mut seen = FxHashSet::default();
        let mut hex = [0u8; 16];
        let columns = (0..self.plan.len()).map(|j| {
            self.plan.column(j, &fingerprints, distinct, &mut values, &mut seen);
            PyList::new(py, values.iter().map(|&value| PyString::new(py, self.plan.hex(j, value, &mut hex))))
        });
        PyList::new(py, columns.collect::<PyResult<Vec<_>>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::key_value;

    #[test]
    fn hex16_writes_what_format_writes() {
        let mut x = 0x0123_4567_89ab_cdefu64;
        for _ in 0..1000 {
            assert_eq!(super::hex16(x), *format!("{x:016x}").as_bytes());
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        }
        for x in [0, u64::MAX, 0xa, 0xf0, 1 << 63] {
            assert_eq!(super::hex16(x), *format!("{x:016x}").as_bytes());
        }
    }

    #[test]
    fn keys_put_their_first_block_highest() {
        let fp = 0x1234_5678_9abc_def0u64;
        assert_eq!(key_value(fp, &[(48, 16)]), 0x1234);
        assert_eq!(key_value(fp, &[(48, 16), (0, 16)]), 0x1234_def0);
        assert_eq!(key_value(fp, &[(0, 16), (48, 16)]), 0xdef0_1234);
        assert_eq!(key_value(fp, &[(0, 64)]), fp);
    }
}
