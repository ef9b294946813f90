"""LevelDBIndex against brute force (including after reopen) and its refusal of a foreign layout."""

from __future__ import annotations

import random
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.index_contract import check_scenario, index_scenarios

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.records.match import Match
from fingerprint_indexer.store.block_index import LevelDBIndex
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
        ix.keep_largest_put()
        ix.add_many([("a", 0, None), ("b", 1, None), ("c", 1 << 63, None)])
        ix.add("d", 0xFFFF)
        assert ix.bucket_sizes(0) == [3, 4, 4, 2]
        ix.remove("b")
        assert ix.bucket_sizes(0) == [2, 3, 3, 2]
        assert ix.largest_bucket([0, 0xFFFF]) == 3 and ix.largest_bucket([0], limit=2) == 2
        assert ix.largest_bucket([]) == 0
        # the largest bucket a put made (4, by "d"), kept though "b" is gone; reopened: no puts yet
        assert ix.largest_put() == 4 and ix.largest_put(limit=2) == 2
    with LevelDBIndex(tmp_path / "ix") as ix:
        ix.keep_largest_put()
        assert ix.largest_put() == 0
        ix.add("e", 1 << 63)
        assert ix.largest_put() == max(ix.bucket_sizes(1 << 63)) == 4  # its low blocks: with a, c and d


def _entry_keys(ix: LevelDBIndex) -> list[bytes]:
    return [k for k in ix._db.iterator(prefix=ix._key(b""), include_value=False) if k[:2] in (b"d/", b"n/")]


def test_a_document_is_two_keys_and_no_bucket_is_written(tmp_path):
    with LevelDBIndex(tmp_path / "ix") as ix:
        ix.add_many([(f"d{i}", 0xABCD_0000_0000_0000 | i, None) for i in range(50)])  # one hot block 0
        assert len(_entry_keys(ix)) == 50 * 2
        assert ix.bucket_sizes(0xABCD_0000_0000_0000) == [50, 50, 50, 1]
        assert ix.remove("d7") and not ix.remove("d7")
        assert len(_entry_keys(ix)) == 49 * 2
        assert [m.doc_id for m in ix.query(0xABCD_0000_0000_0007, 0)] == []
        ix.add("d7", 0xABCD_0000_0000_0007)
        assert [m.doc_id for m in ix.query(0xABCD_0000_0000_0007, 0)] == ["d7"]
        assert len(_entry_keys(ix)) == 50 * 2


def test_saved_tables_are_used_and_tables_that_do_not_fit_are_rebuilt(tmp_path):
    rng = random.Random(3)
    fps = [rng.getrandbits(64) for _ in range(20)]
    with LevelDBIndex(tmp_path / "ix") as ix:
        ix.add_many([(f"d{i}", fp, None) for i, fp in enumerate(fps)])
        ix.remove("d3")
        saved = ix.table_arrays()
        saved = (saved[0].copy(), saved[1].copy(), saved[2].copy())
    with LevelDBIndex(tmp_path / "ix", tables=saved) as ix:
        assert not ix.tables_rebuilt
        assert ix.query(fps[5], 0) == [Match("d5", 0)] and ix.query(fps[3], 0) == []
        ix.add("d20", 1)
    with LevelDBIndex(tmp_path / "ix", tables=saved) as ix:  # saved before d20: not used
        assert ix.tables_rebuilt
        assert ix.query(1, 0) == [Match("d20", 0)] and ix.query(fps[5], 0) == [Match("d5", 0)]


