//! A document's fingerprint fields and its candidate search's block clauses as the JSON text an
//! Elasticsearch request carries, with no Python object per key: `fingerprint_fields` of `es/codec.py` and
//! `candidates_query` of `index/elasticsearch.py`, serialised by orjson, are the reference these equal
//! byte for byte.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rustc_hash::FxHashSet;

use crate::blocks::{KeyBlocks, KeyPlan};
use crate::document::Terms;
use crate::hex::DIGITS;

/// `text` as a JSON string, escaped as orjson escapes it: `"` and `\`, the control characters below
/// U+0020 (`\b \t \n \f \r` by name, the rest as `\u00xx`); everything else as it is, in UTF-8. Runs
/// with nothing to escape (nearly all text) are found eight bytes at a time and copied whole.
pub fn json_string(out: &mut Vec<u8>, text: &str) {
    let raw = text.as_bytes();
    out.reserve(raw.len() + 2);
    out.push(b'"');
    let mut from = 0;
    let mut i = 0;
    while i < raw.len() {
        if i + 8 <= raw.len() {
            let word = u64::from_le_bytes(raw[i..i + 8].try_into().expect("eight bytes"));
            if !needs_escape(word) {
                i += 8;
                continue;
            }
        }
        let c = raw[i];
        let named: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\t' => b"\\t",
            b'\r' => b"\\r",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => {
                i += 1;
                continue;
            }
        };
        out.extend_from_slice(&raw[from..i]);
        if named.is_empty() {
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', DIGITS[(c >> 4) as usize], DIGITS[(c & 15) as usize]]);
        } else {
            out.extend_from_slice(named);
        }
        i += 1;
        from = i;
    }
    out.extend_from_slice(&raw[from..]);
    out.push(b'"');
}

/// `items` as a JSON array of strings.
fn string_array(out: &mut Vec<u8>, items: &[String]) {
    out.push(b'[');
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        json_string(out, item);
    }
    out.push(b']');
}

/// Whether any of the eight bytes of `word` may need escaping in a JSON string (below 0x20, `"` or `\`):
/// never false for one that does; true only where a byte does, or a byte before it does (a borrow).
pub(crate) fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    (below_space | zero_byte(word ^ (ONES * b'"' as u64)) | zero_byte(word ^ (ONES * b'\\' as u64))) != 0
}

