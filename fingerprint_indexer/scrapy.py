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
fails (5xx)].

Nothing is lost: an item that cannot be decided (no id, or the sidecar still failing after the retries)
is passed on untagged, logged, and counted (``fingerprint_indexer/undecided``). Decisions run off the
reactor thread, one at a time per process (the embedded store has one writer).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.statscollectors import StatsCollector
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread

from fingerprint_indexer.documents import Document
from fingerprint_indexer.errors import FingerprintIndexerError
from fingerprint_indexer.pipeline import Pipeline

log = logging.getLogger(__name__)
STATS = "fingerprint_indexer"
#: The fields each decided item is given.
TAGS = ("decision", "duplicate_of", "distance", "cluster_id", "fingerprint")


class SidecarError(FingerprintIndexerError, RuntimeError):
    """The sidecar refused or failed a decision (the item is not silently passed on)."""


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
        assert crawler.stats is not None
        self.stats: StatsCollector = crawler.stats
        self._lock = threading.Lock()
        self._pipeline: Pipeline | None = None
        self._http: httpx.Client | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FingerprintPipeline:
        return cls(crawler)

    # ------------------------------------------------------------------------------------ lifecycle
    def open_spider(self, spider: Any = None) -> None:
        if self.store_dir:
            Path(self.store_dir).mkdir(parents=True, exist_ok=True)
            self._pipeline = Pipeline(self.store_dir, k=self.k)
        else:
            headers = {"X-API-Key": self.api_key} if self.api_key else {}
            self._http = httpx.Client(base_url=str(self.sidecar_url), headers=headers, timeout=self.timeout)

    def close_spider(self, spider: Any = None) -> None:
        with self._lock:
            if self._pipeline is not None:
                self._pipeline.close()
                self._pipeline = None
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
        with self._lock:
            if self._pipeline is not None:
                return self._pipeline.process(doc).to_dict()
            return self._ask_sidecar(doc)

    def _ask_sidecar(self, doc: Document) -> dict[str, Any]:
        assert self._http is not None, "the pipeline is not open"
        fields = {"id": doc.id, "title": doc.title or None, "content": doc.content, "html": doc.html,
                  "url": doc.url}  # fmt: skip
        body = {"documents": [{k: v for k, v in fields.items() if v is not None}],
                "index_name": self.index_name, "index": self.write}  # fmt: skip
        why, wait = "", 0.0
        for attempt in range(self.retries + 1):
            time.sleep(wait)
            wait = min(30.0, 0.5 * 2**attempt)  # the next pause, unless the sidecar says how long
            try:
                r = self._http.post("/v1/ingest", json=body)
            except httpx.HTTPError as exc:
                why = f"did not answer ({type(exc).__name__})"
                continue
            if r.status_code == 200:
                return dict(r.json()["results"][0])
            why = f"answered {r.status_code}: {r.text[:300]}"
            if r.status_code != 429 and r.status_code < 500:
                break  # the request itself is refused: trying again will not help
            retry_after = r.headers.get("retry-after", "")
            if retry_after.isdigit():
                wait = min(60.0, float(retry_after))
        raise SidecarError(f"sidecar {self.sidecar_url} {why}")

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
        d: Deferred[Any] = deferToThread(self.decide_or_none, doc)
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
