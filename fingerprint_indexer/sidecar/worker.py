"""Where the CPU and the store work runs, so the event loop only moves bytes.

- :class:`FingerprintPool`: fingerprinting off the event loop, on threads of this process sharing one
  :class:`Fingerprinter` (the compiled pass runs without the GIL, and results need no pickling), or in
  worker processes (``spawn``: no forked copies of the server's threads or sockets), each building its
  own at start, where a crash in the fingerprinter must not take the service down.
- :class:`StoreOwner`: the embedded stores (one per Elasticsearch index, opened on first use) are touched by
  exactly one thread of this one process. LevelDB allows one process per database, and one thread makes the
  read-decide-commit sequence of :meth:`Pipeline.decide_batch` race-free without further locking. Every
  store is opened under the service's keep policy (``first | longest | newest``).
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing as mp
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, TypeVar

from fingerprint_indexer.collector import freeze_start_up
from fingerprint_indexer.documents import Document
from fingerprint_indexer.errors import FingerprintIndexerError
from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter, FingerprintResult
from fingerprint_indexer.io.texts import SourceTexts
from fingerprint_indexer.pipeline import KEEP_POLICIES, Decision, Keep, Pipeline
from fingerprint_indexer.records.neighbour import Neighbours
from fingerprint_indexer.records.record import DocRecord
from fingerprint_indexer.store.embedded import EmbeddedStore
from fingerprint_indexer.store.errors import StoreReadOnlyError
from fingerprint_indexer.store.overview import Overview, OverviewCache

T = TypeVar("T")

#: Index names the service keeps an embedded store for (Elasticsearch's own rules, minus wildcards).
INDEX_NAME = re.compile(r"^[a-z0-9][a-z0-9_.+-]{0,254}$")
CHUNK_DOCS = 8


class WorkerUnavailable(FingerprintIndexerError, RuntimeError):
    """The fingerprint pool broke (a worker died) and was restarted; the request may be retried."""


class NoSuchIndex(FingerprintIndexerError, LookupError):
    """A request named an index this service keeps no store for (it serves one store only)."""


def valid_index_name(name: str) -> bool:
    return bool(INDEX_NAME.match(name)) and name not in (".", "..")


# ------------------------------------------------------------------------------ fingerprint pool
_FPR: Fingerprinter | None = None  # a worker process's own
_LOCAL = threading.local()  # a pool thread's: the fingerprinter of the pool it runs for


def current() -> Fingerprinter:
    """The fingerprinter of the pool whose worker (thread or process) runs the calling function."""
    fpr: Fingerprinter | None = getattr(_LOCAL, "fpr", None) or _FPR
    assert fpr is not None, "called outside a FingerprintPool worker"
    return fpr


def _watch_parent(parent: int) -> None:
    """Exit when the service process is gone (after a SIGKILL nobody tells the workers)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _init_worker(config: FingerprintConfig) -> None:
    global _FPR
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    _FPR = Fingerprinter(config).warm()  # read the dictionaries now, not on the first request
    freeze_start_up()  # and keep them out of the collector's passes for the worker's life


def _fingerprint_documents(docs: list[Document]) -> list[FingerprintResult]:
    return current().fingerprint_documents(docs)


def _fingerprint_raw(text: str | None, html: str | None) -> FingerprintResult:
    return current().fingerprint(text=text, html=html)


def _version() -> str:
    return current().version