/// A field name written as is between quotes: letters, digits and `_` only.
fn plain_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The band keys of a search: given as strings, or made from a sketch less the hot ones.
enum Bands<'a> {
    Given(&'a [String]),
    Sketch { sketch: &'a [u8], bands: usize, rows: usize, hot: &'a FxHashSet<String> },
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
        let array = always_array || values.len() != 1;
        out.reserve(self.blocks[j].len() + 5 + values.len() * 19);
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
            self.plan.push_quoted_hex(j, v, out);
        }
        if array {
            out.push(b']');
        }
    }

    /// [`EsKeyJson::candidates`] written at the end of `out`.
    fn write_candidates(
        &self, out: &mut Vec<u8>, fingerprints: &[u64], bands_field: &str, bands: Bands<'_>, head: &[u8],
        tail: &[u8],
    ) -> PyResult<()> {
        if fingerprints.is_empty() {
            return Err(PyValueError::new_err("a search needs at least one fingerprint"));
        }
        out.reserve(head.len() + tail.len() + 96 + self.plan.len() * (32 + 12 * fingerprints.len()) + 8 * 24);
        out.extend_from_slice(head);
        out.extend_from_slice(b"{\"bool\":{\"filter\":[{\"bool\":{\"should\":[");
        let (mut values, mut seen) = (Vec::with_capacity(fingerprints.len()), FxHashSet::default());
        for j in 0..self.plan.len() {
            self.plan.column(j, fingerprints, 2, &mut values, &mut seen);
            if j > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"terms\":{");
            self.keys(out, j, &values, true);
            out.extend_from_slice(b"}}");
        }
        // the band clause, taken back when it has no key
        let clause = out.len();
        out.extend_from_slice(b",{\"terms\":{");
        json_string(out, bands_field);
        out.push(b':');
        let array = out.len();
        match bands {
            Bands::Given(keys) => string_array(out, keys),
            Bands::Sketch { sketch, bands, rows, hot } => band_key_array(out, sketch, bands, rows, hot),
        }
        if out.len() == array + 2 {
            out.truncate(clause);
        } else {
            out.extend_from_slice(b"}}");
        }
        out.extend_from_slice(b"],\"minimum_should_match\":1}}]}}");
        out.extend_from_slice(tail);
        Ok(())
    }

    /// The members (no braces) `"fingerprint":<long>,"fingerprint_hex":"<hex>","fingerprints":[<long>...]`
    /// of `fingerprints` (unsigned, the document's first), then with `with_blocks` each key's field: its
    /// distinct keys in first-seen order, one as a string (`key_fields` of `es/codec.py`).
    fn write_fields(&self, out: &mut Vec<u8>, fingerprints: &[u64], with_blocks: bool) -> PyResult<()> {
        let Some(&first) = fingerprints.first() else {
            return Err(PyValueError::new_err("a document has at least one fingerprint"));
        };
        out.reserve(96 + fingerprints.len() * (21 + 8 * self.plan.len()));
        let [fp, hex, fps] = &self.names;
        let name = |out: &mut Vec<u8>, name: &str| {
            out.push(b'"');
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
        };
        name(out, fp);
        integer(out, first as i64);
        out.push(b',');
        name(out, hex);
        out.push(b'"');
        out.extend_from_slice(&crate::blocks::hex16(first));
        out.extend_from_slice(b"\",");
        name(out, fps);
        out.push(b'[');
        for (n, &f) in fingerprints.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            integer(out, f as i64);
        }
        out.push(b']');
        if with_blocks {
            let (mut values, mut seen) = (Vec::with_capacity(fingerprints.len()), FxHashSet::default());
            for j in 0..self.plan.len() {
                self.plan.column(j, fingerprints, 1, &mut values, &mut seen);
                out.push(b',');
                self.keys(out, j, &values, false);
            }
        }
        Ok(())
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

    /// `head`, then a candidate search's query, then `tail`: one buffer for a whole search body. The
    /// query is `{"bool":{"filter":[{"bool":{"should":[...],"minimum_should_match":1}}]}}` holding
    /// `{"terms":{"block_<n>":[keys]}}` per key (each key's distinct keys of `fingerprints`, ascending)
    /// and, when `bands` is not empty, `{"terms":{<bands_field>:[bands]}}` last.
    fn candidates<'py>(
        &self, py: Python<'py>, fingerprints: Vec<u64>, bands_field: &str, bands: Vec<String>, head: &[u8],
        tail: &[u8],
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = Vec::new();
        self.write_candidates(&mut out, &fingerprints, bands_field, Bands::Given(&bands), head, tail)?;
        Ok(PyBytes::new(py, &out))
    }

    /// A multi-search's NDJSON text of one candidate search a query: for each, `header` (its header
    /// line), then [`Self::candidates`] of its `fingerprints` and of the band keys of its sketch (as
    /// `fingerprint.sketch.band_keys` makes them, of `bands` bands of `rows` minima) less those in
    /// `hot`, between `head` and `tail`, and a newline.
    #[allow(clippy::too_many_arguments)]
    fn searches<'py>(
        &self, py: Python<'py>, header: &[u8], fingerprints: Vec<Vec<u64>>, sketches: Vec<Bound<'py, PyBytes>>,
        bands_field: &str, hot: FxHashSet<String>, bands: usize, rows: usize, head: &[u8], tail: &[u8],
    ) -> PyResult<Bound<'py, PyBytes>> {
        if fingerprints.len() != sketches.len() {
            return Err(PyValueError::new_err("one sketch a query"));
        }
        let mut out = Vec::with_capacity(fingerprints.len() * (header.len() + head.len() + tail.len() + 1024));
        for (fps, sketch) in fingerprints.iter().zip(&sketches) {
            out.extend_from_slice(header);
            let keys = Bands::Sketch { sketch: sketch.as_bytes(), bands, rows, hot: &hot };
            self.write_candidates(&mut out, fps, bands_field, keys, head, tail)?;
            out.push(b'\n');
        }
        Ok(PyBytes::new(py, &out))
    }
}

