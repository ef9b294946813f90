"""The compiled fingerprint pass (``fingerprint_indexer.fingerprint._core``, Rust), and when it is used.

The Python modules stay the reference: the compiled pass ports them operation for operation (the same
segmenter, jieba-rs, at the version rjieba ships; the same IEEE operations in the same order), and
``scripts/check_native.py`` proves its output byte-identical on every document of every corpus. A
document the pass does not take (no sentence, a sentence longer than the reference reads whole) goes
the reference's way, so output never depends on which ran.

The pass is used when the extension was built (a Rust toolchain at install time), the configuration's
segmenter is rjieba's ("auto" or "rjieba", not pure jieba, whose tokens differ on a few documents) and
``FPI_NATIVE`` is not ``0``. ``FPI_NATIVE=0`` forces the reference (what the equality checks compare).

The pass also gives a document's facts and frames (``facts.analyse`` and ``facts.latin_body_names``)
when its character tables (Python's ``\\w`` and ``\\d``) are of this Python's Unicode version; a
document whose facts take a path not ported gets them from the reference. With copy marks on it gives a
text's marks (``winnow.marked``) too; text holding characters newer than this Python's Unicode tables
gets them from the reference.

A document is fingerprinted in one call (:meth:`NativePass.document`), which also gives what
``Fingerprinter.fingerprint_document`` adds to the body's fingerprint: the block keys, both digests, the
title's facts (``facts.title_facts``) and the publication day (``facts.publication_day``, for its
common forms), so that threads hold the GIL for little but making the result. A title whose facts take
a path not ported sends the document the step-by-step way.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from fingerprint_indexer.fingerprint.chunks import MAX_SENTENCE, MIN_CHUNK_SENTENCES, MIN_CHUNK_TERMS
from fingerprint_indexer.fingerprint.facts import MAX_FACTS, MAX_FRAMES
from fingerprint_indexer.fingerprint.winnow import MAX_STORED_BLOCKS
from fingerprint_indexer.text.boilerplate import LINE_MARKERS, MARKERS
from fingerprint_indexer.text.tokenize import CHUNK_CHARS, has_cjk
from fingerprint_indexer.text.weights import jieba_file

if TYPE_CHECKING:
    from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig
    from fingerprint_indexer.fingerprint.winnow import WinnowParams
    from fingerprint_indexer.text.tokenize import Tokenizer

_core: ModuleType | None
try:
    from fingerprint_indexer.fingerprint import _core
except ImportError:  # built without a Rust toolchain: the reference runs
    _core = None
# the stripper's marker lists live in text/boilerplate.py only; the compiled stripper is given them
if _core is not None and not _core.set_boilerplate_markers(list(MARKERS), list(LINE_MARKERS)):
    raise ImportError("the compiled boilerplate stripper holds other markers than text/boilerplate.py")

#: Whether the compiled pass was built into this installation.
AVAILABLE = _core is not None
#: Whether the compiled facts read text as this Python does (their tables are of its Unicode version).
FACTS = _core is not None and unicodedata.unidata_version == _core.UNICODE_VERSION


def default_threads() -> int:
    """Fingerprinting threads a batch job uses by default: with the compiled pass, which runs without
    the GIL, one per CPU (at most 4; the decision step shares them); with the reference, which holds
    it, one."""
    return min(4, os.cpu_count() or 1) if enabled() else 1


def block_key_maker(keys: list[list[tuple[int, int]]], digits: Sequence[int]) -> Any:
    """``BlockLayout.keys_many`` in compiled code, made once per layout: called with fingerprints (a list
    of ints), per key (the (shift, width) of each of its blocks) the key of each as ``digits`` hex
    digits."""
    assert _core is not None
    return _core.BlockKeys(keys, list(digits))


def es_key_json(keys: list[list[tuple[int, int]]], digits: Sequence[int], blocks: Sequence[str],
                names: tuple[str, str, str]) -> Any:
    """A layout's candidate searches as JSON text, compiled (``_core.EsKeyJson``: its ``candidates`` equals
    ``es.codec.candidates_clause`` serialised); ``blocks`` names each key's field, ``names`` the
    fingerprint's, its hex form's and all fingerprints'."""
    assert _core is not None
    return _core.EsKeyJson(keys, list(digits), list(blocks), list(names))


