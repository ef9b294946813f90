"""The state of a stateless sidecar (``serve --state elasticsearch``): decisions made against the cluster.

Every sidecar in front of one cluster decides by the same rules
(:class:`fingerprint_indexer.elastic.es_ingest.EsDecider`) against the same index, so any number of them
answer as one would, and none holds the truth on its own disk. Exact copies are agreed through create-only
digest claims (:mod:`fingerprint_indexer.elastic.claims`): of one text sent to several sidecars at once,
exactly one copy is ``new``. Near copies sent to two sidecars within one refresh of the index may both be
``new``; ``fingerprint-indexer es reconcile`` decides the recent documents again afterwards.

One thread of this process does all of it (as :class:`~fingerprint_indexer.sidecar.worker.StoreOwner`
does for the embedded stores): a decider keeps the documents it decided in memory (``pending``) until
their writes are acknowledged (:meth:`EsStateOwner.settle`) and a refresh made after that has made them
searchable; it refreshes an index at most every :data:`REFRESH_S` seconds for that.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from typing import TypeVar

from elasticsearch import Elasticsearch

from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.claims import DigestClaims
from fingerprint_indexer.elastic.es_ingest import EsDecider
from fingerprint_indexer.elastic.similar import similar
from fingerprint_indexer.engine.rules import Decision, Keep
from fingerprint_indexer.env import EsSettings
from fingerprint_indexer.es.connection import connect
from fingerprint_indexer.es.errors import CLIENT_ERRORS, EsError, EsUnavailable, as_es_error, es_errors
from fingerprint_indexer.es.mapping import data_nodes_of, replicas_for, wait_for_primaries
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, FingerprintResult
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.records.neighbour import Neighbours
from fingerprint_indexer.records.record import DocRecord
from fingerprint_indexer.sidecar.worker import OneThread, StoreOwner, valid_index_name
from fingerprint_indexer.verification import Evidence

T = TypeVar("T")
#: An index is refreshed (to make acknowledged writes searchable and drop them from the pending set) at
#: most this often.
REFRESH_S = 1.0
#: A decided document whose write was never reported back (a request that died half-way) is dropped from
#: the pending set after this long.
UNSETTLED_S = 120.0


#: What the cluster's failures reach the state as: the clients' errors, and the adapter's own.
_FAILURES: tuple[type[Exception], ...] = (*CLIENT_ERRORS, EsUnavailable)


@contextmanager
def _asking(what: str) -> Iterator[None]:
    """Any failure of the cluster in the block, refusals included, as :class:`EsUnavailable` (``<what>:
    <exc>``): the cluster could not be asked, so nothing was decided (the request may be sent again)."""
    try:
        yield
    except _FAILURES as exc:
        raise as_es_error(exc, what, EsUnavailable, EsUnavailable) from exc


class EsStateOwner(OneThread):
    """Decides against Elasticsearch on one thread; the same calls as the embedded
    :class:`~fingerprint_indexer.sidecar.worker.StoreOwner`."""

    def __init__(self, es: EsSettings, config: FingerprintConfig, k: int, keep: Keep = "first",
                 on_duplicate: str = "tag", client: Elasticsearch | None = None) -> None:  # fmt: skip
        self.config, self.k, self.keep, self.on_duplicate = config, k, keep, on_duplicate
        self.client = client or connect(es.url, api_key=es.api_key, username=es.username,
                                        password=es.password, ca_certs=es.ca_certs, check=False)
        super().__init__("es-state")
        self._deciders: dict[str, EsDecider] = {}
        self._unsettled: dict[str, dict[str, tuple[float, list[DocRecord]]]] = {}  # index -> id -> records
        self._settled: dict[str, list[DocRecord]] = {}
        self._refreshed: dict[str, float] = {}
        self.largest_bucket = 0  # block buckets live in Elasticsearch: not tracked here

    # -- everything below runs on the state thread
    def decider(self, index: str, create: bool = True) -> EsDecider | None:
        """The decider of ``index`` (the index is created with the fingerprint mapping on first use)."""
        if not valid_index_name(index):
            raise ValueError(f"invalid index name {index!r}")
        d = self._deciders.get(index)
        if d is not None:
            return d
        with _asking(f"index {index!r}"):
            if not create and not self.client.indices.exists(index=index):
                return None
            marks = self.config.winnow.tag if self.config.winnow is not None else None
            es_index = ElasticsearchIndex(self.client, index, create=create, copy_marks=marks)  # its layout
            wait_for_primaries(self.client, index)  # another sidecar may have just created it
            claims = DigestClaims(self.client, index, replicas=replicas_for(data_nodes_of(self.client)))
        d = EsDecider(es_index, self.k, on_duplicate=self.on_duplicate, keep=self.keep,  # type: ignore[arg-type]
                      claims=claims)
        self._deciders[index] = d
        return d

    def pipeline(self, index: str, create: bool = True) -> EsDecider | None:
        """For readiness: the index's decider (None when the index does not exist and ``create`` is off, or
        the cluster cannot be asked)."""
        try:
            return self.decider(index, create)
        except EsUnavailable:
            return None

    def decide(self, index: str, pairs: list[tuple[Document, FingerprintResult]]) -> list[Decision]:
        """Decide one batch against the cluster; its records stay pending until :meth:`settle`."""
        d = self.decider(index)
        assert d is not None
        self._settle_due(index, d)
        with _asking(f"deciding against index {index!r}"):
            decisions, writes = d.decide(pairs)
        now = time.monotonic()
        waiting = self._unsettled.setdefault(index, {})
        for rec in [*writes, *d.relinks]:
            waiting.setdefault(rec.id, (now, []))[1].append(rec)
        # the engine's decisions: whether a document is written is the sidecar's business here
        return [Decision(**{f.name: getattr(x, f.name) for f in fields(Decision)}) for x in decisions]

    def settle(self, index: str, ids: Iterable[str]) -> None:
        """The writes of these documents were answered (applied, spooled or refused): their pending records
        may go once a refresh made after now has made the index show them."""
        waiting = self._unsettled.get(index, {})
        done = self._settled.setdefault(index, [])
        for doc_id in ids:
            entry = waiting.pop(doc_id, None)
            if entry is not None:
                done.extend(entry[1])

    def _settle_due(self, index: str, d: EsDecider) -> None:
        now = time.monotonic()
        waiting = self._unsettled.get(index, {})
        for doc_id in [i for i, (t, _) in waiting.items() if now - t > UNSETTLED_S]:
            self.settle(index, [doc_id])
        done = self._settled.get(index)
        if not done or now - self._refreshed.get(index, 0.0) < REFRESH_S:
            return
        self._settled[index] = []
        try:
            with _asking(f"refreshing index {index!r}"):
                d.index.refresh()
        except EsUnavailable:
            self._settled[index] = done + self._settled[index]
            raise
        self._refreshed[index] = now
        d.drop_pending(done)

    def record(self, index: str, doc_id: str) -> DocRecord | None:
        """The decided record of a document: this sidecar's pending one, else the index's (a real-time
        read)."""
        d = self.decider(index, create=False)
        if d is None:
            return None
        pending = d.pending_records(doc_id)
        if pending:
            return pending[0]
        with _asking(f"reading {doc_id!r} of {index!r}"):
            return d.records([doc_id]).get(doc_id)

    def forget(self, index: str, doc_id: str) -> bool:
        """A document Elasticsearch refused or deleted: its pending records go now, and the claim of its
        text, if it holds one, is released (a later copy is then ``new``, not a copy of a deleted one)."""
        d = self._deciders.get(index)
        if d is None:
            return False
        recs = d.pending_records(doc_id)
        d.drop_pending(recs)
        self._release(d, doc_id, {r.content_digest for r in recs}, search=True)
        return bool(recs)

    def discard(self, index: str, items: Iterable[tuple[str, str]]) -> None:
        """Documents decided but not written (``/v1/ingest`` without ``index``, or skipped): as if they had
        not been decided: their pending records go and their claims are released. ``items``: (id, digest)."""
        d = self._deciders.get(index)
        if d is None:
            return
        for doc_id, digest in items:
            d.drop_pending(d.pending_records(doc_id))
            self._unsettled.get(index, {}).pop(doc_id, None)
            self._release(d, doc_id, {digest}, search=False)

    def _release(self, d: EsDecider, doc_id: str, digests: set[str], search: bool) -> None:
        assert d.claims is not None
        with contextlib.suppress(EsError), es_errors(f"releasing the claims of {doc_id!r}"):
            if search:  # older claims (searchable once the claims index refreshed)
                digests = digests | set(d.claims.owned_by(doc_id))
            for digest in sorted(digests):
                d.claims.release(digest, doc_id)  # else the claim goes stale on its own (claims.GRACE_S)

    def neighbours(self, index: str, ev: Evidence, digest: str, k: int, exclude: str | None
                   ) -> Neighbours:  # fmt: skip
        """Indexed near-duplicates (and exact copies) with the rule's verdict, nearest first, and the
        candidates it rejected with the reason: the look-up of ``es similar``
        (:func:`fingerprint_indexer.elastic.similar.similar`)."""
        d = self.decider(index, create=False)
        if d is None:
            return Neighbours([], [])
        with _asking(f"searching index {index!r}"):
            return similar(self.client, d.index, ev, digest, k, exclude)

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        self.client.close()


#: What holds a service's decisions: its embedded stores, or the cluster.
Stores = StoreOwner | EsStateOwner
