//! One document's pass from stripped text to its fingerprints: sentences, one segmentation, the kept
//! terms, per-row counts (document, lead, chunks), weights, SimHash folds and the sketch. The Python
//! modules it ports are the reference: `Fingerprinter._count` / `fingerprint_text`,
//! `TermTable.text_ids` / `sentence_ids`, `Tokenizer.keep`, `_chunks`.

use std::collections::{BinaryHeap, HashMap};

use rustc_hash::{FxHashMap, FxHashSet};
use std::cmp::Reverse;

use jieba_rs::Jieba;
use xxhash_rust::xxh3::xxh3_64;

use crate::simhash::fold;
use crate::sketch::sketch;
use crate::text::{all_cjk, has_cjk, latin_words, leading_bytes, sentence_spans};
use crate::weights::{tf_pow, Weighing};

/// Everything that decides a pass (a `FingerprintConfig` and its tokenizer's lists).
pub struct Settings {
    pub stopwords: FxHashSet<String>,
    pub synonyms: FxHashMap<String, String>,
    pub min_len: usize,
    /// the IDF table and jieba's dictionary in one table: a term is looked up once
    pub lexicon: Lexicon,
    /// the entries of the IDF table
    pub idf_len: usize,
    pub idf_default: f64,
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

impl Settings {
    /// `Tokenizer.keep` after the segmenter's own check: the term a token counts as (its synonym's
    /// canonical form), or None for a stopword or a token shorter than `min_len` characters.
    pub fn keep<'a>(&'a self, token: &'a str) -> Option<&'a str> {
        if token.chars().count() < self.min_len {
            return None;
        }
        self.keep_long(token)
    }

    /// [`Settings::keep`] of a token known to have `min_len` characters at least.
    pub fn keep_long<'a>(&'a self, token: &'a str) -> Option<&'a str> {
        if self.stopwords.contains(token) {
            return None;
        }
        Some(self.synonyms.get(token).map_or(token, String::as_str))
    }
}

/// What the tables know of a term: its IDF (None: the default applies) and whether it is one of
/// jieba's dictionary words not tagged as proper nouns (the other Han terms count as names).
#[derive(Clone, Copy, Default)]
pub struct Lexeme {
    pub idf: Option<f64>,
    pub common: bool,
}

/// The terms the tables know, each with its [`Lexeme`]. A term of at most 15 bytes (nearly all) is
/// keyed by its [`short_key`] in an open-addressing table of its own whose slots hold the key and the
/// lexeme: a look-up compares integers and reads no string elsewhere in memory, and the slots of a
/// document's terms can be fetched ahead ([`Lexicon::prefetch`]): a table this large misses the caches
/// once per term, and those misses then overlap instead of following one another.
pub struct Lexicon {
    /// per slot: the key's low and high halves (the high one's two top bits: whether the term is
    /// common and whether it has an IDF; all zero: an empty slot), and the IDF
    slots: Vec<(u64, u64, f64)>,
    /// `64 - log2(slots.len())`: a hash shifted right by it is a slot
    shift: u32,
    /// the slots in use
    used: usize,
    long: FxHashMap<Box<str>, Lexeme>,
}

const COMMON: u64 = 1 << 63;
const HAS_IDF: u64 = 1 << 62;

impl Lexicon {
    /// A lexicon for at most `n` terms.
    pub fn with_capacity(n: usize) -> Self {
        let n_slots = (n + n / 3 + 16).next_power_of_two();
        let slots = vec![(0, 0, 0.0); n_slots];
        Lexicon { slots, shift: 64 - n_slots.trailing_zeros(), used: 0, long: FxHashMap::default() }
    }

