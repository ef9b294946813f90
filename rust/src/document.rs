//! What a `FingerprintResult` holds beyond the pass, computed in the one call that fingerprints a
//! document (`Core.document`): the block keys of `BlockLayout.keys` (`fingerprint/blocks.py`) and the
//! digests of `fingerprint/digest.py`, from a plan made once per configuration.

use std::borrow::Cow;

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyFloat, PyList, PyString, PyTuple};

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

/// A document's `top_terms`, `(term, weight)` pairs heaviest first, as a `FingerprintResult` holds them:
/// a read-only sequence whose items are made when they are read. Most documents are decided without
/// reading their terms (only the first few are ever shown), so the hundreds of Python strings, floats
/// and tuples a list would hold are not made, nor freed, while the GIL is held. It compares equal to a
/// list of the same pairs and copies as that list; it pickles packed, as its text, spans and weights.
#[pyclass(frozen, sequence, module = "fingerprint_indexer.fingerprint._core")]
pub struct Terms {
    text: String,
    items: Vec<(u32, u32, f64)>, // each term's start and end in `text`, and its weight
    /// each term follows the one before after one space, the first at the start: the first terms joined
    /// by a space are then a slice of `text`
    spaced: bool,
}

impl Terms {
    /// The pairs of `top_terms` packed into one string, one space between them, and their spans (made
    /// without the GIL).
    pub fn pack(top_terms: &[(&str, f64)]) -> Terms {
        let mut text = String::with_capacity(top_terms.iter().map(|(t, _)| t.len() + 1).sum());
        let items = top_terms.iter().map(|&(t, w)| {
            if !text.is_empty() {
                text.push(' ');
            }
            let start = text.len() as u32;
            text.push_str(t);
            (start, text.len() as u32, w)
        }).collect();
        Terms::new(text, items)
    }

    fn new(text: String, items: Vec<(u32, u32, f64)>) -> Terms {
        let bytes = text.as_bytes();
        let spaced = items.first().is_none_or(|&(start, _, _)| start == 0)
            && items.windows(2).all(|w| w[1].0 == w[0].1 + 1 && bytes[w[0].1 as usize] == b' ');
        Terms { text, items, spaced }
    }

    /// The first `limit` terms joined by `sep` ([`Terms::joined`]): a slice of the text when they are
    /// laid out one space apart and `sep` is a space, else made term by term.
    pub fn joined_text(&self, limit: usize, sep: &str) -> Cow<'_, str> {
        let n = self.items.len().min(limit);
        if self.spaced && sep == " " {
            return Cow::Borrowed(if n == 0 { "" } else { &self.text[..self.items[n - 1].1 as usize] });
        }
        let mut out = String::with_capacity(self.text.len() + sep.len() * n);
        for (i, &(start, end, _)) in self.items[..n].iter().enumerate() {
            if i > 0 {
                out.push_str(sep);
            }
            out.push_str(&self.text[start as usize..end as usize]);
        }
        Cow::Owned(out)
    }

    fn pair<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyTuple>> {
        let (start, end, w) = self.items[i];
        let term = PyString::new(py, &self.text[start as usize..end as usize]);
        let pair = PyTuple::new(py, [term.into_any(), PyFloat::new(py, w).into_any()])?;
        // SAFETY: a tracked tuple, untracked once; its items are a str and a float (no references out)
        unsafe { ffi::PyObject_GC_UnTrack(pair.as_ptr().cast()) };
        Ok(pair)
    }

    fn list<'py>(&self, py: Python<'py>, from: usize, to: usize, step: usize) -> PyResult<Bound<'py, PyList>> {
        let pairs = (from..to).step_by(step.max(1)).map(|i| self.pair(py, i)).collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, pairs)
    }
}

#[pymethods]
impl Terms {
    fn __len__(&self) -> usize {
        self.items.len()
    }

