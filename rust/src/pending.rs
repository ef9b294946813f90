//! The documents a writer decided since the index's last refresh (`es index`'s pending set), matched
//! against each batch before Elasticsearch can find them: their fingerprints in block tables, their sketch
//! band keys as postings. `index/pending.py`'s `PendingSet` is the reference; `CompiledPendingSet` there
//! wraps this one, which answers a batch in one call with no Python object per fingerprint or key.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::tables::{low64, near_pairs, Tables};

/// One document held: its id, its entries' numbers (`first`, `count`) and its band keys.
struct Held {
    id: Py<PyString>,
    text: Box<str>,
    first: u32,
    count: u32,
    keys: Vec<Key>,
}

/// A band key as a number: a key written as `band_keys` writes them (the band's number in hex, then the
/// hash's 16 hex digits) is that number and hash, any other is numbered as it is first seen (above every
/// written one). Either way the same text is the same number, and other texts other numbers.
type Key = u128;

/// A batch's candidates: (position, held slot, distance) before it, (later, earlier, distance) within it.
type Found = (Vec<(u32, u32, u8)>, Vec<(u32, u32, u8)>);
/// [`Found`] as Python receives it: the ids of the held slots, and each column a list.
type Answer = ((Vec<u32>, Vec<Py<PyString>>, Vec<u8>), (Vec<u32>, Vec<u32>, Vec<u8>));

/// The pending set; its slots are never reused (a writer makes a new set at each refresh).
#[pyclass(module = "fingerprint_indexer.fingerprint._core")]
pub struct PendingSet {
    k: i64,
    widths: Vec<u32>,
    tables: Tables,
    /// entry number -> slot of the document that holds it
    owner: Vec<u32>,
    slots: Vec<Option<Held>>,
    slot_of: FxHashMap<Box<str>, u32>,
    /// band key -> slots holding it, in the order put
    bands: FxHashMap<Key, SmallVec<[u32; 2]>>,
    /// keys not written as `band_keys` writes them, numbered as first seen
    other_keys: FxHashMap<Box<str>, Key>,
}

/// The number of a key written as `band_keys` writes them, else None.
fn written_key(text: &str) -> Option<Key> {
    let b = text.as_bytes();
    if b.len() <= 16 || b.len() > 31 || b[0] == b'0' && b.len() > 17 {
        return None;
    }
    let mut n: Key = 0;
    for &c in b {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        n = n << 4 | Key::from(d);
    }
    Some(n) // below 2^124: the band's number has at most 15 digits here
}

/// Each item's fingerprints one after another in `flat`, and where each item's end there.
fn flatten(items: &Bound<'_, PyList>, flat: &mut Vec<u64>, ends: &mut Vec<usize>) -> PyResult<()> {
    for item in items.iter() {
        for fp in item.try_iter()? {
            flat.push(low64(&fp?)?);
        }
        ends.push(flat.len());
    }
    Ok(())
}

impl PendingSet {
    fn empty(k: i64, widths: Vec<u32>, merge_min: usize) -> Result<Self, String> {
        if k < 0 || widths.len() as i64 <= k {
            return Err(format!("{} blocks cannot find every match within {k}", widths.len()));
        }
        // direct buckets: a set lives for a few batches, and a hashed bucket costs more to reach
        let tables = Tables::new(&widths, Vec::new(), Vec::new(), merge_min, false)?;
        Ok(PendingSet {
            k, widths, tables, owner: Vec::new(), slots: Vec::new(), slot_of: FxHashMap::default(),
            bands: FxHashMap::default(), other_keys: FxHashMap::default(),
        })
    }

    fn remove_slot(&mut self, slot: u32) {
        let Some(held) = self.slots[slot as usize].take() else { return };
        self.slot_of.remove(&held.text);
        let mut rebuild = false;
        for num in held.first..held.first + held.count {
            rebuild |= self.tables.kill(i64::from(num));
        }
        if rebuild && self.tables.should_rebuild() {
            self.tables.rebuild();
        }
        for key in &held.keys {
            if let Some(holders) = self.bands.get_mut(key) {
                holders.retain(|s| *s != slot);
                if holders.is_empty() {
                    self.bands.remove(key);
                }
            }
        }
    }

