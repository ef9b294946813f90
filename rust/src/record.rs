//! `DocRecord.to_bytes` and `from_bytes` of `records/record.py` (the reference): the compact form the
//! embedded store keeps under `s/d/<id>`. A record whose fields the reference would refuse, or read in a
//! way not ported here (a sketch with spaces in its hex, numbers out of their fields' ranges, text that is
//! not UTF-8, a damaged record), is left to the reference (None), which encodes or reads it or raises its
//! own error.

use crate::hex::{from_hex, lower_hex_pairs, to_hex};
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

fn encode(rec: &Bound<'_, PyAny>, store_version: Option<&str>, sketch_bytes: Option<&[u8]>) -> Option<Vec<u8>> {
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
    let sketch = match sketch_bytes {
        Some(raw) => raw.to_vec(),
        None => from_hex(attr(rec, intern!(py, "sketch"))?.cast_into::<PyString>().ok()?.to_str().ok()?)?,
    };
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

/// `rec.to_bytes(store_version)` of a `DocRecord`, or None where the reference must encode it. `sketch`:
/// the bytes `rec.sketch` is the hex of, when the caller holds them (the record's hex is then not read).
#[pyfunction]
#[pyo3(signature = (rec, store_version = None, sketch = None))]
pub fn encode_record<'py>(
    rec: &Bound<'py, PyAny>, store_version: Option<&str>, sketch: Option<&[u8]>,
) -> Option<Bound<'py, PyBytes>> {
    encode(rec, store_version, sketch).map(|raw| PyBytes::new(rec.py(), &raw))
}

/// Little-endian readers over a record's bytes: None past its end.
struct Reader<'a> {
    raw: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let part = self.raw.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(part)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }
}

/// The fields of a binary record, or None where the reference must read it (a JSON record, a damaged
/// one, one of the store's version read without it): the reference then reads it or raises its error.
type Decoded<'a> = (
    u64, f64, i64, Option<i64>, bool, Vec<u64>, Vec<u64>, String, String, String, &'a str, Option<&'a str>,
    Option<&'a str>, Option<&'a str>, Option<&'a str>, Option<&'a str>, Vec<&'a str>,
);

fn decode<'a>(raw: &'a [u8], store_version: Option<&'a str>) -> Option<Decoded<'a>> {
    let mut r = Reader { raw, pos: 0 };
    if r.take(1)? != [BINARY] {
        return None;
    }
    let fingerprint = u64::from_le_bytes(r.array()?);
    let time = f64::from_le_bytes(r.array()?);
    let length = i64::from_le_bytes(r.array()?);
    let distance = i8::from_le_bytes(r.array()?);
    let flags = r.take(1)?[0];
    let mut counts = [0usize; 4];
    for c in &mut counts {
        *c = u16::from_le_bytes(r.array()?) as usize;
    }
    let [n_chunks, n_frames, n_facts, n_sketch] = counts;
    let mut nums = Vec::with_capacity(n_chunks + n_frames);
    for _ in 0..n_chunks + n_frames {
        nums.push(u64::from_le_bytes(r.array()?));
    }
    let frames = nums.split_off(n_chunks);
    let sketch = to_hex(r.take(n_sketch)?);
    let n_str = 3
        + usize::from(flags & F_OWN_CLUSTER == 0)
        + usize::from(flags & F_STORE_VERSION == 0)
        + n_facts
        + [F_DUPLICATE_OF, F_PUBLISHED, F_REPLACES].iter().filter(|&&f| flags & f != 0).count();
    let mut lengths = Vec::with_capacity(n_str);
    for _ in 0..n_str {
        lengths.push(u16::from_le_bytes(r.array()?) as usize);
    }
    let mut parts = Vec::with_capacity(n_str);
    for n in lengths {
        parts.push(r.take(n)?);
    }
    if r.pos != raw.len() {
        return None;
    }
    let digest = |part: &[u8]| -> Option<String> {
        if flags & F_RAW_DIGESTS != 0 {
            Some(to_hex(part))
        } else {
            std::str::from_utf8(part).ok().map(str::to_owned)
        }
    };
    let content = digest(parts[0])?;
    let keyword = digest(parts[1])?;
    let mut strings = parts[2..].iter().map(|p| std::str::from_utf8(p).ok());
    let decision = strings.next()??;
    let cluster = if flags & F_OWN_CLUSTER != 0 { None } else { Some(strings.next()??) };
    let version = if flags & F_STORE_VERSION != 0 { Some(store_version?) } else { Some(strings.next()??) };
    let mut optional = |flag: u8| -> Option<Option<&'a str>> {
        if flags & flag != 0 { strings.next()?.map(Some) } else { Some(None) }
    };
    let duplicate_of = optional(F_DUPLICATE_OF)?;
    let published = optional(F_PUBLISHED)?;
    let replaces = optional(F_REPLACES)?;
    let facts: Vec<&str> = strings.collect::<Option<_>>()?;
    let distance = if distance < 0 { None } else { Some(i64::from(distance)) };
    Some((
        fingerprint, time, length, distance, flags & F_DEGENERATE != 0, nums, frames, sketch, content, keyword,
        decision, cluster, version, duplicate_of, published, replaces, facts,
    ))
}

/// `DocRecord.from_bytes_reference`'s reading of a binary record, as a tuple: fingerprint, time, length,
/// distance, degenerate, chunks, frames, sketch (hex), content digest, keyword digest, decision, cluster id
/// (None: the record's id), version, duplicate_of, published_at, replaces, facts. None where the
/// reference must read it.
#[pyfunction]
#[pyo3(signature = (raw, store_version = None))]
pub fn decode_record<'py>(
    py: Python<'py>, raw: &[u8], store_version: Option<&str>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(f) = decode(raw, store_version) else {
        return Ok(None);
    };
    let items: [Bound<'py, PyAny>; 17] = [
        f.0.into_pyobject(py)?.into_any(),
        f.1.into_pyobject(py)?.into_any(),
        f.2.into_pyobject(py)?.into_any(),
        f.3.into_pyobject(py)?.into_any(),
        pyo3::types::PyBool::new(py, f.4).to_owned().into_any(),
        PyList::new(py, f.5)?.into_any(),
        PyList::new(py, f.6)?.into_any(),
        PyString::new(py, &f.7).into_any(),
        PyString::new(py, &f.8).into_any(),
        PyString::new(py, &f.9).into_any(),
        PyString::new(py, f.10).into_any(),
        f.11.into_pyobject(py)?.into_any(),
        f.12.into_pyobject(py)?.into_any(),
        f.13.into_pyobject(py)?.into_any(),
        f.14.into_pyobject(py)?.into_any(),
        f.15.into_pyobject(py)?.into_any(),
        PyList::new(py, f.16)?.into_any(),
    ];
    Ok(Some(pyo3::types::PyTuple::new(py, items)?.into_any()))
}