    /// A pair by index (negative from the end), or a list of the pairs of a slice.
    fn __getitem__<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(slice) = index.cast::<pyo3::types::PySlice>() {
            let got = slice.indices(self.items.len() as isize)?;
            if got.step < 1 {
                let all = self.list(py, 0, self.items.len(), 1)?;
                return all.as_any().get_item(index);
            }
            let to = if got.slicelength == 0 { got.start } else { got.stop.max(got.start) };
            return Ok(self.list(py, got.start as usize, to as usize, got.step as usize)?.into_any());
        }
        let i: isize = index.extract()?;
        let n = self.items.len() as isize;
        let at = if i < 0 { i + n } else { i };
        if at < 0 || at >= n {
            return Err(pyo3::exceptions::PyIndexError::new_err("top_terms index out of range"));
        }
        Ok(self.pair(py, at as usize)?.into_any())
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.list(py, 0, self.items.len(), 1)?.try_iter().map(|it| it.into_any())
    }

    /// Equal to another `Terms` or to any sequence of the same pairs (a list of tuples).
    fn __eq__<'py>(&self, py: Python<'py>, other: &Bound<'py, PyAny>) -> PyResult<bool> {
        if let Ok(theirs) = other.cast::<Terms>() {
            let theirs = theirs.get();
            return Ok(self.items.len() == theirs.items.len()
                && self.items.iter().zip(&theirs.items).all(|(a, b)| {
                    a.2 == b.2 && self.text[a.0 as usize..a.1 as usize] == theirs.text[b.0 as usize..b.1 as usize]
                }));
        }
        if other.len().ok() != Some(self.items.len()) || other.is_instance_of::<PyString>() {
            return Ok(false);
        }
        self.list(py, 0, self.items.len(), 1)?.eq(other)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("Terms({})", self.list(py, 0, self.items.len(), 1)?.repr()?))
    }

    /// The bytes of all the terms' text (a bound on what [`Terms::joined`] writes less its separators).
    pub fn text_len(&self) -> usize {
        self.text.len()
    }

    /// The first `limit` terms joined by `sep`: what `sep.join(t for t, _ in terms[:limit])` gives, without
    /// a Python object made for each term (the `terms` field of an indexed document).
    pub fn joined(&self, limit: usize, sep: &str) -> String {
        self.joined_text(limit, sep).into_owned()
    }

    /// Copied as the list of its pairs (what `dataclasses.asdict` and JSON writers take).
    fn __copy__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.list(py, 0, self.items.len(), 1)
    }

    fn __deepcopy__<'py>(&self, py: Python<'py>, _memo: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        self.list(py, 0, self.items.len(), 1)
    }

    /// Pickled packed (its text, the terms' spans and weights as bytes; [`terms_from_packed`] unpickles
    /// it): a result sent between processes does not become hundreds of pairs on either side.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let make = py.import("fingerprint_indexer.fingerprint._core")?.getattr("terms_from_packed")?;
        let spans: Vec<u8> = self.items.iter().flat_map(|&(a, b, _)| [a.to_le_bytes(), b.to_le_bytes()]).flatten().collect();
        let weights: Vec<u8> = self.items.iter().flat_map(|&(_, _, w)| w.to_le_bytes()).collect();
        let args = PyTuple::new(py, [
            PyString::new(py, &self.text).into_any(),
            PyBytes::new(py, &spans).into_any(),
            PyBytes::new(py, &weights).into_any(),
        ])?;
        Ok((make, args))
    }
}

/// The `Terms` a pickle packed (`Terms.__reduce__`): spans that do not fall on the text's characters
/// are a ValueError.
#[pyfunction]
pub fn terms_from_packed(text: String, spans: &[u8], weights: &[u8]) -> PyResult<Terms> {
    let n = weights.len() / 8;
    if !weights.len().is_multiple_of(8) || spans.len() != 8 * n {
        return Err(PyValueError::new_err("packed terms: spans and weights do not match"));
    }
    let mut items = Vec::with_capacity(n);
    for i in 0..n {
        let start = u32::from_le_bytes(spans[8 * i..8 * i + 4].try_into().expect("4 bytes"));
        let end = u32::from_le_bytes(spans[8 * i + 4..8 * i + 8].try_into().expect("4 bytes"));
        if start > end || text.get(start as usize..end as usize).is_none() {
            return Err(PyValueError::new_err("packed terms: a span outside the text"));
        }
        items.push((start, end, f64::from_le_bytes(weights[8 * i..8 * i + 8].try_into().expect("8 bytes"))));
    }
    Ok(Terms::new(text, items))
}