def es_source_json(keys: list[list[tuple[int, int]]], digits: Sequence[int], blocks: Sequence[str],
                   key_names: tuple[str, str, str], names: Sequence[str], bands: int, rows: int) -> Any:
    """Whole documents as the JSON text a bulk request carries, compiled (``_core.EsSourceJson``: its
    ``source`` equals ``es.codec.decision_source``'s reference): the key fields as :func:`es_key_json`
    names them, ``names`` the fields after them, ``bands`` and ``rows`` the sketch's banding."""
    assert _core is not None
    return _core.EsSourceJson(keys, list(digits), list(blocks), list(key_names), list(names), bands, rows)


def block_tables(widths: Sequence[int], fps: Any, alive: Any, merge_min: int, hashed: bool) -> Any:
    """``index.memory.NumberedTables`` in compiled code (``_core.BlockTables``) over ``fps`` (uint64 by
    number) whose ``alive`` flags (uint8) are set; ``hashed`` keeps every block's buckets in hash maps."""
    assert _core is not None
    return _core.BlockTables(list(widths), fps, alive, merge_min, hashed)


def pending_set(k: int, widths: Sequence[int], merge_min: int) -> Any:
    """``index.pending.PendingSet`` in compiled code (``_core.PendingSet``): matching within ``k`` through
    block tables of ``widths``, merged as ``numbered_tables`` merges (``merge_min``)."""
    assert _core is not None
    return _core.PendingSet(k, list(widths), merge_min)


def core() -> ModuleType | None:
    """The compiled core when it is built and not switched off (``FPI_NATIVE=0``), else None: where the
    pieces beside the pass come from, such as the verification rule's comparisons (``compare_candidates``,
    ``days_apart``, ``fact_steps``: ``verification/rule.py`` and ``verification/compare.py`` are their
    reference)."""
    return _core if enabled() else None


def bloom_test() -> Any:
    """pybloom-live's ``BloomFilter`` membership test in compiled code, or None when the compiled core
    is not built or switched off: called with a filter's bits (its little-endian bitarray), slices, bits
    per slice and a key, whether every bit of the key is set; with ``set=True`` it also sets them."""
    compiled = core()
    return None if compiled is None else compiled.bloom_test


def bloom_many() -> tuple[Any, Any] | None:
    """The batch forms of :func:`bloom_test`, or None without the compiled core: ``test_many(bits,
    num_slices, bits_per_slice, keys)``, whether each key is held; ``fill(bits, num_slices,
    bits_per_slice, keys, room)``, the keys set in order until ``room`` of them were new, as
    ``(taken, new)``."""
    compiled = core()
    return None if compiled is None else (compiled.bloom_test_many, compiled.bloom_fill)


def record_encoder() -> Any:
    """``DocRecord.to_bytes`` in compiled code, or None when the compiled core is not built or switched
    off: called with a record and the store's version, its bytes, or None where the reference must
    encode it."""
    compiled = core()
    return None if compiled is None else compiled.encode_record


def record_decoder() -> Any:
    """``DocRecord.from_bytes``'s reading in compiled code, or None when the compiled core is not built or
    switched off: called with a record's bytes and the store's version, the record's fields, or None
    where the reference must read it."""
    compiled = core()
    return None if compiled is None else compiled.decode_record


def enabled() -> bool:
    """Whether the compiled pass is built and not switched off (``FPI_NATIVE=0``)."""
    return AVAILABLE and os.environ.get("FPI_NATIVE", "1") != "0"


@dataclass(frozen=True)
class Folded:
    """What one pass gives a fingerprint (the reference's ``Fingerprinter._fold`` alike); ``facts`` and
    ``frames`` are ``facts.analyse``'s when the pass computed them, else ``facts`` is None."""

    body: str  # the text fingerprinted: page furniture stripped (when the configuration strips it)
    fingerprint: int
    chunks: tuple[int, ...]
    top_terms: list[tuple[str, float]]
    n_tokens: int
    n_terms: int
    sketch: bytes
    names: list[str]
    facts: tuple[str, ...] | None = None
    frames: tuple[int, ...] = ()


