"""The ingest pipeline: document -> fingerprint -> exact check -> near check -> cluster -> decision.

Documents are fingerprinted in input order (optionally in worker processes) and decided in batches;
each batch is committed to the store in one atomic write before its decisions are yielded, so a
decision that was reported has been stored, whatever happens afterwards.

Rules, for a document ``d`` with fingerprint ``f``:

- same id already stored with the same content digest: its stored decision is repeated (re-running an
  input is idempotent), ``replaces`` included; a canonical that was replaced since is reported as the
  duplicate of the document that replaced it. Same id with other content: the old record is replaced,
  and links that other documents hold to the old text are not followed to the new one.
- a stored document with the same content digest: ``exact_duplicate``;
- otherwise (and only when ``d`` is not degenerate) the nearest indexed document that has any
  fingerprint (document or chunk) within ``k`` of any of ``d``'s that the verification rule accepts
  (sketch similarity, no conflicting facts: :mod:`fingerprint_indexer.verify`): ``near_duplicate``;
  otherwise ``new``. When the facts of that document's canonical conflict with ``d``'s, ``d`` is
  ``new`` too: one template link (A ~ B) must not make ``d`` a copy of a different story B was
  matched to.
- ``duplicate_of`` is the canonical document of the group (found by following ``duplicate_of`` links);
  under ``keep=longest|newest`` a longer/newer duplicate becomes the canonical instead: it is reported
  with ``duplicate_of`` null and ``replaces`` naming the previous canonical, whose record now points at it.
  ``distance`` is the smallest Hamming distance between any fingerprint of ``d`` and any of
  ``duplicate_of`` (or of ``replaces``).
- cluster: an exact or near duplicate joins the cluster of the document it matched; otherwise Single-Pass
  over non-degenerate documents (nearest centre within ``k`` whose founder the same rule accepts, else
  a new cluster); a degenerate document without an exact duplicate stays alone.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from fingerprint_indexer.cluster.single_pass import assign
from fingerprint_indexer.copies.stored import settle_marks
from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.fingerprinter import (
    FingerprintConfig,
    Fingerprinter,
    FingerprintResult,
    fingerprint_many,
)
from fingerprint_indexer.fingerprint.hamming import to_hex
from fingerprint_indexer.index.base import Match
from fingerprint_indexer.store.db import CACHE_BYTES
from fingerprint_indexer.store.errors import StoreDamagedError
from fingerprint_indexer.store.exact import DocRecord, ExactStore, StoreBatch, record_now
from fingerprint_indexer.verify import check, closest, joins

Keep = Literal["first", "longest", "newest"]
KEEP_POLICIES: tuple[Keep, ...] = ("first", "longest", "newest")
MAX_HOPS = 64


@dataclass(frozen=True)
class Decision:
    """What the pipeline decided for one document (one JSONL line of ``dedupe``)."""

    id: str
    fingerprint: str
    decision: str
    duplicate_of: str | None
    distance: int | None
    cluster_id: str
    replaces: str | None = None
    degenerate: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "fingerprint": self.fingerprint,
            "decision": self.decision,
            "duplicate_of": self.duplicate_of,
            "distance": self.distance,
            "cluster_id": self.cluster_id,
        }
        if self.replaces is not None:
            out["replaces"] = self.replaces
        if self.degenerate:
            out["degenerate"] = True
        return out


def _prefer(doc: Document, canonical: DocRecord, keep: Keep) -> bool:
    """Whether ``doc`` should replace ``canonical`` as the group's kept document."""
    if keep == "longest":
        return doc.length > canonical.length
    if keep == "newest":
        return doc.published_at is not None and (
            canonical.published_at is None or doc.published_at > canonical.published_at
        )
    return False


