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

log = logging.getLogger("fingerprint_indexer.sidecar")


class ServiceState:
    """Stores (embedded, or the cluster's with ``state=elasticsearch``), spool, worker pool, Elasticsearch
    connection, delivery and metrics of one service."""

    def __init__(self, settings: ServiceSettings, stores: Stores, spool: Spool,
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
        """Lock the spool and open the default index's store (raises SpoolLocked / StoreError)."""
        settings.fingerprint.layout.check_k(settings.k)
        spool = Spool(settings.spool_dir, settings.spool_limit_bytes, settings.spool_segment_bytes)
        stores: Stores
        try:
            if settings.state == "elasticsearch":  # nothing to open: the cluster is asked per request
                stores = EsStateOwner(settings.es, settings.fingerprint, settings.k, settings.keep,
                                      settings.on_duplicate)
            else:
                stores = StoreOwner(settings.store_root, settings.fingerprint, settings.k,
                                    settings.max_open_indices, settings.keep)
        except BaseException:
            spool.close()
            raise
        try:
            if isinstance(stores, StoreOwner):
                stores.call_sync(stores.pipeline, settings.default_index)
        except BaseException:
            stores.close()
            spool.close()
            raise
        if spool.dropped_torn:
            log.warning("spool: cut off %d torn tail frame(s) of unacknowledged writes", spool.dropped_torn)
        if spool.depth:
            log.info("spool: %d record(s) waiting from an earlier run; replaying", spool.depth)
        return cls(settings, stores, spool, metrics)

    async def start(self) -> None:
        s = self.settings
        self.pool = FingerprintPool(s.fingerprint, s.processes)
        self.version = await self.pool.start()
        self.es = EsClient(s.es)
        self.es.copy_marks = s.fingerprint.winnow.tag if s.fingerprint.winnow is not None else None
        m = self.metrics
        self.delivery = Delivery(self.es, self.spool, on_spooled=m.spooled.inc)
        self.replayer = Replayer(self.delivery, s.replay_backoff_max_s, on_replayed=m.replayed.inc,
                                 on_rejected=m.rejected.inc, on_parked=m.parked.inc,
                                 max_tries=s.replay_max_tries)
        delivery = self.delivery
        m.bind(spool_depth=lambda: self.spool.depth, spool_bytes=lambda: self.spool.pending_bytes,
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
        self.spool.close()
