"""The ingest pipeline: document -> fingerprint -> exact check -> near check -> cluster -> decision.

Documents are fingerprinted in input order (optionally in worker processes) and decided in batches;
each batch is committed to the store in one atomic write before its decisions are yielded, so a
decision that was reported has been stored, whatever happens afterwards.

The rules are :mod:`fingerprint_indexer.engine.rules` (written once for the embedded store and
Elasticsearch); the pipeline runs them over a :class:`~fingerprint_indexer.store.embedded.StoreBatch`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fingerprint_indexer.copies.stored import settle_marks
from fingerprint_indexer.documents import Document
from fingerprint_indexer.engine.rules import KEEP_POLICIES, MAX_HOPS, Decision, Engine, Keep
from fingerprint_indexer.fingerprint.fingerprinter import (
    FingerprintConfig,
    Fingerprinter,
    FingerprintResult,
    fingerprint_stream,
)
from fingerprint_indexer.store.block_index import MAX_ENTRIES
from fingerprint_indexer.store.db import CACHE_BYTES
from fingerprint_indexer.store.embedded import EmbeddedStore, StoreBatch
from fingerprint_indexer.verification import DEFAULT_POLICY

#: Documents per atomic commit of :meth:`Pipeline.process_many`. LevelDB inserts a batch's keys into its
#: memtable in one write, and the deeper levels of the memtable's skip list are still in the CPU's caches
#: from one key to the next only within that write: between writes the decisions evict them. Larger batches
#: pay that less often; a crash loses at most one batch of work (committed batches stay).
BATCH_SIZE = 1024
#: Documents the fingerprinting workers may read ahead of the decisions: at least this many, and two
#: batches, so the workers keep busy while a batch is decided without holding many batches in memory.
READ_AHEAD = 2048

if TYPE_CHECKING:
    from fingerprint_indexer.store.images import ImageStore

__all__ = ["KEEP_POLICIES", "MAX_HOPS", "Decision", "Keep", "Pipeline"]


class Pipeline:
    """Deduplicates documents against (and into) a persistent store directory."""

    def __init__(
        self,
        store_dir: str | Path,
        config: FingerprintConfig | None = None,
        k: int = 3,
        keep: Keep = "first",
        processes: int = 1,
        batch_size: int = BATCH_SIZE,
        cache_bytes: int = CACHE_BYTES,
        copy_marks: bool | None = None,
        threads: int = 1,
    ) -> None:
        """``copy_marks``: keep passage-level copy marks of every document (see
        :func:`~fingerprint_indexer.copies.stored.settle_marks`; None follows the store); ``threads``:
        fingerprinting threads beside the decision step (with one process; see :func:`fingerprint_many`)."""
        if keep not in KEEP_POLICIES:
            raise ValueError(f"keep must be one of {KEEP_POLICIES}, got {keep!r}")
        self.config = config or FingerprintConfig()
        self.config.layout.check_k(k)
        if self.config.max_fingerprints > MAX_ENTRIES:
            most = self.config.max_chunks - (self.config.max_fingerprints - MAX_ENTRIES)
            raise ValueError(f"max_chunks must be at most {most} for the embedded store (a document's "
                             f"fingerprints are numbered in 16 bits), got {self.config.max_chunks}")
        self.k, self.keep, self.processes, self.batch_size = k, keep, processes, batch_size
        self.threads = threads
        self._pictures: ImageStore | None = None  # opened when a first document carries pictures
        self.fingerprinter = Fingerprinter(self.config)
        self.store = EmbeddedStore(store_dir, self.config.layout, self.fingerprinter.version, cache_bytes)
        try:
            winnow = settle_marks(self.store, self.config.winnow, copy_marks)
        except BaseException:
            self.store.close()
            raise
        if winnow != self.config.winnow:
            self.config = replace(self.config, winnow=winnow)
            self.fingerprinter = Fingerprinter(self.config)
        self.engine = Engine(k, keep)
        self.marks_tag = winnow.tag if winnow else None
        self.store.note_policy(DEFAULT_POLICY.tag)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------- public API
    def process(self, doc: Document) -> Decision:
        return next(iter(self.process_many([doc])))

    def process_many(self, docs: Iterable[Document]) -> Iterator[Decision]:
        """Decisions in input order, each batch yielded only after it is committed; the workers read a
        bounded window ahead of the decisions (:func:`fingerprint_stream`)."""
        pairs = fingerprint_stream(docs, self.fingerprinter, self.processes,
                                   window=max(2 * self.batch_size, READ_AHEAD), threads=self.threads)
        while batch := list(itertools.islice(pairs, self.batch_size)):
            yield from self.decide_batch(batch)

    def fingerprint_batch(self, docs: Iterable[Document]) -> list[tuple[Document, FingerprintResult]]:
        """``docs`` fingerprinted as :meth:`process_many` does, for :meth:`decide_batch`: a caller may
        fingerprint on one thread and decide on another."""
        return list(fingerprint_stream(docs, self.fingerprinter, self.processes, threads=self.threads))

    def decide(self, tx: StoreBatch, doc: Document, res: FingerprintResult) -> Decision:
        """Decide one document into ``tx`` (the engine's rules), then stage its copy marks beside the record
        the engine wrote (when the store keeps marks); nothing is written for a repeated decision. The
        document's pictures are decided and kept beside it (:meth:`pictures`)."""
        alone = tx.alone(doc.id, res.content_digest, None if res.degenerate else res.evidence, self.k)
        decision, rec = self.engine.decide(tx, doc, res, alone)
        if rec is not None and res.marks and self.marks_tag is not None:
            tx.put_marks(rec.id, res.marks, self.marks_tag, rec.cluster_id)
        pictures = self.pictures(doc)
        return replace(decision, pictures=pictures) if pictures else decision

    def pictures(self, doc: Document) -> tuple[dict[str, Any], ...]:
        """Each picture file of ``doc`` (``images``) decided against the store's pictures and kept there
        under ``<document id>/<path>``: its decision, ``duplicate_of`` and distance, or the one-line error
        that kept it out. Pictures are evidence beside the text; they never change its decision."""
        if not doc.images:
            return ()
        # imported here: a job whose documents carry no pictures does not load Pillow
        from fingerprint_indexer.fingerprint.image import ImageError, fingerprint_file
        from fingerprint_indexer.store.images import ImageStore

        if self._pictures is None:
            self._pictures = ImageStore(self.store)
        out: list[dict[str, Any]] = []
        for path in doc.images:
            try:
                fp = fingerprint_file(path)
            except ImageError as exc:
                out.append({"image": path, "error": str(exc)})
                continue
            # durable with the document's batch (its commit is a synced write), not one disk sync each
            got = self._pictures.decide(f"{doc.id}/{path}", fp, source=path, sync=False).to_dict()
            out.append({"image": path, **{k: v for k, v in got.items() if k != "id"}})
        return tuple(out)

    def decide_batch(self, batch: list[tuple[Document, FingerprintResult]]) -> list[Decision]:
        """Decide and store one batch atomically."""
        tx = self.store.batch()
        tx.look_ahead((res.evidence for _doc, res in batch if not res.degenerate), self.k,
                      ids=(doc.id for doc, _res in batch))
        out = [self.decide(tx, doc, res) for doc, res in batch]
        tx.commit()
        return out
