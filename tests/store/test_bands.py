"""The band postings: every (band key, document) pair held is found, through merges, removals, reopening,
lost or stale files and repairs, and the store answers band look-ups from them as it answered from LevelDB."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint.sketch import BAND_ROWS, BANDS, MAX_BAND_READ, band_keys
from fingerprint_indexer.records.record import record_now
from fingerprint_indexer.store.bands import BandPostings, load_bands, save_bands
from fingerprint_indexer.store.check import check, repair
from fingerprint_indexer.store.embedded import EmbeddedStore, band_bytes, bands_bytes

ALGO = "test-algo/1"
# few distinct keys, so that keys are shared, and hashes equal across bands (the sort key mixes the band in)
keys9 = st.tuples(st.integers(0, 3), st.sampled_from([0, 1, 2**63, 2**64 - 1, 12345])).map(
    lambda k: bytes([k[0]]) + k[1].to_bytes(8, "big"))


@settings(max_examples=60, deadline=None)
@given(sketches=st.lists(st.binary(min_size=4 * BANDS * BAND_ROWS, max_size=600), max_size=5))
def test_band_keys_decoded_together_are_each_as_stored(sketches):
    """The store's 9 bytes of a band key: its band number as one byte, then its hash (the keys of many
    documents decoded in one buffer give each one's bytes in turn)."""
    keys = [k for s in sketches for k in band_keys(s)]
    each = [int(k[:-16], 16).to_bytes(1, "big") + bytes.fromhex(k[-16:]) for k in keys]
    assert bands_bytes(keys) == b"".join(each) and [band_bytes(k) for k in keys] == each


ops = st.lists(st.one_of(
    st.tuples(st.just("add"), st.lists(st.lists(keys9, max_size=4, unique=True), min_size=1, max_size=6)),
    st.tuples(st.just("remove"), st.lists(st.integers(0, 40), max_size=3)),
), max_size=25)


@settings(max_examples=150, deadline=None)
@given(ops=ops, limit=st.integers(1, 4))
def test_postings_answer_as_a_dict_of_sets_would(ops, limit, tmp_path_factory):
    """Batches of documents (each a few keys, repeats allowed) added and removed in any order: ``find``
    answers every key as a brute-force model does, before and after saving and loading."""
    bands, model, dead = BandPostings(), {}, set()
    num = 0
    for op, arg in ops:
        if op == "add":
            raw, nums = b"", []
            for keys in arg:  # one document: a number never used before
                raw += b"".join(keys)
                nums += [num] * len(keys)
                for k in keys:
                    model.setdefault(k, set()).add(num)
                num += 1
            bands.add(raw, nums)
        else:  # numbers of documents added before (a number is never reused)
            arg = [n for n in arg if n < num]
            bands.remove(arg)
            dead |= set(arg)
        live = {k: held - dead for k, held in model.items()}
        asked = [*sorted(live), b"\x09" + bytes(8)]
        for k, got in zip(asked, bands.find(b"".join(asked), limit), strict=True):
            want = live.get(k, set())
            assert len(got) == len(set(got)) == min(len(want), limit) and set(got) <= want
        assert bands.pairs() == {(k, n) for k, held in live.items() for n in held}
    path = tmp_path_factory.mktemp("bands") / "bands.bin"
    save_bands(path, bands, 3, b"s" * 16)
    again = load_bands(path, 3, b"s" * 16)
    assert again is not None and again.pairs() == bands.pairs()


def test_runs_merge_geometrically():
    """A commit adds a run; runs stay few (a look-up reads each) however many commits there were."""
    rng = np.random.default_rng(5)
    bands = BandPostings()
    for n in range(300):
        keys = rng.integers(0, 256, size=(80, 9), dtype=np.uint8)
        bands.add(keys.tobytes(), [n] * 80)
    assert len(bands) == 300 * 80
    assert len(bands._runs) <= 8


