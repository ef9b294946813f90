"""Document -> fingerprints: clean, strip page furniture, tokenise, weight, fold into SimHash, digest.

One pass over the sentences of the stripped text yields the term counts of the whole document, of its
lead (first sentences) and of each content-defined chunk, so the document, lead and chunk SimHashes and
the MinHash sketch come from one segmentation (docs/quality.md measures why each piece is there).

A :class:`Fingerprinter` holds the loaded dictionaries (stopwords, synonyms, IDF) for one
:class:`FingerprintConfig`; its ``version`` string names everything that changes fingerprints, and is
stored with every indexed document so that stores never mix algorithms.
"""

from __future__ import annotations

import heapq
import multiprocessing as mp
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from fingerprint_indexer.copies.winnow import WinnowParams, document_text, marked
from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.chunks import MIN_CHUNK_TERMS, closes_chunk, iter_sentences
from fingerprint_indexer.fingerprint.digest import content_digest, keyword_digest
from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.fingerprint.facts import (
    MAX_FACTS,
    MAX_FRAMES,
    analyse,
    latin_names,
    publication_day,
    title_facts,
)
from fingerprint_indexer.fingerprint.hamming import to_hex
from fingerprint_indexer.fingerprint.simhash import simhash_from_hashes, term_hashes
from fingerprint_indexer.fingerprint.sketch import SKETCH_SIZE, sketch, to_bytes
from fingerprint_indexer.text.boilerplate import strip_boilerplate
from fingerprint_indexer.text.clean import clean, html_to_text
from fingerprint_indexer.text.synonyms import load_synonyms, synonyms_id
from fingerprint_indexer.text.tokenize import Tokenizer
from fingerprint_indexer.text.weights import IdfTable, jieba_idf, top_terms

ALGORITHM = "simhash64-tfidf/4"
SHOWN_TERMS = 32  # top terms included in JSON output


@dataclass(frozen=True)
class FingerprintConfig:
    """Everything that determines a fingerprint. Defaults are the measured ones (docs/quality.md)."""

    top_k: int = 0  # terms folded into the SimHash; 0 = all
    tf_power: float = 3.0  # weight = tf ** tf_power * idf: recurring terms, which edits rarely touch, lead
    # no term weighs more than this share of the total, so no word alone decides a fingerprint; 1 = no cap
    max_term_share: float = 0.2
    strip_boilerplate: bool = True
    chunk_every: int = 4  # mean sentences per content-defined chunk; 0 = no chunk fingerprints
    # sentences in the lead fingerprint (0 = none): reposts and excerpts keep an article's opening
    lead_sentences: int = 3
    max_chunks: int = 32  # per document, so a huge document cannot flood the block index
    sketch_size: int = SKETCH_SIZE
    # keep facts (numbers, dates, names) and frames for verification; without them template news with
    # other facts looks duplicate
    facts: bool = True
    min_features: int = 5
    keyword_digest_n: int = 10
    idf_path: str | None = None
    synonyms_path: str | None = None
    layout: BlockLayout = field(default_factory=BlockLayout)
    # Which jieba implementation segments Chinese: "auto" (compiled rjieba when installed), "rjieba" or
    # "jieba". Not part of the version: both yield the same terms (see text/tokenize.py).
    segmenter: str = "auto"
    # Passage-level copy marks (winnowing, fingerprint_indexer/copies/), opt-in: None = none (they cost
    # about as much again as the fingerprint and grow a store several times). Not part of the version:
    # stores and indexes record the setting they were built with.
    winnow: WinnowParams | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.max_term_share <= 1.0:
            raise ValueError(f"max_term_share must be in (0, 1], got {self.max_term_share}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 = all terms), got {self.top_k}")
        if self.min_features < 1:
            raise ValueError(f"min_features must be >= 1, got {self.min_features}")
        if self.chunk_every < 0 or self.max_chunks < 0 or self.lead_sentences < 0:
            raise ValueError("chunk_every, max_chunks and lead_sentences must be >= 0")
        if not 1 <= self.sketch_size <= 256:
            raise ValueError(f"sketch_size must be in 1..256, got {self.sketch_size}")


