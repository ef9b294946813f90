"""LevelDBIndex against brute force (including after reopen) and its refusal of a foreign layout."""

from __future__ import annotations

import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.index_contract import check_scenario, index_scenarios

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.index.base import Match
from fingerprint_indexer.index.leveldb import LevelDBIndex
from fingerprint_indexer.store.errors import StoreLockedError, StoreMismatchError


@settings(max_examples=60, deadline=None)
@given(scenario=index_scenarios(), wide=st.booleans(), batched=st.booleans())
def test_leveldb_matches_brute_force_across_reopen(scenario, wide, batched):
    layout = BlockLayout.even(6) if wide else BlockLayout()
    with tempfile.TemporaryDirectory() as d:
        check_scenario(lambda: LevelDBIndex(d, layout), scenario, reopen=True, batched=batched)


def test_other_layout_is_refused(tmp_path):
    with LevelDBIndex(tmp_path / "ix", BlockLayout()) as ix:
        ix.add("a", 1)
    with pytest.raises(StoreMismatchError, match="block layout 16x16x16x16, not 13x13x13x13x12"):
        LevelDBIndex(tmp_path / "ix", BlockLayout.even(5))
    with LevelDBIndex(tmp_path / "ix") as ix:  # no layout asked: the stored one is used
        assert ix.layout == BlockLayout() and ix.get("a") == 1


def test_other_algorithm_version_is_refused(tmp_path):
    with LevelDBIndex(tmp_path / "ix", algorithm="v1") as ix:
        ix.add("a", 1)
    with pytest.raises(StoreMismatchError, match="algorithm 'v1', not 'v2'"):
        LevelDBIndex(tmp_path / "ix", algorithm="v2")


def test_second_open_reports_lock(tmp_path):
    with LevelDBIndex(tmp_path / "ix"), pytest.raises(StoreLockedError, match="locked by another process"):
        LevelDBIndex(tmp_path / "ix")


def test_shared_database_namespaces_do_not_mix(tmp_path):
    from fingerprint_indexer.store.db import open_db

    db = open_db(tmp_path / "db")
    a = LevelDBIndex(db=db, prefix=b"a/")
    b = LevelDBIndex(db=db, prefix=b"b/")
    a.add("x", 0)
    b.add("y", 1)
    assert [m.doc_id for m in a.query(0, 3)] == ["x"]
    assert [m.doc_id for m in b.query(0, 3)] == ["y"]
    assert len(a) == len(b) == 1
    db.close()


def test_bulk_load_with_ids_repeated_across_write_batches(tmp_path):
    items = [("a", 1, None), ("b", 2, None), ("c", 3, None), ("a", 2**40, None), ("d", 4, None),
             ("b", 5, None)]
    with LevelDBIndex(tmp_path / "ix") as ix:
        ix.add_many(items, batch_size=2)
        assert len(ix) == 4 and ix.get("a") == 2**40 and ix.get("b") == 5
        assert ix.query(1, 0) == [] and ix.query(2, 0) == []  # no stale keys of the first "a" and "b"
        assert ix.query(2**40, 0) == [Match("a", 0)]


def test_bucket_sizes(tmp_path):
    with LevelDBIndex(tmp_path / "ix") as ix:
        ix.add_many([("a", 0, None), ("b", 1, None), ("c", 1 << 63, None)])
        ix.add("d", 0xFFFF)
        assert ix.bucket_sizes(0) == [3, 4, 4, 2]
        ix.remove("b")
        assert ix.bucket_sizes(0) == [2, 3, 3, 2]
