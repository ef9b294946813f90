//! One document's pass from stripped text to its fingerprints: sentences, one segmentation, the kept
//! terms, per-row counts (document, lead, chunks), weights, SimHash folds and the sketch. The Python
//! modules it ports are the reference: `Fingerprinter._count` / `fingerprint_text`,
//! `TermTable.text_ids` / `sentence_ids`, `Tokenizer.keep`, `_chunks`.

use std::collections::{BinaryHeap, HashMap, HashSet};

use rustc_hash::{FxHashMap, FxHashSet};
use std::cmp::Reverse;

use jieba_rs::Jieba;
use xxhash_rust::xxh3::xxh3_64;

use crate::simhash::fold;
use crate::sketch::sketch;
use crate::text::{all_cjk, has_cjk, latin_words, sentence_spans};
use crate::weights::weigh_row;

/// Everything that decides a pass (a `FingerprintConfig` and its tokenizer's lists).
pub struct Settings {
    pub stopwords: HashSet<String>,
    pub synonyms: HashMap<String, String>,
    pub min_len: usize,
    pub idf: FxHashMap<String, f64>,
    pub idf_default: f64,
    /// jieba's dictionary words not tagged as proper nouns (the other Han terms count as names)
    pub common: FxHashSet<String>,
    pub top_k: usize,
    pub tf_power: f64,
    pub max_share: f64,
    pub chunk_every: usize,
    pub max_chunks: usize,
    pub lead_sentences: usize,
    pub sketch_size: usize,
    pub min_features: usize,
    pub min_chunk_terms: usize,
    pub min_chunk_sentences: usize,
    pub max_sentence: usize,
}

/// What the pass gives a `FingerprintResult` (facts aside).
pub struct Folded {
    pub fingerprint: u64,
    pub chunks: Vec<u64>,
    pub top_terms: Vec<(String, f64)>,
    pub n_tokens: i64,
    pub n_terms: usize,
    pub sketch: Vec<u8>,
    pub names: Vec<String>,
}

/// A document's kept tokens as ids into its own distinct terms.
struct Tokens<'s> {
    terms: Vec<String>,
    ids: FxHashMap<String, u32>,
    segmented: FxHashMap<&'s str, Option<u32>>,
    latin: FxHashMap<&'s str, Option<u32>>,
}

impl<'s> Tokens<'s> {
    fn new() -> Self {
        Tokens { terms: Vec::new(), ids: FxHashMap::default(), segmented: FxHashMap::default(),
                 latin: FxHashMap::default() }
    }

    /// `Tokenizer.keep` then the term's id: None when the token does not count.
    fn id(&mut self, s: &Settings, token: &'s str, segmented: bool) -> Option<u32> {
        let table = if segmented { &self.segmented } else { &self.latin };
        if let Some(&got) = table.get(token) {
            return got;
        }
        let kept = if segmented && !all_cjk(token) {
            None
        } else if token.chars().count() < s.min_len || s.stopwords.contains(token) {
            None
        } else {
            Some(s.synonyms.get(token).map_or(token, String::as_str))
        };
        let got = kept.map(|term| match self.ids.get(term) {
            Some(&i) => i,
            None => {
                let i = self.terms.len() as u32;
                self.terms.push(term.to_owned());
                self.ids.insert(term.to_owned(), i);
                i
            }
        });
        if segmented { self.segmented.insert(token, got) } else { self.latin.insert(token, got) };
        got
    }
}

/// `Tokenizer.terms`: the content terms of a short text, the segmenter's then the Latin words.
pub fn terms(jieba: &Jieba, s: &Settings, text: &str) -> Vec<String> {
    let mut toks = Tokens::new();
    let mut out = Vec::new();
    if has_cjk(text) {
        for t in jieba.cut(text, true) {
            if let Some(i) = toks.id(s, t.word, true) {
                out.push(toks.terms[i as usize].clone());
            }
        }
    }
    let mut words = Vec::new();
    latin_words(text, 0, text.len(), &mut words);
    for &(a, b) in &words {
        if let Some(i) = toks.id(s, &text[a..b], false) {
            out.push(toks.terms[i as usize].clone());
        }
    }
    out
}

