"""The collector settings of a long ingest are the process's own again afterwards, even after an error."""

from __future__ import annotations

import gc

import pytest

from fingerprint_indexer.cli.common import INGEST_GC_YOUNG, ingest_gc


def test_ingest_gc_restores_thresholds_and_unfreezes() -> None:
    before = gc.get_threshold()
    with ingest_gc():
        assert gc.get_threshold()[0] == INGEST_GC_YOUNG
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_ingest_gc_restores_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), ingest_gc():
        raise RuntimeError("stop")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
