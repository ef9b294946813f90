"""Content-defined chunks of an article, each with its own 64-bit SimHash.

One SimHash over a whole article moves by several bits when one sentence is edited or deleted, and by
many when only the first 60 % is reposted; both fall outside the Hamming radius a 16-bit block index can
serve (k <= 3). Splitting the article into chunks of a few sentences, with boundaries chosen by the
content itself (a chunk ends after a sentence whose hash is 0 modulo ``every``), keeps every chunk that an
edit did not touch byte-identical in the repost, so its fingerprint matches at distance 0. Boundaries do
not shift when a sentence elsewhere is inserted or deleted, unlike fixed-size windows.

Each chunk's fingerprint goes into the same 64-bit block index as the document fingerprint (a document
then owns a few index entries); any match is only a candidate and is confirmed by the document sketch
(:mod:`fingerprint_indexer.fingerprint.sketch`), so a chunk shared by two different stories (a common
quote, a standings table) does not make them duplicates.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

import numpy as np
import xxhash

from fingerprint_indexer.fingerprint.simhash import simhash_from_hashes, term_hashes

# A sentence: up to a Chinese or Latin sentence-final mark (a Latin period only before a space or the end).
_SENTENCE = re.compile(r".+?(?:[。!?;…]+[\"'”’」)]*|\.[\"'”’)]*(?=\s)|$)", re.S)

CHUNK_EVERY = 4  # average sentences per chunk
MIN_CHUNK_SENTENCES = 2
MIN_CHUNK_TERMS = 8  # chunks with fewer distinct terms are too generic to index


def sentences(text: str) -> list[str]:
    """Sentences of normalised text (line breaks count as spaces)."""
    return [s.strip() for s in _SENTENCE.findall(text.replace("\n", " ")) if s.strip()]


def chunk_text(text: str, every: int = CHUNK_EVERY, min_sentences: int = MIN_CHUNK_SENTENCES) -> list[str]:
    """Split into content-defined chunks: a chunk closes after a sentence whose xxh3 is 0 mod ``every``."""
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    out: list[str] = []
    current: list[str] = []
    for sent in sentences(text):
        current.append(sent)
        if len(current) >= min_sentences and xxhash.xxh3_64_intdigest(sent.encode("utf-8")) % every == 0:
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return out


def weighted_simhash(terms: Iterable[tuple[str, float]]) -> int:
    """SimHash of (term, weight) pairs."""
    pairs = list(terms)
    return simhash_from_hashes(
        term_hashes([t for t, _ in pairs]), np.array([w for _, w in pairs], dtype=np.float64)
    )


def chunk_fingerprints(
    text: str,
    count: Callable[[str], Mapping[str, int]],
    weigh: Callable[[Mapping[str, int]], list[tuple[str, float]]],
    every: int = CHUNK_EVERY,
    min_terms: int = MIN_CHUNK_TERMS,
) -> list[int]:
    """One SimHash per chunk with at least ``min_terms`` distinct terms, in text order, duplicates dropped.

    ``count`` turns text into term counts (e.g. ``Tokenizer.count``) and ``weigh`` turns counts into the
    weighted terms to fold (the same weighting as the document fingerprint), so chunks and documents are
    fingerprinted alike.
    """
    seen: set[int] = set()
    out: list[int] = []
    for chunk in chunk_text(text, every):
        counts = count(chunk)
        if len(counts) < min_terms:
            continue
        fp = weighted_simhash(weigh(counts))
        if fp not in seen:
            seen.add(fp)
            out.append(fp)
    return out
