"""The service application's lifespan: what it sets up for the run and puts back after."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from fingerprint_indexer.collector import INGEST_GC_YOUNG
from fingerprint_indexer.sidecar.app import create_app
from fingerprint_indexer.sidecar.settings import ServiceSettings


def test_the_service_runs_with_an_ingests_collector_settings_and_restores_them(tmp_path: Path) -> None:
    """While the service runs, the youngest generation is collected every ``INGEST_GC_YOUNG`` net
    allocations, as ``dedupe`` and ``es index`` collect it (the service is the whole process); the
    process's settings are back when it stops."""
    app = create_app(ServiceSettings(es=None, data_dir=tmp_path, processes=1, threads=1))
    before = gc.get_threshold()

    async def run() -> tuple[int, int, int]:
        async with app.router.lifespan_context(app):
            return gc.get_threshold()

    inside = asyncio.run(run())
    assert inside == (INGEST_GC_YOUNG, before[1], before[2])
    assert gc.get_threshold() == before
