//! The compiled fingerprint pass of `fingerprint_indexer`: from stripped text to SimHash fingerprints,
//! weighted terms and the MinHash sketch in one call that holds no Python object and releases the GIL.
//! The Python modules are the reference; `fingerprint/native.py` says where each piece comes from.
//! Also the block tables of the in-memory index (`tables.rs`; `index/memory.py` holds their reference).

mod alloc;
mod blake2b;
mod blocks;
mod bloom;
mod boilerplate;
mod document;
mod es_json;
mod facts;
mod hex;
mod json_plain;
mod pass;
mod pending;
mod record;
mod simhash;
mod sketch;
mod tables;
mod text;
mod title;
mod unicode;
mod verify;
mod weights;
mod winnow;

use std::fs;

use jieba_rs::Jieba;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::document::Plan;
use crate::pass::{run, terms, Lexicon, Settings};

#[global_allocator]
static ALLOCATOR: alloc::Allocator = alloc::Allocator;

/// jieba's IDF format as `IdfTable.parse` reads it: `term value` lines, `#` comments; the default is
/// the median value.
fn read_idf(path: &str) -> PyResult<(FxHashMap<String, f64>, f64)> {
    let raw = fs::read_to_string(path).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))?;
    let mut idf = FxHashMap::with_capacity_and_hasher(raw.len() / 12, Default::default());
    for (n, line) in raw.lines().enumerate() {
        let line = line.trim_matches(text::py_isspace);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (term, value) = line.rsplit_once(' ').unwrap_or(("", line));
        let v: f64 = value.parse().map_err(|_| PyValueError::new_err(format!("{path}:{}: bad line", n + 1)))?;
        idf.insert(term.to_owned(), v);
    }
    let mut values: Vec<f64> = idf.values().copied().collect();
    values.sort_by(|a, b| a.partial_cmp(b).expect("numbers"));
    let default = values.get(values.len() / 2).copied().unwrap_or(1.0);
    Ok((idf, default))
}

/// jieba's dictionary words in two sets (`facts._read_dictionary`): those not tagged as a person, place
/// or organisation, and those tagged so (a title's names); a word is one when any of its lines tags it.
/// One reading for both.
fn read_dictionary(path: &str) -> PyResult<(FxHashSet<String>, FxHashSet<Box<str>>)> {
    let raw = fs::read_to_string(path).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))?;
    let mut tagged: FxHashMap<&str, bool> = FxHashMap::with_capacity_and_hasher(raw.len() / 12, Default::default());
    for line in raw.split('\n') {
        let mut parts = line.split(text::py_isspace).filter(|p| !p.is_empty());
        if let Some(word) = parts.next() {
            let rest: [Option<&str>; 3] = [parts.next(), parts.next(), parts.next()];
            let name = matches!(rest, [Some(_), Some("nr" | "nrfg" | "nrt" | "ns" | "nt"), None]);
            let e = tagged.entry(word).or_insert(false);
            *e = *e || name;
        }
    }
    let (mut common, mut proper) = (FxHashSet::default(), FxHashSet::default());
    for (word, name) in tagged {
        if name {
            proper.insert(word.into());
        } else {
            common.insert(word.to_owned());
        }
    }
    Ok((common, proper))
}

/// One configuration's loaded tables and segmenter.
#[pyclass(frozen, module = "fingerprint_indexer.fingerprint._core")]
struct Core {
    jieba: Jieba,
    settings: Settings,
    /// the words jieba's dictionary tags as proper nouns (what a title's names are)
    proper: FxHashSet<Box<str>>,
}

