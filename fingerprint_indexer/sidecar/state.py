"""The long-lived parts of one running service and their start/stop order.

:meth:`ServiceState.open` takes the on-disk resources (spool lock, default store) synchronously, so the
``serve`` command can report "locked by another process" before it binds a port; :meth:`start` and
:meth:`stop` run inside the event loop (worker pool warm-up, Elasticsearch client, replayer).
"""

from __future__ import annotations

import logging

from fingerprint_indexer.es.mapping import ES_LAYOUT
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.sidecar.delivery import Delivery, Replayer
from fingerprint_indexer.sidecar.es import EsClient
from fingerprint_indexer.sidecar.es_state import EsStateOwner, Stores
from fingerprint_indexer.sidecar.metrics import Metrics
from fingerprint_indexer.sidecar.settings import ServiceSettings
from fingerprint_indexer.sidecar.spool import Spool
from fingerprint_indexer.sidecar.worker import FingerprintPool, StoreOwner
from fingerprint_indexer.store.errors import StoreError

log = logging.getLogger("fingerprint_indexer.sidecar")


class ServiceState:
    """Stores (embedded, or the cluster's with ``state=elasticsearch``), spool, worker pool, Elasticsearch
    connection, delivery and metrics of one service. Without Elasticsearch (``settings.es`` None) there
    is no spool, connection or delivery: the embedded stores alone decide and answer."""

    def __init__(self, settings: ServiceSettings, stores: Stores, spool: Spool | None,
                 metrics: Metrics | None = None) -> None:
        self.settings, self.stores, self.spool = settings, stores, spool
        self.layout: BlockLayout = settings.fingerprint.layout  # the embedded stores'
        self.metrics = metrics or Metrics()
        self.pool: FingerprintPool | None = None
        self.es: EsClient | None = None
        self.delivery: Delivery | None = None
        self.replayer: Replayer | None = None
        self.version = ""

    @classmethod
    def open(cls, settings: ServiceSettings, metrics: Metrics | None = None) -> ServiceState:
        """Lock the spool (kept only for Elasticsearch writes) and open the default index's store (raises
        SpoolLocked / StoreError)."""
        settings.fingerprint.layout.check_k(settings.k)
        if settings.es is None and settings.state == "elasticsearch":
            raise ValueError("--state elasticsearch decides against the cluster: give --es URL (or ES_URL)")
        spool = None
        if settings.es is not None:
            spool = Spool(settings.spool_dir, settings.spool_limit_bytes, settings.spool_segment_bytes)
        stores: Stores
        try:
            if settings.es is not None and settings.state == "elasticsearch":  # the cluster, per request
                stores = EsStateOwner(settings.es, settings.fingerprint, settings.k, settings.keep,
                                      settings.on_duplicate)
            else:
                stores = StoreOwner(settings.store_root, settings.fingerprint, settings.k,
                                    settings.max_open_indices, settings.keep, single=settings.store_path,
                                    default_index=settings.default_index, readonly=settings.readonly,
                                    sources=settings.sources)
        except BaseException:
            if spool is not None:
                spool.close()
            raise
        try:
            if isinstance(stores, StoreOwner):
                opened = stores.call_sync(stores.store if settings.readonly else stores.pipeline,
                                          settings.default_index)
                if opened is None:
                    raise StoreError(f"no store at {stores.path(settings.default_index)}")
        except BaseException:
            stores.close()
            if spool is not None:
                spool.close()
            raise
        if spool is None:
            return cls(settings, stores, spool, metrics)
        if spool.dropped_torn:
            log.warning("spool: cut off %d torn tail frame(s) of unacknowledged writes", spool.dropped_torn)
        if spool.depth:
            log.info("spool: %d record(s) waiting from an earlier run; replaying", spool.depth)
        return cls(settings, stores, spool, metrics)

    async def start(self) -> None:
        s = self.settings
        self.pool = FingerprintPool(s.fingerprint, s.processes, s.threads)
        self.version = await self.pool.start()
        m = self.metrics
        if s.es is None or self.spool is None:  # the embedded stores alone: nothing to deliver
            m.bind(spool_depth=lambda: 0.0, spool_bytes=lambda: 0.0,
                   largest_bucket=lambda: self.stores.largest_bucket, es_up=lambda: 0.0)
            return
        self.es = EsClient(s.es)
        self.es.copy_marks = s.fingerprint.winnow.tag if s.fingerprint.winnow is not None else None
        self.delivery = Delivery(self.es, self.spool, on_spooled=m.spooled.inc, timed=m.write_step)
        self.replayer = Replayer(self.delivery, s.replay_backoff_max_s, on_replayed=m.replayed.inc,
                                 on_rejected=m.rejected.inc, on_parked=m.parked.inc,
                                 max_tries=s.replay_max_tries)
        delivery = self.delivery
        spool = self.spool
        m.bind(spool_depth=lambda: spool.depth, spool_bytes=lambda: spool.pending_bytes,
               largest_bucket=lambda: self.stores.largest_bucket,
               es_up=lambda: 0.0 if delivery.es_down else 1.0)
        self.replayer.start()

    async def es_layout(self, index: str) -> BlockLayout:
        """The key layout of the block fields written to ``index``: its own (an Elasticsearch index
        keeps the layout it was created with, whoever created it), :data:`ES_LAYOUT` for a new one."""
        return ES_LAYOUT if self.es is None else await self.es.index_layout(index)

    async def stop(self) -> None:
        """After uvicorn has finished in-flight requests: stop replaying (the spool keeps the rest for
        the next start), then close the pool, the stores (saving Bloom filters) and the spool."""
        if self.replayer is not None:
            await self.replayer.stop()
        if self.es is not None:
            await self.es.close()
        if self.delivery is not None:
            self.delivery.close()
        if self.pool is not None:
            self.pool.close()
        self.stores.close()
        if self.spool is not None:
            self.spool.close()