/// A whole document as the JSON text a bulk request carries (`decision_source` of `es/codec.py`, whose
/// reference is the merged dict of the document's fields and `decision_fields` serialised by orjson,
/// byte for byte), for a document without copy marks whose terms the compiled pass made: the document's
/// own members as given, its key fields (`EsKeyJson`), then its evidence (the sketch in base64 with its
/// band keys, the facts, the frames), digests, terms, versions and decision. The field names after the
/// key fields are given once, in the reference's order.
#[pyclass(frozen, module = "fingerprint_indexer.fingerprint._core")]
pub struct EsSourceJson {
    keys: EsKeyJson,
    /// sketch, bands, facts, frames, content_digest, keyword_digest, terms, fp_version, verify_policy,
    /// cluster_id, duplicate_of, distance, decision, degenerate, text_length, replaces, decided_at
    names: Vec<String>,
    /// the sketch's bands and the minima in each (`fingerprint.sketch.BANDS`, `BAND_ROWS`)
    bands: usize,
    rows: usize,
}

const TAIL_FIELDS: usize = 17;

impl EsSourceJson {
    /// `,"name":` of field `i` of those after the key fields.
    fn name(&self, out: &mut Vec<u8>, i: usize) {
        out.extend_from_slice(b",\"");
        out.extend_from_slice(self.names[i].as_bytes());
        out.extend_from_slice(b"\":");
    }
}

/// A fingerprint as the key fields take it: unsigned, a signed one (a `long` as stored) read as its
/// two's complement, as `value & MASK64` reads it.
fn unsigned(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    value.extract::<u64>().or_else(|_| value.extract::<i64>().map(|v| v as u64))
}

fn optional_string(out: &mut Vec<u8>, value: Option<&str>) {
    match value {
        Some(text) => json_string(out, text),
        None => out.extend_from_slice(b"null"),
    }
}

