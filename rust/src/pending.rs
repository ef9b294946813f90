//! The documents a writer decided since the index's last refresh (`es index`'s pending set), matched
//! against each batch before Elasticsearch can find them: their fingerprints in block tables, their sketch
//! band keys as postings. `index/pending.py`'s `PendingSet` is the reference; `CompiledPendingSet` there
//! wraps this one, which answers a batch in one call with no Python object per fingerprint or key.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::tables::{near_pairs, Tables};

/// Entries put before the main tables take them in (the reference's `MERGE_THRESHOLD`).
const MERGE_MIN: usize = 4096;

/// One document held: its id, its entries' numbers (`first`, `count`) and its band keys.
struct Held {
    id: Py<PyString>,
    text: Box<str>,
    first: u32,
    count: u32,
    keys: Vec<Box<str>>,
}

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
    bands: FxHashMap<Box<str>, SmallVec<[u32; 2]>>,
}

/// Fingerprints given as ints, unsigned or signed: their low 64 bits.
fn low_bits(items: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    let mut out = Vec::with_capacity(items.len().unwrap_or(0));
    for item in items.try_iter()? {
        let item = item?;
        out.push(match item.extract::<u64>() {
            Ok(v) => v,
            Err(_) => item.extract::<i64>()? as u64,
        });
    }
    Ok(out)
}

fn strings(items: &Bound<'_, PyAny>) -> PyResult<Vec<Box<str>>> {
    let mut out = Vec::with_capacity(items.len().unwrap_or(0));
    for item in items.try_iter()? {
        out.push(item?.cast_into::<PyString>()?.to_str()?.into());
    }
    Ok(out)
}

