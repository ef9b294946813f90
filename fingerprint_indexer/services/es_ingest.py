"""Decide new / exact / near duplicate against an Elasticsearch index, and write the fingerprint fields.

Elasticsearch is the source of truth here: a document is compared with what the index already holds
(exact: same content digest; near: documents with any fingerprint within Hamming ``k`` of any of this
document's document and chunk fingerprints, confirmed by the MinHash sketch, see
:meth:`ElasticsearchIndex.query_verified`) and, by the same rule, with the earlier documents of its own
batch. Rules, mirroring the embedded pipeline:

- same id already indexed with the same content digest and algorithm version: its stored decision stands
  and nothing is written (re-running an input is idempotent);
- a near-duplicate matches the nearest verified candidate (and is new when the facts of that
  candidate's canonical conflict with its own, as in the embedded pipeline); ``duplicate_of`` is the
  canonical (first indexed) document of the group, ``distance`` the smallest Hamming distance over all
  fingerprint pairs with it; ``cluster_id`` is the cluster of the matched document, or the document's own
  id for a new story;
- degenerate documents (too few features) are matched exactly only and get no block keys.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from elasticsearch import Elasticsearch

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, FingerprintResult, fingerprint_many
from fingerprint_indexer.fingerprint.hamming import MASK64, to_hex
from fingerprint_indexer.fingerprint.sketch import band_keys
from fingerprint_indexer.index.base import Match
from fingerprint_indexer.index.elasticsearch import (
    WHOLE,
    ElasticsearchIndex,
    ElasticsearchUnavailable,
    ElasticsearchWriteError,
    copy_fields,
    fingerprint_fields,
    source_evidence,
)
from fingerprint_indexer.index.memory import MemoryIndex
from fingerprint_indexer.index.pairs import near_pairs
from fingerprint_indexer.pipeline import MAX_HOPS
from fingerprint_indexer.store.exact import doc_of, entry_id
from fingerprint_indexer.text.clean import clean
from fingerprint_indexer.verify import Evidence, check_many, closest, joins

OnDuplicate = Literal["tag", "skip"]
Mode = Literal["index", "update"]
#: Terms kept in the ``terms`` field: enough for more_like_this, bounded so long articles stay cheap to index.
MAX_TERMS = 256
RECORD_FIELDS = ["fingerprint", "fingerprints", "sketch", "facts", "frames", "content_digest", "fp_version",
                 "cluster_id", "duplicate_of", "decision", "distance", "degenerate"]  # fmt: skip


@dataclass(frozen=True)
class EsDecision:
    """The decision for one document (one JSON line of the ``index`` command)."""

    id: str
    fingerprint: str
    decision: str
    duplicate_of: str | None
    distance: int | None
    cluster_id: str
    degenerate: bool = False
    written: bool = True

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "fingerprint": self.fingerprint, "decision": self.decision,
                               "duplicate_of": self.duplicate_of, "distance": self.distance,
                               "cluster_id": self.cluster_id}  # fmt: skip
        if self.degenerate:
            out["degenerate"] = True
        if not self.written:
            out["indexed"] = False
        return out


@dataclass
class _Rec:
    """What matching needs to know about an indexed (or just decided) document."""

    id: str
    fingerprint: int
    cluster_id: str
    duplicate_of: str | None
    content_digest: str = ""
    fp_version: str = ""
    decision: str = "new"
    distance: int | None = None
    degenerate: bool = False
    chunks: tuple[int, ...] = ()
    sketch: bytes = b""
    facts: tuple[str, ...] = ()
    frames: tuple[int, ...] = ()

    @property
    def root(self) -> str:
        return self.duplicate_of or self.id

    @property
    def fingerprints(self) -> list[int]:
        return [self.fingerprint, *self.chunks]

    @property
    def evidence(self) -> Evidence:
        return Evidence(self.fingerprints, self.sketch, self.facts, self.frames)

    @classmethod
    def from_source(cls, doc_id: str, src: Mapping[str, Any]) -> _Rec | None:
        if src.get("fingerprint") is None:
            return None
        ev = source_evidence(src)
        return cls(
            id=doc_id,
            fingerprint=ev.fingerprints[0],
            chunks=tuple(ev.fingerprints[1:]),
            sketch=ev.sketch,
            facts=tuple(ev.facts),
            frames=tuple(ev.frames),
            cluster_id=str(src.get("cluster_id") or doc_id),
            duplicate_of=src.get("duplicate_of"),
            content_digest=str(src.get("content_digest") or ""),
            fp_version=str(src.get("fp_version") or ""),
            decision=str(src.get("decision") or "new"),
            distance=src.get("distance"),
            degenerate=bool(src.get("degenerate")),
        )


Prepared = tuple[list[EsDecision], list[dict[str, Any]]]


@dataclass
class BatchResult:
    """Decisions of one batch and the documents whose write failed (id, reason)."""

    decisions: list[EsDecision]
    failures: list[tuple[str, str]] = field(default_factory=list)


def terms_text(res: FingerprintResult, limit: int = MAX_TERMS) -> str:
    """The document's terms, highest weight first, as the whitespace-analysed ``terms`` field."""
    return " ".join(t for t, _ in res.top_terms[:limit])