/// The kept term ids of each sentence, concatenated, and where each sentence ends in them: from one
/// segmentation of the whole text when no kept token straddles a sentence's edge (`text_ids`), else
/// one per sentence (`sentence_ids`).
fn sentence_ids<'s>(
    jieba: &Jieba, s: &Settings, text: &'s str, spans: &[(usize, usize)], toks: &mut Tokens<'s>,
) -> (Vec<u32>, Vec<usize>) {
    if let Some(got) = whole_text_ids(jieba, s, text, spans, toks) {
        return got;
    }
    let mut flat = Vec::new();
    let mut ends = Vec::with_capacity(spans.len());
    let mut words = Vec::new();
    for &(a, b) in spans {
        let sent = &text[a..b];
        if has_cjk(sent) {
            for t in jieba.cut(sent, true) {
                flat.extend(toks.id(s, t.word, true));
            }
        }
        words.clear();
        latin_words(text, a, b, &mut words);
        for &(x, y) in &words {
            flat.extend(toks.id(s, &text[x..y], false));
        }
        ends.push(flat.len());
    }
    (flat, ends)
}

fn whole_text_ids<'s>(
    jieba: &Jieba, s: &Settings, text: &'s str, spans: &[(usize, usize)], toks: &mut Tokens<'s>,
) -> Option<(Vec<u32>, Vec<usize>)> {
    let mut per: Vec<Vec<u32>> = vec![Vec::new(); spans.len()];
    if has_cjk(text) {
        let cut = jieba.cut(text, true);
        let mut at = 0;
        for t in &cut {
            if t.byte_start != at {
                return None; // the tokens do not spell out the text
            }
            at = t.byte_end;
        }
        if at != text.len() {
            return None;
        }
        for t in cut {
            let Some(id) = toks.id(s, t.word, true) else { continue };
            let i = spans.partition_point(|&(a, _)| a <= t.byte_start);
            if i == 0 || t.byte_end > spans[i - 1].1 {
                return None;
            }
            per[i - 1].push(id);
        }
    }
    let mut words = Vec::new();
    let mut flat = Vec::new();
    let mut ends = Vec::with_capacity(spans.len());
    for (&(a, b), ids) in spans.iter().zip(per) {
        flat.extend(ids);
        words.clear();
        latin_words(text, a, b, &mut words);
        for &(x, y) in &words {
            flat.extend(toks.id(s, &text[x..y], false));
        }
        ends.push(flat.len());
    }
    Some((flat, ends))
}

/// The lead fingerprint first, then the chunks' in text order, distinct, at most `max_chunks` (beyond
/// it those of the largest selection key), as `Fingerprinter._chunks`.
fn select_chunks(folded: &[Option<u64>], lead: Option<u64>, max_chunks: usize) -> Vec<u64> {
    let mut order: HashMap<u64, usize> = HashMap::new();
    let mut kept: BinaryHeap<Reverse<(i128, u64)>> = BinaryHeap::new();
    for fp in folded.iter().flatten() {
        if order.contains_key(fp) {
            continue;
        }
        order.insert(*fp, order.len());
        let item = (-(fp.wrapping_mul(0x9E3779B97F4A7C15) as i128), *fp);
        if kept.len() < max_chunks {
            kept.push(Reverse(item));
        } else if let Some(Reverse(low)) = kept.peek() {
            if item > *low {
                kept.pop();
                kept.push(Reverse(item));
            }
        }
    }
    let mut chunks: Vec<u64> = kept.into_iter().map(|Reverse((_, fp))| fp).collect();
    chunks.sort_by_key(|fp| order[fp]);
    match lead {
        None => chunks,
        Some(l) => std::iter::once(l).chain(chunks.into_iter().filter(|&c| c != l)).collect(),
    }
}