class Pipeline:
    """Deduplicates documents against (and into) a persistent store directory."""

    def __init__(
        self,
        store_dir: str | Path,
        config: FingerprintConfig | None = None,
        k: int = 3,
        keep: Keep = "first",
        processes: int = 1,
        batch_size: int = 256,
        cache_bytes: int = CACHE_BYTES,
        copy_marks: bool | None = None,
    ) -> None:
        """``copy_marks``: keep passage-level copy marks of every document (see
        :func:`~fingerprint_indexer.copies.stored.settle_marks`; None follows the store)."""
        if keep not in KEEP_POLICIES:
            raise ValueError(f"keep must be one of {KEEP_POLICIES}, got {keep!r}")
        self.config = config or FingerprintConfig()
        self.config.layout.check_k(k)
        self.k, self.keep, self.processes, self.batch_size = k, keep, processes, batch_size
        self.fingerprinter = Fingerprinter(self.config)
        self.store = ExactStore(store_dir, self.config.layout, self.fingerprinter.version, cache_bytes)
        try:
            winnow = settle_marks(self.store, self.config.winnow, copy_marks)
        except BaseException:
            self.store.close()
            raise
        if winnow != self.config.winnow:
            self.config = replace(self.config, winnow=winnow)
            self.fingerprinter = Fingerprinter(self.config)

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
        """Decisions in input order, each batch yielded only after it is committed."""
        # a worker pool reads the input from a feeder thread: hand documents over through a deque
        # (thread-safe append/popleft) rather than itertools.tee, which is not thread-safe
        seen: deque[Document] = deque()

        def feed() -> Iterator[Document]:
            for doc in docs:
                seen.append(doc)
                yield doc

        results = fingerprint_many(feed(), processes=self.processes, fingerprinter=self.fingerprinter)
        pairs = ((seen.popleft(), res) for res in results)
        while batch := list(itertools.islice(pairs, self.batch_size)):
            yield from self.decide_batch(batch)

    def decide_batch(self, batch: list[tuple[Document, FingerprintResult]]) -> list[Decision]:
        """Decide and store one batch atomically."""
        tx = self.store.batch()
        out = [self._decide(tx, doc, res) for doc, res in batch]
        tx.commit()
        return out

    # ----------------------------------------------------------------- rules
    def _root(self, tx: StoreBatch, doc_id: str) -> DocRecord:
        """The canonical of ``doc_id``'s group: ``duplicate_of`` links followed while they hold.

        Every member of a group is in its canonical's cluster, so a link to a document of another
        cluster is stale: that id was reused for other text since (or the canonical was deleted).
        """
        rec = tx.record(doc_id)
        if rec is None:  # found through a key whose record is gone: only a damaged store does that
            where = self.store.directory
            raise StoreDamagedError(f"store {where} is damaged: {doc_id!r} is indexed but has no record; "
                                    f"see 'fingerprint-indexer store check {where}'")
        seen = {rec.id}
        for _ in range(MAX_HOPS):
            if rec.duplicate_of is None or rec.duplicate_of in seen:
                break
            nxt = tx.record(rec.duplicate_of)
            if nxt is None or nxt.cluster_id != rec.cluster_id:  # deleted or reused: this one stands
                break
            rec = nxt
            seen.add(rec.id)
        return rec

    @staticmethod
    def _repeat(tx: StoreBatch, old: DocRecord) -> Decision:
        """The stored decision of a document seen again with the same text."""
        kind = old.decision
        if kind == "new" and old.duplicate_of is not None:  # a canonical replaced under keep longest/newest
            canonical = tx.record(old.duplicate_of)
            same = canonical is not None and canonical.content_digest == old.content_digest
            kind = "exact_duplicate" if same else "near_duplicate"
        return Decision(old.id, to_hex(old.fingerprint), kind, old.duplicate_of, old.distance, old.cluster_id,
                        old.replaces, old.degenerate)

    def _decide(self, tx: StoreBatch, doc: Document, res: FingerprintResult) -> Decision:
        fp = res.fingerprint
        old = tx.record(doc.id)
        if old is not None:
            if old.content_digest == res.content_digest and old.version == res.version:
                return self._repeat(tx, old)
            tx.remove_doc(doc.id)

        kind, match_id = "new", None
        root: DocRecord | None = None  # the canonical of the matched document's group
        exact = tx.doc_with_digest(res.content_digest)
        if exact is not None:
            kind, match_id = "exact_duplicate", exact
        elif not res.degenerate:
            near = tx.near_docs(res.evidence, self.k)
            if near:
                canonical = self._root(tx, near[0].doc_id)
                if joins(res.evidence, near[0].doc_id, canonical.id, canonical.evidence):
                    kind, match_id, root = "near_duplicate", near[0].doc_id, canonical

        duplicate_of = replaces = None
        distance: int | None = None
        if match_id is not None:
            root = root or self._root(tx, match_id)
            distance = closest(res.fingerprints, root.fingerprints)[0]
            if _prefer(doc, root, self.keep):
                replaces = root.id
                root.duplicate_of = doc.id
                root.distance = distance
                tx.update_record(root)
            else:
                duplicate_of = root.id

        if match_id is not None or res.degenerate:
            # a copy belongs with what it matched, even if a nearer centre was founded since
            match = tx.record(match_id) if match_id is not None else None
            cluster_id = match.cluster_id if match is not None else self._singleton(tx, doc.id, fp)
            c = tx.cluster(cluster_id) if match is not None else None
            if c is not None:
                c.size += 1
                tx.put_cluster(c)
        else:
            a = assign(fp, self.k, lambda f, k: self._verified_centres(tx, res, f, k), doc.id)
            if a.founded:
                cluster_id = tx.found_cluster(doc.id, fp).id
            else:
                cluster_id = a.cluster_id
                c = tx.cluster(cluster_id)
                if c is not None:
                    c.size += 1
                    tx.put_cluster(c)

        rec = record_now(
            id=doc.id, fingerprint=fp, content_digest=res.content_digest, keyword_digest=res.keyword_digest,
            cluster_id=cluster_id, decision=kind, duplicate_of=duplicate_of, distance=distance,
            degenerate=res.degenerate, length=doc.length, published_at=doc.published_at, version=res.version,
            chunks=list(res.chunks), sketch=res.sketch.hex(), facts=list(res.facts),
            frames=list(res.frames), replaces=replaces,
        )
        tag = self.config.winnow.tag if self.config.winnow else None
        tx.put_record(rec, index=not res.degenerate, marks=res.marks, marks_tag=tag)
        return Decision(doc.id, to_hex(fp), kind, duplicate_of, distance, cluster_id, replaces,
                        res.degenerate)

    @staticmethod
    def _verified_centres(tx: StoreBatch, res: FingerprintResult, fp: int, k: int) -> list[Match]:
        """Centres within ``k`` whose founder the verification rule accepts as the same story.

        Without this, distinct articles whose fingerprints collide at a few bits (one dominant shared
        term, such as a celebrity's name) or that share a template would be clustered together. A
        centre whose founder was removed has nothing to verify against and is passed over.
        """
        out = []
        for m in tx.centres_near(fp, k):
            c = tx.cluster(m.doc_id)
            founder = tx.record(c.founder) if c is not None else None
            if founder is not None and check(res.evidence, founder.evidence, k).accepted:
                out.append(m)
        return out

    def _singleton(self, tx: StoreBatch, doc_id: str, fp: int) -> str:
        """A degenerate document's own cluster id (not a searchable centre: it would be a giant bucket)."""
        cid, n = doc_id, 1
        while tx.cluster(cid) is not None:
            n += 1
            cid = f"{doc_id}~{n}"
        return cid