    /// The number of `text` as a key: a key not written as `band_keys` writes them is numbered the first
    /// time it is seen (put or asked for), and keeps that number.
    fn key_of(&mut self, text: &str) -> Key {
        if let Some(key) = written_key(text) {
            return key;
        }
        let next = (1 << 124) + self.other_keys.len() as Key;
        *self.other_keys.entry(text.into()).or_insert(next)
    }

    /// The keys of each item as numbers (a key never seen before numbered now), flat, and where each
    /// item's end.
    fn keys_of(&mut self, items: &Bound<'_, PyList>, flat: &mut Vec<Key>, ends: &mut Vec<usize>) -> PyResult<()> {
        for item in items.iter() {
            for key in item.try_iter()? {
                let key = key?;
                let text = key.cast::<PyString>()?.to_str()?;
                flat.push(self.key_of(text));
            }
            ends.push(flat.len());
        }
        Ok(())
    }

    /// The candidates of a batch whose position `i` holds `fps[fp_ends[i - 1]..fp_ends[i]]` and the keys
    /// so bounded in `keys` (none for a degenerate document): the reference's `PendingSet.candidates`, as
    /// slots and positions.
    fn find(
        &self, fps: &[u64], fp_ends: &[usize], keys: &[Key], key_ends: &[usize], max_band_read: usize,
    ) -> Result<Found, String> {
        let limit = (self.k + 1) as u8;
        let mut owner: Vec<u32> = Vec::with_capacity(fps.len());
        let mut start = 0;
        for (i, &end) in fp_ends.iter().enumerate() {
            owner.extend(std::iter::repeat_n(i as u32, end - start));
            start = end;
        }
        let mut before: Vec<(u32, u32, u8)> = Vec::new();
        if !self.slot_of.is_empty() {
            let (qs, nums, dists) = self.tables.query_vecs(fps, self.k, None);
            for ((q, num), d) in qs.into_iter().zip(nums).zip(dists) {
                before.push((owner[q as usize], self.owner[num as usize], d as u8));
            }
        }
        let mut within: Vec<(u32, u32, u8)> = Vec::new();
        for (i, j, d) in near_pairs(fps, self.k, &self.widths)? {
            let (a, b) = (owner[i as usize], owner[j as usize]);
            if a != b {
                within.push((a.max(b), a.min(b), d));
            }
        }
        // the keys that can matter: held by two of the batch, or by a pending document (most are neither)
        let mut counts: FxHashMap<Key, u32> = FxHashMap::default();
        counts.reserve(keys.len());
        for &key in keys {
            *counts.entry(key).or_insert(0) += 1;
        }
        let mut earlier_with: FxHashMap<Key, Vec<u32>> = FxHashMap::default();
        let mut start = 0;
        for (i, &end) in key_ends.iter().enumerate() {
            for key in &keys[start..end] {
                let pending = self.bands.get(key);
                if counts[key] < 2 && pending.is_none() {
                    continue;
                }
                let earlier = earlier_with.entry(*key).or_default();
                let pending: &[u32] = pending.map_or(&[], |p| p.as_slice());
                // a key held by more is a stock phrase, passed over as in the index
                if pending.len() + earlier.len() <= max_band_read {
                    before.extend(pending.iter().map(|&s| (i as u32, s, limit)));
                    within.extend(earlier.iter().map(|&j| (i as u32, j, limit)));
                }
                earlier.push(i as u32);
            }
            start = end;
        }
        // each pair once, at its smallest distance (a band's share counts as k + 1: farther than any)
        for found in [&mut before, &mut within] {
            found.sort_unstable();
            found.dedup_by_key(|&mut (a, b, _)| (a, b));
        }
        Ok((before, within))
    }
}