#[pymethods]
impl Core {
    #[new]
    #[pyo3(signature = (*, variants, stopwords, synonyms, min_len, idf_path, dict_path, top_k, tf_power,
        max_share, chunk_every, max_chunks, lead_sentences, sketch_size, min_features, min_chunk_terms,
        min_chunk_sentences, max_sentence))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>, variants: Vec<String>, stopwords: FxHashSet<String>, synonyms: FxHashMap<String, String>,
        min_len: usize, idf_path: String, dict_path: String, top_k: usize, tf_power: f64, max_share: f64,
        chunk_every: usize, max_chunks: usize, lead_sentences: usize, sketch_size: usize, min_features: usize,
        min_chunk_terms: usize, min_chunk_sentences: usize, max_sentence: usize,
    ) -> PyResult<Self> {
        py.detach(|| {
            // the segmenter's dictionary and the two tables are read at once: start-up counts
            let (jieba, idf, dictionary) = std::thread::scope(|scope| {
                let idf = scope.spawn(|| read_idf(&idf_path));
                let dictionary = scope.spawn(|| read_dictionary(&dict_path));
                let mut jieba = Jieba::new();
                for v in &variants {
                    jieba.add_word(v, Some(100000), None);
                }
                (jieba, idf.join().expect("the IDF reader"), dictionary.join().expect("the dictionary reader"))
            });
            let (idf, idf_default) = idf?;
            let (common, proper) = dictionary?;
            let idf_len = idf.len();
            let mut lexicon = Lexicon::with_capacity(idf.len() + common.len());
            for (term, v) in idf {
                lexicon.set(term, Some(v));
            }
            for term in common {
                lexicon.set(term, None);
            }
            Ok(Core {
                jieba,
                proper,
                settings: Settings {
                    stopwords, synonyms, min_len, lexicon, idf_len, idf_default, top_k, tf_power, max_share,
                    chunk_every, max_chunks, lead_sentences, sketch_size, min_features, min_chunk_terms,
                    min_chunk_sentences, max_sentence,
                },
            })
        })
    }

    /// The pass over normalised `text` (`cased`: the same before lower-casing), its page furniture
    /// stripped first when `strip`: `(body, fingerprint, chunks, top_terms, n_tokens, n_terms, sketch,
    /// names, facts)`, or None where the reference must run. `facts`: with `facts` set, `(facts,
    /// frames)` of the body (`cased` and its `lower`-casing give the Latin-script names), or None where
    /// the reference's facts must run.
    #[pyo3(signature = (text, cased = "", strip = true, *, facts = false, lower = "", max_facts = 64,
                        max_frames = 64))]
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn fold<'py>(
        &self, py: Python<'py>, text: &str, cased: &str, strip: bool, facts: bool, lower: &str,
        max_facts: usize, max_frames: usize,
    ) -> Option<Bound<'py, PyTuple>> {
        let (body, flat) = py.detach(|| {
            let body = if strip { boilerplate::strip_boilerplate(text, cased)? } else { text.to_owned() };
            let flat = pass::flatten(&body);
            Some((body, flat))
        })?;
        let (got, analysed) = py.detach(|| {
            let got = run(&self.jieba, &self.settings, &body, &flat)?;
            let analysed = if facts {
                facts::body_facts(&body, &got.names, cased, lower, &self.settings.stopwords, max_facts, max_frames)
            } else {
                None
            };
            Some((got, analysed))
        })?;
        // the names are read only where the reference's facts run
        let names: &[&str] = if analysed.is_some() { &[] } else { &got.names };
        let analysed = analysed.as_ref().map(|(found, frames)| (found.iter().collect::<Vec<&str>>(), frames));
        (body, got.fingerprint, got.chunks, got.top_terms, got.n_tokens, got.n_terms,
         PyBytes::new(py, &got.sketch), names, analysed).into_pyobject(py).ok()
    }

    /// `Fingerprinter.fingerprint_document` of a document's `raw` text (its HTML already made text), its
    /// `title` and `published_at`, in one call, under the configuration's `plan`: `(fingerprint, blocks,
    /// content_digest, keyword_digest, top_terms, degenerate, n_tokens, chunks, sketch, facts, frames,
    /// (day_read, headline))`, the fields of a `FingerprintResult` (`chunks`, `facts` and `frames` as
    /// tuples); `headline` is the title normalised, or None when there is none or it is the text.
    /// When the plan takes facts, `facts` holds the body's, then the title's (`title_facts`, unless
    /// the title is the text) and the publication day when `day_read` (else the caller reads
    /// `published_at`). None where the reference or the separate steps must run (and for an empty text).
    #[pyo3(signature = (raw, title, published_at, plan))]
    fn document<'py>(
        &self, py: Python<'py>, raw: &str, title: Option<&str>, published_at: Option<&str>, plan: &Bound<'py, Plan>,
    ) -> Option<Bound<'py, PyTuple>> {
        let plan = plan.get();
        let done = py.detach(|| self.compute(raw, title.unwrap_or(""), published_at, plan))?;
        done.into_tuple(py)
    }

    /// [`Core::document`] of each `(raw, title, published_at)` of `items`, in order: the compiled work of
    /// all of them in one release of the GIL, then their results (so threads fingerprinting chunks take
    /// and give the GIL once a chunk, not twice a document).
    #[allow(clippy::type_complexity)]
    fn documents<'py>(
        &self, py: Python<'py>,
        items: Vec<(Bound<'py, PyString>, Option<Bound<'py, PyString>>, Option<Bound<'py, PyString>>)>,
        plan: &Bound<'py, Plan>,
    ) -> PyResult<Vec<Option<Bound<'py, PyTuple>>>> {
        let plan = plan.get();
        // the texts as the strings' own UTF-8, which lives as long as `items`
        let texts = items
            .iter()
            .map(|(raw, title, at)| {
                Ok((raw.to_str()?, title.as_ref().map(|t| t.to_str()).transpose()?.unwrap_or(""),
                    at.as_ref().map(|a| a.to_str()).transpose()?))
            })
            .collect::<PyResult<Vec<(&str, &str, Option<&str>)>>>()?;
        let done: Vec<Option<Computed>> =
            py.detach(|| texts.iter().map(|&(raw, title, at)| self.compute(raw, title, at, plan)).collect());
        Ok(done.into_iter().map(|d| d.and_then(|d| d.into_tuple(py))).collect())
    }

    /// `title_facts(title, terms(title), latin_names(raw))` of `fingerprint/facts.py`, where `title` is
    /// `raw` normalised (the facts `fingerprint_document` gives a title that is not its text), or None
    /// where the reference must run (for the equality checks).
    fn title_facts(&self, py: Python<'_>, raw: &str) -> Option<Vec<String>> {
        py.detach(|| {
            let normal = text::normalize(raw, true)?;
            let names = terms(&self.jieba, &self.settings, &normal);
            title::title_facts(&normal, &names, &title::latin_names(raw), &self.proper)
        })
    }

    /// `Tokenizer.terms(text)`: the content terms of a short text (a title).
    fn terms(&self, py: Python<'_>, text: &str) -> Vec<String> {
        py.detach(|| terms(&self.jieba, &self.settings, text))
    }

    /// The segmenter's tokens of `text` (as `rjieba.cut(text)`), for the equality checks.
    fn cut(&self, py: Python<'_>, text: &str) -> Vec<String> {
        py.detach(|| self.jieba.cut(text, true).into_iter().map(|t| t.word.to_owned()).collect())
    }

    /// `sentence_spans` of `text` as character offsets (the reference's), for the equality checks.
    fn sentence_spans(&self, text: &str) -> Option<Vec<(usize, usize)>> {
        let spans = text::sentence_spans(text, self.settings.max_sentence)?;
        let chars = |b: usize| text[..b].chars().count();
        Some(spans.into_iter().map(|(a, b)| (chars(a), chars(b))).collect())
    }

    /// The IDF table's size and default, for the equality checks.
    fn idf_summary(&self) -> (usize, f64) {
        (self.settings.idf_len, self.settings.idf_default)
    }

    /// `marked(text, tokenizer, WinnowParams(k, g)).to_bytes()` of `fingerprint/winnow.py` (copy marks
    /// of the text as given; `max_stored`: `MAX_STORED_BLOCKS`, `slice_chars`: `CHUNK_CHARS`), or None
    /// where the reference must run.
    fn marks<'py>(
        &self, py: Python<'py>, text: &str, k: usize, g: usize, max_stored: usize, slice_chars: usize,
    ) -> Option<Bound<'py, PyBytes>> {
        let params = winnow::Params { k, g, max_stored, slice_chars };
        let got = py.detach(|| winnow::marked(&self.jieba, &self.settings, text, &params))?;
        Some(PyBytes::new(py, &got))
    }
}