def test_bucket_budget_reads_the_newest_entries_of_a_hot_bucket(tmp_path):
    rng = random.Random(7)
    fps = [0x1234 << 48 | rng.getrandbits(48) for _ in range(30)]  # one hot block-0 bucket
    flip = 1 << 32 | 1 << 16 | 1  # one bit in each other block: only block 0 is shared with the probe
    with LevelDBIndex(tmp_path / "ix", bucket_budget=10) as ix:
        ix.add_many([(f"d{i:02d}", fp, None) for i, fp in enumerate(fps)])
        ix.flush()  # the budget applies to the sorted tables; the small append buffer is read whole
        found = [i for i, fp in enumerate(fps) if [m.doc_id for m in ix.query(fp ^ flip, 3)] == [f"d{i:02d}"]]
        assert found == list(range(20, 30))  # the ten newest entries of the bucket
        assert all(ix.query(fp, 0) == [Match(f"d{i:02d}", 0)] for i, fp in enumerate(fps))  # own buckets
    with LevelDBIndex(tmp_path / "ix", bucket_budget=None) as ix:  # no budget: every entry is read
        assert all(ix.query(fp ^ flip, 3) == [Match(f"d{i:02d}", 3)] for i, fp in enumerate(fps))


def test_index_of_the_packed_layout_is_refused_with_a_rebuild_hint(tmp_path):
    from fingerprint_indexer.store.db import open_db

    db = open_db(tmp_path / "ix")  # what an index of the earlier, packed layout holds
    db.put(b"meta/format", b"packed-1")
    db.put(b"d/a", b"0000000000000001 0")
    db.put(b"b/00/0000", b"\x00" * 12)
    db.close()
    with pytest.raises(StoreMismatchError, match=r"format 'packed-1', not 'entries-4'; rebuild it"):
        LevelDBIndex(tmp_path / "ix")


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 7), st.lists(st.integers(0, 2**64 - 1), max_size=5)),
                      min_size=1, max_size=30),
       probes=st.lists(st.integers(0, 2**64 - 1), max_size=4), flips=st.integers(0, 3))
def test_documents_of_several_fingerprints_match_as_their_entries(steps, probes, flips):
    """Documents of one to five fingerprints, put again, removed (an empty list) and put back, answer as a
    brute-force scan of their entries would: the first under the document's id, the ``n``-th as
    ``<id>\\x1f<n>``, before and after reopening (tables scanned from LevelDB, then read back as saved)."""
    held: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory() as d:
        with LevelDBIndex(d) as ix:
            for n, fps in steps:
                doc = f"d{n}"
                if fps:
                    ix.add_docs([(doc, fps, None)])
                    held[doc] = fps
                else:
                    assert ix.remove(doc) == (doc in held)
                    held.pop(doc, None)
            saved = ix.table_arrays()
        entries = {(doc if i == 0 else f"{doc}\x1f{i}"): fp
                   for doc, fps in held.items() for i, fp in enumerate(fps)}
        wanted = [fp ^ ((1 << flips) - 1) for fp in list(entries.values())[:4]] + probes
        for tables in (None, saved):
            with LevelDBIndex(d, tables=tables) as ix:
                assert ix.tables_rebuilt == (tables is None)
                assert len(ix) == len(entries) and ix.numbers_held() == len(held)
                assert {doc: ix.fingerprints(doc) for doc in held} == {d: tuple(f) for d, f in held.items()}
                for fp in wanted:
                    brute = sorted((Match(e, bin(fp ^ v).count("1")) for e, v in entries.items()
                                    if bin(fp ^ v).count("1") <= 3), key=lambda m: (m.distance, m.doc_id))
                    assert ix.query(fp, 3) == brute


def test_a_document_holds_at_most_max_entries_fingerprints(tmp_path):
    from fingerprint_indexer.store.block_index import MAX_ENTRIES

    with LevelDBIndex(tmp_path / "ix") as ix:
        with pytest.raises(ValueError, match=f"a document holds 1 to {MAX_ENTRIES} fingerprints, not 0"):
            ix.add_docs([("a", [], None)])
        ix.add_docs([("a", list(range(MAX_ENTRIES)), None)])
        assert ix.query(MAX_ENTRIES - 1, 0) == [Match(f"a\x1f{MAX_ENTRIES - 1}", 0)]
        assert ix.remove("a") and len(ix) == 0 and ix.query(MAX_ENTRIES - 1, 0) == []


@settings(max_examples=60, deadline=None)
@given(committed=st.lists(st.tuples(st.integers(0, 5), st.lists(st.integers(0, 2**64 - 1), min_size=1,
                                                                max_size=3)), max_size=6),
       steps=st.lists(st.tuples(st.integers(0, 9), st.lists(st.integers(0, 7), max_size=4)), max_size=25),
       probe=st.integers(0, 2**64 - 1), k=st.integers(0, 3), native=st.booleans())
