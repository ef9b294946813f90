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
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from itertools import islice
from typing import Any

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.chunks import (
    MIN_CHUNK_TERMS,
    closes_chunk,
    iter_sentences,
    sentence_spans,
)
from fingerprint_indexer.fingerprint.digest import content_digest, keyword_digest, titled_digest
from fingerprint_indexer.fingerprint.evidence import Evidence, cached_attribute
from fingerprint_indexer.fingerprint.facts import (
    MAX_FACTS,
    MAX_FRAMES,
    analyse,
    headline_names,
    latin_body_names,
    latin_names,
    publication_day,
    title_facts,
)
from fingerprint_indexer.fingerprint.hamming import to_hex
from fingerprint_indexer.fingerprint.native import Documented, Folded, NativePass, native_pass
from fingerprint_indexer.fingerprint.simhash import simhash_from_hashes, term_hashes
from fingerprint_indexer.fingerprint.sketch import SKETCH_SIZE, sketch, to_bytes
from fingerprint_indexer.fingerprint.terms import MAX_ENTRIES, DocTerms, TermTable
from fingerprint_indexer.fingerprint.winnow import WinnowParams, document_text, marked
from fingerprint_indexer.text.boilerplate import strip_boilerplate
from fingerprint_indexer.text.clean import html_to_text, normalize
from fingerprint_indexer.text.synonyms import load_synonyms, synonyms_id
from fingerprint_indexer.text.tokenize import Tokenizer
from fingerprint_indexer.text.weights import JIEBA_IDF, IdfTable, jieba_idf, top_terms

ALGORITHM = "simhash64-tfidf/8"  # 8: what a headline adds (a degenerate body's digest; Latin names)
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

    @property
    def max_fingerprints(self) -> int:
        """The most fingerprints a document gets: its own, its lead's and ``max_chunks`` chunks'."""
        return self.max_chunks + 2