/// The pass over `body` (normalised, stripped text); None where the reference takes a path this does
/// not (no sentence, or a sentence longer than `max_sentence`): the caller runs the reference then.
pub fn run(jieba: &Jieba, s: &Settings, body: &str) -> Option<Folded> {
    if s.chunk_every == 0 && s.lead_sentences == 0 {
        return None;
    }
    let flat_body = body.replace('\n', " ");
    let spans = sentence_spans(&flat_body, s.max_sentence)?;
    if spans.is_empty() {
        return None;
    }
    let mut toks = Tokens::new();
    let (flat, ends) = sentence_ids(jieba, s, &flat_body, &spans, &mut toks);

    // columns: the document's distinct terms in the order of their strings
    let prefix = |t: &str| {
        let mut p = [0u8; 8];
        let n = t.len().min(8);
        p[..n].copy_from_slice(&t.as_bytes()[..n]);
        u64::from_be_bytes(p)
    };
    let prefixes: Vec<u64> = toks.terms.iter().map(|t| prefix(t)).collect();
    let mut by_term: Vec<u32> = (0..toks.terms.len() as u32).collect();
    // byte order is code-point order (Python's); the first eight bytes decide most comparisons
    by_term.sort_unstable_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        prefixes[a].cmp(&prefixes[b]).then_with(|| toks.terms[a].cmp(&toks.terms[b]))
    });
    let width = by_term.len();
    let mut column = vec![0usize; width];
    for (col, &id) in by_term.iter().enumerate() {
        column[id as usize] = col;
    }
    let cols: Vec<usize> = flat.iter().map(|&id| column[id as usize]).collect();
    let terms: Vec<&str> = by_term.iter().map(|&id| toks.terms[id as usize].as_str()).collect();
    let idf: Vec<f64> = terms.iter().map(|t| *s.idf.get(*t).unwrap_or(&s.idf_default)).collect();
    let hashes: Vec<u64> = terms.iter().map(|t| xxh3_64(t.as_bytes())).collect();

    // rows: the document, then the lead and each chunk as token ranges
    let n_sent = spans.len();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    if s.lead_sentences > 0 {
        ranges.push((0, ends[s.lead_sentences.min(n_sent) - 1]));
    }
    let has_lead = !ranges.is_empty();
    if s.chunk_every > 0 && s.max_chunks > 0 {
        let (mut start, mut in_chunk) = (0usize, 0usize);
        for (&(a, b), &end) in spans.iter().zip(&ends) {
            in_chunk += 1;
            if in_chunk >= s.min_chunk_sentences
                && xxh3_64(flat_body[a..b].as_bytes()) % s.chunk_every as u64 == 0
            {
                ranges.push((start, end));
                start = end;
                in_chunk = 0;
            }
        }
        if in_chunk > 0 {
            ranges.push((start, *ends.last().expect("a sentence")));
        }
    }
    let mut doc_counts = vec![0i64; width];
    for &c in &cols {
        doc_counts[c] += 1;
    }
    let fold_row = |counts: &[i64]| -> (Vec<usize>, Vec<f64>, u64) {
        let (order, weights) = weigh_row(counts, &idf, s.top_k, s.tf_power, s.max_share);
        let hs: Vec<u64> = order.iter().map(|&j| hashes[j]).collect();
        let fp = fold(&hs, &weights);
        (order, weights, fp)
    };
    let (order, weights, fingerprint) = fold_row(&doc_counts);
    let mut folded: Vec<Option<u64>> = Vec::with_capacity(ranges.len());
    let mut row = vec![0i64; width];
    for &(a, b) in &ranges {
        row.iter_mut().for_each(|x| *x = 0);
        for &c in &cols[a..b] {
            row[c] += 1;
        }
        let distinct = row.iter().filter(|&&x| x != 0).count();
        folded.push(if distinct >= s.min_chunk_terms { Some(fold_row(&row).2) } else { None });
    }
    let chunks = if has_lead {
        select_chunks(&folded[1..], folded[0], s.max_chunks)
    } else {
        select_chunks(&folded, None, s.max_chunks)
    };
    let degenerate = width < s.min_features;
    let names = terms
        .iter()
        .filter(|t| t.chars().count() >= 2 && all_cjk(t) && !s.common.contains(**t))
        .map(|t| (*t).to_owned())
        .collect();
    Some(Folded {
        fingerprint,
        chunks: if degenerate { Vec::new() } else { chunks.into_iter().filter(|&c| c != fingerprint).collect() },
        top_terms: order.iter().zip(&weights).map(|(&j, &w)| (terms[j].to_owned(), w)).collect(),
        n_tokens: doc_counts.iter().sum(),
        n_terms: width,
        sketch: sketch(body, s.sketch_size),
        names,
    })
}