impl Core {
    /// The compiled work of [`Core::document`], without the GIL: None where the reference or the
    /// separate steps must run (and for an empty text).
    fn compute(&self, raw: &str, title: &str, published_at: Option<&str>, plan: &Plan) -> Option<Computed> {
        let facts = plan.facts;
        let cased = text::normalize(raw, false)?;
        if cased.is_empty() {
            return None;
        }
        let lower = text::to_lowercase(&cased);
        // the headline, normalised, unless it is the text (a headline-only document)
        let normal = if title.is_empty() { String::new() } else { text::normalize(title, true)? };
        let headline = (!normal.is_empty() && normal != lower).then_some(normal);
        // the title's facts first: where they must come from the reference, no pass is wasted
        let mut extra: Vec<String> = Vec::new();
        if let (true, Some(normal)) = (facts, &headline) {
            let names = terms(&self.jieba, &self.settings, normal);
            extra = title::title_facts(normal, &names, &title::latin_names(title), &self.proper)?;
        }
        let day = if facts { published_at.map(title::publication_day) } else { None };
        let day_read = day.is_none() || matches!(day, Some(Some(_)));
        extra.extend(day.flatten().flatten());
        let body = if plan.strip { boilerplate::strip_boilerplate(&lower, &cased)? } else { lower.clone() };
        let flat = pass::flatten(&body);
        let got = run(&self.jieba, &self.settings, &body, &flat)?;
        let (found, frames) = if facts {
            facts::body_facts(&body, &got.names, &cased, &lower, &self.settings.stopwords, plan.max_facts,
                              plan.max_frames)?
        } else {
            Default::default()
        };
        let compact = text::without_space(&lower);
        let digests = (document::content_digest(&compact), plan.keyword_digest(&got.top_terms));
        Some(Computed {
            fingerprint: got.fingerprint, blocks: plan.keys(got.fingerprint), digests,
            top_terms: document::Terms::pack(&got.top_terms), degenerate: got.n_terms < plan.min_features,
            n_tokens: got.n_tokens, chunks: got.chunks, sketch: got.sketch, found, extra, frames, day_read,
            headline,
        })
    }
}