class FingerprintPool:
    """Fingerprints documents off the event loop; a batch is split evenly over the workers.

    ``processes`` > 1: that many worker processes; a worker that dies restarts the pool. Otherwise
    ``threads`` threads of this process share one fingerprinter (built on the first call, off the event
    loop)."""

    def __init__(self, config: FingerprintConfig, processes: int = 1, threads: int = 1) -> None:
        self.config, self.processes = config, max(1, processes)
        self.workers = self.processes if self.processes > 1 else max(1, threads)
        self._fpr: Fingerprinter | None = None
        self._fpr_lock = threading.Lock()
        self._executor = self._new_executor()

    def _new_executor(self) -> Executor:
        if self.processes == 1:
            return ThreadPoolExecutor(self.workers, thread_name_prefix="fingerprint")
        return ProcessPoolExecutor(self.processes, mp_context=mp.get_context("spawn"),
                                   initializer=_init_worker, initargs=(self.config,))

    def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a pool thread, with this pool's fingerprinter as :func:`current`."""
        if self._fpr is None:
            with self._fpr_lock:
                if self._fpr is None:
                    self._fpr = Fingerprinter(self.config).warm()
        _LOCAL.fpr = self._fpr
        try:
            return fn(*args)
        finally:
            _LOCAL.fpr = None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a worker (importable, arguments picklable for processes), awaited; a worker
        process that died restarts the pool and raises :class:`WorkerUnavailable`."""
        loop = asyncio.get_running_loop()
        if self.processes == 1:
            return await loop.run_in_executor(self._executor, self._in_thread, fn, *args)
        try:
            return await loop.run_in_executor(self._executor, fn, *args)
        except BrokenProcessPool as exc:
            old, self._executor = self._executor, self._new_executor()
            old.shutdown(wait=False, cancel_futures=True)
            raise WorkerUnavailable("a fingerprint worker died; the pool was restarted") from exc

    async def start(self) -> str:
        """Start the workers (each process loads its dictionaries) and return the fingerprint version."""
        versions = await asyncio.gather(*(self.run(_version) for _ in range(self.processes)))
        return versions[0]

    async def documents(self, docs: Sequence[Document]) -> list[FingerprintResult]:
        if not docs:
            return []
        # small chunks, so a look-up queued behind a big batch waits for one chunk, not for the batch
        size = max(1, min(CHUNK_DOCS, math.ceil(len(docs) / self.workers)))
        chunks = [list(docs[i : i + size]) for i in range(0, len(docs), size)]
        parts = await asyncio.gather(*(self.run(_fingerprint_documents, c) for c in chunks))
        return [r for part in parts for r in part]

    async def raw(self, text: str | None, html: str | None) -> FingerprintResult:
        return await self.run(_fingerprint_raw, text, html)

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


# ----------------------------------------------------------------------------------- store owner
#: LevelDB block cache per open store. The service keeps up to ``max_open`` stores open, so the
#: command line's 256 MB would let the cache alone reach gigabytes; 16 MB keeps memory flat.
STORE_CACHE_BYTES = 16 << 20


class OneThread:
    """Runs every call on one thread of its own: state that thread alone touches needs no locks."""

    def __init__(self, name: str) -> None:
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=name)

    def call_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` on the thread and wait (for start-up, before the event loop exists)."""
        return self._executor.submit(fn, *args).result()

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)