#[pymethods]
impl PendingSet {
    /// An empty set matching within `k` through block tables of `widths` (at least `k + 1` blocks), whose
    /// entries put since the last merge are merged into the main tables once `merge_min` of them are.
    #[new]
    fn new(k: i64, widths: Vec<u32>, merge_min: usize) -> PyResult<Self> {
        PendingSet::empty(k, widths, merge_min).map_err(PyValueError::new_err)
    }

    fn __len__(&self) -> usize {
        self.slot_of.len()
    }

    /// Put each document `ids[i]` with its fingerprints `fps[i]` (ints, unsigned or signed) and band keys
    /// `keys[i]`; an id held already, or given twice, holds what it was given last.
    fn put_many(&mut self, ids: &Bound<'_, PyList>, fps: &Bound<'_, PyList>, keys: &Bound<'_, PyList>) -> PyResult<()> {
        if fps.len() != ids.len() || keys.len() != ids.len() {
            return Err(PyValueError::new_err("one list of fingerprints and one of keys per id"));
        }
        let (mut flat, mut fp_ends) = (Vec::new(), Vec::with_capacity(ids.len()));
        flatten(fps, &mut flat, &mut fp_ends)?;
        let (mut flat_keys, mut key_ends) = (Vec::new(), Vec::with_capacity(ids.len()));
        self.keys_of(keys, &mut flat_keys, &mut key_ends)?;
        let ids: Vec<Bound<'_, PyString>> =
            ids.iter().map(|id| id.cast_into::<PyString>().map_err(PyErr::from)).collect::<PyResult<_>>()?;
        let texts: Vec<&str> = ids.iter().map(|id| id.to_str()).collect::<PyResult<_>>()?;
        let mut last: FxHashMap<&str, usize> = FxHashMap::default();
        for (i, &text) in texts.iter().enumerate() {
            last.insert(text, i);
        }
        let mut nums: Vec<i64> = Vec::with_capacity(flat.len());
        let mut put: Vec<u64> = Vec::with_capacity(flat.len());
        let (mut fp_start, mut key_start) = (0, 0);
        for (i, (id, &text)) in ids.iter().zip(&texts).enumerate() {
            let (doc_fps, doc_keys) = (&flat[fp_start..fp_ends[i]], &flat_keys[key_start..key_ends[i]]);
            (fp_start, key_start) = (fp_ends[i], key_ends[i]);
            if last[text] != i {
                continue; // given again later in this call: only its last is put
            }
            if doc_fps.is_empty() {
                return Err(PyValueError::new_err(format!("document {text:?} has no fingerprint")));
            }
            if let Some(&old) = self.slot_of.get(text) {
                self.remove_slot(old);
            }
            let slot = u32::try_from(self.slots.len()).map_err(|_| PyValueError::new_err("2^32 documents"))?;
            let first = u32::try_from(self.owner.len()).map_err(|_| PyValueError::new_err("2^32 entries"))?;
            nums.extend((0..doc_fps.len() as i64).map(|n| i64::from(first) + n));
            put.extend_from_slice(doc_fps);
            self.owner.extend(std::iter::repeat_n(slot, doc_fps.len()));
            for &key in doc_keys {
                let holders = self.bands.entry(key).or_default();
                if !holders.contains(&slot) {
                    holders.push(slot);
                }
            }
            self.slot_of.insert(text.into(), slot);
            let held = Held {
                id: id.clone().unbind(), text: text.into(), first, count: doc_fps.len() as u32,
                keys: doc_keys.to_vec(),
            };
            self.slots.push(Some(held));
        }
        self.tables.put(&nums, &put).map_err(PyValueError::new_err)
    }

    /// Forget a document; whether it was held.
    fn remove(&mut self, id: &str) -> bool {
        match self.slot_of.get(id) {
            Some(&slot) => {
                self.remove_slot(slot);
                true
            }
            None => false,
        }
    }

