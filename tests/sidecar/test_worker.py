"""The fingerprint pool: on threads (the default) and in worker processes it gives what the fingerprinter
gives in this process, and the pool's functions see the pool's own configuration."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter
from fingerprint_indexer.sidecar import worker
from fingerprint_indexer.sidecar.worker import FingerprintPool

TEXTS = [
    "国务院总理今天在北京主持召开常务会议，部署进一步扩大内需的措施，会议指出要稳定就业。",
    "The central bank held interest rates on Thursday, saying inflation was still above its target.",
    "",
    "上海证券交易所发布公告称，将于下月起调整部分交易规则，以保护中小投资者的合法权益。" * 3,
]


def _docs() -> list[Document]:
    return [Document(id=str(i), title=f"t{i}", content=t) for i, t in enumerate(TEXTS * 5)]


async def _through(pool: FingerprintPool) -> tuple[str, list[object], object]:
    try:
        version = await pool.start()
        docs = await pool.documents(_docs())
        raw = await pool.raw(TEXTS[0], None)
        return version, list(docs), raw
    finally:
        pool.close()


@pytest.mark.parametrize(("processes", "threads"), [(1, 1), (1, 3), (2, 1)])
def test_pool_gives_what_the_fingerprinter_gives(processes: int, threads: int) -> None:
    fpr = Fingerprinter()
    version, docs, raw = asyncio.run(_through(FingerprintPool(FingerprintConfig(), processes, threads)))
    assert version == fpr.version
    assert docs == [fpr.fingerprint_document(d) for d in _docs()]
    assert raw == fpr.fingerprint(text=TEXTS[0])


def test_two_thread_pools_keep_their_own_configuration() -> None:
    """Two services in one process: each pool's functions run with its own fingerprinter."""
    a, b = FingerprintConfig(), replace(FingerprintConfig(), top_k=16)

    async def versions() -> tuple[int, int]:
        pa, pb = FingerprintPool(a, 1, 2), FingerprintPool(b, 1, 2)
        try:
            got = await asyncio.gather(pa.run(_top_k), pb.run(_top_k))
            return got[0], got[1]
        finally:
            pa.close()
            pb.close()

    assert asyncio.run(versions()) == (a.top_k, 16)
    with pytest.raises(AssertionError, match="outside a FingerprintPool"):
        worker.current()


def _top_k() -> int:
    return worker.current().config.top_k
