"""A Scrapy item pipeline that fingerprints each crawled article and tags or drops near-duplicates.

Enable it in a Scrapy project's settings::

    ITEM_PIPELINES = {"fingerprint_indexer.scrapy.FingerprintPipeline": 300}
    FPI_STORE = "dedupe-store"                 # one crawler: decide against an embedded store, or
    FPI_SIDECAR_URL = "http://127.0.0.1:8000"  # many crawler processes: decide against one sidecar
    FPI_DROP_DUPLICATES = True                 # drop (DropItem) rather than tag exact / near duplicates

Every item that has text gets ``decision`` (new, exact_duplicate or near_duplicate), ``duplicate_of``,
``distance``, ``cluster_id`` and ``fingerprint`` (a declared :class:`scrapy.Item` needs those fields,
or use dicts). The sidecar decides for all processes at once (its ``/v1/ingest``), so one article crawled
by two processes, or re-posted on two sites, is ``new`` exactly once. Counts go to Scrapy's stats
collector under ``fingerprint_indexer/``.

Settings (Scrapy style; defaults in brackets): ``FPI_STORE``, ``FPI_SIDECAR_URL`` (one of the two),
``FPI_SIDECAR_API_KEY`` [``FPI_API_KEY`` from the environment], ``FPI_INDEX`` [news: the sidecar's index
name], ``FPI_SIDECAR_INDEX`` [False: also write the item into Elasticsearch through the sidecar],
``FPI_DROP_DUPLICATES`` [False], ``FPI_ID_FIELD`` [url], ``FPI_TEXT_FIELD`` [content], ``FPI_HTML_FIELD``
[html], ``FPI_TITLE_FIELD`` [title], ``FPI_K`` [3], ``FPI_TIMEOUT`` [30 seconds], ``FPI_SIDECAR_RETRIES``
[5: tries after the first when the sidecar does not answer, is busy (429, honouring ``Retry-After``) or
fails (5xx)], ``FPI_BATCH_SIZE`` [64: the most items decided together], ``FPI_BATCH_WAIT`` [0.05 seconds:
how long a batch waits for more items after its first], ``FPI_GC_FREEZE`` [True: see below].

With an embedded store the fingerprinter's tables live in the crawler's process, and a crawl allocates
objects fast enough for Python's collector to traverse everything alive over and over: ``open_spider``
loads the tables, then moves what is alive then (the crawler's own start-up objects too) out of the
collector's passes (:func:`fingerprint_indexer.collector.long_run`) until ``close_spider``. Those objects
are freed by reference counting as before; only a reference cycle among them waits for ``close_spider``.
``FPI_GC_FREEZE = False`` leaves the collector as the crawler set it.

Items are decided in micro-batches: ``process_item`` queues the item and one worker thread per process
(the embedded store has one writer) takes up to ``FPI_BATCH_SIZE`` queued items, or those that arrived
within ``FPI_BATCH_WAIT`` of the first, and decides them together: on the embedded store in one atomic,
synced commit (a decision is reported only once its batch is stored), on the sidecar in one
``/v1/ingest`` request (split in halves when the sidecar refuses it as too large, or to isolate a
document it refuses). With the embedded store the worker fingerprints the batch (compiled code that
gives up the GIL once per chunk of documents), and the decision step runs on the reactor thread, the
batch at once (:func:`call_on_reactor`): the step gives up the GIL in each LevelDB read and write, and a
worker thread that does so beside the busy reactor hands the GIL over and back each time, which costs
the crawl more CPU than the step itself. The crawl waits for the step, a fraction of a millisecond per
item. The items' Deferreds fire on the reactor thread as their batch settles. Two copies of one article
in the same batch are decided as one ``new`` and one duplicate, as they would be one after the other. A
per-item disk sync or HTTP round trip is what batching saves; ``FPI_BATCH_SIZE = 1`` decides one item at
a time. ``close_spider`` decides every item still queued before it closes the store or the connection.

Nothing is lost: an item that cannot be decided (no id, or the sidecar still failing after the retries)
is passed on untagged, logged, and counted (``fingerprint_indexer/undecided``). The number of batches is
counted too (``fingerprint_indexer/batches``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, TypeVar

import httpx
from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.statscollectors import StatsCollector
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread

from fingerprint_indexer.collector import long_run
from fingerprint_indexer.documents import Document
from fingerprint_indexer.errors import FingerprintIndexerError
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintResult
from fingerprint_indexer.pipeline import Pipeline

log = logging.getLogger(__name__)
STATS = "fingerprint_indexer"
#: The fields each decided item is given.
TAGS = ("decision", "duplicate_of", "distance", "cluster_id", "fingerprint")
#: The most documents one ``/v1/ingest`` request may carry (its request model); the sidecar's own
#: ``--max-batch`` may be lower, and a batch it refuses as too large is split.
MAX_REQUEST_DOCUMENTS = 100_000
#: What the worker thread's queue is told when the spider closes.
_STOP = object()
#: Seconds between a waiting thread's checks that the reactor still runs (:func:`call_on_reactor`).
REACTOR_POLL = 0.5
T = TypeVar("T")


class SidecarError(FingerprintIndexerError, RuntimeError):
    """The sidecar refused or failed a decision (the item is not silently passed on)."""

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        #: the sidecar refused the request itself (4xx but 429): sending it again would not help
        self.refused = refused


def _fire(d: Deferred[Any], fut: Future[Any]) -> None:
    """Fire ``d`` with the outcome of ``fut`` (on the reactor thread)."""
    exc = fut.exception()
    if exc is not None:
        d.errback(exc)
    else:
        d.callback(fut.result())


def _fire_on_reactor(d: Deferred[Any], fut: Future[Any]) -> None:
    """:func:`_fire` now when on the reactor thread, else queued for it (one wake-up of the reactor each)."""
    from twisted.internet import reactor
    from twisted.python.threadable import isInIOThread

    if isInIOThread():
        _fire(d, fut)
    else:
        reactor.callFromThread(_fire, d, fut)


def call_on_reactor(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` run on the reactor thread while the reactor runs, here otherwise; returns or raises
    what ``fn`` does. The calling thread waits on a lock, not on the GIL, so the reactor runs ``fn``
    without handing the GIL back and forth. A reactor that stops before it took the call leaves it to the
    caller: ``fn`` runs once, either there or here. (Twisted's ``blockingCallFromThread`` waits the same
    way, but forever once the reactor has stopped or when called on the reactor's own thread.)"""
    from twisted.internet import reactor
    from twisted.python.threadable import isInIOThread

    if isInIOThread() or not getattr(reactor, "running", False):
        return fn(*args)
    claim = threading.Lock()
    done: Future[T] = Future()

    def run() -> None:
        if claim.acquire(blocking=False):
            try:
                done.set_result(fn(*args))
            except BaseException as exc:
                done.set_exception(exc)

    reactor.callFromThread(run)
    while True:
        try:
            return done.result(timeout=REACTOR_POLL)
        except FutureTimeout:
            if not getattr(reactor, "running", False) and claim.acquire(blocking=False):
                return fn(*args)


