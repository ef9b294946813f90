//! `DocRecord.to_bytes` of `records/record.py` (the reference): the compact form the embedded store keeps
//! under `s/d/<id>`. A record whose fields the reference would refuse, or read in a way not ported here
//! (a sketch with spaces in its hex, numbers out of their fields' ranges, text that is not UTF-8), is
//! left to the reference (None), which encodes it or raises its own error.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

const BINARY: u8 = 0x01;
const F_DEGENERATE: u8 = 1;
const F_OWN_CLUSTER: u8 = 2;
const F_STORE_VERSION: u8 = 4;
const F_DUPLICATE_OF: u8 = 8;
const F_PUBLISHED: u8 = 16;
const F_REPLACES: u8 = 32;
const F_RAW_DIGESTS: u8 = 64;

/// The value of a hex digit, or 0xFF for any other byte.
const HEX_VALUE: [u8; 256] = {
    let mut t = [0xFFu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// `bytes.fromhex` of text made only of hex digit pairs (None for anything else).
fn from_hex(text: &str) -> Option<Vec<u8>> {
    let raw = text.as_bytes();
    if !raw.len().is_multiple_of(2) {
        return None;
    }
    let mut out = Vec::with_capacity(raw.len() / 2);
    for pair in raw.chunks_exact(2) {
        let (hi, lo) = (HEX_VALUE[pair[0] as usize], HEX_VALUE[pair[1] as usize]);
        if hi == 0xFF || lo == 0xFF {
            return None;
        }
        out.push(hi << 4 | lo);
    }
    Some(out)
}

/// Whether `text` is lower-case hex digit pairs (the reference's `(?:[0-9a-f]{2})*`).
fn lower_hex_pairs(text: &str) -> bool {
    text.len().is_multiple_of(2) && text.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

fn attr<'py>(rec: &Bound<'py, PyAny>, name: &Bound<'py, PyString>) -> Option<Bound<'py, PyAny>> {
    rec.getattr(name).ok()
}

fn opt_str<'py>(rec: &Bound<'py, PyAny>, name: &Bound<'py, PyString>) -> Option<Option<String>> {
    let v = attr(rec, name)?;
    if v.is_none() {
        Some(None)
    } else {
        Some(Some(v.extract::<String>().ok()?))
    }
}

fn encode(rec: &Bound<'_, PyAny>, store_version: Option<&str>) -> Option<Vec<u8>> {
    let py = rec.py();
    let id: String = attr(rec, intern!(py, "id"))?.extract().ok()?;
    let fingerprint: u64 = attr(rec, intern!(py, "fingerprint"))?.extract().ok()?;
    let content: String = attr(rec, intern!(py, "content_digest"))?.extract().ok()?;
    let keyword: String = attr(rec, intern!(py, "keyword_digest"))?.extract().ok()?;
    let cluster: String = attr(rec, intern!(py, "cluster_id"))?.extract().ok()?;
    let decision: String = attr(rec, intern!(py, "decision"))?.extract().ok()?;
    let duplicate_of = opt_str(rec, intern!(py, "duplicate_of"))?;
    let distance: Option<i64> = attr(rec, intern!(py, "distance"))?.extract().ok()?;
    let degenerate: bool = attr(rec, intern!(py, "degenerate"))?.extract().ok()?;
    let length: i64 = attr(rec, intern!(py, "length"))?.extract().ok()?;
    let published = opt_str(rec, intern!(py, "published_at"))?;
    let version: String = attr(rec, intern!(py, "version"))?.extract().ok()?;
    let time: f64 = attr(rec, intern!(py, "time"))?.extract().ok()?;
    let chunks: Vec<u64> = attr(rec, intern!(py, "chunks"))?.cast_into::<PyList>().ok()?.extract().ok()?;
    let sketch = attr(rec, intern!(py, "sketch"))?.cast_into::<PyString>().ok()?;
    let sketch = sketch.to_str().ok()?;
    let facts: Vec<Bound<'_, PyString>> = attr(rec, intern!(py, "facts"))?
        .cast_into::<PyList>()
        .ok()?
        .iter()
        .map(|f| f.cast_into::<PyString>().ok())
        .collect::<Option<_>>()?;
    let facts: Vec<&str> = facts.iter().map(|f| f.to_str().ok()).collect::<Option<_>>()?;
    let frames: Vec<u64> = attr(rec, intern!(py, "frames"))?.cast_into::<PyList>().ok()?.extract().ok()?;
    let replaces = opt_str(rec, intern!(py, "replaces"))?;

    let distance = match distance {
        None => -1,
        Some(d) => i8::try_from(d).ok()?,
    };
    let raw_digests = lower_hex_pairs(&content) && lower_hex_pairs(&keyword);
    let mut flags = 0u8;
    flags |= if degenerate { F_DEGENERATE } else { 0 };
    flags |= if cluster == id { F_OWN_CLUSTER } else { 0 };
    flags |= if store_version == Some(version.as_str()) { F_STORE_VERSION } else { 0 };
    flags |= if duplicate_of.is_some() { F_DUPLICATE_OF } else { 0 };
    flags |= if published.is_some() { F_PUBLISHED } else { 0 };
    flags |= if replaces.is_some() { F_REPLACES } else { 0 };
    flags |= if raw_digests { F_RAW_DIGESTS } else { 0 };
    let sketch = from_hex(sketch)?;
    let count = |n: usize| u16::try_from(n).ok();

    let digests: [Vec<u8>; 2] = if raw_digests {
        [from_hex(&content)?, from_hex(&keyword)?]
    } else {
        [content.into_bytes(), keyword.into_bytes()]
    };
    let mut strings: Vec<&[u8]> = Vec::with_capacity(8 + facts.len());
    strings.extend([&digests[0][..], &digests[1][..], decision.as_bytes()]);
    if flags & F_OWN_CLUSTER == 0 {
        strings.push(cluster.as_bytes());
    }
    if flags & F_STORE_VERSION == 0 {
        strings.push(version.as_bytes());
    }
    for s in [&duplicate_of, &published, &replaces].into_iter().flatten() {
        strings.push(s.as_bytes());
    }
    strings.extend(facts.iter().map(|f| f.as_bytes()));

    // the exact size: the fixed head, four counts, the numbers, the sketch, a length and the bytes of
    // each string (a record is built once, so no byte of it is copied again)
    let size = 27 + 8 + 8 * (chunks.len() + frames.len()) + sketch.len()
        + strings.iter().map(|s| 2 + s.len()).sum::<usize>();
    let mut out = Vec::with_capacity(size);
    out.push(BINARY);
    out.extend_from_slice(&fingerprint.to_le_bytes());
    out.extend_from_slice(&time.to_le_bytes());
    out.extend_from_slice(&length.to_le_bytes());
    out.push(distance as u8);
    out.push(flags);
    for n in [chunks.len(), frames.len(), facts.len(), sketch.len()] {
        out.extend_from_slice(&count(n)?.to_le_bytes());
    }
    for v in chunks.iter().chain(&frames) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&sketch);
    for s in &strings {
        out.extend_from_slice(&count(s.len())?.to_le_bytes());
    }
    for s in &strings {
        out.extend_from_slice(s);
    }
    debug_assert_eq!(out.len(), size);
    Some(out)
}

/// `rec.to_bytes(store_version)` of a `DocRecord`, or None where the reference must encode it.
#[pyfunction]
#[pyo3(signature = (rec, store_version = None))]
pub fn encode_record<'py>(rec: &Bound<'py, PyAny>, store_version: Option<&str>) -> Option<Bound<'py, PyBytes>> {
    encode(rec, store_version).map(|raw| PyBytes::new(rec.py(), &raw))
}
