"""Tokenisation of normalised text: jieba for Chinese, word tokens for Latin letters and digits.

Text with no CJK characters skips jieba entirely (a regex is much cheaper). Text with CJK goes
through jieba in line-aligned chunks, so a 20 MB document is segmented in bounded memory and the
tokens are the same as for the whole string (jieba itself splits at every non-Han character).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import jieba

from fingerprint_indexer.text.stopwords import default_stopwords

_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# A kept token: a run of CJK characters, or a Latin/digit word (inner . ' - allowed: 3.5, u.s, covid-19).
_KEEP = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[a-z0-9]+(?:['.\-][a-z0-9]+)*")
_LATIN_WORD = re.compile(r"[a-z0-9]+(?:['.\-][a-z0-9]+)*")
CHUNK_CHARS = 1 << 16

# jieba logs its dictionary loading at INFO on stderr; keep the CLI output clean.
jieba.setLogLevel(60)


def _chunks(text: str, size: int = CHUNK_CHARS) -> Iterator[str]:
    """Slices of about ``size`` characters, cut after a line break (or a space) where possible."""
    start, n = 0, len(text)
    while start < n:
        end = min(start + size, n)
        if end < n:
            cut = text.rfind("\n", start, end)
            if cut <= start:
                cut = text.rfind(" ", start, end)
            if cut > start:
                end = cut + 1
        yield text[start:end]
        start = end


class Tokenizer:
    """Segments normalised (lower-case, NFKC) text into content terms.

    ``min_len`` drops one-character tokens by default: single Han characters and letters carry little
    identity in news text and are the most common source of accidental overlap.
    """

    def __init__(
        self,
        stopwords: Iterable[str] | None = None,
        synonyms: Mapping[str, str] | None = None,
        min_len: int = 2,
        segmenter: Any = None,
    ) -> None:
        self.stopwords = frozenset(stopwords) if stopwords is not None else default_stopwords()
        self.synonyms = dict(synonyms or {})
        self.min_len = min_len
        if segmenter is None:
            if self.synonyms:
                # A private dictionary, so multi-word variants segment as one token without touching
                # the process-wide jieba instance.
                segmenter = jieba.Tokenizer()
                for variant in self.synonyms:
                    if _CJK_CHAR.search(variant):
                        segmenter.add_word(variant, freq=100000)
            else:
                segmenter = jieba.dt
        self._segmenter = segmenter

    def _raw_tokens(self, text: str) -> Iterator[str]:
        if not _CJK_CHAR.search(text):
            for chunk in _chunks(text):
                yield from _LATIN_WORD.findall(chunk)
            return
        lcut = self._segmenter.lcut
        for chunk in _chunks(text):
            yield from lcut(chunk)

    def tokens(self, text: str) -> Iterator[str]:
        """Content terms in order: kept shapes only, stopwords dropped, synonyms mapped."""
        keep, stop, syn, min_len = _KEEP.fullmatch, self.stopwords, self.synonyms, self.min_len
        for tok in self._raw_tokens(text):
            if len(tok) < min_len or tok in stop or not keep(tok):
                continue
            yield syn.get(tok, tok) if syn else tok

    def count(self, text: str) -> Counter[str]:
        """Term frequencies of ``text``."""
        return Counter(self.tokens(text))
