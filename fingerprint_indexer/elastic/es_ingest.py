"""Decide new / exact / near duplicate against an Elasticsearch index, and write the fingerprint fields.

Elasticsearch is the source of truth here: a document is decided by the rules of
:mod:`fingerprint_indexer.engine.rules` (the same as the embedded pipeline's) against what the index
already holds and, by the same rule, against the documents decided since the last refresh (``pending``,
matched in memory so a batch never waits for the previous one to become searchable). The batch view
:class:`_EsBatch` is the engine's record store here: exact copies are found by content digest, near ones
by :meth:`ElasticsearchIndex.query_verified_many` and among the pending documents by
:func:`fingerprint_indexer.verification.check_many`; cluster centres are the founders (``cluster_id`` =
own id) among those. Under ``keep=longest|newest`` the replaced canonical gets an ``update`` of its
``duplicate_of`` and ``distance`` after the new canonical's write, as the sidecar sends it.
Degenerate documents (too few features) are matched exactly only and get no block keys.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from elasticsearch import Elasticsearch

from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.claims import Claim, ClaimError, DigestClaims
from fingerprint_indexer.engine.rules import MAX_HOPS, Decision, Engine, Keep
from fingerprint_indexer.errors import FingerprintIndexerError
from fingerprint_indexer.es.codec import (
    Picture,
    decision_fields,
    image_fields,
    index_lines_many,
    source_evidence,
)
from fingerprint_indexer.es.errors import ElasticsearchWriteError, EsUnavailable
from fingerprint_indexer.es.scan import WHOLE
from fingerprint_indexer.fingerprint.facts import publication_time
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, FingerprintResult, fingerprint_stream
from fingerprint_indexer.fingerprint.hamming import hamming
from fingerprint_indexer.fingerprint.image import ImageError, fingerprint_image, read_image, thumbnail
from fingerprint_indexer.index.elasticsearch import BulkLines, ElasticsearchIndex
from fingerprint_indexer.index.pending import pending_set
from fingerprint_indexer.records.match import Match
from fingerprint_indexer.records.record import Cluster, DocRecord, new_cluster_id
from fingerprint_indexer.text.clean import clean
from fingerprint_indexer.verification import Evidence, check_many

OnDuplicate = Literal["tag", "skip"]
#: Documents the Elasticsearch commands decide a batch (``--batch-size``). A batch asks the index four
#: things (its ids, its texts' digests, the stock phrases among its bands, its candidates), and each
#: request costs the client a fixed share (sending, reading, the client library's own steps) besides its
#: documents: the variable it keys on is that share against a document's deciding, about halved from
#: batches of 500. The pending set, the read-ahead and the bulk requests grow with it.
DECIDE_BATCH = 1000
#: Batches fingerprinted ahead of the one being decided: the workers keep busy while it is decided, and a
#: slow index holds a bounded backlog.
READ_AHEAD_BATCHES = 4
#: Times a batch is decided again because another writer claimed one of its texts first.
CLAIM_ROUNDS = 4
Mode = Literal["index", "update"]
RECORD_FIELDS = ["fingerprint", "fingerprints", "sketch", "facts", "frames", "content_digest", "fp_version",
                 "cluster_id", "duplicate_of", "decision", "distance", "degenerate", "keyword_digest",
                 "text_length", "published_at", "replaces"]  # fmt: skip
#: What a read of records keeps of each answer: most ids of a batch are new, and their whole answers
#: (index, version, sequence numbers) would be parsed for nothing.
MGET_FILTER = ["docs._id", "docs.found", "docs._source", "docs.error"]
#: Read too under ``keep=longest`` from documents written without ``text_length`` (before it existed).
TEXT_FIELDS = ["content", "html"]


@dataclass(slots=True)
class EsDecision(Decision):
    """The engine's decision for one document, and whether ``index`` wrote it (one JSON line of the
    ``index`` command)."""

    written: bool = True

    @classmethod
    def of(cls, d: Decision, written: bool) -> EsDecision:
        """The engine's decision ``d`` and ``written``: its fields passed in their order, with no dict of
        them made (a test holds these fields to :class:`Decision`'s)."""
        return cls(d.id, d.fingerprint, d.decision, d.duplicate_of, d.distance, d.cluster_id, d.replaces,
                   d.degenerate, d.policy, d.pictures, written)

    def to_dict(self) -> dict[str, Any]:
        # named, not super(): a slotted dataclass is a new class, which the method's super() cell is not
        out = Decision.to_dict(self)
        if not self.written:
            out["indexed"] = False
        return out


def record_from_source(doc_id: str, src: Mapping[str, Any]) -> DocRecord | None:
    """The stored decision of an indexed document (None when it has no fingerprint fields yet).

    ``length`` is read from ``text_length``, else from the text when the source holds it (``keep=longest``
    asks for it); ``time`` is not kept in Elasticsearch."""
    if src.get("fingerprint") is None:
        return None
    ev = source_evidence(src)
    length = src.get("text_length")
    if length is None:
        length = len(src.get("html") or src.get("content") or "")
    published = src.get("published_at")
    return DocRecord(
        id=doc_id,
        fingerprint=ev.fingerprints[0],
        chunks=list(ev.fingerprints[1:]),
        sketch=bytes(ev.sketch).hex(),
        facts=list(ev.facts),
        frames=list(ev.frames),
        cluster_id=str(src.get("cluster_id") or doc_id),
        duplicate_of=src.get("duplicate_of"),
        content_digest=str(src.get("content_digest") or ""),
        keyword_digest=str(src.get("keyword_digest") or ""),
        version=str(src.get("fp_version") or ""),
        decision=str(src.get("decision") or "new"),
        distance=src.get("distance"),
        degenerate=bool(src.get("degenerate")),
        length=int(length),
        published_at=None if published is None else str(published),
        time=0.0,
        replaces=src.get("replaces"),
    )


#: The record type of a decided document (one for every store).
_Rec = DocRecord


Prepared = tuple[list[EsDecision], list[dict[str, Any] | BulkLines]]


@dataclass
class BatchResult:
    """Decisions of one batch and the documents whose write failed (id, reason)."""

    decisions: list[EsDecision]
    failures: list[tuple[str, str]] = field(default_factory=list)


def document_fields(doc: Document) -> dict[str, Any]:
    """The searchable body of a news document (text, url, date); the segmented ``terms`` are among the
    fingerprint fields (:func:`~fingerprint_indexer.es.codec.decision_fields`)."""
    out: dict[str, Any] = {"title": doc.title, "content": doc.content if doc.content is not None else
                           clean(None, doc.html)}  # fmt: skip
    if doc.url:
        out["url"] = doc.url
    if doc.published_at:
        # the date field takes ISO 8601; wire archives and feeds write other forms, which the
        # fingerprinter reads: they are written in ISO form, and a form nothing reads is left as given
        # (the index then refuses that document and says why)
        out["published_at"] = publication_time(doc.published_at) or doc.published_at
    if doc.images:
        out.update(image_fields([picture_of_file(path) for path in doc.images]))
    return out


def picture_of_file(path: str) -> Picture:
    """A document's picture named by a file path: its fingerprint, or the one-line error that kept it out."""
    try:
        im = read_image(path)
    except ImageError as exc:
        return path, str(exc), None
    return path, fingerprint_image(im), thumbnail(im)


class EsDecider:
    """Decides batches of fingerprinted documents against one index and writes them back.

    Documents decided since the last :meth:`refresh` are kept in memory (``pending``) and matched there,
    so a batch never waits for the previous one to become searchable: writes can overlap with deciding
    (see :func:`pipelined`), and the index is refreshed only every ``refresh_every`` batches.
    """

    def __init__(self, index: ElasticsearchIndex, k: int = 3, on_duplicate: OnDuplicate = "tag",
                 keep: Keep = "first", claims: DigestClaims | None = None,
                 hidden: set[str] | None = None) -> None:  # fmt: skip
        index.layout.check_k(k)
        #: indexed documents read as absent until they are decided again here (``es reconcile``)
        self.hidden: set[str] = hidden if hidden is not None else set()
        #: with claims, a document that is the first of its text is written only after its digest was
        #: claimed (:mod:`fingerprint_indexer.elastic.claims`): writers sharing the index agree on ``new``
        self.claims = claims
        if on_duplicate not in ("tag", "skip"):
            raise ValueError(f"on_duplicate must be 'tag' or 'skip', got {on_duplicate!r}")
        self.engine = Engine(k, keep, EsDecision)
        self.index, self.k, self.on_duplicate, self.keep = index, k, on_duplicate, keep
        index.read_your_writes = False  # visibility is handled by the pending set below
        self.client: Elasticsearch = index.client
        self.record_fields = RECORD_FIELDS + (TEXT_FIELDS if keep == "longest" else [])
        self.relinks: list[DocRecord] = []  # canonicals the last decide() re-pointed (keep longest/newest)
        self._clear_pending()

    def _clear_pending(self) -> None:
        self._relinked: dict[str, DocRecord] = {}  # re-pointed since the last refresh, not yet searchable
        self._pending: dict[str, _Rec] = {}
        self._pending_digest: dict[str, list[_Rec]] = {}  # in the order decided
        self._pending_set = pending_set(self.k)  # their fingerprints and band keys (not degenerate ones)

    def refresh(self) -> None:
        """Make every write so far searchable and drop the pending set (call with no write in flight); a
        pinned snapshot is taken again, so it holds every write that left the pending set."""
        self.index.refresh()
        self._clear_pending()
        if self.index.pinned:
            self.index.pin()

    # ------------------------------------------------------------------------------------ lookups
    def records(self, ids: Iterable[str]) -> dict[str, _Rec]:
        """The indexed records of these ids that exist (one real-time ``_mget``; hidden ones left out)."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        resp = self.client.mget(index=self.index.index, ids=wanted, source_includes=self.record_fields,
                                filter_path=MGET_FILTER)  # fmt: skip
        out = {}
        for d in resp["docs"]:
            if d.get("error"):  # a shard with no copy that answers: not the same as "not found"
                raise EsUnavailable(f"reading {d['_id']!r} of {self.index.index!r}: {d['error']}")
            rec = record_from_source(d["_id"], d.get("_source") or {}) if d.get("found") else None
            if rec is not None and rec.id not in self.hidden:
                out[rec.id] = rec
        return out

    def _by_digest(self, digests: Iterable[str]) -> dict[str, list[_Rec]]:
        wanted = sorted(set(digests))
        out: dict[str, list[_Rec]] = {}
        if not wanted:
            return out
        resp = self.client.search(index=self.index.index, query={"terms": {"content_digest": wanted}},
                                  source_includes=self.record_fields, size=10_000, **WHOLE)  # fmt: skip
        for hit in resp["hits"]["hits"]:
            rec = record_from_source(hit["_id"], hit["_source"])
            if rec is not None and rec.id not in self.hidden:
                out.setdefault(rec.content_digest, []).append(rec)
        for recs in out.values():
            recs.sort(key=lambda r: (r.duplicate_of is not None, r.id))  # canonical documents first
        return out

    # ----------------------------------------------------------------------------------- deciding
    def decide(self, batch: list[tuple[Document, FingerprintResult]]) -> tuple[list[EsDecision], list[_Rec]]:
        """Decisions in batch order, and the records to write (none for unchanged or skipped documents);
        the canonicals re-pointed under keep longest/newest are left in :attr:`relinks`.

        With :attr:`claims`, the digests of the batch's first copies are claimed after deciding; when
        another writer won one of them, the batch is decided again with that writer's document as an
        exact copy (the pending set is put back as it was first)."""
        self.relinks = []
        if not batch:
            return [], []
        start = dict(self._pending)  # pending before this batch; within a batch the set only grows
        batch_ids = {doc.id for doc, _ in batch}
        existing = self.records(doc.id for doc, _ in batch if doc.id not in start)
        exact = self._by_digest(res.content_digest for _, res in batch)
        honour, takeover = self._claims_of(batch, exact, batch_ids) if self.claims else ({}, {})
        near_q = [res.evidence for _, res in batch if not res.degenerate]
        near_x = [doc.id for doc, res in batch if not res.degenerate]
        found = self.index.query_verified_many(near_q, self.k, near_x) if near_q else []
        if self.hidden:
            found = [[m for m in ms if m.doc_id not in self.hidden] for ms in found]
        near_iter: Iterator[list[Match]] = iter(found)
        near = {i: next(near_iter) if not res.degenerate else [] for i, (_, res) in enumerate(batch)}
        before, within = self._pending_pairs(batch)
        # records of the matches that can win (the nearest indexed one per document) and of their canonicals
        known: dict[str, _Rec] = {r.id: r for recs in exact.values() for r in recs}
        self._fetch_winners(batch, near, known, start, batch_ids)
        self._follow_roots(known, {start[d].root for cands in before for d in cands})

        # the pending set as it was, to decide again from when another writer claimed a text first
        saved = (dict(self._pending), {k: list(v) for k, v in self._pending_digest.items()},
                 dict(self._relinked)) if self.claims else None  # fmt: skip
        for _ in range(CLAIM_ROUNDS):
            self._honour(honour, exact, known)
            view = _EsBatch(self, batch, start, existing, exact, near, known, before, within)
            decisions: list[EsDecision] = []
            decide, alone = self.engine.decide, view.alone
            for i, (doc, res) in enumerate(batch):
                view.at(i)
                d, rec = decide(view, doc, res, alone[i])
                # the engine's decisions are EsDecisions, written (an alone one is new: always); a repeated
                # one is not
                written = alone[i] or (rec is not None and view.written_at[i] is rec)
                decisions.append(d if written and isinstance(d, EsDecision) else EsDecision.of(d, written))
            lost = self._claim(view, honour, takeover) if self.claims else {}
            if not lost or saved is None:
                break
            self._pending, self._relinked = dict(saved[0]), dict(saved[2])
            self._pending_digest = {k: list(v) for k, v in saved[1].items()}
            honour.update(lost)
        else:
            raise ClaimError(f"other writers claimed texts of a batch first {CLAIM_ROUNDS} times over")
        self._index_pending(start, view.writes, view.bands)
        self.relinks = list(view.relinks.values())
        self.hidden.difference_update(batch_ids)  # decided again: pending now, written next
        return decisions, view.writes

    def _follow_roots(self, known: dict[str, _Rec], roots: set[str]) -> None:
        """Read into ``known`` the canonicals of the known records: ``duplicate_of`` followed to its end (a
        relinked canonical points on)."""
        roots = roots | {r.root for r in known.values()}
        for _ in range(MAX_HOPS):
            missing = {r for r in roots if r not in known and r not in self._pending}
            if not missing:
                break
            fetched = self.records(missing)
            known.update(fetched)
            roots = {r.root for r in fetched.values()} - fetched.keys()

    # ------------------------------------------------------------------------------------- claims
    def _claims_of(
        self, batch: list[tuple[Document, FingerprintResult]], exact: Mapping[str, list[_Rec]],
        batch_ids: set[str],
    ) -> tuple[dict[str, tuple[_Rec, _Rec | None]], dict[str, Claim]]:  # fmt: skip
        """Claims on the batch's digests that no searchable or pending document holds: those to honour
        (digest -> owner's record and its canonical's: another writer's first copy, written or in flight)
        and those to take over when the batch writes a first copy (stale ones, and claims of the batch's own
        ids: a retry after a writer died)."""
        assert self.claims is not None
        digests = {res.content_digest for _, res in batch} - exact.keys()
        digests = {dg for dg in digests if self.pending_with_digest(dg) is None}
        claims = self.claims.lookup(digests)
        owners = self.records(c.owner.id for c in claims.values()
                              if c.owner.id and c.owner.id not in batch_ids)  # fmt: skip
        now = time.time()
        honour: dict[str, tuple[_Rec, _Rec | None]] = {}
        takeover: dict[str, Claim] = {}
        for digest, c in claims.items():
            rec = owners.get(c.owner.id)
            if c.owner.id in batch_ids or not c.owner.id:
                takeover[digest] = c
            elif rec is not None and rec.content_digest == digest:
                honour[digest] = (rec, None)
            elif rec is None and c.fresh(now):
                honour[digest] = (c.owner, c.canonical)
            else:
                takeover[digest] = c
        return honour, takeover

    def _honour(
        self, honour: Mapping[str, tuple[_Rec, _Rec | None]], exact: dict[str, list[_Rec]],
        known: dict[str, _Rec],
    ) -> None:  # fmt: skip
        """Make the honoured claims' owners exact copies the batch can find, with their canonicals."""
        added = False
        for digest, (owner, _) in honour.items():
            recs = exact.setdefault(digest, [])
            if not any(r.id == owner.id for r in recs):
                recs.append(owner)
                known.setdefault(owner.id, owner)
                added = True
        if added:
            self._follow_roots(known, set())
            for _, canonical in honour.values():
                if canonical is not None:
                    known.setdefault(canonical.id, canonical)  # not written yet either

    def _claim(
        self, view: _EsBatch, honour: Mapping[str, tuple[_Rec, _Rec | None]], takeover: dict[str, Claim]
    ) -> dict[str, tuple[_Rec, _Rec | None]]:
        """Claim the digests of the batch's first copies; the claims lost to another writer."""
        assert self.claims is not None
        final = {rec.id: rec for rec in view.writes}
        wanted: dict[str, tuple[_Rec, _Rec | None]] = {}
        for rec in final.values():
            digest = rec.content_digest
            if rec.decision == "exact_duplicate" or digest in honour or digest in wanted:
                continue
            canonical = view.record(rec.duplicate_of) if rec.duplicate_of else None
            wanted[rec.content_digest] = (rec, canonical)
        lost = self.claims.claim(list(wanted.values()), takeover)
        out = {}
        for digest, c in lost.items():
            if c.owner.id == wanted[digest][0].id:  # the same document, claimed by another writer: ours too
                continue
            takeover.pop(digest, None)
            out[digest] = (c.owner, c.canonical)
        return out

    # ------------------------------------------------------------------------------ pending set
    def drop_pending(self, records: Iterable[_Rec]) -> None:
        """Forget pending records whose writes Elasticsearch has made searchable since (or refused): each
        only while it is still the pending version of its id."""
        for rec in records:
            if self._pending.get(rec.id) is rec:
                del self._pending[rec.id]
                self._pending_set.remove(rec.id)
            same = self._pending_digest.get(rec.content_digest, [])
            if any(r is rec for r in same):
                same[:] = [r for r in same if r is not rec]
                if not same:
                    del self._pending_digest[rec.content_digest]
            if self._relinked.get(rec.id) is rec:
                del self._relinked[rec.id]

    def pending_with_digest(self, digest: str, exclude: str = "") -> _Rec | None:
        """The first pending document with this content digest that is still the current version of its
        id (other than ``exclude``)."""
        for rec in self._pending_digest.get(digest, ()):
            if rec.id != exclude and self._pending.get(rec.id) is rec:
                return rec
        return None

    def pending_records(self, doc_id: str) -> list[_Rec]:
        """The pending versions of ``doc_id`` (its decided record and a relinked canonical's)."""
        return [r for r in (self._pending.get(doc_id), self._relinked.get(doc_id)) if r is not None]

    def _fetch_winners(
        self, batch: list[tuple[Document, FingerprintResult]], near: Mapping[int, list[Match]],
        known: dict[str, _Rec], start: Mapping[str, _Rec], batch_ids: set[str],
    ) -> None:  # fmt: skip
        """Add to ``known`` the records of the indexed matches that can be chosen: per document, its
        matches (nearest first) up to the first one that is neither itself nor pending (an id of this
        batch may become pending, so the walk goes on past it); a match that is gone from the index is
        skipped, as :meth:`_match` skips it."""
        gone: set[str] = set()
        while True:
            need: set[str] = set()
            for i, matches in near.items():
                doc_id = batch[i][0].id
                for m in matches:
                    d = m.doc_id
                    if d == doc_id or d in start or d in gone:
                        continue
                    if d not in known:
                        need.add(d)
                    if d not in batch_ids:
                        break
            if not need:
                return
            fetched = self.records(need)
            known.update(fetched)
            gone |= need - fetched.keys()

    def _pending_pairs(
        self, batch: list[tuple[Document, FingerprintResult]]
    ) -> tuple[list[dict[str, int]], list[dict[int, int]]]:
        """Per batch position, the documents pending before the batch and the earlier positions of the
        batch within ``k`` of it or sharing a sketch band key with it (:meth:`PendingSet.candidates
        <fingerprint_indexer.index.pending.PendingSet.candidates>`, one call for the batch; degenerate
        documents have none). Only candidates: :meth:`_pending_matches` keeps those still pending when the
        document is decided."""
        evidence = [None if res.degenerate else res.evidence for _, res in batch]  # its band keys made once
        return self._pending_set.candidates([() if ev is None else ev.fingerprints for ev in evidence],
                                            [() if ev is None else ev.band_keys for ev in evidence])

    def _pending_matches(
        self, doc_id: str, res: FingerprintResult, before: Mapping[str, int], within: Mapping[int, int],
        start: Mapping[str, _Rec], written_at: Sequence[_Rec | None],
    ) -> list[tuple[int, str, _Rec]]:  # fmt: skip
        """Documents pending now (decided since the last refresh) with any fingerprint within k of any of
        ``res``'s that the verification rule accepts (:func:`fingerprint_indexer.verification.check_many`, as
        :meth:`ElasticsearchIndex.query_verified` does for indexed ones), as (distance, id, record)."""
        pending = self._pending
        cands: list[tuple[int, str, _Rec]] = []
        for d, dist in before.items():
            old = start[d]
            if d != doc_id and pending.get(d) is old:  # not replaced earlier in this batch
                cands.append((dist, d, old))
        for j, dist in within.items():
            rec = written_at[j]
            if rec is not None and rec.id != doc_id and pending.get(rec.id) is rec:
                cands.append((dist, rec.id, rec))
        verdicts = check_many(res.evidence, [c[2].evidence for c in cands], self.k)
        return [(v.distance, c[1], c[2]) for c, v in zip(cands, verdicts, strict=True) if v.accepted]

    def _index_pending(self, start: Mapping[str, _Rec], writes: list[_Rec],
                       keys_of: Mapping[str, Sequence[str]]) -> None:  # fmt: skip
        """Put the batch's written records into the pending set (last version of each id; a degenerate one
        leaves it); ``keys_of``: the band keys of written ids, as their evidence holds them (else read from
        the record)."""
        final = {rec.id: rec for rec in writes}
        for doc_id in final.keys() & start.keys():
            self._pending_set.remove(doc_id)
        put = [rec for rec in final.values() if not rec.degenerate]
        keys = [keys_of.get(rec.id) for rec in put]
        self._pending_set.put_many([rec.id for rec in put], [rec.fingerprints for rec in put],
                                   [rec.bands if k is None else k for rec, k in zip(put, keys, strict=True)])

    # ------------------------------------------------------------------------------------ writing
    def fields(self, rec: _Rec, res: FingerprintResult) -> dict[str, Any]:
        """The fingerprint and decision fields of a decided document (the same as the sidecar writes)."""
        return decision_fields(res, self.index.layout, **self._decided(rec))

    @staticmethod
    def _decided(rec: _Rec) -> dict[str, Any]:
        """What :func:`decision_fields` writes of a decided document's record."""
        return {"cluster_id": rec.cluster_id, "duplicate_of": rec.duplicate_of, "distance": rec.distance,
                "decision": rec.decision, "text_length": rec.length, "replaces": rec.replaces}

    def write(self, actions: list[dict[str, Any] | BulkLines]) -> list[tuple[str, str]]:
        """Bulk-write; returns (id, reason) of every failed document instead of raising."""
        if not actions:
            return []
        try:
            self.index.write_actions(actions)
        except ElasticsearchWriteError as err:
            return err.failures
        return []

    def prepare(self, batch: list[tuple[Document, FingerprintResult]], mode: Mode = "index") -> Prepared:
        """Decide a batch and build its bulk actions: full documents (``index``) or the fingerprint fields
        added to documents already in the index (``update``, for reindex)."""
        decisions, writes = self.decide(batch)
        by_id = {doc.id: (doc, res) for doc, res in batch}
        actions: list[dict[str, Any] | BulkLines] = []
        if mode == "index":  # the whole documents as the request's lines
            docs = [(rec, *by_id[rec.id]) for rec in writes]
            actions += index_lines_many(self.index.index, self.index.layout, [
                (rec.id, document_fields(doc), res, rec.cluster_id, rec.duplicate_of, rec.distance,
                 rec.decision, rec.length, rec.replaces) for rec, doc, res in docs])  # fmt: skip
        else:
            for rec in writes:
                fields = self.fields(rec, by_id[rec.id][1])
                actions.append({"_op_type": "update", "_index": self.index.index, "_id": rec.id,
                                "doc": fields})  # fmt: skip
        for rec in self.relinks:  # after the new canonical's write, as the sidecar sends it
            actions.append({"_op_type": "update", "_index": self.index.index, "_id": rec.id,
                            "doc": {"duplicate_of": rec.duplicate_of, "distance": rec.distance}})  # fmt: skip
        return decisions, actions

    def index_batch(self, batch: list[tuple[Document, FingerprintResult]]) -> BatchResult:
        """Decide and index full documents, synchronously."""
        decisions, actions = self.prepare(batch, "index")
        return BatchResult(decisions, self.write(actions))

    def update_batch(self, batch: list[tuple[Document, FingerprintResult]]) -> BatchResult:
        """Decide and add the fingerprint fields to documents already in the index, synchronously."""
        decisions, actions = self.prepare(batch, "update")
        return BatchResult(decisions, self.write(actions))


class RecordMissingError(FingerprintIndexerError, LookupError):
    """A document found by a look-up whose record cannot be read (deleted in between)."""


class _EsBatch:
    """One batch of :class:`EsDecider` as the engine's record store
    (:class:`fingerprint_indexer.records.protocol.RecordStore`): the index as prefetched for the batch, the
    pending documents, and what the batch writes. :meth:`at` moves it to the next document of the batch.

    A pending version of a document supersedes its indexed one. Clusters are not kept apart from the
    documents: a cluster is its founder's document (``cluster_id`` = own id, not degenerate), its centre
    the founder's fingerprint, and the centres near a document are the founders among its verified near
    candidates (a founder the rule accepts shares a fingerprint within ``k``, so it is one of them).
    """

    def __init__(
        self, decider: EsDecider, batch: list[tuple[Document, FingerprintResult]], start: Mapping[str, _Rec],
        existing: Mapping[str, _Rec], exact: Mapping[str, list[_Rec]], near: Mapping[int, list[Match]],
        known: dict[str, _Rec], before: list[dict[str, int]], within: list[dict[int, int]],
    ) -> None:  # fmt: skip
        self.decider, self.batch, self.start, self.existing = decider, batch, start, existing
        self.exact, self.near, self.known, self.before, self.within = exact, near, known, before, within
        self.written_at: list[_Rec | None] = [None] * len(batch)
        self.writes: list[_Rec] = []
        self.relinks: dict[str, DocRecord] = {}
        self.bands: dict[str, Sequence[str]] = {}  # band keys of the written ids, from their evidence
        self.i, self.doc_id = 0, ""
        self.removed: set[str] = set()
        self._accepted: list[tuple[int, str, _Rec]] | None = None
        # ids known not to be in the index: the batch's own that were not found there
        self.gone = {doc.id for doc, _ in batch} - start.keys() - existing.keys()
        self.alone = self._alone()  # per position, whether the document is alone

    def at(self, i: int) -> None:
        self.i, self.doc_id = i, self.batch[i][0].id
        if self.removed:  # what the last document removed (most remove nothing)
            self.removed = set()
        self._accepted = None

    # ------------------------------------------------------------------ reads
    def _lookup(self, doc_id: str) -> _Rec | None:
        d = self.decider
        rec = d._pending.get(doc_id) or d._relinked.get(doc_id) or self.known.get(doc_id)
        if rec is None:
            rec = self.existing.get(doc_id)
        if rec is None and doc_id not in self.gone:  # not prefetched: one read (rare)
            fetched = d.records([doc_id])
            self.known.update(fetched)
            rec = fetched.get(doc_id)
            if rec is None:
                self.gone.add(doc_id)
        return rec

    def record(self, doc_id: str) -> DocRecord | None:
        return None if doc_id in self.removed else self._lookup(doc_id)

    def doc_with_digest(self, digest: str) -> str | None:
        pending = self.decider._pending
        for rec in self.exact.get(digest, []):  # canonical documents first
            if rec.id != self.doc_id and rec.id not in pending:  # a pending version supersedes it
                return rec.id
        hit = self.decider.pending_with_digest(digest, self.doc_id)
        return hit.id if hit is not None else None

    def _candidates(self) -> list[tuple[int, str, _Rec]]:
        """Pending documents the rule accepts for the current one (as (distance, id, record))."""
        if self._accepted is None:
            doc, res = self.batch[self.i]
            before, within = self.before[self.i], self.within[self.i]
            self._accepted = self.decider._pending_matches(doc.id, res, before, within, self.start,
                                                           self.written_at) if before or within else []
        return self._accepted

    def _indexed(self) -> list[Match]:
        """Indexed documents the rule accepts for the current one, nearest first, less superseded ones."""
        pending = self.decider._pending
        return [m for m in self.near[self.i] if m.doc_id != self.doc_id and m.doc_id not in pending]

    def _alone(self) -> list[bool]:
        """Per position, whether the document is alone, as :meth:`Engine.decide` takes it, from what the
        batch's look-ups found for all of it at once (made before the batch is decided): not degenerate,
        its id neither pending nor known in the index, its content digest held by no indexed or pending
        document, nothing near it in the index or among the pending documents, and neither its id nor its
        digest an earlier document's of the batch. What the batch decides before a document only adds
        those earlier ids and digests to the pending set (and no id the index lacked to the known ones),
        so a document found alone here is alone when its turn comes."""
        d = self.decider
        pending, relinked, pending_digest = d._pending, d._relinked, d._pending_digest
        gone, known, exact, near, before, within = (self.gone, self.known, self.exact, self.near,
                                                    self.before, self.within)  # fmt: skip
        ids: set[str] = set()
        digests: set[str] = set()
        out = []
        for i, (doc, res) in enumerate(self.batch):
            doc_id, digest = doc.id, res.content_digest
            out.append(not (res.degenerate or near[i] or before[i] or within[i]) and doc_id in gone and
                       doc_id not in pending and doc_id not in relinked and doc_id not in known and
                       digest not in exact and digest not in pending_digest and doc_id not in ids and
                       digest not in digests)  # fmt: skip
            ids.add(doc_id)
            digests.add(digest)
        return out

    def _nothing_near(self) -> bool:
        """Whether the current document has no pending candidate the rule accepts and no indexed match
        (most documents)."""
        return not self._candidates() and not self.near[self.i]

    def near_docs(self, ev: Evidence, k: int) -> list[Match]:
        if self._nothing_near():
            return []
        cands = [Match(d, dist) for dist, d, _ in self._candidates()]
        # the nearest indexed one that can be read (one gone from the index since is passed over)
        cands += [m for m in self._indexed() if m.doc_id in self.known][:1]
        return sorted(cands, key=lambda m: (m.distance, m.doc_id))

    def centres_near(self, fp: int, k: int) -> list[Match]:
        if self._nothing_near():
            return []
        ids = [d for _, d, _ in self._candidates()] + [m.doc_id for m in self._indexed()]
        unread = [d for d in ids if self._lookup_known(d) is None and d not in self.gone]
        if unread:
            fetched = self.decider.records(unread)
            self.known.update(fetched)
            self.gone |= set(unread) - fetched.keys()
        out = []
        for d in dict.fromkeys(ids):
            rec = self.record(d)
            if rec is not None and not rec.degenerate and rec.cluster_id == rec.id:
                dist = hamming(rec.fingerprint, fp)
                if dist <= k:
                    out.append(Match(rec.id, dist))
        return out

    def _lookup_known(self, doc_id: str) -> _Rec | None:
        d = self.decider
        return d._pending.get(doc_id) or d._relinked.get(doc_id) or self.known.get(doc_id) or \
            self.existing.get(doc_id)  # fmt: skip

    def cluster(self, cluster_id: str) -> Cluster | None:
        founder = self._lookup(cluster_id)  # also a version being replaced: its cluster stays taken
        if founder is None or founder.degenerate or founder.cluster_id != cluster_id:
            return None
        return Cluster(cluster_id, founder.fingerprint, cluster_id, 1)

    def missing(self, doc_id: str) -> Exception:
        return RecordMissingError(f"{doc_id!r} was found in index {self.decider.index.index!r} but cannot be "
                                  "read")

    # ----------------------------------------------------------------- writes
    def put_record(self, rec: DocRecord, index: bool, evidence: Evidence | None = None) -> None:
        """Pend a decided document for writing; under ``skip`` a duplicate is not written (a copy that took
        over as canonical is: it is the kept document)."""
        if rec.decision == "new" or self.decider.on_duplicate == "tag" or rec.replaces is not None:
            d = self.decider
            self.writes.append(rec)
            self.written_at[self.i] = rec
            d._pending[rec.id] = rec
            d._pending_digest.setdefault(rec.content_digest, []).append(rec)
            if self.relinks:
                self.relinks.pop(rec.id, None)  # its own write carries the fields
            if evidence is not None:
                self.bands[rec.id] = evidence.band_keys
            else:
                self.bands.pop(rec.id, None)
        if self.removed:
            self.removed.discard(rec.id)

    def update_record(self, rec: DocRecord) -> None:
        """A canonical re-pointed at the copy that replaced it: written with the batch unless this batch
        writes it whole anyway; read from here until the index is refreshed."""
        if not any(w is rec for w in self.writes):
            self.relinks[rec.id] = rec
            self.decider._relinked[rec.id] = rec

    def remove_doc(self, doc_id: str) -> bool:
        self.removed.add(doc_id)  # its new version is written over it (or, skipped, the old one stays)
        return True

    def found_cluster(self, founder: str, centre: int) -> Cluster:
        # an alone document's id names no cluster: no document of the index or the pending set, nor an
        # earlier one of the batch, has it
        alone = founder == self.doc_id and self.alone[self.i]
        return Cluster(founder if alone else new_cluster_id(founder, self._taken), centre, founder, 1)

    def _taken(self, cluster_id: str) -> bool:
        return self.cluster(cluster_id) is not None

    def put_cluster(self, c: Cluster) -> None:
        """Cluster sizes are not kept in Elasticsearch (a terms aggregation on ``cluster_id`` counts them)."""


def fingerprinted_batches(
    docs: Iterable[Document], fingerprinter: Fingerprinter, batch_size: int = DECIDE_BATCH,
    processes: int = 1, threads: int = 1,
) -> Iterator[list[tuple[Document, FingerprintResult]]]:
    """The documents fingerprinted, in input order, as the batches :func:`pipelined` decides, fingerprinted
    at most :data:`READ_AHEAD_BATCHES` batches ahead of the batch taken."""
    pairs = fingerprint_stream(docs, fingerprinter, processes, window=batch_size * READ_AHEAD_BATCHES,
                               threads=threads)  # fmt: skip
    return iter(lambda: list(itertools.islice(pairs, batch_size)), [])


def pipelined(
    decider: EsDecider,
    batches: Iterable[list[tuple[Document, FingerprintResult]]],
    mode: Mode = "index",
    refresh_every: int = 20,
) -> Iterator[BatchResult]:
    """Decide batch n+1 while batch n is being written (one bulk request in flight, on a thread).

    Results come in batch order, each after its write finished; the index is refreshed every
    ``refresh_every`` batches and at the end. Between refreshes the verified look-ups search a snapshot
    taken at the last refresh (:meth:`ElasticsearchIndex.pin`): what was written since is in the decider's
    pending set and matched there, so Elasticsearch does not return (and the client does not parse and
    drop) those documents on every query. Documents other writers add become visible at the next refresh.
    """
    decider.index.pin()
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="es-bulk") as pool:
            inflight: tuple[list[EsDecision], Future[list[tuple[str, str]]]] | None = None
            for n, batch in enumerate(batches, 1):
                decisions, actions = decider.prepare(batch, mode)
                if inflight is not None:
                    yield BatchResult(inflight[0], inflight[1].result())
                inflight = (decisions, pool.submit(decider.write, actions))
                if n % refresh_every == 0:
                    yield BatchResult(inflight[0], inflight[1].result())
                    inflight = None
                    decider.refresh()
            if inflight is not None:
                yield BatchResult(inflight[0], inflight[1].result())
    finally:
        decider.index.unpin()
    decider.refresh()