    /// The slot of `key`, or the empty slot where it would go.
    #[inline(always)]
    fn slot(&self, key: u128) -> usize {
        let (lo, hi) = (key as u64, (key >> 64) as u64);
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let (a, b, _) = self.slots[i];
            if (a == lo && b & !(COMMON | HAS_IDF) == hi) || (a == 0 && b == 0) {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    #[inline(always)]
    fn home(&self, key: u128) -> usize {
        use std::hash::{BuildHasher, Hasher};
        let mut h = ShortKeys.build_hasher();
        h.write_u128(key);
        (h.finish() >> self.shift) as usize
    }

    /// Record `term`'s IDF (`Some`) or that it is a common word (`None`).
    pub fn set(&mut self, term: String, idf: Option<f64>) {
        let key = short_key(&term, false).filter(|&k| k != 0);
        let Some(key) = key else {
            let l = self.long.entry(term.into_boxed_str()).or_default();
            match idf {
                Some(v) => l.idf = Some(v),
                None => l.common = true,
            }
            return;
        };
        let i = self.slot(key);
        if self.slots[i].1 == 0 {
            // a new term: the table keeps a quarter of its slots empty, so that every probe ends
            assert!(4 * (self.used + 1) <= 3 * self.slots.len(), "more terms than the lexicon was made for");
            self.used += 1;
        }
        let slot = &mut self.slots[i];
        slot.0 = key as u64;
        slot.1 |= (key >> 64) as u64;
        match idf {
            Some(v) => {
                slot.1 |= HAS_IDF;
                slot.2 = v;
            }
            None => slot.1 |= COMMON,
        }
    }

    /// Start fetching the slot of the term whose [`short_key`] is `key`.
    #[inline(always)]
    pub fn prefetch(&self, key: Option<u128>) {
        #[cfg(target_arch = "x86_64")]
        if let Some(key) = key {
            let at = &self.slots[self.home(key)];
            // SAFETY: a prefetch reads nothing and faults on nothing; the address is a slot's
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((at as *const (u64, u64, f64)).cast()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// The entry of `term`, whose [`short_key`] (unsegmented) is `key` when it has one.
    #[inline]
    pub fn get(&self, term: &str, key: Option<u128>) -> Option<Lexeme> {
        match key.filter(|&k| k != 0) {
            Some(key) => {
                let (a, b, idf) = self.slots[self.slot(key)];
                (a != 0 || b != 0).then_some(Lexeme {
                    idf: (b & HAS_IDF != 0).then_some(idf),
                    common: b & COMMON != 0,
                })
            }
            None => self.long.get(term).copied(),
        }
    }
}

/// What the pass gives a `FingerprintResult` (facts aside).
pub struct Folded<'s> {
    pub fingerprint: u64,
    pub chunks: Vec<u64>,
    pub top_terms: Vec<(&'s str, f64)>,
    pub n_tokens: i64,
    pub n_terms: usize,
    pub sketch: Vec<u8>,
    pub names: Vec<&'s str>,
}

/// A document's kept tokens as ids into its own distinct terms (slices of the text or of the
/// synonym table: no copy per term).
struct Tokens<'s> {
    /// the text the tokens are slices of, with at least [`PAD`] bytes after its end (empty when the
    /// tokens come from elsewhere): a token's key is then read from it in one load
    padded: &'s [u8],
    terms: Vec<&'s str>,
    ids: FxHashMap<&'s str, u32>,
    /// what each token seen so far gave, by [`short_key`] (most tokens are short)
    short: HashMap<u128, Option<u32>, ShortKeys>,
    segmented: FxHashMap<&'s str, Option<u32>>,
    latin: FxHashMap<&'s str, Option<u32>>,
}

/// The hasher of [`short_key`]s: the high half of the product of the key's halves, folded onto the low.
/// FxHash lets a table's slot depend on the first bytes alone (a product's low bits depend only on
/// its factors' low bits), so the many words that share their first characters would share slots.
#[derive(Clone, Copy, Default)]
pub struct ShortKeys;

pub struct ShortHasher(u64);

impl std::hash::BuildHasher for ShortKeys {
    type Hasher = ShortHasher;
    fn build_hasher(&self) -> ShortHasher {
        ShortHasher(0)
    }
}

impl std::hash::Hasher for ShortHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only 128-bit keys are hashed")
    }
    #[inline(always)]
    fn write_u128(&mut self, key: u128) {
        let m = ((key as u64 ^ 0x243f_6a88_85a3_08d3) as u128) * (((key >> 64) as u64 ^ 0x1319_8a2e_0370_7344) as u128);
        self.0 = m as u64 ^ (m >> 64) as u64;
    }
}

/// A token of at most 15 bytes and whether it came from the segmenter, as one integer: its bytes,
/// then its length and the flag in the last byte (distinct tokens, distinct keys). Hashing and
/// comparing it is cheaper than hashing and comparing the string.
#[inline(always)]
fn short_key(token: &str, segmented: bool) -> Option<u128> {
    let b = token.as_bytes();
    if b.len() > 15 {
        return None;
    }
    let mut buf = [0u8; 16];
    buf[..b.len()].copy_from_slice(b);
    buf[15] = b.len() as u8 | (segmented as u8) << 7;
    Some(u128::from_le_bytes(buf))
}

impl<'s> Tokens<'s> {
    /// Tables for the tokens of a text of `len` bytes (sized for its distinct tokens, roughly).
    fn new(padded: &'s [u8], len: usize) -> Self {
        let n = (len / 12).clamp(16, 4096);
        Tokens { padded, terms: Vec::with_capacity(n), ids: FxHashMap::with_capacity_and_hasher(n, Default::default()),
                 short: HashMap::with_capacity_and_hasher(n, ShortKeys),
                 segmented: FxHashMap::default(), latin: FxHashMap::default() }
    }

    /// `Tokenizer.keep` then the term's id: None when the token does not count.
    #[inline(always)]
    fn id(&mut self, s: &'s Settings, token: &'s str, segmented: bool) -> Option<u32> {
        // a segmenter's token is kept only when all Han: those characters are three bytes, led by
        // 0xe3 to 0xef (punctuation, spaces and digits are turned away here, without a look-up)
        if segmented && token.as_bytes().first().is_none_or(|&b| b < 0xe3) {
            return None;
        }
        // a kept token is one of Han characters, three bytes each, or a Latin word, ASCII: one too short
        // for `min_len` is turned away by its length (the single characters of Chinese text, mostly)
        if token.len() < if segmented { 3 * s.min_len } else { s.min_len } {
            return None;
        }
        self.id_long(s, token, segmented)
    }

    /// [`Tokens::id`] of a token that passed its checks by bytes (those are inlined: most tokens of
    /// Chinese text, single characters and punctuation, end there without a call).
    #[inline(never)]
    fn id_long(&mut self, s: &'s Settings, token: &'s str, segmented: bool) -> Option<u32> {
        if let Some(key) = self.padded_key(token, segmented).or_else(|| short_key(token, segmented)) {
            if let Some(&got) = self.short.get(&key) {
                return got;
            }
            let got = self.keep(s, token, segmented);
            self.short.insert(key, got);
            return got;
        }
        let table = if segmented { &self.segmented } else { &self.latin };
        if let Some(&got) = table.get(token) {
            return got;
        }
        let got = self.keep(s, token, segmented);
        let table = if segmented { &mut self.segmented } else { &mut self.latin };
        table.insert(token, got);
        got
    }

    /// [`short_key`] of a token of at most 15 bytes that is a slice of `padded`, from the 16 bytes
    /// there at its start (no copy byte by byte, whose stores a wide load would wait for).
    #[inline(always)]
    fn padded_key(&self, token: &str, segmented: bool) -> Option<u128> {
        let n = token.len();
        let at = (token.as_ptr() as usize).checked_sub(self.padded.as_ptr() as usize)?;
        if n > 15 || at.checked_add(16).is_none_or(|end| end > self.padded.len()) {
            return None;
        }
        let bytes: [u8; 16] = self.padded[at..at + 16].try_into().expect("sixteen bytes");
        let kept = u128::from_le_bytes(bytes) & ((1u128 << (8 * n)) - 1);
        Some(kept | ((n as u128 | (segmented as u128) << 7) << 120))
    }

    /// [`Tokens::id`] of a token not seen before, and long enough in bytes: a segmenter's token of
    /// Han characters (three bytes each) or a Latin word (ASCII) then has `min_len` characters.
    fn keep(&mut self, s: &'s Settings, token: &'s str, segmented: bool) -> Option<u32> {
        let kept = if segmented && !all_cjk(token) { None } else { s.keep_long(token) };
        kept.map(|term| {
            let next = self.terms.len() as u32;
            let id = *self.ids.entry(term).or_insert(next);
            if id == next {
                self.terms.push(term);
            }
            id
        })
    }
}

/// `Tokenizer.terms`: the content terms of a short text, the segmenter's then the Latin words.
pub fn terms(jieba: &Jieba, s: &Settings, text: &str) -> Vec<String> {
    let mut toks = Tokens::new(&[], text.len());
    let mut out = Vec::new();
    if has_cjk(text) {
        for t in jieba.cut(text, true) {
            if let Some(i) = toks.id(s, t.word, true) {
                out.push(toks.terms[i as usize].to_owned());
            }
        }
    }
    let mut words = Vec::new();
    latin_words(text, 0, text.len(), &mut words);
    for &(a, b) in &words {
        if let Some(i) = toks.id(s, &text[a..b], false) {
            out.push(toks.terms[i as usize].to_owned());
        }
    }
    out
}

/// The kept term ids of each sentence, concatenated, and where each sentence ends in them: from one
/// segmentation of the whole text when no kept token straddles a sentence's edge (`text_ids`), else
/// one per sentence (`sentence_ids`).
fn sentence_ids<'s>(
    jieba: &Jieba, s: &'s Settings, text: &'s str, spans: &[(usize, usize)], toks: &mut Tokens<'s>,
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
    jieba: &Jieba, s: &'s Settings, text: &'s str, spans: &[(usize, usize)], toks: &mut Tokens<'s>,
) -> Option<(Vec<u32>, Vec<usize>)> {
    // the segmenter's kept ids in text order, and where each sentence's ids end in them
    let mut seg: Vec<u32> = Vec::new();
    let mut seg_ends: Vec<usize> = Vec::with_capacity(spans.len());
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
        // `i`: the sentences that start at or before the token (tokens come in text order)
        let mut i = 0;
        for t in cut {
            let Some(id) = toks.id(s, t.word, true) else { continue };
            while i < spans.len() && spans[i].0 <= t.byte_start {
                i += 1;
            }
            if i == 0 || t.byte_end > spans[i - 1].1 {
                return None;
            }
            seg_ends.resize(i - 1, seg.len());
            seg.push(id);
        }
    }
    seg_ends.resize(spans.len(), seg.len());
    let mut words = Vec::new();
    let mut flat = Vec::with_capacity(seg.len() + seg.len() / 4);
    let mut ends = Vec::with_capacity(spans.len());
    let mut from = 0;
    for (&(a, b), &to) in spans.iter().zip(&seg_ends) {
        flat.extend_from_slice(&seg[from..to]);
        from = to;
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

/// The bytes [`flatten`] adds after the text.
pub const PAD: usize = 16;

/// `body` with its line breaks as spaces, as the sentences are read (`iter_sentences`), and [`PAD`]
/// spaces after it (which [`run`] does not read as text).
pub fn flatten(body: &str) -> String {
    let mut flat = String::with_capacity(body.len() + PAD);
    let mut from = 0;
    for (at, _) in body.match_indices('\n') {
        flat.push_str(&body[from..at]);
        flat.push(' ');
        from = at + 1;
    }
    flat.push_str(&body[from..]);
    flat.extend(std::iter::repeat_n(' ', PAD));
    flat
}

/// The ids of `terms` in the order of their strings (byte order is code-point order, Python's): one
/// word per term is sorted, the id in its low bytes and as many of the term's first bytes as fit above
/// it, then the terms whose first bytes tie are sorted by their whole strings.
fn by_string(terms: &[&str]) -> Vec<u32> {
    let id_bytes = (u32::BITS - (terms.len() as u32).leading_zeros()).div_ceil(8).max(2) as usize;
    let (id_bits, id_mask) = (8 * id_bytes as u32, (1u64 << (8 * id_bytes)) - 1);
    let mut keys: Vec<u64> = terms
        .iter()
        .enumerate()
        .map(|(id, t)| leading_bytes(t, 8 - id_bytes) | id as u64)
        .collect();
    keys.sort_unstable();
    let mut i = 0;
    while i < keys.len() {
        let mut e = i + 1;
        while e < keys.len() && keys[e] >> id_bits == keys[i] >> id_bits {
            e += 1;
        }
        if e - i > 1 {
            keys[i..e].sort_unstable_by(|&a, &b| terms[(a & id_mask) as usize].cmp(terms[(b & id_mask) as usize]));
        }
        i = e;
    }
    keys.iter().map(|&k| (k & id_mask) as u32).collect()
}

/// The pass over `body` (normalised, stripped text) and `flat_padded`, the same with its line breaks as
/// spaces (the sentences' reading; the terms are slices of it) and [`PAD`] bytes after it, as
/// [`flatten`] gives it; None where the reference takes a path this does
/// not (no sentence, or a sentence longer than `max_sentence`): the caller runs the reference then.
pub fn run<'s>(jieba: &Jieba, s: &'s Settings, body: &str, flat_padded: &'s str) -> Option<Folded<'s>> {
    let flat_body = &flat_padded[..flat_padded.len() - PAD];
    if s.chunk_every == 0 && s.lead_sentences == 0 {
        return None;
    }
    let spans = sentence_spans(flat_body, s.max_sentence)?;
    if spans.is_empty() {
        return None;
    }
    let mut toks = Tokens::new(flat_padded.as_bytes(), flat_body.len());
    let (flat, ends) = sentence_ids(jieba, s, flat_body, &spans, &mut toks);

    let by_term = by_string(&toks.terms);
    let width = by_term.len();
    let mut column = vec![0usize; width];
    for (col, &id) in by_term.iter().enumerate() {
        column[id as usize] = col;
    }
    let cols: Vec<usize> = flat.iter().map(|&id| column[id as usize]).collect();
    let terms: Vec<&'s str> = by_term.iter().map(|&id| toks.terms[id as usize]).collect();
    // per term, in one loop: its IDF, its hash and whether it counts as a name; the terms' lexicon
    // slots are fetched some look-ups ahead of their own, and the hashing fills the wait
    const AHEAD: usize = 16;
    let keys: Vec<Option<u128>> =
        terms.iter().map(|t| toks.padded_key(t, false).or_else(|| short_key(t, false))).collect();
    for &key in keys.iter().take(AHEAD) {
        s.lexicon.prefetch(key);
    }
    let mut idf: Vec<f64> = Vec::with_capacity(width);
    let mut hashes: Vec<u64> = Vec::with_capacity(width);
    let mut names: Vec<&'s str> = Vec::new();
    for (j, (&t, &key)) in terms.iter().zip(&keys).enumerate() {
        if let Some(&ahead) = keys.get(j + AHEAD) {
            s.lexicon.prefetch(ahead);
        }
        hashes.push(xxh3_64(t.as_bytes()));
        let lexeme = s.lexicon.get(t, key).unwrap_or_default();
        idf.push(lexeme.idf.unwrap_or(s.idf_default));
        if !lexeme.common && t.len() >= 6 && all_cjk(t) {
            names.push(t);
        }
    }

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
                && xxh3_64(&flat_body.as_bytes()[a..b]).is_multiple_of(s.chunk_every as u64)
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
    // `tf ** tf_power` of every count the rows hold (no row counts a term more often than the document)
    let most = doc_counts.iter().copied().max().unwrap_or(0);
    let pows: Vec<f64> = (0..=most).map(|c| tf_pow(c, s.tf_power)).collect();
    let mut weigh = Weighing::default();
    let mut hs: Vec<u64> = Vec::new();
    let mut fold_row = |weigh: &mut Weighing, counts: &[i64], present: &[usize]| -> u64 {
        weigh.row(counts, present, &idf, &pows, s.top_k, s.tf_power, s.max_share);
        hs.clear();
        hs.extend(weigh.order.iter().map(|&j| hashes[j]));
        fold(&hs, &weigh.weights)
    };
    let all: Vec<usize> = (0..width).collect();
    let fingerprint = fold_row(&mut weigh, &doc_counts, &all);
    let top_terms: Vec<(&'s str, f64)> =
        weigh.order.iter().zip(&weigh.weights).map(|(&j, &w)| (terms[j], w)).collect();
    let mut folded: Vec<Option<u64>> = Vec::with_capacity(ranges.len());
    let mut row = vec![0i64; width];
    let mut present: Vec<usize> = Vec::new();
    for &(a, b) in &ranges {
        present.clear();
        for &c in &cols[a..b] {
            if row[c] == 0 {
                present.push(c);
            }
            row[c] += 1;
        }
        if present.len() >= s.min_chunk_terms {
            folded.push(Some(fold_row(&mut weigh, &row, &present)));
        } else {
            folded.push(None);
        }
        for &c in &present {
            row[c] = 0;
        }
    }
    let chunks = if has_lead {
        select_chunks(&folded[1..], folded[0], s.max_chunks)
    } else {
        select_chunks(&folded, None, s.max_chunks)
    };
    let degenerate = width < s.min_features;
    Some(Folded {
        fingerprint,
        chunks: if degenerate { Vec::new() } else { chunks.into_iter().filter(|&c| c != fingerprint).collect() },
        top_terms,
        n_tokens: doc_counts.iter().sum(),
        n_terms: width,
        sketch: sketch(body, s.sketch_size),
        names,
    })
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_by_string_as_a_sort() {
        let base = ["中国", "中国人", "中国队", "中国人民", "中", "a", "ab", "ab\0", "abcdef", "abcdefg", "abcdefgh", "abcdefgi", "zz", "é", "中国人民银行"];
        for n in [1, 5, base.len()] {
            let terms = &base[..n];
            let mut want: Vec<u32> = (0..n as u32).collect();
            want.sort_by_key(|&i| terms[i as usize]);
            assert_eq!(by_string(terms), want);
        }
        // ids of three bytes: fewer of each term's bytes in its key
        let many: Vec<String> = (0..70000u32).map(|i| format!("t{:x}", i.wrapping_mul(2654435761))).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let mut want: Vec<u32> = (0..many.len() as u32).collect();
        want.sort_by_key(|&i| many[i as usize]);
        assert!(many.len() > 1 << 16);
        assert_eq!(by_string(&many), want);
    }

    #[test]
    fn padded_keys_are_short_keys() {
        let flat = flatten("中文分词 ab-c\nx 一二三四五六 q");
        let text = &flat[..flat.len() - PAD];
        let toks = Tokens::new(flat.as_bytes(), text.len());
        for a in text.char_indices().map(|(i, _)| i) {
            for b in text.char_indices().map(|(i, _)| i).chain([text.len()]).filter(|&b| b > a) {
                for segmented in [false, true] {
                    let t = &text[a..b];
                    assert_eq!(toks.padded_key(t, segmented), short_key(t, segmented), "{t:?}");
                }
            }
        }
        assert_eq!(Tokens::new(&[], 0).padded_key(text, true), None);
    }
}

#[cfg(test)]
mod lexicon_tests {
    use super::*;

    #[test]
    fn lexicon_answers_as_a_map() {
        let words = ["中国", "中国人", "中国队", "a", "ab", "十五个字节的词", "a-rather-long-latin-term", "", "x"];
        let mut lex = Lexicon::with_capacity(2 * words.len());
        let mut map: FxHashMap<&str, Lexeme> = FxHashMap::default();
        for (i, w) in words.iter().enumerate() {
            if i % 3 != 1 {
                lex.set(w.to_string(), Some(i as f64 + 0.5));
                map.entry(w).or_default().idf = Some(i as f64 + 0.5);
            }
            if i % 2 == 0 {
                lex.set(w.to_string(), None);
                map.entry(w).or_default().common = true;
            }
        }
        for w in words.iter().chain(&["中", "中国队员", "b"]) {
            let got = lex.get(w, short_key(w, false));
            let want = map.get(w).copied();
            assert_eq!(got.map(|l| (l.idf, l.common)), want.map(|l| (l.idf, l.common)), "{w:?}");
        }
    }
}