class StoreOwner(OneThread):
    """The one thread that opens, reads and writes the embedded stores.

    Stores live one per index under ``root``, or, given ``single``, that one store (as ``dedupe`` writes
    it) is the default index's and there is no other. ``readonly`` opens them for look-ups only, through
    a private copy (:class:`EmbeddedStore`), so a running writer keeps its lock; deciding is refused.
    ``sources`` names the inputs texts are read from (default: those each store recorded)."""

    def __init__(self, root: Path, config: FingerprintConfig, k: int, max_open: int = 64,
                 keep: Keep = "first", single: Path | None = None, default_index: str = "news",
                 readonly: bool = False, sources: Sequence[str] | None = None) -> None:
        if keep not in KEEP_POLICIES:
            raise ValueError(f"keep must be one of {KEEP_POLICIES}, got {keep!r}")
        super().__init__("store")
        self.root, self.config, self.k, self.max_open, self.keep = root, config, k, max_open, keep
        self.single, self.default_index, self.readonly = single, default_index, readonly
        self.sources = sources
        self._pipelines: OrderedDict[str, Pipeline] = OrderedDict()
        self._readers: dict[str, EmbeddedStore] = {}
        self._overviews: dict[str, OverviewCache] = {}
        self._texts: dict[str, SourceTexts] = {}
        self.largest_bucket = 0

    def path(self, index: str) -> Path | None:
        """The folder of ``index``'s store (None: this service has none for it)."""
        if not valid_index_name(index):
            raise ValueError(f"invalid index name {index!r}")
        if self.single is not None:
            return self.single if index == self.default_index else None
        return self.root / index

    # -- everything below runs on the store thread
    def pipeline(self, index: str, create: bool = True) -> Pipeline | None:
        """The open pipeline of ``index`` (opened, and its directory created, on first use)."""
        path = self.path(index)
        if self.readonly:
            raise StoreReadOnlyError(f"store {path or index} is served read-only (explore): look-ups only; "
                                     "'fingerprint-indexer serve --store DIR' decides and adds documents")
        pipe = self._pipelines.get(index)
        if pipe is not None:
            self._pipelines.move_to_end(index)
            return pipe
        if path is None:
            raise NoSuchIndex(f"no index {index!r}: this service serves one store, as index "
                              f"{self.default_index!r}")
        if not create and not (path / "leveldb").is_dir():
            return None
        pipe = Pipeline(path, self.config, k=self.k, keep=self.keep, processes=1,
                        cache_bytes=STORE_CACHE_BYTES,
                        # one given store keeps marks as it was made; stores this service makes follow it
                        copy_marks=None if self.single else self.config.winnow is not None)
        pipe.store.index.keep_largest_put()  # for the hot-bucket gauge (decide)
        self._pipelines[index] = pipe
        while len(self._pipelines) > self.max_open:
            _, old = self._pipelines.popitem(last=False)
            old.close()
        return pipe

    def decide(self, index: str, pairs: list[tuple[Document, FingerprintResult]]) -> list[Decision]:
        """Decide and commit one batch under the keep policy (see :mod:`fingerprint_indexer.pipeline`)."""
        pipe = self.pipeline(index)
        assert pipe is not None
        out = pipe.decide_batch(pairs)
        # the largest block bucket written to (a giant bucket slows every query), counted up to the
        # index's query budget (a query reads no more of a bucket than that), as the tables kept it
        tables = pipe.store.index
        self.largest_bucket = max(self.largest_bucket, tables.largest_put(limit=tables.bucket_budget))
        return out

    def store(self, index: str) -> EmbeddedStore | None:
        """The store of ``index`` for reading (None when there is none)."""
        if not self.readonly:
            path = self.path(index)
            if path is None:
                return None
            pipe = self.pipeline(index, create=False)
            return None if pipe is None else pipe.store
        got = self._readers.get(index)
        if got is None:
            path = self.path(index)
            if path is None or not (path / "leveldb").is_dir():
                return None
            got = self._readers[index] = EmbeddedStore(path, self.config.layout,
                                                      Fingerprinter(self.config).version, readonly=True)
        return got

    def overview(self, index: str) -> Overview | None:
        """Clusters, counts and recent duplicates of ``index``'s store (None when there is none)."""
        store = self.store(index)
        if store is None:
            return None
        cache = self._overviews.get(index)
        if cache is None or cache.store is not store:
            cache = self._overviews[index] = OverviewCache(store)
        return cache.get()

    def texts(self, index: str) -> SourceTexts:
        """Where the texts of ``index``'s documents are read from (the inputs its store recorded)."""
        got = self._texts.get(index)
        if got is None:
            store = self.store(index)
            paths = self.sources if self.sources is not None else store.sources if store else []
            got = self._texts[index] = SourceTexts(list(paths))
        return got

    def document(self, index: str, doc_id: str) -> tuple[DocRecord | None, Document | None]:
        """A stored document's record and, when its input can be read, the document itself."""
        store = self.store(index)
        rec = None if store is None else store.record(doc_id)
        return rec, (self.texts(index).get(doc_id) if rec is not None else None)

    def titles(self, index: str, ids: Sequence[str]) -> dict[str, str]:
        return self.texts(index).titles(ids)

    def neighbours(
        self, index: str, ev: Evidence, digest: str, k: int, exclude: str | None
    ) -> Neighbours:
        """Stored near-duplicates (plus exact copies, which may be degenerate), nearest first, and the
        candidates the verification rule rejected, each with its reason."""
        store = self.store(index)
        if store is None:
            return Neighbours([], [])
        return store.neighbours(ev, digest, k, exclude)

    def settle(self, index: str, ids: Sequence[str]) -> None:
        """Writes answered: nothing to do here (the store committed the decision already)."""

    def discard(self, index: str, items: Sequence[tuple[str, str]]) -> None:
        """Decided, not written: the embedded store keeps the decision (a retry repeats it)."""

    def forget(self, index: str, doc_id: str) -> bool:
        """Remove a document deleted from Elasticsearch from the index's embedded store."""
        pipe = self.pipeline(index, create=False)
        return pipe is not None and pipe.store.delete(doc_id)

    def record(self, index: str, doc_id: str) -> Any:
        store = self.store(index)
        return None if store is None else store.record(doc_id)

    def _close_all(self) -> None:
        self._overviews.clear()
        while self._pipelines:
            _, pipe = self._pipelines.popitem()
            pipe.close()
        while self._readers:
            _, store = self._readers.popitem()
            store.close()

    def close(self) -> None:
        self._executor.submit(self._close_all).result()
        self._executor.shutdown(wait=True)
