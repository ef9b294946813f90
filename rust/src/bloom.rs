//! The bit positions of pybloom-live's `BloomFilter` (`make_hashfuncs`), so that the store's Bloom filter
//! is tested and filled without a Python generator per key; the filter, its file and its growth stay the
//! library's (`store/bloom.py` calls the library whenever this is not built or does not apply).

use std::cell::Cell;
use std::sync::OnceLock;

use pyo3::buffer::{PyBuffer, ReadOnlyCell};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use sha1::Sha1;
use sha2::digest::Digest;
use sha2::{Sha256, Sha384, Sha512};
use xxhash_rust::xxh3::xxh3_128;

/// The hash pybloom-live picks for a filter: the smallest that yields `num_slices` chunks at once.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Sha512,
    Sha384,
    Sha256,
    Sha1,
    Xxh128,
}

impl Kind {
    fn digest(self, parts: &[&[u8]]) -> Vec<u8> {
        fn run<D: Digest>(parts: &[&[u8]]) -> Vec<u8> {
            let mut h = D::new();
            for p in parts {
                h.update(p);
            }
            h.finalize().to_vec()
        }
        match self {
            Kind::Sha512 => run::<Sha512>(parts),
            Kind::Sha384 => run::<Sha384>(parts),
            Kind::Sha256 => run::<Sha256>(parts),
            Kind::Sha1 => run::<Sha1>(parts),
            // python-xxhash's xxh128 digest: the 128-bit value, big-endian
            Kind::Xxh128 => xxh3_128(&parts.concat()).to_be_bytes().to_vec(),
        }
    }
}

/// Salts kept for each hash: the library's filters need one or two (a salt's digest gives 4 to 32 chunks).
const KEPT_SALTS: u32 = 4;

/// Salt `i` of `kind` (the digest of `pack('I', i)`), which pybloom-live computes once per filter: made
/// once per process for the first [`KEPT_SALTS`], not once per key.
fn salt_digest(kind: Kind, i: u32) -> Vec<u8> {
    static KEPT: OnceLock<Vec<Vec<Vec<u8>>>> = OnceLock::new();
    let kinds = [Kind::Sha512, Kind::Sha384, Kind::Sha256, Kind::Sha1, Kind::Xxh128];
    if i >= KEPT_SALTS {
        return kind.digest(&[&i.to_le_bytes()]);
    }
    let kept = KEPT.get_or_init(|| {
        kinds.iter().map(|k| (0..KEPT_SALTS).map(|j| k.digest(&[&j.to_le_bytes()])).collect()).collect()
    });
    let at = kinds.iter().position(|&k| k == kind).expect("every kind is kept");
    kept[at][i as usize].clone()
}

/// The positions a key sets in a filter of `num_slices` slices of `bits_per_slice` bits (offsets from
/// the start of the filter), as pybloom-live's `make_hashfuncs(num_slices, bits_per_slice)` gives them:
/// salt `i` is the digest of `pack('I', i)`, each salted digest of the key is read as native (little-
/// endian) unsigned chunks, each taken modulo the slice's bits.
pub fn positions(num_slices: usize, bits_per_slice: u64, key: &[u8]) -> Vec<u64> {
    let chunk = if bits_per_slice >= 1 << 31 {
        8
    } else if bits_per_slice >= 1 << 15 {
        4
    } else {
        2
    };
    let total = 8 * num_slices * chunk;
    let kind = match total {
        t if t > 384 => Kind::Sha512,
        t if t > 256 => Kind::Sha384,
        t if t > 160 => Kind::Sha256,
        t if t > 128 => Kind::Sha1,
        _ => Kind::Xxh128,
    };
    let mut out = Vec::with_capacity(num_slices);
    let mut salt: u32 = 0;
    while out.len() < num_slices {
        let salted = kind.digest(&[&salt_digest(kind, salt), key]);
        for word in salted.chunks_exact(chunk) {
            if out.len() == num_slices {
                break;
            }
            let mut raw = [0u8; 8];
            raw[..chunk].copy_from_slice(word);
            let slice = out.len() as u64;
            out.push(slice * bits_per_slice + u64::from_le_bytes(raw) % bits_per_slice);
        }
        salt += 1;
    }
    out
}

