"""Tokenisation of normalised text: jieba for Chinese, word tokens for Latin letters and digits.

Chinese words come from the segmenter and Latin/digit words from one regex, whatever the segmenter
does with them, so the compiled jieba-rs port (``rjieba``, about 10x faster) and pure-Python jieba
yield the same terms: on the 12,461 zh_news articles their Chinese tokens agree on all but one
document (one HMM-guessed word). Pure jieba is the fallback when rjieba is missing, and is used for
private dictionaries (synonym variants). Text with no CJK characters skips segmentation entirely.
Long texts are segmented in line-aligned chunks, so a 20 MB document needs bounded memory.
"""

from __future__ import annotations

import importlib.util
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import ModuleType

from fingerprint_indexer.text.stopwords import default_stopwords

# The segmenters are imported when a text first needs one (importing them costs a few tenths of a
# second, which English text and commands that segment nothing need not pay).
HAVE_RJIEBA = importlib.util.find_spec("rjieba") is not None

_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# Latin/digit words; inner . ' - are kept (3.5, u.s, covid-19).
_LATIN_WORD = re.compile(r"[a-z0-9]+(?:['.\-][a-z0-9]+)*")
CHUNK_CHARS = 1 << 16


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Han character (what the segmenter is asked about)."""
    return _CJK_CHAR.search(text) is not None

def _jieba() -> ModuleType:
    import jieba

    # jieba logs its dictionary loading at INFO on stderr; keep the CLI output clean.
    jieba.setLogLevel(60)
    return jieba


def slices(text: str, size: int = CHUNK_CHARS) -> Iterator[str]:
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
        engine: str = "auto",
    ) -> None:
        if engine not in ("auto", "rjieba", "jieba"):
            raise ValueError(f"unknown segmenter {engine!r}: expected auto, rjieba or jieba")
        if engine == "rjieba" and not HAVE_RJIEBA:
            raise RuntimeError("segmenter 'rjieba' requested but not installed (pip install rjieba)")
        self.stopwords = frozenset(stopwords) if stopwords is not None else default_stopwords()
        self.synonyms = dict(synonyms or {})
        self.min_len = min_len
        self.engine = "rjieba" if engine != "jieba" and HAVE_RJIEBA else "jieba"
        self._segmenter: Callable[[str], list[str]] | None = None

    def _cut(self, text: str) -> list[str]:
        if self._segmenter is None:
            self._segmenter = self._make_segmenter()
        return self._segmenter(text)

    def _make_segmenter(self) -> Callable[[str], list[str]]:
        variants = [v for v in self.synonyms if has_cjk(v)]
        # Synonym variants go into a private dictionary, so multi-word variants segment as one token
        # without touching the process-wide instance.
        if self.engine == "rjieba":
            import rjieba

            if not variants:
                return rjieba.cut
            rs = rjieba.Jieba()
            for variant in variants:
                rs.add_word(variant, 100000, None)
            return rs.cut
        jieba = _jieba()
        if not variants:
            return jieba.dt.lcut
        py = jieba.Tokenizer()
        for variant in variants:
            py.add_word(variant, 100000)
        return py.lcut

    def keep(self, token: str, segmented: bool) -> str | None:
        """The term a token counts as (its synonym's canonical form), or None when it is dropped.

        ``segmented`` tokens come from the segmenter and count only when they are Chinese words; the
        others are the Latin/digit words of :data:`_LATIN_WORD`. Either is dropped when shorter than
        ``min_len`` or a stopword.
        """
        if segmented and not _CJK_WORD.fullmatch(token):
            return None
        if len(token) < self.min_len or token in self.stopwords:
            return None
        return self.synonyms.get(token, token)

    def segment(self, text: str) -> tuple[list[str], list[str]]:
        """The raw tokens of a short text: the segmenter's (none without CJK characters) and the Latin
        words; :meth:`keep` says which count."""
        cut = self._cut(text) if _CJK_CHAR.search(text) is not None else []
        return cut, _LATIN_WORD.findall(text)

    def positioned(
        self, text: str, spans: Sequence[tuple[int, int]]
    ) -> tuple[list[str], list[list[str]]] | None:
        """The raw tokens of a whole text: the segmenter's, from one call (they spell out ``text``, so
        their offsets follow from their lengths), and the Latin words of each span ``text[a:b]``; None
        when the segmenter's tokens do not spell out ``text``."""
        cut = self._cut(text) if _CJK_CHAR.search(text) is not None else []
        if cut and "".join(cut) != text:
            return None
        find = _LATIN_WORD.findall  # findall(text, a, b) reads text[a:b] as if it were the whole string
        return cut, [find(text, a, b) for a, b in spans]

    def _chunk_tokens(self, chunk: str, has_cjk: bool) -> list[str]:
        keep = self.keep
        words = [keep(w, True) for w in self._cut(chunk)] if has_cjk else []
        words += [keep(w, False) for w in _LATIN_WORD.findall(chunk)]
        return [w for w in words if w is not None]

    def tokens(self, text: str) -> Iterator[str]:
        """Content terms: Chinese words, then Latin/digit words, stopwords dropped, synonyms mapped.

        Order is by kind within each chunk, not by position: callers count terms, and this keeps
        both segmenters equal.
        """
        has_cjk = _CJK_CHAR.search(text) is not None
        for chunk in slices(text):
            yield from self._chunk_tokens(chunk, has_cjk)

    def terms(self, text: str) -> list[str]:
        """Content terms of a short text (a sentence), in one segmenter call."""
        return self._chunk_tokens(text, _CJK_CHAR.search(text) is not None)

    def spans(self, text: str) -> list[tuple[str, int, int]]:
        """The terms of :meth:`tokens` in text order, each with its ``[start, end)`` offsets in ``text``.

        The same terms as :meth:`tokens` (as a multiset); what passage-level copy detection needs to map
        matches back to the text.
        """
        has_cjk = _CJK_CHAR.search(text) is not None
        out: list[tuple[str, int, int]] = []
        stop, min_len, syn = self.stopwords, self.min_len, self.synonyms
        base = 0
        for chunk in slices(text):
            found: list[tuple[str, int, int]] = []
            if has_cjk:
                pos = 0
                for w in self._cut(chunk):
                    start = chunk.find(w, pos)  # segments cover the chunk in order
                    pos = start + len(w)
                    if _CJK_WORD.fullmatch(w):
                        found.append((w, base + start, base + pos))
            found += [(m.group(), base + m.start(), base + m.end()) for m in _LATIN_WORD.finditer(chunk)]
            found.sort(key=lambda t: t[1])
            out += [(syn.get(w, w), s, e) for w, s, e in found if len(w) >= min_len and w not in stop]
            base += len(chunk)
        return out

    def count(self, text: str) -> Counter[str]:
        """Term frequencies of ``text``."""
        has_cjk = _CJK_CHAR.search(text) is not None
        counts: Counter[str] = Counter()
        for chunk in slices(text):
            counts.update(self._chunk_tokens(chunk, has_cjk))
        return counts