    /// The candidates of a batch whose document at position `i` has fingerprints `fps[i]` and band keys
    /// `keys[i]` (empty for a degenerate one), as the reference's `PendingSet.candidates` finds them:
    /// `(positions, ids, distances)` of the held documents before it, then `(later, earlier, distances)`
    /// of pairs within it, each pair once at its smallest distance (`k + 1` for a shared band key only).
    fn candidates<'py>(
        &mut self, py: Python<'py>, fps: &Bound<'py, PyList>, keys: &Bound<'py, PyList>, max_band_read: usize,
    ) -> PyResult<Answer> {
        if fps.len() != keys.len() {
            return Err(PyValueError::new_err("one list of fingerprints and one of keys per position"));
        }
        let (mut flat, mut fp_ends) = (Vec::new(), Vec::with_capacity(fps.len()));
        flatten(fps, &mut flat, &mut fp_ends)?;
        let (mut flat_keys, mut key_ends) = (Vec::new(), Vec::with_capacity(keys.len()));
        self.keys_of(keys, &mut flat_keys, &mut key_ends)?;
        let (before, within) = py
            .detach(|| self.find(&flat, &fp_ends, &flat_keys, &key_ends, max_band_read))
            .map_err(PyValueError::new_err)?;
        let mut out_before = (Vec::with_capacity(before.len()), Vec::with_capacity(before.len()), Vec::new());
        for (i, slot, d) in before {
            let held = self.slots[slot as usize].as_ref().expect("a live slot");
            out_before.0.push(i);
            out_before.1.push(held.id.clone_ref(py));
            out_before.2.push(d);
        }
        let mut out_within = (Vec::with_capacity(within.len()), Vec::with_capacity(within.len()), Vec::new());
        for (i, j, d) in within {
            out_within.0.push(i);
            out_within.1.push(j);
            out_within.2.push(d);
        }
        Ok((out_before, out_within))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(k: i64) -> PendingSet {
        PendingSet::empty(k, vec![16, 16, 16, 16], 4096).expect("a set")
    }

    #[test]
    fn finds_the_batch_pairs_and_band_keys_once_at_their_smallest_distance() {
        let s = set(3);
        // positions: [0, 1 << 40] with key 1; [0b111] with keys 1 and 2; [u64::MAX] with key 2
        let (before, within) = s.find(&[0, 1 << 40, 0b111, u64::MAX], &[2, 3, 4], &[1, 1, 2, 2], &[1, 3, 4], 64)
            .expect("found");
        assert!(before.is_empty());
        // 1 and 0 within 3 bits (and sharing key 1), 2 and 1 share only key 2
        assert_eq!(within, vec![(1, 0, 3), (2, 1, 4)]);
    }

    #[test]
    fn a_key_held_by_more_than_the_limit_is_passed_over() {
        let s = set(3);
        // fingerprints 32 bits or more apart: only the key joins them
        let fps = [0, u64::MAX, 0x00ff_00ff_00ff_00ff, 0xff00_ff00_ff00_ff00];
        let (_, within) = s.find(&fps, &[1, 2, 3, 4], &[7; 4], &[1, 2, 3, 4], 2).expect("found");
        assert_eq!(within, vec![(1, 0, 4), (2, 0, 4), (2, 1, 4)]);
    }

    #[test]
    fn written_keys_are_their_number_and_hash_and_no_two_texts_share_a_number() {
        let mut text = [0u8; crate::BAND_KEY_MAX];
        for (band, hash) in [(0usize, 0u64), (0, u64::MAX), (1, 5), (15, 7), (16, 7), (255, 1 << 63)] {
            let key = crate::band_key(band, hash, &mut text).to_owned();
            assert_eq!(written_key(&key), Some((band as Key) << 64 | Key::from(hash)));
        }
        // a leading zero the writer never writes, upper case, short or long texts: numbered as first seen
        for other in ["00000000000000000a", "0000000000000000A", "abc", "", "长", &"1".repeat(32)] {
            assert_eq!(written_key(other), None, "{other}");
        }
        let mut s = set(3);
        let (a, b) = (s.key_of("k1"), s.key_of("k2"));
        assert!(a != b && a >= 1 << 124 && s.key_of("k1") == a);
    }
}