def test_saved_postings_are_read_back_only_at_their_generation(tmp_path):
    path = tmp_path / "bands.bin"
    bands = BandPostings()
    bands.add(b"123456789abcdefghi", [4, 5])
    save_bands(path, bands, 7, b"s" * 16)
    again = load_bands(path, 7, b"s" * 16)
    assert again is not None and again.find(b"123456789", 9) == [[4]]
    assert load_bands(path, 8, b"s" * 16) is None and load_bands(path, 7, b"t" * 16) is None
    path.write_bytes(path.read_bytes()[:-3])
    assert load_bands(path, 7, b"s" * 16) is None


def _sketch(i: int) -> str:
    """A sketch whose band keys no other document's share (and one band key shared by all: band 0)."""
    rows = np.arange(BANDS * BAND_ROWS, dtype="<u4") + np.uint32(1_000 * i + 1)
    rows[:BAND_ROWS] = 5
    return rows.tobytes().hex()


def _put(store: EmbeddedStore, ids: range) -> None:
    tx = store.batch()
    for i in ids:
        fp = i * 0x9E3779B97F4A7C15 & (2**64 - 1)
        tx.put_record(record_now(id=f"d{i}", fingerprint=fp, content_digest=f"c{i}", keyword_digest="kw",
                                 cluster_id=f"d{i}", decision="new", duplicate_of=None, distance=None,
                                 degenerate=False, length=10, published_at=None, version=ALGO,
                                 sketch=_sketch(i)), index=True)
    tx.commit()


def _found(store: EmbeddedStore, n: int) -> list[list[str]]:
    return store.band_scan_many([band_keys(bytes.fromhex(_sketch(i)))[1] for i in range(n)])


def test_the_store_finds_every_band_through_merges_reopening_and_repair(tmp_path):
    n = 1_000  # 8,000 band keys in ten commits: runs are merged
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        for start in range(0, n, 100):
            _put(store, range(start, start + 100))
        assert _found(store, n) == [[f"d{i}"] for i in range(n)]
        shared = band_keys(bytes.fromhex(_sketch(0)))[0]  # a stock phrase: held by every document
        assert len(store.band_scan(shared)) == MAX_BAND_READ + 1 and store.band_docs(shared) == []
        assert store.band_scan_many(["0" + "0" * 16]) == [[]]
        assert not any(store.db.iterator(prefix=b"s/b/", include_value=False))  # LevelDB keeps none
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:  # read back from its file
        assert _found(store, n) == [[f"d{i}"] for i in range(n)]
        _put(store, range(n, n + 1))
    os.remove(tmp_path / "bands.bin")
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:  # rebuilt from the records
        assert store.bands_rebuilt
        assert _found(store, n + 1) == [[f"d{i}"] for i in range(n + 1)]
        _put(store, range(n + 1, n + 2))
    (tmp_path / "bands.bin").write_bytes((tmp_path / "bands.bin").read_bytes()[:40])
    repair(tmp_path)
    assert check(tmp_path).ok
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        assert not store.bands_rebuilt
        assert _found(store, n + 2) == [[f"d{i}"] for i in range(n + 2)]


def test_a_stale_postings_file_is_not_trusted(tmp_path):
    """A crash after a commit leaves the file of an earlier generation: its keys may be missing."""
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        _put(store, range(0, 10))
    stale = (tmp_path / "bands.bin").read_bytes()
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        _put(store, range(10, 20))
    Path(tmp_path / "bands.bin").write_bytes(stale)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        assert _found(store, 20) == [[f"d{i}"] for i in range(20)]


def test_a_document_removed_or_stored_again_leaves_its_old_bands(tmp_path):
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        _put(store, range(0, 10))
        store.delete("d3")
        tx = store.batch()  # d4 stored again with the bands of d20: its own are gone
        rec = store.record("d4")
        tx.remove_doc("d4")
        tx.put_record(dataclasses.replace(rec, sketch=_sketch(20)), index=True)
        tx.commit()
        assert _found(store, 6) == [[f"d{i}"] for i in range(3)] + [[], [], ["d5"]]
        assert store.band_scan_many([band_keys(bytes.fromhex(_sketch(20)))[1]]) == [["d4"]]
    assert check(tmp_path).ok
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        assert _found(store, 6) == [[f"d{i}"] for i in range(3)] + [[], [], ["d5"]]
