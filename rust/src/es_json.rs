//! A document's fingerprint fields and its candidate search's block clauses as the JSON text an
//! Elasticsearch request carries, with no Python object per key: `fingerprint_fields` of `es/codec.py` and
//! `candidates_query` of `index/elasticsearch.py`, serialised by orjson, are the reference these equal
//! byte for byte.

use std::io::Write;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rustc_hash::FxHashSet;

use crate::blocks::{KeyBlocks, KeyPlan};
use crate::hex::DIGITS;

/// `text` as a JSON string, escaped as orjson escapes it: `"` and `\`, the control characters below
/// U+0020 (`\b \t \n \f \r` by name, the rest as `\u00xx`); everything else as it is, in UTF-8.
pub fn json_string(out: &mut Vec<u8>, text: &str) {
    let raw = text.as_bytes();
    out.reserve(raw.len() + 2);
    out.push(b'"');
    let mut from = 0;
    for (i, &c) in raw.iter().enumerate() {
        let named: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\t' => b"\\t",
            b'\r' => b"\\r",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&raw[from..i]);
        if named.is_empty() {
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', DIGITS[(c >> 4) as usize], DIGITS[(c & 15) as usize]]);
        } else {
            out.extend_from_slice(named);
        }
        from = i + 1;
    }
    out.extend_from_slice(&raw[from..]);
    out.push(b'"');
}

/// A field name written as is between quotes: letters, digits and `_` only.
fn plain_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The block-key fields of one layout and the names of the fingerprint fields, made once per layout.
#[pyclass(frozen, module = "fingerprint_indexer.fingerprint._core")]
pub struct EsKeyJson {
    plan: KeyPlan,
    /// the keyword field of each key, in key order
    blocks: Vec<String>,
    /// the document fingerprint's long field, its hex field, and the field of all fingerprints
    names: [String; 3],
}

impl EsKeyJson {
    /// `"name":` then key `j`'s distinct keys of `fps`: one as a string, more as an array of strings.
    fn keys(&self, out: &mut Vec<u8>, j: usize, values: &[u64], always_array: bool) {
        let mut hex = [0u8; 16];
        let array = always_array || values.len() != 1;
        out.push(b'"');
        out.extend_from_slice(self.blocks[j].as_bytes());
        out.extend_from_slice(b"\":");
        if array {
            out.push(b'[');
        }
        for (n, &v) in values.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(self.plan.hex(j, v, &mut hex).as_bytes());
            out.push(b'"');
        }
        if array {
            out.push(b']');
        }
    }
}

#[pymethods]
impl EsKeyJson {
    /// `keys`, `digits`: the layout's keys as `BlockKeys` takes them; `blocks`: the keyword field of each
    /// key; `names`: the fingerprint's long field, its hex field, and the field of all fingerprints.
    #[new]
    fn new(keys: Vec<KeyBlocks>, digits: Vec<usize>, blocks: Vec<String>, names: [String; 3]) -> PyResult<Self> {
        let plan = KeyPlan::new(keys, digits)?;
        if blocks.len() != plan.len() {
            return Err(PyValueError::new_err("one field name per key"));
        }
        if !blocks.iter().chain(names.iter()).all(|n| plain_name(n)) {
            return Err(PyValueError::new_err("field names of letters, digits and _ only"));
        }
        Ok(EsKeyJson { plan, blocks, names })
    }

    /// The members (no braces) `"fingerprint":<long>,"fingerprint_hex":"<hex>","fingerprints":[<long>...]`
    /// of `fingerprints` (unsigned, the document's first), then with `with_blocks` each key's field: its
    /// distinct keys in first-seen order, one as a string.
    fn fields<'py>(&self, py: Python<'py>, fingerprints: Vec<u64>, with_blocks: bool) -> PyResult<Bound<'py, PyBytes>> {
        let Some(&first) = fingerprints.first() else {
            return Err(PyValueError::new_err("a document has at least one fingerprint"));
        };
        let mut out = Vec::with_capacity(96 + fingerprints.len() * (21 + 8 * self.plan.len()));
        let [fp, hex, fps] = &self.names;
        // writing to a Vec cannot fail
        let _ = write!(out, "\"{fp}\":{},\"{hex}\":\"{first:016x}\",\"{fps}\":[", first as i64);
        for (n, &f) in fingerprints.iter().enumerate() {
            let _ = write!(out, "{}{}", if n > 0 { "," } else { "" }, f as i64);
        }
        out.push(b']');
        if with_blocks {
            let (mut values, mut seen) = (Vec::with_capacity(fingerprints.len()), FxHashSet::default());
            for j in 0..self.plan.len() {
                self.plan.column(j, &fingerprints, 1, &mut values, &mut seen);
                out.push(b',');
                self.keys(&mut out, j, &values, false);
            }
        }
        Ok(PyBytes::new(py, &out))
    }

    /// The block clauses of a candidate search (no brackets): `{"terms":{"block_<n>":[keys]}}` per key,
    /// each key's distinct keys of `fingerprints` in ascending order.
    fn should<'py>(&self, py: Python<'py>, fingerprints: Vec<u64>) -> PyResult<Bound<'py, PyBytes>> {
        if fingerprints.is_empty() {
            return Err(PyValueError::new_err("a search needs at least one fingerprint"));
        }
        let mut out = Vec::with_capacity(self.plan.len() * (32 + 8 * fingerprints.len()));
        let (mut values, mut seen) = (Vec::with_capacity(fingerprints.len()), FxHashSet::default());
        for j in 0..self.plan.len() {
            self.plan.column(j, &fingerprints, 2, &mut values, &mut seen);
            if j > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"terms\":{");
            self.keys(&mut out, j, &values, true);
            out.extend_from_slice(b"}}");
        }
        Ok(PyBytes::new(py, &out))
    }
}