/// What [`Core::document`] computes for one document, before its Python objects are made.
struct Computed {
    fingerprint: u64,
    blocks: Vec<String>,
    digests: (String, String),
    top_terms: document::Terms,
    degenerate: bool,
    n_tokens: i64,
    chunks: Vec<u64>,
    sketch: Vec<u8>,
    found: facts::Facts,
    extra: Vec<String>,
    frames: Vec<u64>,
    day_read: bool,
    headline: Option<String>,
}

impl Computed {
    /// The tuple [`Core::document`] gives (the fields of a `FingerprintResult`, then `(day_read,
    /// headline)`); the top terms' Python objects are made only when they are read.
    fn into_tuple(self, py: Python<'_>) -> Option<Bound<'_, PyTuple>> {
        let facts = self.found.iter().chain(self.extra.iter().map(String::as_str)).collect::<Vec<&str>>();
        (self.fingerprint, self.blocks, self.digests.0, self.digests.1, Py::new(py, self.top_terms).ok()?,
         self.degenerate, self.n_tokens, PyTuple::new(py, self.chunks).ok()?, PyBytes::new(py, &self.sketch),
         PyTuple::new(py, facts).ok()?, PyTuple::new(py, self.frames).ok()?, (self.day_read, self.headline))
            .into_pyobject(py)
            .ok()
    }
}

/// `normalize(text, lower)` of `text/clean.py`, or None where the reference must run.
#[pyfunction]
#[pyo3(signature = (text, lower = true))]
fn normalize(py: Python<'_>, text: &str, lower: bool) -> Option<String> {
    py.detach(|| text::normalize(text, lower))
}

/// Give the boilerplate stripper the furniture markers of `text/boilerplate.py` (once per process);
/// False when it already has other ones.
#[pyfunction]
fn set_boilerplate_markers(markers: Vec<String>, line_markers: Vec<String>) -> bool {
    boilerplate::set_markers(&markers, &line_markers)
}

/// `strip_boilerplate(text, cased)` of `text/boilerplate.py`, or None where the reference must run.
#[pyfunction]
#[pyo3(signature = (text, cased = ""))]
fn strip_boilerplate(py: Python<'_>, text: &str, cased: &str) -> Option<String> {
    py.detach(|| boilerplate::strip_boilerplate(text, cased))
}

/// The band keys of a sketch (`fingerprint.sketch._band_keys`): for each of `bands` bands of `rows`
/// minima, its number in hex and the xxh3 of its bytes in 16 hex digits; none for a sketch too short to
/// band or whose banded minima are all empty (0xFFFFFFFF).
#[pyfunction]
pub fn band_keys(data: &[u8], bands: usize, rows: usize) -> Vec<String> {
    let mut text = [0u8; BAND_KEY_MAX];
    band_hashes(data, bands, rows).map(|(i, hash)| band_key(i, hash, &mut text).to_owned()).collect()
}

/// [`band_keys`] before they are written: each band's number and the xxh3 of its bytes (none for a
/// sketch too short to band or whose banded minima are all empty).
pub fn band_hashes(data: &[u8], bands: usize, rows: usize) -> impl Iterator<Item = (usize, u64)> + '_ {
    let width = 4 * rows;
    let banded = data.len() >= bands * width && !data[..bands * width].iter().all(|&b| b == 0xFF);
    (0..if banded { bands } else { 0 })
        .map(move |i| (i, xxhash_rust::xxh3::xxh3_64(&data[i * width..(i + 1) * width])))
}

