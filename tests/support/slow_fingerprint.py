"""A slow, plainly written fingerprinter: what the package computes, one token and one term at a time.

The package's fingerprinter works on arrays of term ids, with caches and batched weighting; this one
counts strings in Counters, weighs them with Python floats, hashes term by term and scans every unit of
the text for facts, as the rules are written down. Tests compare every field of their results, so a
speed-up can never change a fingerprint unnoticed.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import replace

import numpy as np
import xxhash

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.chunks import MIN_CHUNK_TERMS, closes_chunk, iter_sentences
from fingerprint_indexer.fingerprint.digest import content_digest, keyword_digest, titled_digest
from fingerprint_indexer.fingerprint.facts import (
    _MASK_NUMBERS,
    _SPACE,
    _SPLIT_FIGURE,
    _UNIT,
    MAX_FACTS,
    MAX_FRAMES,
    NAME,
    _by_hash,
    _numbers,
    headline_names,
    latin_body_names,
    latin_names,
    names,
    publication_day,
    title_facts,
)
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter, FingerprintResult
from fingerprint_indexer.fingerprint.simhash import vote_sums
from fingerprint_indexer.fingerprint.sketch import _SEEDS, _WS, SHINGLE, to_bytes
from fingerprint_indexer.text.boilerplate import strip_boilerplate
from fingerprint_indexer.text.clean import clean, html_to_text, normalize
from fingerprint_indexer.text.weights import IdfTable

_MASK64 = (1 << 64) - 1
_P = 0x100000001B3


def slow_top_terms(
    counts: Counter[str], idf: IdfTable, k: int, tf_power: float, max_share: float
) -> list[tuple[str, float]]:
    """Terms by ``tf ** tf_power * idf``, heaviest first, ties by term, the top ``k``, weights capped at
    ``max_share`` of the capped total."""
    total = sum(counts.values())
    if not total:
        return []
    scored = sorted((-(c**tf_power) * idf.idf.get(t, idf.default), t) for t, c in counts.items())
    norm = float(total) ** tf_power
    if k:
        scored = scored[:k]
    if max_share < 1.0 and len(scored) > 1:
        cap = _slow_share_cap([-w for w, _ in scored], max_share)
        scored = [(max(w, -cap), t) for w, t in scored]
    return [(t, -w / norm) for w, t in scored]


def _slow_share_cap(w: list[float], share: float) -> float:
    n = len(w)
    rest = [0.0] * n  # rest[j] = w[n-1] + ... + w[j+1], summed from the end
    acc = 0.0
    for j in range(n - 1, 0, -1):
        acc = w[j] if j == n - 1 else acc + w[j]
        rest[j - 1] = acc
    for j in range(n - 1):
        m = j + 1
        if share * m < 1.0:
            cap = share * rest[j] / (1.0 - share * m)
            if cap >= w[j + 1]:
                return cap
    return w[-1]


def slow_simhash(terms: list[tuple[str, float]]) -> int:
    """Charikar's SimHash with the package's xxh3 term hashes; the votes summed in the order the package
    fixes (:func:`vote_sums`: a different order of float additions could flip a vote that is nearly 0)."""
    if not terms:
        return 0
    hashes = [xxhash.xxh3_64_intdigest(t.encode("utf-8")) for t, _ in terms]
    signs = np.array([[1.0 if (h >> (63 - b)) & 1 else -1.0 for b in range(64)] for h in hashes])
    votes = vote_sums(signs, np.array([w for _, w in terms], dtype=np.float64))
    return sum(1 << (63 - b) for b in range(64) if votes[b] > 0)


def slow_sketch(text: str, size: int) -> np.ndarray:
    """MinHash of the 5-gram set, shingle by shingle and seed by seed."""

    def mix(x: int) -> int:
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
        return x ^ (x >> 31)

    compact = _WS.sub("", text)
    mins = [0xFFFFFFFF] * size
    if not compact:
        return np.array(mins, dtype=np.uint32)
    n = min(SHINGLE, len(compact))
    shingles = set()
    for i in range(len(compact) - n + 1):
        h = 0
        for c in compact[i : i + n]:
            h = (h * _P + ord(c)) & _MASK64
        shingles.add(mix(h))
    for s in range(size):
        seed = int(_SEEDS[s])
        mins[s] = min(min(mix(h ^ seed) >> 32 for h in shingles), mins[s])
    return np.array(mins, dtype=np.uint32)


def _units(text: str) -> Iterator[str]:
    for line in _UNIT.finditer(text):
        yield from iter_sentences(line.group())


def slow_analyse(
    text: str, terms: Iterable[str], latin: Iterable[str] = ()
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Facts and frames, unit by unit, every rule of fingerprint.facts applied in turn (Latin names are
    facts, not frame masks)."""
    found = names(terms)
    longest_first = sorted(found, key=lambda n: (-len(n), n))
    facts: set[str] = {NAME + n for n in found} | {NAME + n for n in latin}
    out: set[int] = set()
    for unit in _units(_SPLIT_FIGURE.sub(r"\1", text)):
        here = _numbers(unit)
        facts |= here
        for n in longest_first:
            if n in unit:
                here.add(NAME + n)
                unit = unit.replace(n, "@")
        if not here:
            continue
        skeleton = _SPACE.sub("", _MASK_NUMBERS.sub("#", unit))
        filled = xxhash.xxh3_64_intdigest("\x1f".join(sorted(here)).encode("utf-8")) & 0xFFFFFFFF
        out.add((xxhash.xxh3_64_intdigest(skeleton.encode("utf-8")) & 0xFFFFFFFF) << 32 | filled)
    return _by_hash(facts, MAX_FACTS), tuple(sorted(out)[:MAX_FRAMES])