class Documented(NamedTuple):
    """What one call gives ``Fingerprinter.fingerprint_document``: the fields of its
    ``FingerprintResult`` but the id, version and copy marks, with the title's facts and the publication
    day after the body's in ``facts``; ``day_read`` is false when the day is left to
    ``facts.publication_day``; ``headline`` is the title normalised (None when there is none or it is the
    text). A named tuple: it is made once per document, cheaply."""

    fingerprint: int
    blocks: list[str]
    content_digest: str
    keyword_digest: str
    top_terms: Sequence[tuple[str, float]]  # the compiled Terms: items made when read
    degenerate: bool
    n_tokens: int
    chunks: tuple[int, ...]
    sketch: bytes
    facts: tuple[str, ...]
    frames: tuple[int, ...]
    day_read: bool
    headline: str | None


def _documented(got: tuple[Any, ...] | None) -> Documented | None:
    """The compiled call's tuple as a :class:`Documented` (its last item is ``(day_read, headline)``)."""
    return None if got is None else Documented._make((*got[:-1], *got[-1]))


class NativePass:
    """The compiled pass for one configuration and its tokenizer."""

    def __init__(self, config: FingerprintConfig, tokenizer: Tokenizer, idf_path: str) -> None:
        assert _core is not None
        self._strip = config.strip_boilerplate
        variants = [v for v in tokenizer.synonyms if has_cjk(v)]
        self._core: Any = _core.Core(
            variants=variants, stopwords=set(tokenizer.stopwords), synonyms=tokenizer.synonyms,
            min_len=tokenizer.min_len, idf_path=idf_path, dict_path=str(jieba_file("dict.txt")),
            top_k=config.top_k, tf_power=config.tf_power, max_share=config.max_term_share,
            chunk_every=config.chunk_every, max_chunks=config.max_chunks,
            lead_sentences=config.lead_sentences,
            sketch_size=config.sketch_size, min_features=config.min_features,
            min_chunk_terms=MIN_CHUNK_TERMS,
            min_chunk_sentences=MIN_CHUNK_SENTENCES, max_sentence=MAX_SENTENCE,
        )  # fmt: skip
        layout = config.layout
        # what Core.document reads besides the pass: given once, not with every document
        self._plan: Any = _core.Plan(
            strip=config.strip_boilerplate, facts=config.facts, max_facts=MAX_FACTS,
            max_frames=MAX_FRAMES, keyword_n=config.keyword_digest_n, min_features=config.min_features,
            widths=list(layout.widths), tables=[list(t) for t in layout.tables],
        )  # fmt: skip
        self._facts = config.facts

    def fold(self, text: str, cased: str = "", facts: bool = False) -> Folded | None:
        """The pass over normalised ``text`` (``cased``: the same before lower-casing, ``""`` when
        unknown), or None where the reference must run. With ``facts`` it also gives the facts and frames
        of the body, as ``Fingerprinter.fingerprint_text`` computes them, where it can."""
        if facts and FACTS:
            got = self._core.fold(text, cased, self._strip, facts=True, lower=cased.lower(),
                                  max_facts=MAX_FACTS, max_frames=MAX_FRAMES)
        else:
            got = self._core.fold(text, cased, self._strip)
        if got is None:
            return None
        body, fp, chunks, top, n_tokens, n_terms, sketch, names, analysed = got
        found, frames = (None, ()) if analysed is None else (tuple(analysed[0]), tuple(analysed[1]))
        return Folded(body, fp, tuple(chunks), top, n_tokens, n_terms, sketch, names, found, frames)

    def document(self, raw: str, title: str | None = "", published_at: str | None = None
                 ) -> Documented | None:
        """``Fingerprinter.fingerprint_document`` of a document's text (``raw``, its HTML made text),
        title and publication time in one call: normalising, lower-casing, the pass with its facts, the
        block keys and digests, and what the configuration's facts add: the title's
        (``facts.title_facts`` of the normalised ``title`` with its ``latin_names``, unless it equals the
        text) and the publication day (``facts.publication_day`` of ``published_at``, where the compiled
        reading covers its form). None where a step would not run
        compiled (the caller then takes the separate steps), for text that normalises to nothing, and
        where the title's facts must come from the reference."""
        if self._facts and not FACTS:
            return None
        return _documented(self._core.document(raw, title, published_at, self._plan))

    def documents(self, items: Sequence[tuple[str, str | None, str | None]]) -> list[Documented | None]:
        """:meth:`document` of each ``(raw, title, published_at)``, in order, from one compiled call: the
        GIL is released once for all of them, so threads fingerprinting chunks seldom wait for it."""
        if self._facts and not FACTS:
            return [None] * len(items)
        return [_documented(got) for got in self._core.documents(list(items), self._plan)]

    @staticmethod
    def normalize(text: str, lower: bool = True) -> str | None:
        """:func:`fingerprint_indexer.text.clean.normalize`, compiled; None where the reference must run."""
        assert _core is not None
        return _core.normalize(text, lower)

    def title_facts(self, raw: str) -> tuple[str, ...] | None:
        """``facts.title_facts`` of the title ``raw`` (normalised, its terms, its ``latin_names``),
        compiled; None where the reference must run."""
        got = self._core.title_facts(raw)
        return None if got is None else tuple(got)

    def terms(self, text: str) -> list[str]:
        """:meth:`Tokenizer.terms <fingerprint_indexer.text.tokenize.Tokenizer.terms>`, compiled."""
        return self._core.terms(text)

    def cut(self, text: str) -> list[str]:
        """The compiled segmenter's tokens (``rjieba.cut``'s)."""
        return list(self._core.cut(text))

    def sentence_spans(self, text: str) -> list[tuple[int, int]] | None:
        """:func:`fingerprint_indexer.fingerprint.chunks.sentence_spans`, compiled."""
        got = self._core.sentence_spans(text)
        return None if got is None else [tuple(s) for s in got]

    def marked(self, text: str, params: WinnowParams) -> bytes | None:
        """``marked(text, tokenizer, params).to_bytes()`` of :mod:`fingerprint_indexer.fingerprint.winnow`
        (the copy marks of ``text`` as given), compiled; None where the reference must run."""
        got = self._core.marks(text, params.k, params.g, MAX_STORED_BLOCKS, CHUNK_CHARS)
        return None if got is None else bytes(got)

    def idf_summary(self) -> tuple[int, float]:
        """(entries, default) of the IDF table the pass read."""
        n, default = self._core.idf_summary()
        return int(n), float(default)


