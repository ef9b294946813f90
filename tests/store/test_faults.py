"""Store faults, each reproduced on a real LevelDB store first: lost CURRENT, truncated write-ahead log,
a foreign or misplaced Bloom filter; then `store check` names the damage and `store repair` rebuilds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fingerprint_indexer.records.record import record_now
from fingerprint_indexer.store.bloom import BloomState
from fingerprint_indexer.store.check import check, repair
from fingerprint_indexer.store.embedded import EmbeddedStore, fp_key
from fingerprint_indexer.store.errors import StoreDamagedError

ALGO = "test-algo/1"


def _fp(i: int) -> int:
    return i * 0x9E3779B97F4A7C15 & (2**64 - 1)


def _fill(path: Path, start: int, n: int) -> None:
    """``n`` documents, one commit each."""
    with EmbeddedStore(path, algorithm=ALGO) as store:
        for i in range(start, start + n):
            tx = store.batch()
            rec = record_now(id=f"d{i}", fingerprint=_fp(i), content_digest=f"digest{i}", keyword_digest="kw",
                             cluster_id=f"d{i}", decision="new", duplicate_of=None, distance=None,
                             degenerate=False, length=10, published_at=None, version=ALGO)
            tx.put_record(rec, index=True)
            tx.found_cluster(f"d{i}", _fp(i))
            tx.commit()


def _ids(path: Path) -> set[str]:
    with EmbeddedStore(path, algorithm=ALGO) as store:
        return {f"d{i}" for i in range(200) if store.record(f"d{i}") is not None}


def test_missing_current_is_refused_not_recreated_and_repair_restores_it(tmp_path: Path) -> None:
    _fill(tmp_path, 0, 30)
    (tmp_path / "leveldb" / "CURRENT").unlink()
    tables = sorted(p.name for p in (tmp_path / "leveldb").iterdir())
    with pytest.raises(StoreDamagedError, match=r"CURRENT is missing; 'fingerprint-indexer store repair"):
        EmbeddedStore(tmp_path, algorithm=ALGO)
    assert sorted(p.name for p in (tmp_path / "leveldb").iterdir()) == tables  # nothing deleted
    assert "CURRENT is missing" in check(tmp_path).problems[0]
    report = repair(tmp_path)
    assert not report.lost and "manifest" in report.facts[0]
    assert _ids(tmp_path) == {f"d{i}" for i in range(30)}
    assert check(tmp_path).ok


def test_truncated_log_is_detected_by_the_bloom_generation(tmp_path: Path) -> None:
    _fill(tmp_path, 0, 40)
    log = max((tmp_path / "leveldb").glob("*.log"), key=lambda p: p.stat().st_size)
    log.write_bytes(log.read_bytes()[: log.stat().st_size // 2])  # committed writes gone from the log
    with pytest.raises(StoreDamagedError, match=r"lost committed writes: its Bloom filter was saved at "
                                                r"generation 40, LevelDB holds generation \d+"):
        EmbeddedStore(tmp_path, algorithm=ALGO)
    problems = check(tmp_path).problems
    assert any("lost committed writes" in p for p in problems), problems
    report = repair(tmp_path)
    assert any("run their input again" in line for line in report.lost)
    kept = _ids(tmp_path)  # opens again: the loss was accepted, and said
    assert 0 < len(kept) < 40 and check(tmp_path).ok


def test_a_bloom_filter_of_another_store_is_rebuilt(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _fill(a, 0, 20)
    _fill(b, 100, 20)  # same generation, other documents
    shutil.copy(b / "bloom.bin", a / "bloom.bin")
    with EmbeddedStore(a, algorithm=ALGO) as store:
        assert store.bloom_state is BloomState.FOREIGN and store.bloom_rebuilt
        assert all(store.doc_with_digest(f"digest{i}") == f"d{i}" for i in range(20))


def test_bloom_bin_that_is_a_directory_is_named(tmp_path: Path) -> None:
    _fill(tmp_path, 0, 3)
    (tmp_path / "bloom.bin").unlink()
    (tmp_path / "bloom.bin").mkdir()
    with pytest.raises(StoreDamagedError, match=r"bloom.bin is not a file; move it away"):
        EmbeddedStore(tmp_path, algorithm=ALGO)
    assert "is not a file" in check(tmp_path).problems[0]


def test_check_names_damaged_derived_data_and_repair_rebuilds_it(tmp_path: Path) -> None:
    _fill(tmp_path, 0, 25)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:  # lose derived keys as a partial copy would
        for prefix in (b"s/c/", b"x/n/"):
            for key in list(store.db.iterator(prefix=prefix, include_value=False))[:5]:
                store.db.delete(key)
        store.db.put(b"s/meta/docs", b"99")
    problems = "\n".join(check(tmp_path).problems)
    assert "document counter says 99, records hold 25" in problems
    assert "content digest keys: 0 point at no such document, 5 digests have no key" in problems
    assert "5 documents whose number does not lead back to them" in problems
    repair(tmp_path)
    assert check(tmp_path).ok
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        assert store.n_docs == 25
        assert all([m.doc_id for m in store.near(_fp(i), 0)] == [f"d{i}"] for i in range(25))


def test_sketch_band_postings_are_checked_and_rebuilt(tmp_path: Path) -> None:
    from fingerprint_indexer.documents import Document
    from fingerprint_indexer.pipeline import Pipeline
    from fingerprint_indexer.store.bands import BandPostings, save_bands

    texts = ["楼市政策大调整！又一炒房之路被堵死了", "国家队主教练在赛后新闻发布会上表示，球队调整了阵型。"]
    with Pipeline(tmp_path) as p:
        list(p.process_many(Document(id=str(i), content=t) for i, t in enumerate(texts)))
        pairs, docs = p.store.bands.pairs(), band_docs(p.store)
        assert len(pairs) == 16  # eight bands per document
        generation, store_id = p.store.generation, p.store.store_id
    damaged = [*sorted(pairs)[1:], (b"\x00" + bytes(8), 9)]  # one pair lost, one of no document
    held = BandPostings()
    held.add(b"".join(k for k, _ in damaged), [n for _, n in damaged])
    save_bands(tmp_path / "bands.bin", held, generation, store_id)
    problems = "\n".join(check(tmp_path).problems)
    assert "sketch band postings (bands.bin): 1 missing, 1 of no record; repair rebuilds them" in problems
    repair(tmp_path)
    assert check(tmp_path).ok
    with EmbeddedStore(tmp_path, algorithm=None) as store:
        assert not store.bands_rebuilt and band_docs(store) == docs


@given(fp=st.integers(0, 2**64 - 1), doc_id=st.text(min_size=1, max_size=12))
def test_fingerprint_keys_are_fixed_width_prefixes_of_their_documents(fp: int, doc_id: str) -> None:
    assert fp_key(fp, doc_id) == fp_key(fp) + doc_id.encode() and fp_key(fp)[4:] == fp.to_bytes(8, "big")


def _as_format_6(path: Path) -> None:
    """Add the key per (sketch band key, document) that store formats 6 and earlier kept in LevelDB
    (``s/b/<band: 9 bytes><doc id>``), and record format 6 (whose ``bands.bin`` held a filter)."""
    import plyvel

    from fingerprint_indexer.store.embedded import DocRecord, bands_bytes

    db = plyvel.DB(str(path / "leveldb"))
    try:
        algorithm = db.get(b"x/meta/algorithm")
        with db.write_batch() as wb:
            for key, raw in db.iterator(prefix=b"s/d/"):
                rec = DocRecord.from_bytes(key[4:].decode(), raw, algorithm.decode() if algorithm else None)
                if not rec.degenerate:
                    held = bands_bytes(rec.bands)
                    for i in range(0, len(held), 9):
                        wb.put(b"s/b/" + held[i : i + 9] + key[4:], b"")
            wb.put(b"s/meta/format", b"6")
    finally:
        db.close()
    (path / "bands.bin").unlink()


def _as_format_4(path: Path) -> None:
    """Rewrite a store's derived keys and cluster records as store format 4 wrote them (fingerprints, bands
    and digests as hex text, clusters as JSON), and record format 4."""
    import plyvel

    from fingerprint_indexer.store.embedded import Cluster

    db = plyvel.DB(str(path / "leveldb"))
    try:
        with db.write_batch() as wb:
            for key in db.iterator(prefix=b"s/f/", include_value=False):
                wb.delete(key)
                wb.put(b"s/f/%016x/" % int.from_bytes(key[4:12], "big") + key[12:], b"")
            for key in db.iterator(prefix=b"s/b/", include_value=False):
                wb.delete(key)
                wb.put(b"s/b/%x%s/" % (key[4], key[5:13].hex().encode()) + key[13:], b"")
            for key, raw in db.iterator(prefix=b"s/k/"):
                wb.put(key, Cluster.from_bytes(key[4:].decode(), raw).to_json())
            wb.put(b"s/meta/format", b"4")  # (format 4 kept the block indexes as format 5 did)
    finally:
        db.close()


def _as_index_entries_3(path: Path) -> None:
    """Rewrite a store's block indexes as store formats 4 and 5 kept them (index format ``entries-3``: two
    keys per entry, ``d/<entry id>`` -> fingerprint and number, ``n/<number>`` -> entry id) and its saved
    block tables as they saved them (no places), and record format 5."""
    import io
    import struct

    import numpy as np
    import plyvel

    from fingerprint_indexer.store.sidefile import load_side, save_side

    db = plyvel.DB(str(path / "leveldb"))
    try:
        generation, store_id = int(db.get(b"s/meta/generation")), db.get(b"s/meta/store_id")
        with db.write_batch() as wb:
            for ns in (b"x/", b"k/"):
                for key, raw in db.iterator(prefix=ns + b"d/"):
                    doc_id = key[4:].decode()
                    first, count = struct.unpack_from(">IH", raw)
                    wb.delete(key)
                    wb.delete(ns + b"n/" + first.to_bytes(4, "big"))
                    for n, fp in enumerate(struct.unpack_from(f">{count}Q", raw, 6)):
                        entry = doc_id if n == 0 else f"{doc_id}\x1f{n}"
                        wb.put(ns + b"d/" + entry.encode(), struct.pack(">QI", fp, first + n))
                        wb.put(ns + b"n/" + (first + n).to_bytes(4, "big"), entry.encode())
                wb.put(ns + b"meta/format", b"entries-3")
            wb.put(b"s/meta/format", b"5")
    finally:
        db.close()
    payload, _ = load_side(path / "blocks.bin", b"FPIBLOCKS2\n", generation, store_id)
    assert payload is not None
    with np.load(io.BytesIO(payload)) as z:
        old = {name: z[name] for name in z.files if not name.endswith(".places")}
    buf = io.BytesIO()
    np.savez(buf, **old)
    save_side(path / "blocks.bin", b"FPIBLOCKS1\n", buf.getvalue(), generation, store_id)


@pytest.mark.parametrize("old", ["4", "5", "6"])
def test_a_store_of_an_earlier_format_is_refused_and_store_repair_upgrades_it_in_place(tmp_path: Path,
                                                                                       old: str) -> None:
    from fingerprint_indexer.documents import Document
    from fingerprint_indexer.pipeline import Pipeline
    from fingerprint_indexer.store.errors import StoreMismatchError

    texts = [f"第{i}届国际会议在北京召开，来自{i % 7 + 3}个国家的代表出席会议并讲话。" for i in range(12)]
    texts += ["楼市政策大调整！又一炒房之路被堵死了", "楼市政策大调整！又一炒房之路被堵死了。"]
    with Pipeline(tmp_path) as p:
        list(p.process_many(Document(id=str(i), content=t) for i, t in enumerate(texts)))
        keys = {k: v for k, v in p.store.db.iterator(prefix=b"s/") if not k.startswith(b"s/meta/")}
        held = {ix: dict(ix_docs(getattr(p.store, ix))) for ix in ("index", "centres")}
        bands = band_docs(p.store)
    _as_format_6(tmp_path)
    if old in ("4", "5"):
        _as_index_entries_3(tmp_path)
    if old == "4":
        _as_format_4(tmp_path)
    with pytest.raises(StoreMismatchError, match=rf"store format '{old}', not '7'; upgrade it in place: "
                                                 r"'fingerprint-indexer store repair"):
        EmbeddedStore(tmp_path)
    report = repair(tmp_path)
    assert not report.lost and check(tmp_path).ok
    with EmbeddedStore(tmp_path) as store:  # the records, keys, clusters and indexes format 7 writes
        assert store.db.get(b"s/meta/format") == b"7" and band_docs(store) == bands
        assert {k: v for k, v in store.db.iterator(prefix=b"s/") if not k.startswith(b"s/meta/")} == keys
        assert {ix: dict(ix_docs(getattr(store, ix))) for ix in ("index", "centres")} == held
        assert store.db.get(b"x/meta/format") == store.db.get(b"k/meta/format") == b"entries-4"
    with Pipeline(tmp_path) as p:  # and it decides as before: every document is found again
        again = list(p.process_many(Document(id=f"x{i}", content=t) for i, t in enumerate(texts)))
    assert all(r.decision == "exact_duplicate" for r in again)


def band_docs(store: EmbeddedStore) -> set[tuple[bytes, str | None]]:
    """(band key, document id) of every band posting (a repair numbers the documents afresh)."""
    return {(key, store.index.id_at(n)) for key, n in store.bands.pairs()}


def ix_docs(ix: object) -> list[tuple[str, tuple[int, ...]]]:
    """(document, fingerprints) of each document a block index holds."""
    return [(doc_id, fps) for doc_id, _first, fps in ix.docs()]  # type: ignore[attr-defined]
