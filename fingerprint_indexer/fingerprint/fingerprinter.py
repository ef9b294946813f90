"""Document -> fingerprint: clean, tokenise, weight, fold into SimHash, digest.

A :class:`Fingerprinter` holds the loaded dictionaries (stopwords, synonyms, IDF) for one
:class:`FingerprintConfig`; its ``version`` string names everything that changes fingerprints, and is
stored with every indexed document so that stores never mix algorithms.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.digest import content_digest, keyword_digest
from fingerprint_indexer.fingerprint.hamming import to_hex
from fingerprint_indexer.fingerprint.simhash import simhash_from_hashes, term_hashes
from fingerprint_indexer.text.clean import clean
from fingerprint_indexer.text.synonyms import load_synonyms, synonyms_id
from fingerprint_indexer.text.tokenize import Tokenizer
from fingerprint_indexer.text.weights import IdfTable, jieba_idf, top_terms

ALGORITHM = "simhash64-tfidf/1"


@dataclass(frozen=True)
class FingerprintConfig:
    """Everything that determines a fingerprint. Defaults are the measured ones (docs/quality.md)."""

    top_k: int = 64
    min_features: int = 5
    keyword_digest_n: int = 10
    idf_path: str | None = None
    synonyms_path: str | None = None
    layout: BlockLayout = field(default_factory=BlockLayout)
    # Which jieba implementation segments Chinese: "auto" (compiled rjieba when installed), "rjieba" or
    # "jieba". Not part of the version: both yield the same terms (see text/tokenize.py).
    segmenter: str = "auto"

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {self.top_k}")
        if self.min_features < 1:
            raise ValueError(f"min_features must be >= 1, got {self.min_features}")


@dataclass(frozen=True)
class FingerprintResult:
    """What one document fingerprints to."""

    id: str
    fingerprint: int
    blocks: list[str]
    content_digest: str
    keyword_digest: str
    top_terms: list[tuple[str, float]]
    degenerate: bool
    n_tokens: int
    version: str

    @property
    def hex(self) -> str:
        return to_hex(self.fingerprint)

    def to_dict(self, with_terms: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "fingerprint": self.hex,
            "blocks": self.blocks,
            "content_digest": self.content_digest,
            "keyword_digest": self.keyword_digest,
            "degenerate": self.degenerate,
            "n_tokens": self.n_tokens,
            "version": self.version,
        }
        if with_terms:
            out["top_terms"] = [[t, round(w, 6)] for t, w in self.top_terms]
        return out


class Fingerprinter:
    """Fingerprints documents under one configuration."""

    def __init__(self, config: FingerprintConfig | None = None) -> None:
        self.config = config or FingerprintConfig()
        synonyms = load_synonyms(self.config.synonyms_path) if self.config.synonyms_path else {}
        self.tokenizer = Tokenizer(synonyms=synonyms, engine=self.config.segmenter)
        self.idf: IdfTable = IdfTable.load(self.config.idf_path) if self.config.idf_path else jieba_idf()
        self.version = f"{ALGORITHM};top{self.config.top_k};idf={self.idf.name};syn={synonyms_id(synonyms)}"

    def fingerprint_text(self, text: str, doc_id: str = "") -> FingerprintResult:
        """Fingerprint already-normalised text (see :func:`fingerprint_indexer.text.clean.clean`)."""
        counts = self.tokenizer.count(text)
        terms = top_terms(counts, self.idf, self.config.top_k)
        names = [t for t, _ in terms]
        fp = simhash_from_hashes(term_hashes(names), np.array([w for _, w in terms], dtype=np.float64))
        return FingerprintResult(
            id=doc_id,
            fingerprint=fp,
            blocks=self.config.layout.keys(fp),
            content_digest=content_digest(text),
            keyword_digest=keyword_digest(names[: self.config.keyword_digest_n]),
            top_terms=terms,
            degenerate=len(counts) < self.config.min_features,
            n_tokens=sum(counts.values()),
            version=self.version,
        )

    def fingerprint(
        self, text: str | None = None, html: str | None = None, doc_id: str = ""
    ) -> FingerprintResult:
        """Fingerprint raw text or HTML."""
        return self.fingerprint_text(clean(text, html), doc_id)

    def fingerprint_document(self, doc: Document) -> FingerprintResult:
        """Fingerprint a document's body; the title stands in only when the body is empty."""
        text = clean(doc.content, doc.html)
        if not text and doc.title:
            text = clean(doc.title)
        return self.fingerprint_text(text, doc.id)


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
