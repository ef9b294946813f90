//! What a `FingerprintResult` holds beyond the pass, computed in the one call that fingerprints a
//! document (`Core.document`): the block keys of `BlockLayout.keys` (`fingerprint/blocks.py`) and the
//! digests of `fingerprint/digest.py`, from a plan made once per configuration.

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyList, PyString, PyTuple};

use crate::blake2b::{hex_digest, Blake2b};

/// The settings of one configuration that `Core.document` reads besides the pass's: whether the
/// boilerplate is stripped and facts are taken (with their limits), the keywords the keyword digest
/// hashes, the fewest terms of a fingerprint that is not degenerate, and the block layout.
#[pyclass(frozen, module = "fingerprint_indexer.fingerprint._core")]
pub struct Plan {
    pub strip: bool,
    pub facts: bool,
    pub max_facts: usize,
    pub max_frames: usize,
    pub keyword_n: usize,
    pub min_features: usize,
    /// per key, its blocks as (right shift, width), most significant first, and its hex digits
    keys: Vec<(Vec<(u32, u32)>, usize)>,
}

#[pymethods]
impl Plan {
    /// `widths`: the layout's block widths (most significant first, 64 bits in all); `tables`: the
    /// blocks of each key (`BlockLayout.tables`).
    #[new]
    #[pyo3(signature = (*, strip, facts, max_facts, max_frames, keyword_n, min_features, widths, tables))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        strip: bool, facts: bool, max_facts: usize, max_frames: usize, keyword_n: usize, min_features: usize,
        widths: Vec<u32>, tables: Vec<Vec<usize>>,
    ) -> PyResult<Self> {
        if widths.iter().sum::<u32>() != 64 || widths.contains(&0) {
            return Err(PyValueError::new_err("block widths must be positive and add up to 64 bits"));
        }
        let mut shifts = Vec::with_capacity(widths.len());
        let mut used = 0;
        for &w in &widths {
            used += w;
            shifts.push(64 - used);
        }
        let mut keys = Vec::with_capacity(tables.len());
        for table in tables {
            let blocks: Option<Vec<(u32, u32)>> =
                table.iter().map(|&b| Some((*shifts.get(b)?, widths[b]))).collect();
            let blocks = blocks.ok_or_else(|| PyValueError::new_err("a key names a block the layout lacks"))?;
            let bits: u32 = blocks.iter().map(|&(_, w)| w).sum();
            if bits > 64 {
                return Err(PyValueError::new_err("a key is wider than 64 bits"));
            }
            keys.push((blocks, bits.div_ceil(4) as usize));
        }
        Ok(Plan { strip, facts, max_facts, max_frames, keyword_n, min_features, keys })
    }
}

impl Plan {
    /// `BlockLayout.keys(fingerprint)`: each key's blocks side by side, the first most significant, as
    /// fixed-width lower-case hex.
    pub fn keys(&self, fingerprint: u64) -> Vec<String> {
        self.keys
            .iter()
            .map(|(blocks, digits)| {
                let value = blocks.iter().fold(0u64, |key, &(shift, width)| {
                    let block = (fingerprint >> shift) & (u64::MAX >> (64 - width));
                    key.checked_shl(width).unwrap_or(0) | block
                });
                format!("{value:0digits$x}")
            })
            .collect()
    }

    /// `keyword_digest` of the first `keyword_n` of `top_terms` (heaviest first): the keywords sorted,
    /// one a line.
    pub fn keyword_digest(&self, top_terms: &[(&str, f64)]) -> String {
        let mut names: Vec<&str> = top_terms.iter().take(self.keyword_n).map(|&(t, _)| t).collect();
        names.sort_unstable();
        let mut hash = Blake2b::new(8);
        for (i, n) in names.iter().enumerate() {
            if i > 0 {
                hash.update(b"\n");
            }
            hash.update(n.as_bytes());
        }
        hash.hex()
    }
}

/// `content_digest` of a text given as its compact form (its whitespace removed, UTF-8).
pub fn content_digest(compact: &[u8]) -> String {
    hex_digest(compact, 16)
}

/// `top_terms` as the list of `(term, weight)` tuples a `FingerprintResult` holds. Each tuple holds only
/// a string and a float, which no reference cycle can pass through: it is taken off the garbage
/// collector's list at once (as the collector itself would on its next pass), so that collections
/// triggered while threads fingerprint do not walk a document's terms.
pub fn top_terms_list<'py>(py: Python<'py>, top_terms: &[(&str, f64)]) -> PyResult<Bound<'py, PyList>> {
    let items = top_terms.iter().map(|&(t, w)| {
        let pair = PyTuple::new(py, [PyString::new(py, t).into_any(), PyFloat::new(py, w).into_any()])?;
        // SAFETY: a tracked tuple, untracked once; its items are a str and a float (no references out)
        unsafe { ffi::PyObject_GC_UnTrack(pair.as_ptr().cast()) };
        Ok(pair)
    });
    PyList::new(py, items.collect::<PyResult<Vec<_>>>()?)
}