class SlowFingerprinter:
    """The reference: same configuration, same version, every result field computed plainly."""

    def __init__(self, config: FingerprintConfig | None = None, sketch: bool = True) -> None:
        fast = Fingerprinter(config)
        self.config = fast.config
        self.version = fast.version
        self.tokenizer = fast.tokenizer
        self.idf = fast.idf
        self._fast_sketch = None if sketch else fast  # the shingle-by-shingle sketch is very slow

    def weigh(self, counts: Counter[str]) -> list[tuple[str, float]]:
        cfg = self.config
        return slow_top_terms(counts, self.idf, cfg.top_k, cfg.tf_power, cfg.max_term_share)

    def _count(self, body: str) -> tuple[Counter[str], list[int]]:
        cfg = self.config
        if not cfg.chunk_every and not cfg.lead_sentences:
            return self.tokenizer.count(body), []
        doc: Counter[str] = Counter()
        lead: Counter[str] = Counter()
        chunks: list[Counter[str]] = []
        chunk: Counter[str] = Counter()
        n_sent = 0
        for i, sent in enumerate(iter_sentences(body)):
            words = self.tokenizer.terms(sent)
            doc.update(words)
            if i < cfg.lead_sentences:
                lead.update(words)
            if cfg.chunk_every:
                chunk.update(words)
                n_sent += 1
                if closes_chunk(sent, n_sent, cfg.chunk_every):
                    chunks.append(chunk)
                    chunk, n_sent = Counter(), 0
        if n_sent:
            chunks.append(chunk)
        fps: list[int] = []  # distinct chunk fingerprints, in text order
        for c in chunks:
            if len(c) >= MIN_CHUNK_TERMS and cfg.max_chunks:
                fp = slow_simhash(self.weigh(c))
                if fp not in fps:
                    fps.append(fp)
        # beyond max_chunks, the chunks of smallest mixed hash
        key = {fp: (fp * 0x9E3779B97F4A7C15) & _MASK64 for fp in fps}
        keep = set(heapq.nsmallest(cfg.max_chunks, fps, key=key.__getitem__)) if cfg.max_chunks else set()
        out = [fp for fp in fps if fp in keep]
        if len(lead) >= MIN_CHUNK_TERMS:
            first = slow_simhash(self.weigh(lead))
            out = [first, *(c for c in out if c != first)]
        return doc, out

    def fingerprint_text(self, text: str, doc_id: str = "", cased: str = "") -> FingerprintResult:
        cfg = self.config
        body = strip_boilerplate(text, cased) if cfg.strip_boilerplate else text
        counts, chunks = self._count(body)
        terms = self.weigh(counts)
        names_ = [t for t, _ in terms]
        fp = slow_simhash(terms)
        degenerate = len(counts) < cfg.min_features
        if self._fast_sketch is None:
            sketch = to_bytes(slow_sketch(body, cfg.sketch_size))
        else:
            sketch = self._fast_sketch.fingerprint_text(text, doc_id, cased).sketch
        latin = latin_body_names(cased, body, self.tokenizer.stopwords) if cased else set()
        facts, frames = slow_analyse(body, counts, latin) if cfg.facts else ((), ())
        return FingerprintResult(
            id=doc_id, fingerprint=fp, blocks=cfg.layout.keys(fp), content_digest=content_digest(text),
            keyword_digest=keyword_digest(names_[: cfg.keyword_digest_n]), top_terms=terms,
            degenerate=degenerate, n_tokens=sum(counts.values()), version=self.version,
            chunks=() if degenerate else tuple(c for c in chunks if c != fp), sketch=sketch, facts=facts,
            frames=frames,
        )

    def fingerprint_document(self, doc: Document) -> FingerprintResult:
        text = clean(doc.content, doc.html)
        cased = normalize((html_to_text(doc.html) if doc.html else doc.content) or "", lower=False)
        if not text and doc.title:
            text, cased = clean(doc.title), normalize(doc.title, lower=False)
        res = self.fingerprint_text(text, doc.id, cased)
        title = clean(doc.title) if doc.title else ""
        title = title if title != text else ""
        if title and res.degenerate:  # a degenerate body is held to its headline
            res = replace(res, content_digest=titled_digest(res.content_digest, title))
        if not self.config.facts:
            return res
        latin = latin_names(doc.title) if title else set()
        extra = title_facts(title, self.tokenizer.terms(title), latin) if title else ()
        day = publication_day(doc.published_at)
        extra = (*extra, day) if day else extra
        facts = (*res.facts, *extra)
        if title:
            facts = headline_names(title, facts)
        return replace(res, facts=facts)