@dataclass(frozen=True)
class FingerprintResult:
    """What one document fingerprints to."""

    id: str
    fingerprint: int
    blocks: list[str]
    content_digest: str
    keyword_digest: str
    top_terms: list[tuple[str, float]]  # all folded terms, heaviest first
    degenerate: bool
    n_tokens: int
    version: str
    chunks: tuple[int, ...] = ()  # lead and chunk SimHashes other than the document's, text order
    sketch: bytes = b""  # MinHash of the stripped text's 5-grams (little-endian uint32s)
    facts: tuple[str, ...] = ()  # numbers, dates and names of the stripped text (see fingerprint.facts)
    frames: tuple[int, ...] = ()  # skeleton and filling of each fact-bearing line (see fingerprint.facts)
    marks: bytes = b""  # block hashes of the text as given, winnowed ones flagged (copies.winnow.marked)

    @property
    def hex(self) -> str:
        return to_hex(self.fingerprint)

    @property
    def fingerprints(self) -> tuple[int, ...]:
        """Every fingerprint this document is indexed under: the document's first, then its chunks'."""
        return (self.fingerprint, *self.chunks)

    @property
    def evidence(self) -> Evidence:
        """What verification compares (:func:`fingerprint_indexer.verify.check`)."""
        return Evidence(self.fingerprints, self.sketch, self.facts, self.frames)

    def to_dict(self, with_terms: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "fingerprint": self.hex,
            "blocks": self.blocks,
            "chunks": [to_hex(c) for c in self.chunks],
            "content_digest": self.content_digest,
            "keyword_digest": self.keyword_digest,
            "degenerate": self.degenerate,
            "n_tokens": self.n_tokens,
            "version": self.version,
            "facts": list(self.facts),
            "frames": [f"{f:016x}" for f in self.frames],
        }
        if with_terms:
            out["top_terms"] = [[t, round(w, 6)] for t, w in self.top_terms[:SHOWN_TERMS]]
        return out