def document_fields(doc: Document, res: FingerprintResult) -> dict[str, Any]:
    """The searchable body of a news document (text, segmented terms, url, date)."""
    out: dict[str, Any] = {"title": doc.title, "content": doc.content if doc.content is not None else
                           clean(None, doc.html), "terms": terms_text(res)}  # fmt: skip
    if doc.url:
        out["url"] = doc.url
    if doc.published_at:
        out["published_at"] = doc.published_at
    return out


class EsDecider:
    """Decides batches of fingerprinted documents against one index and writes them back.

    Documents decided since the last :meth:`refresh` are kept in memory (``pending``) and matched there,
    so a batch never waits for the previous one to become searchable: writes can overlap with deciding
    (see :func:`pipelined`), and the index is refreshed only every ``refresh_every`` batches.
    """

    def __init__(self, index: ElasticsearchIndex, k: int = 3, on_duplicate: OnDuplicate = "tag") -> None:
        index.layout.check_k(k)
        if on_duplicate not in ("tag", "skip"):
            raise ValueError(f"on_duplicate must be 'tag' or 'skip', got {on_duplicate!r}")
        self.index, self.k, self.on_duplicate = index, k, on_duplicate
        index.read_your_writes = False  # visibility is handled by the pending set below
        self.client: Elasticsearch = index.client
        self._clear_pending()

    def _clear_pending(self) -> None:
        self._pending: dict[str, _Rec] = {}
        self._pending_digest: dict[str, _Rec] = {}
        self._pending_near = MemoryIndex(self.index.layout, merge_threshold=256)
        self._pending_bands: dict[str, set[str]] = {}  # sketch band key -> pending ids

    def refresh(self) -> None:
        """Make every write so far searchable and drop the pending set (call with no write in flight); a
        pinned snapshot is taken again, so it holds every write that left the pending set."""
        self.index.refresh()
        self._clear_pending()
        if self.index.pinned:
            self.index.pin()

    # ------------------------------------------------------------------------------------ lookups
    def _mget(self, ids: Iterable[str]) -> dict[str, _Rec]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        resp = self.client.mget(index=self.index.index, ids=wanted, source_includes=RECORD_FIELDS)
        out = {}
        for d in resp["docs"]:
            if d.get("error"):  # a shard with no copy that answers: not the same as "not found"
                raise ElasticsearchUnavailable(f"reading {d['_id']!r} of {self.index.index!r}: {d['error']}")
            rec = _Rec.from_source(d["_id"], d.get("_source") or {}) if d.get("found") else None
            if rec is not None:
                out[rec.id] = rec
        return out

    def _by_digest(self, digests: Iterable[str]) -> dict[str, list[_Rec]]:
        wanted = sorted(set(digests))
        out: dict[str, list[_Rec]] = {}
        if not wanted:
            return out
        resp = self.client.search(index=self.index.index, query={"terms": {"content_digest": wanted}},
                                  source_includes=RECORD_FIELDS, size=10_000, **WHOLE)  # fmt: skip
        for hit in resp["hits"]["hits"]:
            rec = _Rec.from_source(hit["_id"], hit["_source"])
            if rec is not None:
                out.setdefault(rec.content_digest, []).append(rec)
        for recs in out.values():
            recs.sort(key=lambda r: (r.duplicate_of is not None, r.id))  # canonical documents first
        return out

    # ----------------------------------------------------------------------------------- deciding
    def decide(self, batch: list[tuple[Document, FingerprintResult]]) -> tuple[list[EsDecision], list[_Rec]]:
        """Decisions in batch order, and the records to write (none for unchanged or skipped documents)."""
        if not batch:
            return [], []
        start = dict(self._pending)  # pending before this batch; within a batch the set only grows
        batch_ids = {doc.id for doc, _ in batch}
        existing = self._mget(doc.id for doc, _ in batch if doc.id not in start)
        exact = self._by_digest(res.content_digest for _, res in batch)
        near_q = [res.evidence for _, res in batch if not res.degenerate]
        near_x = [doc.id for doc, res in batch if not res.degenerate]
        found = self.index.query_verified_many(near_q, self.k, near_x) if near_q else []
        near_iter: Iterator[list[Match]] = iter(found)
        near = {i: next(near_iter) if not res.degenerate else [] for i, (_, res) in enumerate(batch)}
        before, within = self._pending_pairs(batch)
        # records of the matches that can win (the nearest indexed one per document) and of their canonicals
        known: dict[str, _Rec] = {r.id: r for recs in exact.values() for r in recs}
        self._fetch_winners(batch, near, known, start, batch_ids)
        roots = {r.root for r in known.values()} | {start[d].root for cands in before for d in cands}
        for _ in range(MAX_HOPS):  # follow duplicate_of to the end: a relinked canonical points on
            missing = {r for r in roots if r not in known and r not in self._pending}
            if not missing:
                break
            fetched = self._mget(missing)
            known.update(fetched)
            roots = {r.root for r in fetched.values()} - fetched.keys()

        decisions: list[EsDecision] = []
        writes: list[_Rec] = []
        written_at: list[_Rec | None] = [None] * len(batch)
        for i, (doc, res) in enumerate(batch):
            old = self._pending.get(doc.id) or existing.get(doc.id)
            if old is not None and old.content_digest == res.content_digest and old.fp_version == res.version:
                decisions.append(EsDecision(doc.id, to_hex(old.fingerprint), old.decision, old.duplicate_of,
                                            old.distance, old.cluster_id, old.degenerate,
                                            written=False))  # fmt: skip
                continue
            pend = self._pending_matches(doc.id, res, before[i], within[i], start, written_at)
            match = self._match(doc.id, res, exact, near[i], known, pend)
            kind, rec = match if match else ("new", None)
            root = None if rec is None else self._canonical(rec, known)
            if kind == "near_duplicate" and rec is not None and root is not None and not joins(
                    res.evidence, rec.id, root.id, root.evidence):  # fmt: skip
                kind, rec, root = "new", None, None
            new = _Rec(
                id=doc.id,
                fingerprint=res.fingerprint,
                cluster_id=rec.cluster_id if rec else doc.id,
                duplicate_of=root.id if root else None,
                content_digest=res.content_digest,
                fp_version=res.version,
                decision=kind,
                distance=closest(res.fingerprints, root.fingerprints)[0] if root else None,
                degenerate=res.degenerate,
                chunks=res.chunks,
                sketch=res.sketch,
                facts=res.facts,
                frames=res.frames,
            )
            written = kind == "new" or self.on_duplicate == "tag"
            decisions.append(EsDecision(new.id, to_hex(new.fingerprint), kind, new.duplicate_of,
                                        new.distance, new.cluster_id, new.degenerate, written))  # fmt: skip
            if written:
                writes.append(new)
                written_at[i] = new
                self._pending[new.id] = new
                self._pending_digest.setdefault(new.content_digest, new)
        self._index_pending(start, writes)
        return decisions, writes

    def _canonical(self, rec: _Rec, known: Mapping[str, _Rec]) -> _Rec:
        """The end of ``rec``'s ``duplicate_of`` chain (pending versions first): under ``keep longest``
        or ``newest`` a replaced canonical points at the copy that replaced it, which may point on. A
        link to a document that is gone ends the chain there (that document stands), as in the
        embedded pipeline."""
        seen = {rec.id}
        for _ in range(MAX_HOPS):
            if rec.duplicate_of is None:
                break
            nxt = self._pending.get(rec.duplicate_of) or known.get(rec.duplicate_of)
            if nxt is None or nxt.id in seen:
                break
            seen.add(nxt.id)
            rec = nxt
        return rec

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
            fetched = self._mget(need)
            known.update(fetched)
            gone |= need - fetched.keys()

    def _pending_pairs(
        self, batch: list[tuple[Document, FingerprintResult]]
    ) -> tuple[list[dict[str, int]], list[dict[int, int]]]:
        """Per batch position, the smallest Hamming distance (when within k) to each document pending
        before the batch, and to each earlier position of the batch: one block-table query for all the
        batch's fingerprints and one all-pairs pass over them, instead of a query per fingerprint; and
        those sharing a sketch band key (distance k + 1 here: the rule measures it). Only candidates:
        :meth:`_pending_matches` keeps those still pending when the document is decided."""
        before: list[dict[str, int]] = [{} for _ in batch]
        within: list[dict[int, int]] = [{} for _ in batch]
        pos = [i for i, (_, res) in enumerate(batch) if not res.degenerate]
        if not pos:
            return before, within
        owner = [i for i in pos for _ in batch[i][1].fingerprints]
        flat = np.array([f & MASK64 for i in pos for f in batch[i][1].fingerprints], dtype=np.uint64)
        limit = self.k + 1
        if len(self._pending_near):
            for q, matches in enumerate(self._pending_near.query_many(flat, self.k)):
                if matches:
                    best = before[owner[q]]
                    for m in matches:
                        d = doc_of(m.doc_id)
                        if m.distance < best.get(d, limit):
                            best[d] = m.distance
        ii, jj, dd = near_pairs(flat, self.k, self.index.layout)
        own = np.array(owner, dtype=np.int64)
        oi, oj = own[ii], own[jj]
        other = oi != oj
        for a, b, d in zip(oi[other].tolist(), oj[other].tolist(), dd[other].tolist(), strict=True):
            later, earlier = (a, b) if a > b else (b, a)
            best_j = within[later]
            if d < best_j.get(earlier, limit):
                best_j[earlier] = d
        earlier_with: dict[str, list[int]] = {}
        for i in pos:
            for key in band_keys(batch[i][1].sketch):
                for d in self._pending_bands.get(key, ()):
                    before[i].setdefault(d, limit)
                for j in earlier_with.get(key, ()):
                    within[i].setdefault(j, limit)
                earlier_with.setdefault(key, []).append(i)
        return before, within

    def _pending_matches(
        self, doc_id: str, res: FingerprintResult, before: Mapping[str, int], within: Mapping[int, int],
        start: Mapping[str, _Rec], written_at: Sequence[_Rec | None],
    ) -> list[tuple[int, str, _Rec]]:  # fmt: skip
        """Documents pending now (decided since the last refresh) with any fingerprint within k of any of
        ``res``'s that the verification rule accepts (:func:`fingerprint_indexer.verify.check_many`, as
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

    def _index_pending(self, start: Mapping[str, _Rec], writes: list[_Rec]) -> None:
        """Put the batch's written records into the pending block tables (last version of each id)."""
        final = {rec.id: rec for rec in writes}
        for doc_id in final.keys() & start.keys():
            for n in range(len(start[doc_id].fingerprints)):
                self._pending_near.remove(entry_id(doc_id, n))
            for key in band_keys(start[doc_id].sketch):
                self._pending_bands.get(key, set()).discard(doc_id)
        entries = [(entry_id(rec.id, n), fp, None) for rec in final.values() if not rec.degenerate
                   for n, fp in enumerate(rec.fingerprints)]  # fmt: skip
        self._pending_near.add_many(entries)
        for rec in final.values():
            if not rec.degenerate:
                for key in band_keys(rec.sketch):
                    self._pending_bands.setdefault(key, set()).add(rec.id)

    def _match(
        self, doc_id: str, res: FingerprintResult, exact: dict[str, list[_Rec]], near: list[Match],
        known: dict[str, _Rec], pending_matches: list[tuple[int, str, _Rec]],
    ) -> tuple[str, _Rec] | None:  # fmt: skip
        """The document this one duplicates: an exact copy first, else the nearest verified candidate."""
        pending = self._pending
        for rec in exact.get(res.content_digest, []):
            if rec.id != doc_id and rec.id not in pending:  # a pending version supersedes the indexed one
                return "exact_duplicate", rec
        hit = self._pending_digest.get(res.content_digest)
        if hit is not None and hit.id != doc_id and pending.get(hit.id) is hit:
            return "exact_duplicate", hit
        if res.degenerate:
            return None
        candidates = list(pending_matches)
        for m in near:  # nearest first: the first that is neither itself nor pending is the indexed winner
            if m.doc_id != doc_id and m.doc_id in known and m.doc_id not in pending:
                candidates.append((m.distance, m.doc_id, known[m.doc_id]))
                break
        if not candidates:
            return None
        return "near_duplicate", min(candidates, key=lambda c: (c[0], c[1]))[2]

    # ------------------------------------------------------------------------------------ writing
    def fields(self, rec: _Rec) -> dict[str, Any]:
        out = fingerprint_fields(rec.fingerprint, self.index.layout, with_blocks=not rec.degenerate,
                                 chunks=rec.chunks, sketch=rec.sketch, facts=rec.facts, frames=rec.frames)
        out.update(content_digest=rec.content_digest, fp_version=rec.fp_version, cluster_id=rec.cluster_id,
                   duplicate_of=rec.duplicate_of, decision=rec.decision, distance=rec.distance,
                   degenerate=rec.degenerate)  # fmt: skip
        return out

    def write(self, actions: list[dict[str, Any]]) -> list[tuple[str, str]]:
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
        actions = []
        for rec in writes:
            doc, res = by_id[rec.id]
            if mode == "index":
                source = {**document_fields(doc, res), **self.fields(rec), **copy_fields(res)}
                actions.append({"_op_type": "index", "_index": self.index.index, "_id": rec.id,
                                "_source": source})  # fmt: skip
            else:
                fields = {**self.fields(rec), "terms": terms_text(res), **copy_fields(res)}
                actions.append({"_op_type": "update", "_index": self.index.index, "_id": rec.id,
                                "doc": fields})  # fmt: skip
        return decisions, actions

    def index_batch(self, batch: list[tuple[Document, FingerprintResult]]) -> BatchResult:
        """Decide and index full documents, synchronously."""
        decisions, actions = self.prepare(batch, "index")
        return BatchResult(decisions, self.write(actions))

    def update_batch(self, batch: list[tuple[Document, FingerprintResult]]) -> BatchResult:
        """Decide and add the fingerprint fields to documents already in the index, synchronously."""
        decisions, actions = self.prepare(batch, "update")
        return BatchResult(decisions, self.write(actions))


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


def fingerprint_stream(
    docs: Iterable[Document], fingerprinter: Fingerprinter, processes: int = 1, window: int = 4096
) -> Iterator[tuple[Document, FingerprintResult]]:
    """(document, fingerprint) pairs in input order, reading at most ``window`` documents ahead.

    A process pool pulls its input as fast as it can; without the window a reindex of a large index would
    hold the whole scan in memory (and outlive its point-in-time keep-alive) before the first write.
    """
    seen: deque[Document] = deque()
    slots = threading.Semaphore(window)
    stop = threading.Event()

    def feed() -> Iterator[Document]:
        for doc in docs:
            while not slots.acquire(timeout=0.5):
                if stop.is_set():
                    return
            seen.append(doc)
            yield doc

    try:
        for res in fingerprint_many(feed(), processes=processes, fingerprinter=fingerprinter):
            doc = seen.popleft()
            slots.release()
            yield doc, res
    finally:
        stop.set()