impl PendingSet {
    fn empty(k: i64, widths: Vec<u32>) -> Result<Self, String> {
        if k < 0 || widths.len() as i64 <= k {
            return Err(format!("{} blocks cannot find every match within {k}", widths.len()));
        }
        let tables = Tables::new(&widths, Vec::new(), Vec::new(), MERGE_MIN, true)?;
        Ok(PendingSet {
            k, widths, tables, owner: Vec::new(), slots: Vec::new(), slot_of: FxHashMap::default(),
            bands: FxHashMap::default(),
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

    /// The candidates of a batch whose positions hold `fps[i]` and `keys[i]` (none for a degenerate
    /// document): the reference's `PendingSet.candidates`, as slots and positions.
    fn find(&self, fps: &[Vec<u64>], keys: &[Vec<Box<str>>], max_band_read: usize) -> Result<Found, String> {
        let limit = (self.k + 1) as u8;
        let owner: Vec<u32> =
            fps.iter().enumerate().flat_map(|(i, f)| std::iter::repeat_n(i as u32, f.len())).collect();
        let flat: Vec<u64> = fps.iter().flatten().copied().collect();
        let mut before: Vec<(u32, u32, u8)> = Vec::new();
        if !self.slot_of.is_empty() {
            let (qs, nums, dists) = self.tables.query_vecs(&flat, self.k, None);
            for ((q, num), d) in qs.into_iter().zip(nums).zip(dists) {
                before.push((owner[q as usize], self.owner[num as usize], d as u8));
            }
        }
        let mut within: Vec<(u32, u32, u8)> = Vec::new();
        for (i, j, d) in near_pairs(&flat, self.k, &self.widths)? {
            let (a, b) = (owner[i as usize], owner[j as usize]);
            if a != b {
                within.push((a.max(b), a.min(b), d));
            }
        }
        // the keys that can matter: held by two of the batch, or by a pending document (most are neither)
        let mut counts: FxHashMap<&str, u32> = FxHashMap::default();
        for key in keys.iter().flatten() {
            *counts.entry(key).or_insert(0) += 1;
        }
        let mut earlier_with: FxHashMap<&str, Vec<u32>> = FxHashMap::default();
        for (i, doc_keys) in keys.iter().enumerate() {
            for key in doc_keys {
                let pending = self.bands.get(key);
                if counts[key.as_ref()] < 2 && pending.is_none() {
                    continue;
                }
                let earlier = earlier_with.entry(key).or_default();
                let pending: &[u32] = pending.map_or(&[], |p| p.as_slice());
                // a key held by more is a stock phrase, passed over as in the index
                if pending.len() + earlier.len() <= max_band_read {
                    before.extend(pending.iter().map(|&s| (i as u32, s, limit)));
                    within.extend(earlier.iter().map(|&j| (i as u32, j, limit)));
                }
                earlier.push(i as u32);
            }
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
    /// An empty set matching within `k` through block tables of `widths` (at least `k + 1` blocks).
    #[new]
    fn new(k: i64, widths: Vec<u32>) -> PyResult<Self> {
        PendingSet::empty(k, widths).map_err(PyValueError::new_err)
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
        let mut texts: Vec<Box<str>> = Vec::with_capacity(ids.len());
        let mut last: FxHashMap<&str, usize> = FxHashMap::default();
        let ids: Vec<Bound<'_, PyString>> =
            ids.iter().map(|id| id.cast_into::<PyString>().map_err(PyErr::from)).collect::<PyResult<_>>()?;
        for id in &ids {
            texts.push(id.to_str()?.into());
        }
        for (i, text) in texts.iter().enumerate() {
            last.insert(text, i);
        }
        let (mut nums, mut flat): (Vec<i64>, Vec<u64>) = (Vec::new(), Vec::new());
        for (i, ((id, doc_fps), doc_keys)) in ids.iter().zip(fps.iter()).zip(keys.iter()).enumerate() {
            let text = &texts[i];
            if last[text.as_ref()] != i {
                continue; // given again later in this call: only its last is put
            }
            let doc_fps = low_bits(&doc_fps)?;
            if doc_fps.is_empty() {
                return Err(PyValueError::new_err(format!("document {text:?} has no fingerprint")));
            }
            let doc_keys = strings(&doc_keys)?;
            if let Some(&old) = self.slot_of.get(text) {
                self.remove_slot(old);
            }
            let slot = u32::try_from(self.slots.len()).map_err(|_| PyValueError::new_err("2^32 documents"))?;
            let first = u32::try_from(self.owner.len()).map_err(|_| PyValueError::new_err("2^32 entries"))?;
            nums.extend((0..doc_fps.len() as i64).map(|n| i64::from(first) + n));
            flat.extend_from_slice(&doc_fps);
            self.owner.extend(std::iter::repeat_n(slot, doc_fps.len()));
            for key in &doc_keys {
                let holders = self.bands.entry(key.clone()).or_default();
                if !holders.contains(&slot) {
                    holders.push(slot);
                }
            }
            self.slot_of.insert(text.clone(), slot);
            let count = doc_fps.len() as u32;
            self.slots.push(Some(Held { id: id.clone().unbind(), text: text.clone(), first, count, keys: doc_keys }));
        }
        self.tables.put(&nums, &flat).map_err(PyValueError::new_err)
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
        &self, py: Python<'py>, fps: &Bound<'py, PyList>, keys: &Bound<'py, PyList>, max_band_read: usize,
    ) -> PyResult<Answer> {
        if fps.len() != keys.len() {
            return Err(PyValueError::new_err("one list of fingerprints and one of keys per position"));
        }
        let fps: Vec<Vec<u64>> = fps.iter().map(|f| low_bits(&f)).collect::<PyResult<_>>()?;
        let keys: Vec<Vec<Box<str>>> = keys.iter().map(|k| strings(&k)).collect::<PyResult<_>>()?;
        let (before, within) = py.detach(|| self.find(&fps, &keys, max_band_read)).map_err(PyValueError::new_err)?;
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
        PendingSet::empty(k, vec![16, 16, 16, 16]).expect("a set")
    }

    #[test]
    fn finds_the_batch_pairs_and_band_keys_once_at_their_smallest_distance() {
        let s = set(3);
        let fps = vec![vec![0u64, 1 << 40], vec![0b111], vec![u64::MAX]];
        let keys: Vec<Vec<Box<str>>> = vec![vec!["a".into()], vec!["a".into(), "b".into()], vec!["b".into()]];
        let (before, within) = s.find(&fps, &keys, 64).expect("found");
        assert!(before.is_empty());
        // 1 and 0 within 3 bits (and sharing "a"), 2 and 1 share only "b"
        assert_eq!(within, vec![(1, 0, 3), (2, 1, 4)]);
    }

    #[test]
    fn a_key_held_by_more_than_the_limit_is_passed_over() {
        let s = set(3);
        // fingerprints 32 bits or more apart: only the key joins them
        let fps = vec![vec![0], vec![u64::MAX], vec![0x00ff_00ff_00ff_00ff], vec![0xff00_ff00_ff00_ff00]];
        let keys: Vec<Vec<Box<str>>> = (0..4).map(|_| vec!["stock".into()]).collect();
        let (_, within) = s.find(&fps, &keys, 2).expect("found");
        assert_eq!(within, vec![(1, 0, 4), (2, 0, 4), (2, 1, 4)]);
    }
}