@dataclass(frozen=True)
class FingerprintResult:
    """What one document fingerprints to."""

    id: str
    fingerprint: int
    blocks: list[str]
    content_digest: str
    keyword_digest: str
    top_terms: Sequence[tuple[str, float]]  # all folded terms, heaviest first (a list, or the compiled Terms)
    degenerate: bool
    n_tokens: int
    version: str
    chunks: tuple[int, ...] = ()  # lead and chunk SimHashes other than the document's, text order
    sketch: bytes = b""  # MinHash of the stripped text's 5-grams (little-endian uint32s)
    facts: tuple[str, ...] = ()  # numbers, dates and names of the stripped text (see fingerprint.facts)
    frames: tuple[int, ...] = ()  # skeleton and filling of each fact-bearing line (see fingerprint.facts)
    marks: bytes = b""  # block hashes of the text as given, winnowed ones flagged (fingerprint.winnow.marked)

    @property
    def hex(self) -> str:
        return to_hex(self.fingerprint)

    @property
    def fingerprints(self) -> tuple[int, ...]:
        """Every fingerprint this document is indexed under: the document's first, then its chunks'."""
        return (self.fingerprint, *self.chunks)

    @cached_attribute
    def evidence(self) -> Evidence:
        """What verification compares (:func:`fingerprint_indexer.verification.check`), made once: the
        decision step reads it for its look-ahead, its candidates and its clusters."""
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

    def __init__(self, config: FingerprintConfig | None = None, reference: bool = False) -> None:
        """``reference``: run the Python reference even where the compiled pass is built
        (:mod:`fingerprint_indexer.fingerprint.native`; both give the same fingerprints)."""
        self.config = cfg = config or FingerprintConfig()
        synonyms = load_synonyms(cfg.synonyms_path) if cfg.synonyms_path else {}
        self.tokenizer = Tokenizer(synonyms=synonyms, engine=cfg.segmenter)
        # jieba's table is read when a first term needs its weight (jieba_idf: once per process)
        self._idf: IdfTable | None = IdfTable.load(cfg.idf_path) if cfg.idf_path else None
        self.version = (
            f"{ALGORITHM};top{cfg.top_k or 'all'};tf^{cfg.tf_power:g};cap={cfg.max_term_share:g};"
            f"strip={int(cfg.strip_boilerplate)};"
            f"chunks={cfg.chunk_every}/{cfg.max_chunks};lead={cfg.lead_sentences};"
            f"sketch={cfg.sketch_size};"
            f"facts={f'{MAX_FACTS}/{MAX_FRAMES}+title+day+latin' if cfg.facts else 'off'};"
            f"idf={self._idf.name if self._idf else JIEBA_IDF};syn={synonyms_id(synonyms)}"
        )
        self._table = TermTable(self.tokenizer, lambda: self.idf)
        # the compiled pass (None: the reference runs), made on first use unless ``reference``
        self._native: NativePass | None = None
        self._native_made = reference
        self._native_lock = threading.Lock()

    @property
    def idf(self) -> IdfTable:
        """The IDF table of this configuration."""
        return self._idf or jieba_idf()

    def warm(self) -> Fingerprinter:
        """Load what fingerprinting reads lazily (segmenter, IDF table, dictionary), e.g. before forking
        workers that should share it."""
        self.fingerprint_text("预热 warm")  # a Chinese and a Latin term: every table is read
        return self

    def weigh(self, counts: Counter[str]) -> list[tuple[str, float]]:
        """The folded terms with their weights, heaviest first."""
        cfg = self.config
        return top_terms(counts, self.idf, cfg.top_k, cfg.tf_power, cfg.max_term_share)

    def _simhash(self, counts: Counter[str]) -> int:
        terms = self.weigh(counts)
        return simhash_from_hashes(term_hashes([t for t, _ in terms]),
                                   np.array([w for _, w in terms], dtype=np.float64))

    def _terms(self) -> TermTable:
        """The term table, started afresh when it has grown past its bound."""
        table = self._table
        if len(table) > MAX_ENTRIES:
            table = self._table = TermTable(self.tokenizer, lambda: self.idf)
        return table

    def _count(self, body: str) -> tuple[DocTerms, npt.NDArray[np.intp], list[tuple[int, int]], bool]:
        """The document's terms and counts from one segmentation per sentence; each token as an index
        into those terms, in text order; the token spans of the lead and of each chunk; whether the
        first span is the lead's."""
        cfg = self.config
        table = self._terms()
        if not cfg.chunk_every and not cfg.lead_sentences:
            counts = self.tokenizer.count(body)
            ids = table.term_ids(counts)
            cnt = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
            return DocTerms(table, ids, cnt), np.zeros(0, dtype=np.intp), [], False
        flat_body = body.replace("\n", " ")  # as iter_sentences reads it
        where = sentence_spans(flat_body)
        got = table.text_ids(flat_body, where) if where else None
        if got is None:
            sents = list(iter_sentences(body))
            flat, ends = table.sentence_ids(sents)
        else:
            sents = [flat_body[a:b] for a, b in where or ()]
            flat, ends = got
        ids, inv, cnt = np.unique(flat, return_inverse=True, return_counts=True)
        spans = [(0, ends[min(cfg.lead_sentences, len(sents)) - 1])] if cfg.lead_sentences and sents else []
        has_lead = bool(spans)
        if cfg.chunk_every and cfg.max_chunks:
            start = n_sent = 0
            for sent, end in zip(sents, ends, strict=True):
                n_sent += 1
                if closes_chunk(sent, n_sent, cfg.chunk_every):
                    spans.append((start, end))
                    start, n_sent = end, 0
            if n_sent:
                spans.append((start, ends[-1]))
        doc = DocTerms(table, ids, cnt)
        return doc, doc.column[inv], spans, has_lead

    def _chunks(self, folded: list[int | None], lead: int | None) -> list[int]:
        """The lead fingerprint first, then the chunks' in text order, distinct, at most ``max_chunks``.

        News reposts and excerpts keep an article's opening, so the lead matches when edits further down
        changed every chunk.
        """
        kept: list[tuple[int, int]] = []  # (selection key, fingerprint), at most max_chunks
        order: dict[int, int] = {}
        for fp in folded:
            if fp is None or fp in order:
                continue
            order[fp] = len(order)
            # beyond max_chunks keep the chunks of smallest hash: a choice edits elsewhere leave alone
            item = (-((fp * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF), fp)
            if len(kept) < self.config.max_chunks:
                heapq.heappush(kept, item)
            elif item > kept[0]:
                heapq.heapreplace(kept, item)
        chunks = sorted((fp for _, fp in kept), key=order.__getitem__)
        return chunks if lead is None else [lead, *(c for c in chunks if c != lead)]

    def _fold(self, body: str) -> Folded:
        """The reference pass over stripped text: terms, weights, the document, lead and chunk
        SimHashes, the sketch and the terms that are names (what the compiled pass computes alike)."""
        cfg = self.config
        doc, inv, spans, has_lead = self._count(body)
        # one weighting of the whole document (row 0) and of its lead and chunks (the other rows)
        counts = np.empty((1 + len(spans), len(doc)), dtype=np.int64)
        counts[0] = doc.counts
        for row, (start, end) in enumerate(spans, start=1):
            counts[row] = np.bincount(inv[start:end], minlength=len(doc))
        order, weights, n = doc.weigh(counts, cfg.top_k, cfg.tf_power, cfg.max_term_share)
        sel, w = order[0, : n[0]], weights[0, : n[0]]
        fp = doc.simhash(sel, w)
        distinct = np.count_nonzero(counts, axis=1).tolist()
        folded = [
            doc.simhash(order[r, : n[r]], weights[r, : n[r]]) if distinct[r] >= MIN_CHUNK_TERMS else None
            for r in range(1, len(counts))
        ]
        chunks = self._chunks(folded[1:], folded[0]) if has_lead else self._chunks(folded, None)
        degenerate = len(doc) < cfg.min_features
        return Folded(
            body=body,
            fingerprint=fp,
            chunks=() if degenerate else tuple(c for c in chunks if c != fp),
            top_terms=list(zip([doc.terms[i] for i in sel.tolist()], w.tolist(), strict=True)),
            n_tokens=int(doc.counts.sum()),
            n_terms=len(doc),
            sketch=to_bytes(sketch(body, cfg.sketch_size)),
            names=doc.names() if cfg.facts else [],
        )

    def _native_pass(self) -> NativePass | None:
        """The compiled pass of this configuration, made on first use (None: the reference runs)."""
        if not self._native_made:
            with self._native_lock:
                if not self._native_made:
                    self._native = native_pass(self.config, self.tokenizer, self.config.idf_path)
                    self._native_made = True
        return self._native

    def fingerprint_text(self, text: str, doc_id: str = "", cased: str = "") -> FingerprintResult:
        """Fingerprint already-normalised text (see :func:`fingerprint_indexer.text.clean.clean`);
        ``cased``, the same text normalised but not lower-cased, gives its Latin-script names."""
        cfg = self.config
        compiled = self._native_pass()
        got = compiled.fold(text, cased, facts=cfg.facts) if compiled is not None else None
        if got is None:
            got = self._fold(strip_boilerplate(text, cased) if cfg.strip_boilerplate else text)
        body = got.body
        if cfg.facts and got.facts is not None:  # the compiled pass gave them
            facts, frames = got.facts, got.frames
        elif cfg.facts:
            latin = latin_body_names(cased, body, self.tokenizer.stopwords) if cased else ()
            facts, frames = analyse(body, got.names, latin=latin, terms_are_names=True)
        else:
            facts, frames = (), ()
        names = [t for t, _ in got.top_terms[: cfg.keyword_digest_n]]
        return FingerprintResult(
            id=doc_id,
            fingerprint=got.fingerprint,
            blocks=cfg.layout.keys(got.fingerprint),
            content_digest=content_digest(text),
            keyword_digest=keyword_digest(names),
            top_terms=got.top_terms,
            degenerate=got.n_terms < cfg.min_features,
            n_tokens=got.n_tokens,
            version=self.version,
            chunks=got.chunks,
            sketch=got.sketch,
            facts=facts,
            frames=frames,
        )

    def _normalize(self, text: str, lower: bool = True) -> str:
        """:func:`fingerprint_indexer.text.clean.normalize`, compiled where the pass is."""
        compiled = self._native_pass()
        got = compiled.normalize(text, lower) if compiled is not None else None
        return normalize(text, lower) if got is None else got

    def fingerprint(
        self, text: str | None = None, html: str | None = None, doc_id: str = ""
    ) -> FingerprintResult:
        """Fingerprint raw text or HTML."""
        raw = html_to_text(html) if html else text or ""  # what clean() reads, parsed once
        compiled = self._native_pass()
        got = compiled.document(raw) if compiled is not None else None
        if got is not None:
            return self._result(doc_id, got, got.content_digest, got.facts, lambda: raw)
        cased = self._normalize(raw, lower=False)
        return self._with_marks(self.fingerprint_text(cased.lower(), doc_id, cased), lambda: raw)

    def _with_marks(self, res: FingerprintResult, raw: Callable[[], str]) -> FingerprintResult:
        """``res`` with the copy marks of the text ``raw`` gives (see :meth:`_marks`)."""
        return res if self.config.winnow is None else replace(res, marks=self._marks(raw))

    def _marks(self, raw: Callable[[], str]) -> bytes:
        """The winnowed copy marks of the text ``raw`` gives (offsets refer to it), empty when marks are
        off; the text is read only when they are on."""
        params = self.config.winnow
        if params is None:
            return b""
        text = raw()
        compiled = self._native_pass()
        got = compiled.marked(text, params) if compiled is not None else None
        return marked(text, self.tokenizer, params).to_bytes() if got is None else got

    def fingerprint_document(self, doc: Document) -> FingerprintResult:
        """Fingerprint a document's body; the title stands in only when the body is empty. The publication
        day, when ``published_at`` reads as a date, joins the facts (verification compares it)."""
        raw = _raw(doc)
        compiled = self._native_pass()
        # one compiled call for the body, the title's facts and the day: the GIL is held for little else
        got = compiled.document(raw, doc.title, doc.published_at) if compiled is not None else None
        return self._finish(doc, raw, got)

    def fingerprint_documents(self, docs: Sequence[Document]) -> list[FingerprintResult]:
        """:meth:`fingerprint_document` of each document, in order, with one compiled call for all of
        them (a thread holds and gives up the GIL once for the batch, not twice a document)."""
        raws = [_raw(doc) for doc in docs]
        compiled = self._native_pass()
        items = [(raw, doc.title, doc.published_at) for doc, raw in zip(docs, raws, strict=True)]
        got = compiled.documents(items) if compiled is not None else [None] * len(docs)
        return [self._finish(doc, raw, g) for doc, raw, g in zip(docs, raws, got, strict=True)]

    def _finish(self, doc: Document, raw: str, got: Documented | None) -> FingerprintResult:
        """The result of a document (``raw``: its text) from its compiled call, or step by step where
        the call did not run (``got`` None)."""
        if got is None:
            return self._document(doc, raw)
        facts = got.facts
        if not got.day_read:
            day = publication_day(doc.published_at)
            facts = (*facts, day) if day else facts
        digest, facts = self._headline(got.degenerate, got.content_digest, facts, got.headline)
        return self._result(doc.id, got, digest, facts, lambda: document_text(doc))

    def _headline(self, degenerate: bool, digest: str, facts: tuple[str, ...], headline: str | None
                  ) -> tuple[str, tuple[str, ...]]:  # fmt: skip
        """A document's content digest and facts with what its ``headline`` (the title normalised; None
        when there is none or it is the text) adds: a degenerate document's digest covers it
        (:func:`titled_digest`), and its Latin-script words that the facts name are title names
        (:func:`headline_names`)."""
        if headline is None:
            return digest, facts
        if degenerate:
            digest = titled_digest(digest, headline)
        if self.config.facts:
            facts = headline_names(headline, facts)
        return digest, facts

    def _result(self, doc_id: str, got: Documented, digest: str, facts: tuple[str, ...],
                raw: Callable[[], str]) -> FingerprintResult:
        """The result of one compiled call with its content ``digest`` and ``facts``, and copy marks of the
        text ``raw`` gives."""
        return FingerprintResult(
            id=doc_id,
            fingerprint=got.fingerprint,
            blocks=got.blocks,
            content_digest=digest,
            keyword_digest=got.keyword_digest,
            top_terms=got.top_terms,
            degenerate=got.degenerate,
            n_tokens=got.n_tokens,
            version=self.version,
            chunks=got.chunks,
            sketch=got.sketch,
            facts=facts,
            frames=got.frames,
            marks=self._marks(raw),
        )

    def _document(self, doc: Document, raw: str) -> FingerprintResult:
        """:meth:`fingerprint_document` step by step (``raw``: the document's text), where the one
        compiled call does not run: the reference, or the compiled steps that do."""
        title = self._normalize(doc.title) if doc.title else ""  # clean(doc.title)
        cased = self._normalize(raw, lower=False)
        if not cased and doc.title:
            cased = self._normalize(doc.title, lower=False)
        text = cased.lower()
        res = self._with_marks(self.fingerprint_text(text, doc.id, cased), lambda: document_text(doc))
        headline = title if title and title != text else None  # a headline-only document: title is body
        if self.config.facts:
            latin = latin_names(doc.title) if headline else set()
            compiled = self._native_pass()
            terms = self.tokenizer.terms if compiled is None else compiled.terms
            extra = title_facts(headline, terms(headline), latin) if headline else ()
            day = publication_day(doc.published_at)
            extra = (*extra, day) if day else extra
            res = replace(res, facts=(*res.facts, *extra)) if extra else res
        digest, facts = self._headline(res.degenerate, res.content_digest, res.facts, headline)
        return replace(res, content_digest=digest, facts=facts)


def _raw(doc: Document) -> str:
    """What ``clean(doc.content, doc.html)`` reads: the HTML made text (parsed once), else the content."""
    return (html_to_text(doc.html) if doc.html else doc.content) or ""


# Per-worker state for fingerprint_many: built once per process by the pool initializer.
_WORKER: Fingerprinter | None = None


def _init_worker(config: FingerprintConfig) -> None:
    global _WORKER
    if _WORKER is None or _WORKER.config != config:  # a forked worker has its parent's, tables read
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
    in_flight: int | None = None,
    threads: int = 1,
) -> Iterator[FingerprintResult]:
    """Fingerprints in input order; ``processes > 1`` spreads the CPU work over a process pool, and
    ``threads > 1`` (with one process) over threads of this process, which share its tables: the
    compiled pass (:mod:`fingerprint_indexer.fingerprint.native`) runs without the GIL.

    The pool reads at most ``in_flight`` documents (default: 8 chunks per worker) ahead of the results
    taken from this iterator: a consumer slower than the workers (the decision step, a network write)
    holds a bounded backlog instead of the rest of the input and its fingerprints. One thread in one
    process takes ``chunksize`` documents per compiled call, so it reads that many ahead too."""
    if processes <= 1 and threads > 1:
        fpr = fingerprinter or Fingerprinter(config)
        yield from _threaded(docs, fpr.warm(), threads, chunksize, in_flight)
        return
    if processes <= 1:
        # a chunk per compiled call on this thread too: the GIL is given up once a chunk, not once a
        # document, and each time it is given up a busy thread beside this one (a crawler's reactor, a
        # service's event loop) takes it and this one waits for its turn
        fpr = fingerprinter or Fingerprinter(config)
        it = iter(docs)
        for chunk in iter(lambda: list(islice(it, chunksize)), []):
            yield from fpr.fingerprint_documents(chunk)
        return
    global _WORKER
    _WORKER = (fingerprinter or Fingerprinter(config)).warm()  # forked workers start from it
    cfg = _WORKER.config
    # at least one chunk per worker and one more must be able to go out, or the pool would wait forever
    slots = threading.Semaphore(max(in_flight or 8 * processes * chunksize, (processes + 1) * chunksize))
    stop = threading.Event()

    def bounded() -> Iterator[Document]:  # runs in the pool's task thread
        for doc in docs:
            while not slots.acquire(timeout=0.1):
                if stop.is_set():
                    return
            yield doc

    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    with ctx.Pool(processes, initializer=_init_worker, initargs=(cfg,)) as pool:
        try:
            for res in pool.imap(_work, bounded(), chunksize=chunksize):
                slots.release()
                yield res
        finally:
            stop.set()  # the task thread must not wait for a slot while the pool shuts down