/// Whether every bit of `key` is set in `bits` (a little-endian bitarray's buffer of a filter of
/// `num_slices` x `bits_per_slice` bits); with `set`, set them too. The answer is the one before setting.
#[pyfunction]
#[pyo3(signature = (bits, num_slices, bits_per_slice, key, set = false))]
pub fn bloom_test(
    py: Python<'_>, bits: &Bound<'_, PyAny>, num_slices: usize, bits_per_slice: u64, key: &str, set: bool,
) -> PyResult<bool> {
    let buf = filter_buffer(bits, num_slices, bits_per_slice)?;
    if set {
        let cells = buf.as_mut_slice(py).ok_or_else(|| PyValueError::new_err("the filter's bits are read-only"))?;
        Ok(set_key(cells, num_slices, bits_per_slice, key))
    } else {
        let cells = buf.as_slice(py).ok_or_else(|| PyValueError::new_err("the filter's bits are not contiguous"))?;
        Ok(holds_key(cells, num_slices, bits_per_slice, key))
    }
}

/// Whether every bit of `key` is set in the filter's `cells`.
fn holds_key(cells: &[ReadOnlyCell<u8>], num_slices: usize, bits_per_slice: u64, key: &str) -> bool {
    positions(num_slices, bits_per_slice, key.as_bytes())
        .iter()
        .all(|&p| cells[(p >> 3) as usize].get() & (1u8 << (p & 7)) != 0)
}

/// Set every bit of `key` in the filter's `cells`; whether all were set before.
fn set_key(cells: &[Cell<u8>], num_slices: usize, bits_per_slice: u64, key: &str) -> bool {
    let mut all = true;
    for p in positions(num_slices, bits_per_slice, key.as_bytes()) {
        let cell = &cells[(p >> 3) as usize];
        let mask = 1u8 << (p & 7);
        all &= cell.get() & mask != 0;
        cell.set(cell.get() | mask);
    }
    all
}

/// The filter's bytes, checked to hold `num_slices` x `bits_per_slice` bits.
fn filter_buffer(bits: &Bound<'_, PyAny>, num_slices: usize, bits_per_slice: u64) -> PyResult<PyBuffer<u8>> {
    let buf = PyBuffer::<u8>::get(bits)?;
    let need = (num_slices as u64 * bits_per_slice).div_ceil(8);
    if (buf.len_bytes() as u64) < need || num_slices == 0 || bits_per_slice == 0 {
        return Err(PyValueError::new_err(format!(
            "a filter of {num_slices} x {bits_per_slice} bits needs {need} bytes, got {}",
            buf.len_bytes()
        )));
    }
    Ok(buf)
}

/// [`bloom_test`] of each of `keys` in one call: whether every bit of each is set.
#[pyfunction]
pub fn bloom_test_many(
    py: Python<'_>, bits: &Bound<'_, PyAny>, num_slices: usize, bits_per_slice: u64, keys: Vec<PyBackedStr>,
) -> PyResult<Vec<bool>> {
    let buf = filter_buffer(bits, num_slices, bits_per_slice)?;
    let cells = buf.as_slice(py).ok_or_else(|| PyValueError::new_err("the filter's bits are not contiguous"))?;
    Ok(keys.iter().map(|key| holds_key(cells, num_slices, bits_per_slice, key)).collect())
}

/// Set the bits of `keys` in order, as [`bloom_test`] with `set` does one key at a time, until `room`
/// keys have set a bit that was not set (a key whose bits were all set already is not counted):
/// `(keys taken, keys counted)`. The caller stops there when the filter is full.
#[pyfunction]
pub fn bloom_fill(
    py: Python<'_>, bits: &Bound<'_, PyAny>, num_slices: usize, bits_per_slice: u64, keys: Vec<PyBackedStr>,
    room: usize,
) -> PyResult<(usize, usize)> {
    let buf = filter_buffer(bits, num_slices, bits_per_slice)?;
    let cells = buf.as_mut_slice(py).ok_or_else(|| PyValueError::new_err("the filter's bits are read-only"))?;
    let (mut taken, mut counted) = (0, 0);
    for key in &keys {
        if counted >= room {
            break;
        }
        taken += 1;
        counted += usize::from(!set_key(cells, num_slices, bits_per_slice, key));
    }
    Ok((taken, counted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_fall_in_their_slices() {
        for (slices, bits) in [(14, 40_000u64), (3, 100), (20, 1 << 31), (5, 1 << 15)] {
            let pos = positions(slices, bits, b"c:abc");
            assert_eq!(pos.len(), slices);
            for (i, p) in pos.iter().enumerate() {
                assert!(*p >= i as u64 * bits && *p < (i as u64 + 1) * bits);
            }
        }
    }
}