def test_staged_writes_answer_for_their_own_entries(committed, steps, probe, k, native):
    """Documents added (again), removed (an empty list) and added back in one write batch: the batch's
    staged answers are a brute-force scan of the entries it added and still holds, whatever the index
    held before, on the compiled tables and on the reference's; the batch then commits what it staged.
    Asked of the probes, and of each fingerprint the batch adds at some step, alone (as a batch asks of a
    document's own): a removed document's entries are gone at once, even at distance 0."""

    def fingerprints(flips: list[int]) -> list[int]:
        return [probe ^ (1 << f) ^ (1 << (f + 8) if f % 2 else 0) for f in flips]

    probes = [probe, probe ^ 0b11, probe ^ (1 << 63)]
    added_ever = sorted({fp for _n, flips in steps for fp in fingerprints(flips)})
    with tempfile.TemporaryDirectory() as d, pytest.MonkeyPatch.context() as mp:
        mp.setenv("FPI_NATIVE", "1" if native else "0")
        with LevelDBIndex(d) as ix:
            ix.add_docs([(f"d{n}", fps, None) for n, fps in committed])
            wb = ix._db.write_batch(transaction=True)
            staged = ix.writes(wb, queried=True)
            added: dict[str, list[int]] = {}
            for n, flips in steps:
                doc = f"d{n}"
                if flips:
                    fps = fingerprints(flips)
                    staged.add_doc(doc, fps)
                    added[doc] = fps
                else:
                    staged.remove(doc)
                    added.pop(doc, None)
                entries = {(doc if i == 0 else f"{doc}\x1f{i}"): fp
                           for doc, fps in added.items() for i, fp in enumerate(fps)}
                brute = [_brute(entries, q, k) for q in probes]
                assert staged.query_many(probes, k) == brute
                assert staged.any_near(probes, k) == any(brute)
                for fp in added_ever:
                    near = _brute(entries, fp, k)
                    assert staged.any_near([fp], k) == bool(near)
                    assert staged.query_many([fp], k) == [near]
            staged.finish()
            wb.write()
            staged.committed()
            for doc, fps in added.items():
                assert ix.fingerprints(doc) == tuple(fps)


def _brute(entries: dict[str, int], q: int, k: int) -> list[Match]:
    """The entries within ``k`` of ``q``, as a query answers them (nearest first, then by id)."""
    near = [Match(e, bin(q ^ v).count("1")) for e, v in entries.items() if bin(q ^ v).count("1") <= k]
    return sorted(near, key=lambda m: (m.distance, m.doc_id))


def test_writes_not_made_queried_refuse_queries(tmp_path):
    """Bulk loads stage no tables of their own entries, so they cannot answer for them: they say so."""
    with LevelDBIndex(tmp_path / "ix") as ix:
        staged = ix.writes(ix._db.write_batch(), queried=False)
        staged.add_doc("a", [1, 2])
        for ask in (staged.query_many, staged.any_near):
            with pytest.raises(TypeError, match="keep no tables of their own entries"):
                ask([1], 0)


@settings(max_examples=40, deadline=None)
@given(fps=st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=30),
       probes=st.lists(st.integers(0, 40), max_size=20), flips=st.lists(st.integers(0, 63), max_size=3))
def test_query_found_is_query_many_of_what_found_anything(fps, probes, flips):
    """The sparse answer a batch's look-ahead takes: by place, only the fingerprints that found any."""
    with tempfile.TemporaryDirectory() as tmp:
        ix = LevelDBIndex(tmp, BlockLayout())
        ix.add_docs((f"d{i}", (fp,), None) for i, fp in enumerate(fps))
        mask = sum(1 << b for b in set(flips))
        queries = [fps[p % len(fps)] ^ mask if p < 30 else p for p in probes]
        dense = ix.query_many(queries, 3)
        assert ix.query_found(queries, 3) == {q: hits for q, hits in enumerate(dense) if hits}
        ix.close()
