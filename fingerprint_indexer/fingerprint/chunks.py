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
from collections.abc import Callable, Iterable, Iterator, Mapping

import numpy as np
import xxhash

from fingerprint_indexer.fingerprint.simhash import simhash_from_hashes, term_hashes
from fingerprint_indexer.text.tokenize import slices

# A sentence: up to a Chinese or Latin sentence-final mark (a Latin period only before a space or the end).
_SENTENCE = re.compile(r".+?(?:[。!?;…]+[\"'”’」)]*|\.[\"'”’)]*(?=\s)|$)", re.S)

CHUNK_EVERY = 4  # average sentences per chunk
MAX_SENTENCE = 4096  # characters
MIN_CHUNK_SENTENCES = 2
MIN_CHUNK_TERMS = 8  # chunks with fewer distinct terms are too generic to index


def iter_sentences(text: str) -> Iterator[str]:
    """Sentences of normalised text (line breaks count as spaces), lazily: long texts stay bounded.

    A "sentence" longer than ``MAX_SENTENCE`` characters (text without punctuation) is cut into slices
    at spaces, so no single piece can make the segmenter hold a huge token list.
    """
    for m in _SENTENCE.finditer(text.replace("\n", " ")):
        sent = m.group().strip()
        if len(sent) <= MAX_SENTENCE:
            if sent:
                yield sent
            continue
        for piece in slices(sent, MAX_SENTENCE):
            if piece.strip():
                yield piece.strip()


def sentence_spans(text: str) -> list[tuple[int, int]] | None:
    """Where the sentences of :func:`iter_sentences` are in ``text`` (start, end); None when one is
    longer than ``MAX_SENTENCE`` (iter_sentences cuts it into slices)."""
    spans: list[tuple[int, int]] = []
    for m in _SENTENCE.finditer(text.replace("\n", " ")):
        sent = m.group()
        core = sent.strip()
        if len(core) > MAX_SENTENCE:
            return None
        if core:
            start = m.start() + len(sent) - len(sent.lstrip())
            spans.append((start, start + len(core)))
    return spans


def sentences(text: str) -> list[str]:
    """Sentences of normalised text (line breaks count as spaces)."""
    return list(iter_sentences(text))


def closes_chunk(
    sentence: str, n_sentences: int, every: int, min_sentences: int = MIN_CHUNK_SENTENCES
) -> bool:
    """Whether a chunk of ``n_sentences`` ending with ``sentence`` closes (content-defined boundary)."""
    return n_sentences >= min_sentences and xxhash.xxh3_64_intdigest(sentence.encode("utf-8")) % every == 0


def chunk_text(text: str, every: int = CHUNK_EVERY, min_sentences: int = MIN_CHUNK_SENTENCES) -> list[str]:
    """Split into content-defined chunks: a chunk closes after a sentence whose xxh3 is 0 mod ``every``."""
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    out: list[str] = []
    current: list[str] = []
    for sent in iter_sentences(text):
        current.append(sent)
        if closes_chunk(sent, len(current), every, min_sentences):
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
