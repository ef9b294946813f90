"""The collector settings of a long run are the process's own again afterwards, even after an error."""

from __future__ import annotations

import gc

import pytest

from fingerprint_indexer.collector import INGEST_GC_YOUNG, long_run


def test_a_long_ingest_collects_less_often_then_restores_thresholds_and_unfreezes() -> None:
    before = gc.get_threshold()
    with long_run():
        assert gc.get_threshold()[0] == INGEST_GC_YOUNG
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_host_process_keeps_its_thresholds_while_its_start_up_is_frozen() -> None:
    before = gc.get_threshold()
    with long_run(young=None):
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_a_long_run_restores_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), long_run():
        raise RuntimeError("stop")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
