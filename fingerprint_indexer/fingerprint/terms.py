"""Every distinct token a process has seen, and what it counts as: per-token work done once per token.

Tokens repeat: a few hundred thousand distinct ones make up millions of occurrences. So the rule that
keeps or drops a token and maps its synonym (:meth:`Tokenizer.keep`), the IDF look-up, the 64-bit
term hash and the name check run once per distinct token in a process's life; a document becomes an
array of term ids, and counting, weighting and folding work on arrays (:class:`DocTerms`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from fingerprint_indexer.fingerprint.facts import names
from fingerprint_indexer.fingerprint.simhash import _SHIFTS, fold_signs
from fingerprint_indexer.text.tokenize import Tokenizer
from fingerprint_indexer.text.weights import IdfTable, weigh_rows

#: Distinct tokens and terms a table holds before it starts afresh (bounded memory in a long-lived
#: process fed arbitrary text).
MAX_ENTRIES = 1 << 21
DROPPED = -1


class _Lookup(dict[str, int]):
    """Token -> term id (``DROPPED`` when the token does not count); a miss asks ``miss``."""

    def __init__(self, miss: Callable[[str], int]) -> None:
        super().__init__()
        self._miss = miss

    def __missing__(self, token: str) -> int:
        return self._miss(token)


class TermTable:
    """Term ids of tokens, and per term id its string, IDF weight and 64-bit hash (xxh3 of UTF-8)."""

    def __init__(self, tokenizer: Tokenizer, idf: Callable[[], IdfTable]) -> None:
        """``idf`` gives the IDF table when a first term needs it (reading it takes a while)."""
        self.tokenizer = tokenizer
        self._idf = idf
        self._lock = threading.Lock()
        self.terms: list[str] = []
        self._ids: dict[str, int] = {}
        # hashes of the terms added since arrays() last moved them into the arrays (with their weights)
        self._hashes: list[int] = []
        # per term id (arrays longer than the ids assigned, grown by doubling): IDF weight, hash, and
        # whether it is a name (1 a name, 0 not, -1 not looked up yet)
        self._filled = 0
        self._idf_of = np.zeros(0, dtype=np.float64)
        self._hash_of = np.zeros(0, dtype=np.uint64)
        self._names = np.zeros(0, dtype=np.int8)
        self._segmented = _Lookup(lambda token: self._add(token, True))
        self._latin = _Lookup(lambda token: self._add(token, False))

    def __len__(self) -> int:
        return len(self.terms) + len(self._segmented) + len(self._latin)

    def _term_id(self, term: str) -> int:
        """The id of a kept term (the caller holds the lock)."""
        i = self._ids.get(term)
        if i is None:
            i = len(self.terms)
            self._hashes.append(xxhash.xxh3_64_intdigest(term.encode("utf-8")))
            self.terms.append(term)
            self._ids[term] = i
        return i

    def _add(self, token: str, segmented: bool) -> int:
        with self._lock:
            table = self._segmented if segmented else self._latin
            found = dict.get(table, token)
            if found is not None:
                return found
            term = self.tokenizer.keep(token, segmented)
            i = DROPPED if term is None else self._term_id(term)
            table[token] = i
            return i

    def term_ids(self, terms: Iterable[str]) -> npt.NDArray[np.int64]:
        """Ids of already-kept terms (a Counter's keys)."""
        with self._lock:
            return np.array([self._term_id(t) for t in terms], dtype=np.int64)

    def sentence_ids(self, sentences: Sequence[str]) -> tuple[npt.NDArray[np.int64], list[int]]:
        """The term ids of each sentence's kept tokens, concatenated, and where each sentence ends in it."""
        seg, lat = self._segmented.__getitem__, self._latin.__getitem__
        segment = self.tokenizer.segment
        flat: list[int] = []
        ends: list[int] = []
        for sent in sentences:
            cut, latin = segment(sent)
            flat += map(seg, cut)
            flat += map(lat, latin)
            ends.append(len(flat))
        ids = np.array(flat, dtype=np.int64)
        kept = ids != DROPPED
        if kept.all():
            return ids, ends
        before = np.concatenate(([0], np.cumsum(kept)))
        return ids[kept], before[ends].tolist()

    def text_ids(
        self, text: str, spans: Sequence[tuple[int, int]]
    ) -> tuple[npt.NDArray[np.int64], list[int]] | None:
        """:meth:`sentence_ids` of the sentences ``text[a:b]`` for ``(a, b)`` in ``spans`` (in text order),
        from one segmenter call over the whole text instead of one per sentence.

        A sentence ends at punctuation or before a space, where the segmenter's blocks do not run on,
        so the segmenter's tokens a sentence holds are those of the whole text that lie in it. Where a
        kept token would straddle a sentence's edge (or the segmenter's tokens do not spell out the
        text), the answer is None and the caller asks :meth:`sentence_ids`.
        """
        got = self.tokenizer.positioned(text, spans) if spans else None
        if got is None:
            return None
        cut, words = got
        lengths = np.fromiter(map(len, cut), dtype=np.int64, count=len(cut))
        stops = np.cumsum(lengths)
        starts = stops - lengths
        cut_ids = np.fromiter(map(self._segmented.__getitem__, cut), dtype=np.int64, count=len(cut))
        kept = cut_ids != DROPPED
        cut_ids, starts, stops = cut_ids[kept], starts[kept], stops[kept]
        bounds = np.array(spans, dtype=np.int64).reshape(-1, 2)
        cut_sent = np.searchsorted(bounds[:, 0], starts, side="right") - 1
        if cut_ids.size and (cut_sent.min() < 0 or bool((stops > bounds[cut_sent, 1]).any())):
            return None
        per = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        flat_words = list(chain.from_iterable(words))
        latin_ids = np.fromiter(map(self._latin.__getitem__, flat_words), np.int64, count=len(flat_words))
        latin_sent = np.repeat(np.arange(len(bounds)), per)
        kept = latin_ids != DROPPED
        ids = np.concatenate((cut_ids, latin_ids[kept]))
        sent = np.concatenate((cut_sent, latin_sent[kept]))
        order = np.argsort(sent, kind="stable")  # per sentence: the segmenter's tokens, then the words
        ends = np.searchsorted(sent[order], np.arange(len(bounds)), side="right")
        return ids[order], ends.tolist()

    def arrays(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.uint64]]:
        """(IDF weight, hash) of every term id assigned so far (the arrays may be longer)."""
        if self._filled < len(self.terms):
            with self._lock:
                n, start = len(self.terms), self._filled
                if len(self._idf_of) < n:
                    size = max(2 * len(self._idf_of), n, 1024)
                    self._idf_of = _grown(self._idf_of, size, 0.0)
                    self._hash_of = _grown(self._hash_of, size, 0)
                    self._names = _grown(self._names, size, -1)
                self._idf_of[start:n] = self._idf().weights(self.terms[start:n])
                self._hash_of[start:n] = np.array(self._hashes, dtype=np.uint64)
                self._hashes = []
                self._filled = n
        return self._idf_of, self._hash_of

    def name_flags(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Which of the terms ``ids`` are names (:func:`fingerprint_indexer.fingerprint.facts.names`),
        each term looked up once."""
        self.arrays()
        flags = self._names
        got = flags[ids]
        unknown = np.flatnonzero(got < 0)
        if unknown.size:
            found = names(self.terms[i] for i in ids[unknown].tolist())
            for j in unknown.tolist():
                got[j] = flags[ids[j]] = self.terms[ids[j]] in found
        return got > 0


def _grown(a: npt.NDArray[Any], size: int, fill: float) -> npt.NDArray[Any]:
    """``a`` copied into a longer array, the new tail set to ``fill``."""
    out = np.full(size, fill, dtype=a.dtype)
    out[: len(a)] = a
    return out


class DocTerms:
    """One document's distinct terms, in the order of their strings (the tie-break of weights), with their
    counts, term ids, IDF weights and hashes."""

    def __init__(self, table: TermTable, ids: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]) -> None:
        self.table = table
        terms = [table.terms[i] for i in ids.tolist()]
        by_term = sorted(range(len(terms)), key=terms.__getitem__)
        perm = np.array(by_term, dtype=np.intp)
        #: column of each of the given ``ids`` (they may come in any order)
        self.column = np.empty(len(terms), dtype=np.intp)
        self.column[perm] = np.arange(len(terms))
        self.terms = [terms[i] for i in by_term]
        self.ids = ids[perm]
        self.counts = counts[perm]
        weights, hashes = table.arrays()
        self.idf = weights[self.ids]
        self.hashes = hashes[self.ids]
        self._signs: npt.NDArray[np.float64] | None = None

    def __len__(self) -> int:
        return len(self.terms)

    def weigh(
        self, counts: npt.NDArray[np.int64], k: int, tf_power: float, max_share: float
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64], npt.NDArray[np.intp]]:
        """:func:`fingerprint_indexer.text.weights.weigh_rows` of term sets of this document (``counts``:
        one row per set, one column per term of the document)."""
        return weigh_rows(counts, self.idf, k, tf_power, max_share)

    def simhash(self, sel: npt.NDArray[np.intp], weights: npt.NDArray[np.float64]) -> int:
        """SimHash of the terms ``sel`` (indexes into this document's terms) with ``weights``."""
        return fold_signs(self.signs()[sel], np.ascontiguousarray(weights).copy())

    def names(self) -> list[str]:
        """The terms that are names."""
        return [self.terms[i] for i in np.flatnonzero(self.table.name_flags(self.ids)).tolist()]

    def signs(self) -> npt.NDArray[np.float64]:
        """Per term, its hash as 64 votes of +1.0 / -1.0, most significant bit first."""
        if self._signs is None:
            bits = (self.hashes[:, None] >> _SHIFTS[None, :]) & np.uint64(1)
            self._signs = 2.0 * bits.astype(np.float64) - 1.0
        return self._signs