/// The longest band key: a band number of 16 hex digits, then the hash's 16.
pub const BAND_KEY_MAX: usize = 32;

/// Band `i`'s key of `hash` written in `text` (what `format!("{i:x}{hash:016x}")` gives): the band's
/// number in hex without leading zeros, then the hash in 16 hex digits.
pub fn band_key(i: usize, hash: u64, text: &mut [u8; BAND_KEY_MAX]) -> &str {
    let number = blocks::hex16(i as u64);
    let skip = number.iter().take(15).take_while(|&&c| c == b'0').count();
    let n = 16 - skip;
    text[..n].copy_from_slice(&number[skip..]);
    text[n..n + 16].copy_from_slice(&blocks::hex16(hash));
    // SAFETY: every byte written is an ASCII hex digit
    unsafe { std::str::from_utf8_unchecked(&text[..n + 16]) }
}

/// Whether orjson reads the JSON text `raw` as the standard library does (`json_plain.rs`; the proxy's
/// `read_json` reads the others the reference's way).
#[pyfunction]
fn plain_json(raw: &[u8]) -> bool {
    json_plain::plain(raw)
}

/// The MinHash sketch of `text` (`fingerprint.sketch.sketch`, as bytes).
#[pyfunction]
fn sketch_bytes<'py>(py: Python<'py>, text: &str, size: usize) -> Bound<'py, PyBytes> {
    let got = py.detach(|| sketch::sketch(text, size));
    PyBytes::new(py, &got)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Core>()?;
    m.add_class::<Plan>()?;
    m.add_class::<document::Terms>()?;
    m.add_function(wrap_pyfunction!(document::terms_from_packed, m)?)?;
    m.add_class::<tables::BlockTables>()?;
    m.add_class::<pending::PendingSet>()?;
    m.add_function(wrap_pyfunction!(tables::near_pairs_py, m)?)?;
    m.add_function(wrap_pyfunction!(sketch_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(plain_json, m)?)?;
    m.add_function(wrap_pyfunction!(band_keys, m)?)?;
    m.add_class::<blocks::BlockKeys>()?;
    m.add_class::<es_json::EsKeyJson>()?;
    m.add_class::<es_json::EsSourceJson>()?;
    m.add_function(wrap_pyfunction!(bloom::bloom_test, m)?)?;
    m.add_function(wrap_pyfunction!(bloom::bloom_test_many, m)?)?;
    m.add_function(wrap_pyfunction!(bloom::bloom_fill, m)?)?;
    m.add_function(wrap_pyfunction!(record::encode_record, m)?)?;
    m.add_function(wrap_pyfunction!(record::decode_record, m)?)?;
    m.add_function(wrap_pyfunction!(strip_boilerplate, m)?)?;
    m.add_function(wrap_pyfunction!(set_boilerplate_markers, m)?)?;
    m.add_function(wrap_pyfunction!(normalize, m)?)?;
    facts::register(m)?;
    title::register(m)?;
    verify::register(m)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn band_keys_are_the_formatted_number_and_hash() {
        let mut text = [0u8; super::BAND_KEY_MAX];
        let mut h = 0x0123_4567_89ab_cdefu64;
        for i in [0usize, 1, 9, 10, 15, 16, 255, 4096, usize::MAX] {
            for _ in 0..10 {
                assert_eq!(super::band_key(i, h, &mut text), format!("{i:x}{h:016x}"));
                h = h.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            }
            assert_eq!(super::band_key(i, 0, &mut text), format!("{i:x}{:016x}", 0));
        }
    }
}