def _resolve(futures: list[Future[Any]], results: list[Any]) -> None:
    """Set each future's result, or its exception where the result is one."""
    for fut, res in zip(futures, results, strict=True):
        if isinstance(res, Exception):
            fut.set_exception(res)
        else:
            fut.set_result(res)


class FingerprintPipeline:
    """Scrapy item pipeline: tag each item with its near-duplicate decision, drop duplicates on request."""

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        self.store_dir: str | None = s.get("FPI_STORE") or None
        self.sidecar_url: str | None = (s.get("FPI_SIDECAR_URL") or "").rstrip("/") or None
        if not self.store_dir and not self.sidecar_url:
            raise NotConfigured("set FPI_STORE (one crawler) or FPI_SIDECAR_URL (many crawler processes)")
        if self.store_dir and self.sidecar_url:
            raise NotConfigured("set FPI_STORE or FPI_SIDECAR_URL, not both")
        self.drop = s.getbool("FPI_DROP_DUPLICATES", False)
        self.id_field = s.get("FPI_ID_FIELD", "url")
        self.text_field = s.get("FPI_TEXT_FIELD", "content")
        self.html_field = s.get("FPI_HTML_FIELD", "html")
        self.title_field = s.get("FPI_TITLE_FIELD", "title")
        self.index_name = s.get("FPI_INDEX", "news")
        self.write = s.getbool("FPI_SIDECAR_INDEX", False)
        self.k = s.getint("FPI_K", 3)
        self.timeout = s.getfloat("FPI_TIMEOUT", 30.0)
        self.retries = s.getint("FPI_SIDECAR_RETRIES", 5)
        self.api_key = s.get("FPI_SIDECAR_API_KEY") or os.environ.get("FPI_API_KEY")
        self.batch_size = s.getint("FPI_BATCH_SIZE", 64)
        self.batch_wait = s.getfloat("FPI_BATCH_WAIT", 0.05)
        self.gc_freeze = s.getbool("FPI_GC_FREEZE", True)
        self._collector = contextlib.ExitStack()  # the collector's settings while the spider runs
        if not 1 <= self.batch_size <= MAX_REQUEST_DOCUMENTS:
            raise NotConfigured(f"FPI_BATCH_SIZE must be 1 to {MAX_REQUEST_DOCUMENTS}, got {self.batch_size}")
        if self.batch_wait < 0:
            raise NotConfigured(f"FPI_BATCH_WAIT must be 0 or more seconds, got {self.batch_wait}")
        assert crawler.stats is not None
        self.stats: StatsCollector = crawler.stats
        self._lock = threading.Lock()  # one decision step at a time: the store has one writer
        self._pipeline: Pipeline | None = None
        self._http: httpx.Client | None = None
        self._queue: queue.Queue[Any] = queue.Queue()
        self._worker: threading.Thread | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FingerprintPipeline:
        return cls(crawler)

    # ------------------------------------------------------------------------------------ lifecycle
    def open_spider(self, spider: Any = None) -> None:
        if self.store_dir:
            Path(self.store_dir).mkdir(parents=True, exist_ok=True)
            # the store's batch as large as ours: one commit per batch, nothing committed of a failed one
            self._pipeline = Pipeline(self.store_dir, k=self.k, batch_size=self.batch_size)
            if self.gc_freeze:  # the tables loaded now, then kept out of the collector's passes
                self._pipeline.fingerprinter.warm()
                self._collector.enter_context(long_run(young=None))
        else:
            headers = {"X-API-Key": self.api_key} if self.api_key else {}
            self._http = httpx.Client(base_url=str(self.sidecar_url), headers=headers, timeout=self.timeout)
        self._worker = threading.Thread(target=self._run, name="fingerprint-indexer-decisions", daemon=True)
        self._worker.start()

    def close_spider(self, spider: Any = None) -> Deferred[None] | None:
        """Decide every item still queued, then close the store or the connection. Under a running
        reactor this happens in a thread (the returned Deferred fires when done), otherwise here."""
        from twisted.internet import reactor

        if getattr(reactor, "running", False):
            return deferToThread(self._close)
        self._close()
        return None

    def _close(self) -> None:
        if self._worker is not None:
            self._queue.put(_STOP)  # behind every queued item: the worker decides them all first
            self._worker.join()
            self._worker = None
        with self._lock:
            if self._pipeline is not None:
                self._pipeline.close()
                self._pipeline = None
            self._collector.close()
            if self._http is not None:
                self._http.close()
                self._http = None

    # ---------------------------------------------------------------------------------------- items
    def document(self, item: Any) -> Document | None:
        """The item as a :class:`Document`; None when it has no text to fingerprint. Raises
        :class:`LookupError` when it has text but nothing to identify it by."""
        a = ItemAdapter(item)
        text, html = a.get(self.text_field), a.get(self.html_field)
        text = text if isinstance(text, str) and text.strip() else None
        html = html if isinstance(html, str) and html.strip() else None
        if text is None and html is None:
            return None
        doc_id = a.get(self.id_field)
        if not doc_id:
            raise LookupError(f"item has no {self.id_field!r} to identify it by (set FPI_ID_FIELD)")
        title = a.get(self.title_field)
        url = a.get("url")
        return Document(id=str(doc_id), title=title if isinstance(title, str) else "", content=text,
                        html=html if text is None else None, url=str(url) if url else None)  # fmt: skip

    def decide(self, doc: Document) -> dict[str, Any]:
        """The decision for ``doc`` as a dict (``decision``, ``duplicate_of``, ``distance``,
        ``cluster_id``, ``fingerprint``), from the embedded store or the sidecar."""
        if self._pipeline is not None:
            return self._decide_stored([doc])[0]
        with self._lock:
            return self._ask_sidecar([doc])[0]

    def decide_many(self, docs: list[Document]) -> list[dict[str, Any] | Exception | None]:
        """Decisions for ``docs`` decided together, in order: a dict, None (logged) where the sidecar kept
        failing, or the exception that one document raised (the others are still decided)."""
        try:
            if self._pipeline is not None:
                return list(self._decide_stored(docs))
            with self._lock:
                return list(self._ask_sidecar_many(docs))
        except Exception as exc:
            if len(docs) == 1:
                return [None if isinstance(exc, SidecarError) else exc]
            # one document the batch could not take: decide the rest without it, one at a time
            log.warning("a batch of %d items failed (%s); deciding them one at a time", len(docs), exc)
        return [r for doc in docs for r in self.decide_many([doc])]

    def _decide_stored(self, docs: list[Document]) -> list[dict[str, Any]]:
        """``docs`` fingerprinted here, then decided on the reactor thread (:func:`call_on_reactor`) in one
        commit, before any decision is reported."""
        pipeline = self._pipeline
        assert pipeline is not None, "the pipeline is not open"
        return call_on_reactor(self._decide_fingerprinted, pipeline.fingerprint_batch(docs))

    def _decide_fingerprinted(self, batch: list[tuple[Document, FingerprintResult]]) -> list[dict[str, Any]]:
        with self._lock:
            if self._pipeline is None:
                raise RuntimeError("the pipeline was closed before its items were decided")
            return [d.to_dict() for d in self._pipeline.decide_batch(batch)]

    def _ask_sidecar_many(self, docs: list[Document]) -> list[dict[str, Any] | None]:
        """One ``/v1/ingest`` request for ``docs``; a batch the sidecar refuses (too large, or a document it
        will not take) is split in halves, so only the refused documents end undecided (None, logged)."""
        try:
            decided: list[dict[str, Any] | None] = list(self._ask_sidecar(docs))
            return decided
        except SidecarError as exc:
            if len(docs) == 1:
                log.error("item %s passed on undecided: %s", docs[0].id, exc)
                return [None]
            if not exc.refused:
                log.error("%d items passed on undecided: %s", len(docs), exc)
                return [None] * len(docs)
        half = len(docs) // 2
        return self._ask_sidecar_many(docs[:half]) + self._ask_sidecar_many(docs[half:])

    def _ask_sidecar(self, docs: list[Document]) -> list[dict[str, Any]]:
        """The sidecar's decisions for ``docs``, in order, from one ``/v1/ingest`` request."""
        assert self._http is not None, "the pipeline is not open"
        body = {"documents": [self._sidecar_document(doc) for doc in docs],
                "index_name": self.index_name, "index": self.write}  # fmt: skip
        why, wait, refused = "", 0.0, False
        for attempt in range(self.retries + 1):
            time.sleep(wait)
            wait = min(30.0, 0.5 * 2**attempt)  # the next pause, unless the sidecar says how long
            try:
                r = self._http.post("/v1/ingest", json=body)
            except httpx.HTTPError as exc:
                why = f"did not answer ({type(exc).__name__})"
                continue
            if r.status_code == 200:
                return [dict(res) for res in r.json()["results"]]
            why = f"answered {r.status_code}: {r.text[:300]}"
            if r.status_code != 429 and r.status_code < 500:
                refused = True
                break  # the request itself is refused: trying again will not help
            retry_after = r.headers.get("retry-after", "")
            if retry_after.isdigit():
                wait = min(60.0, float(retry_after))
        raise SidecarError(f"sidecar {self.sidecar_url} {why}", refused=refused)

    @staticmethod
    def _sidecar_document(doc: Document) -> dict[str, Any]:
        fields = {"id": doc.id, "title": doc.title or None, "content": doc.content, "html": doc.html,
                  "url": doc.url}  # fmt: skip
        return {k: v for k, v in fields.items() if v is not None}

    # --------------------------------------------------------------------------------- the batches
    def submit(self, doc: Document) -> Future[dict[str, Any] | None]:
        """Queue ``doc`` for the worker thread; the future is resolved with its decision (None: passed
        on undecided) once its batch is decided (and, on the embedded store, committed)."""
        if self._worker is None:
            raise RuntimeError("the pipeline is not open (open_spider) or already closed")
        fut: Future[dict[str, Any] | None] = Future()
        self._queue.put((doc, fut))
        return fut

    def _run(self) -> None:
        """The worker thread: take a batch from the queue, decide it, resolve its futures; until stopped."""
        stop = False
        while not stop:
            first = self._queue.get()
            if first is _STOP:
                break
            batch = [first]
            deadline = time.monotonic() + self.batch_wait
            while len(batch) < self.batch_size:
                try:
                    nxt = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if nxt is _STOP:
                    stop = True  # decide this batch, then stop
                    break
                batch.append(nxt)
            self._settle(batch)

    def _settle(self, batch: list[tuple[Document, Future[dict[str, Any] | None]]]) -> None:
        try:
            results = self.decide_many([doc for doc, _fut in batch])
        except BaseException as exc:  # a failure of this thread itself must not leave items unfired
            results = [exc if isinstance(exc, Exception) else RuntimeError(repr(exc))] * len(batch)
        self.stats.inc_value(f"{STATS}/batches")  # this key is only written from this thread
        call_on_reactor(_resolve, [fut for _doc, fut in batch], results)

    def decide_or_none(self, doc: Document) -> dict[str, Any] | None:
        """:meth:`decide`, or None (logged) when the sidecar keeps failing."""
        try:
            return self.decide(doc)
        except SidecarError as exc:
            log.error("item %s passed on undecided: %s", doc.id, exc)
            return None

    def process_item(self, item: Any, spider: Any = None) -> Deferred[Any] | Any:
        try:
            doc = self.document(item)
        except LookupError as exc:
            log.error("item passed on undecided: %s", exc)
            self.stats.inc_value(f"{STATS}/undecided")
            return item
        if doc is None:
            self.stats.inc_value(f"{STATS}/no_text")
            return item
        d: Deferred[Any] = Deferred()
        fut = self.submit(doc)
        # resolved on the reactor thread while it runs (the Deferred fires there and then)
        fut.add_done_callback(lambda f: _fire_on_reactor(d, f))
        d.addCallback(self.apply, item)
        return d

    def apply(self, decided: dict[str, Any] | None, item: Any) -> Any:
        """Count, tag and return ``item`` by its decision; raise DropItem for a duplicate to drop."""
        self.stats.inc_value(f"{STATS}/items")
        if decided is None:
            self.stats.inc_value(f"{STATS}/undecided")
            return item
        decision = str(decided["decision"])
        self.stats.inc_value(f"{STATS}/{decision}")
        if self.drop and decision != "new":
            self.stats.inc_value(f"{STATS}/dropped")
            of, dist = decided.get("duplicate_of"), decided.get("distance")
            raise DropItem(f"{decision} of {of} (distance {dist})")
        a = ItemAdapter(item)
        for tag in TAGS:
            a[tag] = decided.get(tag)
        return item


__all__ = ["FingerprintPipeline", "SidecarError"]