class Fingerprinter:
    """Fingerprints documents under one configuration."""

    def __init__(self, config: FingerprintConfig | None = None) -> None:
        self.config = cfg = config or FingerprintConfig()
        synonyms = load_synonyms(cfg.synonyms_path) if cfg.synonyms_path else {}
        self.tokenizer = Tokenizer(synonyms=synonyms, engine=cfg.segmenter)
        self.idf: IdfTable = IdfTable.load(cfg.idf_path) if cfg.idf_path else jieba_idf()
        self.version = (
            f"{ALGORITHM};top{cfg.top_k or 'all'};tf^{cfg.tf_power:g};cap={cfg.max_term_share:g};"
            f"strip={int(cfg.strip_boilerplate)};"
            f"chunks={cfg.chunk_every}/{cfg.max_chunks};lead={cfg.lead_sentences};"
            f"sketch={cfg.sketch_size};facts={f'{MAX_FACTS}/{MAX_FRAMES}+title+day' if cfg.facts else 'off'};"
            f"idf={self.idf.name};syn={synonyms_id(synonyms)}"
        )

    def weigh(self, counts: Counter[str]) -> list[tuple[str, float]]:
        """The folded terms with their weights, heaviest first."""
        cfg = self.config
        return top_terms(counts, self.idf, cfg.top_k, cfg.tf_power, cfg.max_term_share)

    def _simhash(self, counts: Counter[str]) -> int:
        terms = self.weigh(counts)
        return simhash_from_hashes(term_hashes([t for t, _ in terms]),
                                   np.array([w for _, w in terms], dtype=np.float64))

    def _count(self, body: str) -> tuple[Counter[str], list[int]]:
        """Document term counts, and the lead and chunk fingerprints, from one segmentation per sentence.

        The lead fingerprint (first ``lead_sentences`` sentences) comes first: news reposts and excerpts
        keep an article's opening, so it matches when edits further down changed every chunk.
        """
        cfg = self.config
        doc: Counter[str] = Counter()
        if not cfg.chunk_every and not cfg.lead_sentences:
            return self.tokenizer.count(body), []
        chunk: Counter[str] = Counter()
        lead: Counter[str] = Counter()
        n_sent = n_total = 0
        kept: list[tuple[int, int]] = []  # (selection key, fingerprint), at most max_chunks
        order: dict[int, int] = {}
        terms = self.tokenizer.terms

        def close() -> None:
            if len(chunk) >= MIN_CHUNK_TERMS and cfg.max_chunks:
                fp = self._simhash(chunk)
                if fp not in order:
                    order[fp] = len(order)
                    # beyond max_chunks keep the chunks of smallest hash: a choice edits elsewhere leave alone
                    key = -((fp * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
                    item = (key, fp)
                    if len(kept) < cfg.max_chunks:
                        heapq.heappush(kept, item)
                    elif item > kept[0]:
                        heapq.heapreplace(kept, item)

        for sent in iter_sentences(body):
            words = terms(sent)
            doc.update(words)
            n_total += 1
            if n_total <= cfg.lead_sentences:
                lead.update(words)
            if not cfg.chunk_every:
                continue
            chunk.update(words)
            n_sent += 1
            if closes_chunk(sent, n_sent, cfg.chunk_every):
                close()
                chunk.clear()
                n_sent = 0
        if n_sent:
            close()
        chunks = sorted((fp for _, fp in kept), key=order.__getitem__)
        if len(lead) >= MIN_CHUNK_TERMS:
            first = self._simhash(lead)
            chunks = [first, *(c for c in chunks if c != first)]
        return doc, chunks

    def fingerprint_text(self, text: str, doc_id: str = "") -> FingerprintResult:
        """Fingerprint already-normalised text (see :func:`fingerprint_indexer.text.clean.clean`)."""
        cfg = self.config
        body = strip_boilerplate(text) if cfg.strip_boilerplate else text
        counts, chunks = self._count(body)
        terms = self.weigh(counts)
        names = [t for t, _ in terms]
        fp = simhash_from_hashes(term_hashes(names), np.array([w for _, w in terms], dtype=np.float64))
        degenerate = len(counts) < cfg.min_features
        facts, frames = analyse(body, counts) if cfg.facts else ((), ())
        return FingerprintResult(
            id=doc_id,
            fingerprint=fp,
            blocks=cfg.layout.keys(fp),
            content_digest=content_digest(text),
            keyword_digest=keyword_digest(names[: cfg.keyword_digest_n]),
            top_terms=terms,
            degenerate=degenerate,
            n_tokens=sum(counts.values()),
            version=self.version,
            chunks=() if degenerate else tuple(c for c in chunks if c != fp),
            sketch=to_bytes(sketch(body, cfg.sketch_size)),
            facts=facts,
            frames=frames,
        )

    def fingerprint(
        self, text: str | None = None, html: str | None = None, doc_id: str = ""
    ) -> FingerprintResult:
        """Fingerprint raw text or HTML."""
        res = self.fingerprint_text(clean(text, html), doc_id)
        return self._with_marks(res, html_to_text(html) if html else text or "")

    def _with_marks(self, res: FingerprintResult, raw: str) -> FingerprintResult:
        """Add the winnowed copy marks of ``raw`` (offsets refer to it)."""
        if self.config.winnow is None:
            return res
        return replace(res, marks=marked(raw, self.tokenizer, self.config.winnow).to_bytes())

    def fingerprint_document(self, doc: Document) -> FingerprintResult:
        """Fingerprint a document's body; the title stands in only when the body is empty. The publication
        day, when ``published_at`` reads as a date, joins the facts (verification compares it)."""
        text = clean(doc.content, doc.html)
        if not text and doc.title:
            text = clean(doc.title)
        res = self.fingerprint_text(text, doc.id)
        res = self._with_marks(res, document_text(doc))
        if not self.config.facts:
            return res
        title = clean(doc.title) if doc.title and doc.title != text else ""
        latin = latin_names(doc.title) if title else set()
        extra = title_facts(title, self.tokenizer.terms(title), latin) if title else ()
        day = publication_day(doc.published_at)
        extra = (*extra, day) if day else extra
        return replace(res, facts=(*res.facts, *extra)) if extra else res


# Per-worker state for fingerprint_many: built once per process by the pool initializer.
_WORKER: Fingerprinter | None = None


def _init_worker(config: FingerprintConfig) -> None:
    global _WORKER
    _WORKER = Fingerprinter(config)


def _work(doc: Document) -> FingerprintResult:
    assert _WORKER is not None
    return _WORKER.fingerprint_document(doc)


def fingerprint_many(
    docs: Iterable[Document],
    config: FingerprintConfig | None = None,
    processes: int = 1,
    chunksize: int = 32,
    fingerprinter: Fingerprinter | None = None,
) -> Iterator[FingerprintResult]:
    """Fingerprints in input order; ``processes > 1`` spreads the CPU work over a process pool."""
    if processes <= 1:
        fpr = fingerprinter or Fingerprinter(config)
        for doc in docs:
            yield fpr.fingerprint_document(doc)
        return
    cfg = fingerprinter.config if fingerprinter else (config or FingerprintConfig())
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    with ctx.Pool(processes, initializer=_init_worker, initargs=(cfg,)) as pool:
        yield from pool.imap(_work, docs, chunksize=chunksize)


def config_summary(config: FingerprintConfig) -> dict[str, Any]:
    """A JSON-friendly view of a configuration."""
    out = asdict(config)
    out["layout"] = config.layout.to_dict()
    return out