def strip_boilerplate(text: str, cased: str = "") -> str | None:
    """:func:`fingerprint_indexer.text.boilerplate.strip_boilerplate`, compiled; None where the
    reference must run."""
    assert _core is not None
    return _core.strip_boilerplate(text, cased)


def sketch_bytes(text: str, size: int) -> bytes:
    """:func:`fingerprint_indexer.fingerprint.sketch.sketch` as bytes, compiled."""
    assert _core is not None
    return bytes(_core.sketch_bytes(text, size))


def band_keys(data: bytes, bands: int, rows: int) -> tuple[str, ...]:
    """:func:`fingerprint_indexer.fingerprint.sketch.band_keys` of ``bands`` bands of ``rows`` minima,
    compiled."""
    assert _core is not None
    return tuple(_core.band_keys(data, bands, rows))


def analyse(
    text: str, names: Iterable[str], max_facts: int = MAX_FACTS, max_frames: int = MAX_FRAMES,
    latin: Iterable[str] = (),
) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """:func:`fingerprint_indexer.fingerprint.facts.analyse` with ``terms_are_names=True``, compiled;
    None where the reference must run."""
    assert _core is not None
    got = _core.analyse(text, list(names), list(latin), max_facts, max_frames)
    return None if got is None else (tuple(got[0]), tuple(got[1]))


def publication_day(value: str) -> tuple[bool, str | None]:
    """``(True, facts.publication_day(value))``, compiled, or ``(False, None)`` where the reference must
    read ``value``."""
    assert _core is not None
    read, day = _core.publication_day(value)
    return bool(read), day


def latin_body_names(cased: str, body: str, stopwords: Iterable[str] = ()) -> set[str] | None:
    """:func:`fingerprint_indexer.fingerprint.facts.latin_body_names`, compiled; None where the
    reference must run."""
    assert _core is not None
    got = _core.latin_body_names(cased, cased.lower(), body, set(stopwords))
    return None if got is None else set(got)


def native_pass(config: FingerprintConfig, tokenizer: Tokenizer, idf_path: str | None) -> NativePass | None:
    """The compiled pass for ``config`` where it applies, else None (the reference runs)."""
    if not enabled() or tokenizer.engine != "rjieba":
        return None
    return NativePass(config, tokenizer, idf_path or str(jieba_file("analyse", "idf.txt")))