def _threaded(
    docs: Iterable[Document], fpr: Fingerprinter, threads: int, chunksize: int, in_flight: int | None
) -> Iterator[FingerprintResult]:
    """:func:`fingerprint_many` over a thread pool: chunks of documents in flight, results in order."""
    window = max(1, (in_flight or 8 * threads * chunksize) // chunksize)
    pending: deque[Future[list[FingerprintResult]]] = deque()

    def run(chunk: list[Document]) -> list[FingerprintResult]:
        return fpr.fingerprint_documents(chunk)

    with ThreadPoolExecutor(threads, thread_name_prefix="fingerprint") as pool:
        it = iter(docs)
        for chunk in iter(lambda: list(islice(it, chunksize)), []):
            pending.append(pool.submit(run, chunk))
            if len(pending) >= window:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


def fingerprint_stream(
    docs: Iterable[Document], fingerprinter: Fingerprinter, processes: int = 1, window: int | None = None,
    threads: int = 1,
) -> Iterator[tuple[Document, FingerprintResult]]:
    """(document, fingerprint) pairs in input order, reading at most ``window`` documents ahead of the
    pairs taken (:func:`fingerprint_many`'s bound): a reindex of a large index or a long dedupe holds a
    window of the input, not the scan, and a slow writer does not outlive its point-in-time keep-alive."""
    seen: deque[Document] = deque()  # thread-safe append/popleft: the pool reads the input from a thread

    def feed() -> Iterator[Document]:
        for doc in docs:
            seen.append(doc)
            yield doc

    for res in fingerprint_many(feed(), processes=processes, fingerprinter=fingerprinter, in_flight=window,
                                threads=threads):
        yield seen.popleft(), res


def config_summary(config: FingerprintConfig) -> dict[str, Any]:
    """A JSON-friendly view of a configuration."""
    out = asdict(config)
    out["layout"] = config.layout.to_dict()
    return out