fn integer(out: &mut Vec<u8>, value: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Band keys of `sketch` (`crate::band_keys`) as a JSON array, less those in `hot`: hex text needs no
/// escaping, and no string is made for each.
fn band_key_array(out: &mut Vec<u8>, sketch: &[u8], bands: usize, rows: usize, hot: &FxHashSet<String>) {
    let mut text = [0u8; crate::BAND_KEY_MAX];
    out.push(b'[');
    let mut first = true;
    for (i, hash) in crate::band_hashes(sketch, bands, rows) {
        let key = crate::band_key(i, hash, &mut text);
        if hot.contains(key) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.push(b'"');
    }
    out.push(b']');
}

#[pymethods]
impl EsSourceJson {
    /// `keys`, `digits`, `blocks`, `key_names`: as `EsKeyJson` takes them; `names`: the 17 fields after
    /// the key fields, in order; `bands`, `rows`: how the sketch is banded into its keys.
    #[new]
    fn new(
        keys: Vec<KeyBlocks>, digits: Vec<usize>, blocks: Vec<String>, key_names: [String; 3], names: Vec<String>,
        bands: usize, rows: usize,
    ) -> PyResult<Self> {
        if names.len() != TAIL_FIELDS || !names.iter().all(|n| plain_name(n)) {
            return Err(PyValueError::new_err("17 field names of letters, digits and _ only"));
        }
        Ok(EsSourceJson { keys: EsKeyJson::new(keys, digits, blocks, key_names)?, names, bands, rows })
    }

    /// `prefix`, then `text[..end]`, the document's JSON object less its closing brace (`{` alone for an
    /// empty one), then the key fields of `fingerprints` (the document's first; a signed one read as
    /// unsigned; no block keys when `degenerate`), the sketch (when not empty) with its band keys (unless
    /// `degenerate`), `facts` (a JSON array as it is: orjson writes text held by Python faster than the
    /// text can be handed over), `frames` (unsigned, written signed), the digests, the first `limit` of
    /// `terms` joined by `sep`, the versions and the decision's fields (`None` written as null), the
    /// closing brace, and `suffix` (a bulk request's action line and newline around the document, in one
    /// buffer).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (text, end, fingerprints, sketch, facts, frames, content_digest, keyword_digest, terms,
                        limit, sep, fp_version, verify_policy, cluster_id, duplicate_of, distance, decision,
                        degenerate, text_length, replaces, decided_at, prefix = b"".as_slice(),
                        suffix = b"".as_slice()))]
    fn source<'py>(
        &self, py: Python<'py>, text: &[u8], end: usize, fingerprints: Vec<Bound<'py, PyAny>>, sketch: &[u8], facts: &[u8],
        frames: Vec<u64>, content_digest: &str, keyword_digest: &str, terms: PyRef<'py, Terms>, limit: usize,
        sep: &str, fp_version: &str, verify_policy: &str, cluster_id: &str, duplicate_of: Option<&str>,
        distance: Option<i64>, decision: &str, degenerate: bool, text_length: i64, replaces: Option<&str>,
        decided_at: i64, prefix: &[u8], suffix: &[u8],
    ) -> PyResult<Bound<'py, PyBytes>> {
        use base64::Engine as _;
        let Some(head) = text.get(..end) else {
            return Err(PyValueError::new_err("the document's members end beyond its text"));
        };
        let fingerprints = fingerprints.iter().map(unsigned).collect::<PyResult<Vec<u64>>>()?;
        // room for everything but a long document's terms: the buffer is not grown and copied on the way
        let keys = fingerprints.len() * (21 + 12 * self.keys.plan.len()) + frames.len() * 21;
        let mut out = Vec::with_capacity(
            prefix.len() + head.len() + 1024 + keys + sketch.len() * 2 + facts.len() + terms.text_len() + suffix.len(),
        );
        out.extend_from_slice(prefix);
        out.extend_from_slice(head);
        if end > 1 {
            out.push(b',');
        }
        self.keys.write_fields(&mut out, &fingerprints, !degenerate)?;
        if !sketch.is_empty() {
            self.name(&mut out, 0);
            out.push(b'"');
            let at = out.len();
            out.resize(at + sketch.len().div_ceil(3) * 4, 0);
            let written = base64::engine::general_purpose::STANDARD
                .encode_slice(sketch, &mut out[at..])
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            out.truncate(at + written);
            out.push(b'"');
            if !degenerate {
                self.name(&mut out, 1);
                band_key_array(&mut out, sketch, self.bands, self.rows, &FxHashSet::default());
            }
        }
        self.name(&mut out, 2);
        out.extend_from_slice(facts);
        self.name(&mut out, 3);
        out.push(b'[');
        for (n, &frame) in frames.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            integer(&mut out, frame as i64);
        }
        out.push(b']');
        self.name(&mut out, 4);
        json_string(&mut out, content_digest);
        self.name(&mut out, 5);
        json_string(&mut out, keyword_digest);
        self.name(&mut out, 6);
        json_string(&mut out, &terms.joined_text(limit, sep));
        self.name(&mut out, 7);
        json_string(&mut out, fp_version);
        self.name(&mut out, 8);
        json_string(&mut out, verify_policy);
        self.name(&mut out, 9);
        json_string(&mut out, cluster_id);
        self.name(&mut out, 10);
        optional_string(&mut out, duplicate_of);
        self.name(&mut out, 11);
        match distance {
            Some(d) => integer(&mut out, d),
            None => out.extend_from_slice(b"null"),
        }
        self.name(&mut out, 12);
        json_string(&mut out, decision);
        self.name(&mut out, 13);
        out.extend_from_slice(if degenerate { b"true" } else { b"false" });
        self.name(&mut out, 14);
        integer(&mut out, text_length);
        self.name(&mut out, 15);
        optional_string(&mut out, replaces);
        self.name(&mut out, 16);
        integer(&mut out, decided_at);
        out.push(b'}');
        out.extend_from_slice(suffix);
        Ok(PyBytes::new(py, &out))
    }
}
