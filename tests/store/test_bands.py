"""The band filter: never rules out a key a document holds, through growth, reopening, lost files and
repairs; it only saves LevelDB seeks."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint.sketch import BAND_ROWS, BANDS, band_keys
from fingerprint_indexer.records.record import record_now
from fingerprint_indexer.store.bands import MIN_BITS, BandFilter, load_bands, save_bands
from fingerprint_indexer.store.check import repair
from fingerprint_indexer.store.embedded import EmbeddedStore, band_bytes, bands_bytes

ALGO = "test-algo/1"
keys9 = st.binary(min_size=9, max_size=9)


@settings(max_examples=60, deadline=None)
@given(sketches=st.lists(st.binary(min_size=4 * BANDS * BAND_ROWS, max_size=600), max_size=5))
def test_band_keys_decoded_together_are_each_as_stored(sketches):
    """The store's 9 bytes of a band key: its band number as one byte, then its hash (the keys of many
    documents decoded in one buffer give each one's bytes in turn)."""
    keys = [k for s in sketches for k in band_keys(s)]
    each = [int(k[:-16], 16).to_bytes(1, "big") + bytes.fromhex(k[-16:]) for k in keys]
    assert bands_bytes(keys) == b"".join(each) and [band_bytes(k) for k in keys] == each
    assert BandFilter().may_hold(bands_bytes(keys)).tolist() == BandFilter().may_hold(each).tolist()


@settings(max_examples=60, deadline=None)
@given(held=st.lists(keys9, max_size=300, unique=True), others=st.lists(keys9, max_size=50))
def test_a_key_added_is_never_ruled_out(held, others):
    bands = BandFilter()
    bands.add(held[: len(held) // 2])
    grown = BandFilter.for_keys(len(held), bands.bits * 4)
    grown.add(held[: len(held) // 2])
    for f in (bands, grown):
        f.add(held[len(held) // 2 :])
        assert f.may_hold(held).all()
        assert len(f.may_hold(others)) == len(others)


def test_absent_keys_are_mostly_ruled_out_and_growth_is_asked_for():
    rng = np.random.default_rng(7)
    keys = [bytes(k) for k in rng.integers(0, 256, size=(MIN_BITS // 16, 9), dtype=np.uint8)]
    bands = BandFilter()
    bands.add(keys)
    assert not bands.wants_growth()
    absent = [bytes(k) for k in rng.integers(0, 256, size=(20_000, 9), dtype=np.uint8)]
    assert bands.may_hold(absent).mean() < 0.1  # one key in sixteen bits
    bands.add(absent[:1])
    assert bands.wants_growth()


def test_saved_filter_is_read_back_only_at_its_generation(tmp_path):
    path = tmp_path / "bands.bin"
    bands = BandFilter.for_keys(2)
    bands.add([b"123456789", b"abcdefghi"])
    save_bands(path, bands, 7, b"s" * 16)
    again = load_bands(path, 7, b"s" * 16)
    assert again is not None and again.added == 2 and again.may_hold([b"123456789"]).all()
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


def test_the_store_finds_every_band_through_growth_reopening_and_repair(tmp_path):
    n = 1_000  # 8,000 band keys: the filter grows past its first size
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        first = store.bands.bits
        for start in range(0, n, 100):
            _put(store, range(start, start + 100))
        assert store.bands.bits > first
        assert _found(store, n) == [[f"d{i}"] for i in range(n)]
        shared = band_keys(bytes.fromhex(_sketch(0)))[0]
        assert store.bands.may_hold([band_bytes(shared)]).all()
        assert store.band_scan_many(["0" + "0" * 16]) == [[]]
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:  # read back from its file
        assert _found(store, n) == [[f"d{i}"] for i in range(n)]
        _put(store, range(n, n + 1))
    os.remove(tmp_path / "bands.bin")
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:  # rebuilt from LevelDB
        assert _found(store, n + 1) == [[f"d{i}"] for i in range(n + 1)]
        _put(store, range(n + 1, n + 2))
    (tmp_path / "bands.bin").write_bytes((tmp_path / "bands.bin").read_bytes()[:40])
    repair(tmp_path)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        assert _found(store, n + 2) == [[f"d{i}"] for i in range(n + 2)]


def test_a_stale_filter_file_is_not_trusted(tmp_path):
    """A crash after a commit leaves the file of an earlier generation: its keys may be missing."""
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        _put(store, range(0, 10))
    stale = (tmp_path / "bands.bin").read_bytes()
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        _put(store, range(10, 20))
    Path(tmp_path / "bands.bin").write_bytes(stale)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        assert _found(store, 20) == [[f"d{i}"] for i in range(20)]
