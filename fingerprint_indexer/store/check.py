"""`store check` and `store repair`: say precisely what of a store is damaged, rebuild what can be rebuilt.

Everything but the document records (``s/d/``) and cluster records (``s/k/``) is derived from them: the
fingerprint and digest keys, the counters, the block indexes of documents and of cluster centres, and
the Bloom filter. A check reads the store through a private copy (it never changes it); a repair first
lets LevelDB rebuild a lost manifest from the table files when needed, then rebuilds all derived data
from the records it can read, and lists what it could not recover.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import plyvel

from fingerprint_indexer.store.block_index import LevelDBIndex
from fingerprint_indexer.store.bloom import BloomState, bloom_header
from fingerprint_indexer.store.db import TABLE_SUFFIXES, describe, message
from fingerprint_indexer.store.embedded import (
    DIGEST_PREFIX,
    FORMAT,
    FP_PREFIX,
    OLD_BAND_PREFIX,
    Cluster,
    DocRecord,
    EmbeddedStore,
    digest_key,
    fp_key,
)
from fingerprint_indexer.store.errors import StoreDamagedError, StoreError
from fingerprint_indexer.store.near import entry_id

_DERIVED = (FP_PREFIX, DIGEST_PREFIX, OLD_BAND_PREFIX)


@dataclass
class Report:
    """What a check found (``problems`` empty: healthy) or what a repair did and could not do."""

    store: Path
    problems: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _records(db: plyvel.DB, version: str | None) -> tuple[dict[str, DocRecord], list[str]]:
    """Readable document records (checksums verified) and the ids whose record is unreadable; ``version``
    is the store's algorithm, which binary records leave out when it is theirs."""
    good: dict[str, DocRecord] = {}
    bad: list[str] = []
    for key, raw in db.iterator(prefix=b"s/d/", verify_checksums=True):
        doc_id = key[4:].decode("utf-8", "replace")
        try:
            good[doc_id] = DocRecord.from_bytes(doc_id, raw, version)
        except (ValueError, TypeError, KeyError):
            bad.append(doc_id)
    return good, bad


def _expected_index(records: dict[str, DocRecord]) -> dict[str, tuple[int, ...]]:
    return {entry_id(r.id, 0): tuple(r.fingerprints) for r in records.values() if not r.degenerate}


def _first_with_digest(records: dict[str, DocRecord]) -> dict[str, str]:
    first: dict[str, DocRecord] = {}
    for r in records.values():
        cur = first.get(r.content_digest)
        if cur is None or (r.time, r.id) < (cur.time, cur.id):
            first[r.content_digest] = r
    return {d: r.id for d, r in first.items()}


def _index_problems(ix: LevelDBIndex, expected: dict[str, tuple[int, ...]], name: str) -> list[str]:
    """What of an index differs from the fingerprints its records say it holds (by document)."""
    out = []
    got: dict[str, tuple[int, ...]] = {}
    unnumbered = 0
    for doc_id, first, fps in ix.docs():
        got[doc_id] = fps
        unnumbered += ix.id_at(first) != doc_id
    missing = [i for i, fps in expected.items() if got.get(i) != fps]
    extra = [i for i in got if i not in expected]
    if missing:
        out.append(f"{name}: {len(missing)} documents missing or wrong (first: {missing[0]!r})")
    if extra:
        out.append(f"{name}: {len(extra)} documents of no record (first: {extra[0]!r})")
    held = sum(map(len, got.values()))
    if len(ix) != held:
        out.append(f"{name}: count says {len(ix)} entries, holds {held}")
    if unnumbered:
        out.append(f"{name}: {unnumbered} documents whose number does not lead back to them")
    numbers = ix.numbers_held()
    if numbers > len(got):
        out.append(f"{name}: {numbers - len(got)} entry numbers of no document")
    return out


def check(directory: str | Path) -> Report:
    """Every damage found in the store at ``directory``; the store is not changed."""
    d = Path(directory)
    rep = Report(d)
    ldb = d / "leveldb"
    if not ldb.is_dir():
        rep.problems.append(f"{ldb} is missing: there is no store here to repair")
        return rep
    if not (ldb / "CURRENT").is_file():
        rep.problems.append(f"{ldb / 'CURRENT'} is missing: repair rebuilds it from the table files")
        return rep
    state, _, recorded = bloom_header(d / "bloom.bin")
    if state is BloomState.NOT_A_FILE:
        rep.problems.append(f"{d / 'bloom.bin'} is not a file: move it away, repair then rebuilds it")
        return rep
    try:
        store = EmbeddedStore(d, readonly=True, accept_lost_writes=True)
    except StoreDamagedError as exc:
        rep.problems.append(f"{exc}: repair lets LevelDB salvage the table files")
        return rep
    try:
        db = store.db
        try:
            records, bad = _records(db, store.algorithm)
            for _ in db.iterator(verify_checksums=True, include_value=False):
                pass
        except plyvel.Error as exc:
            rep.problems.append(f"table data is damaged ({message(exc)}): "
                                "repair salvages what LevelDB can read")
            return rep
        rep.facts.append(f"{len(records)} documents, generation {store.generation}, "
                         f"algorithm {store.algorithm}, layout {store.layout}")
        if bad:
            rep.problems.append(f"{len(bad)} document records cannot be read (first: {bad[0]!r}): "
                                "repair drops them; their input must be run again")
        if store.bloom_state is BloomState.AHEAD:
            rep.problems.append(f"LevelDB lost committed writes: the Bloom filter was saved at generation "
                                f"{recorded}, LevelDB holds {store.generation}; documents committed after it "
                                "are gone (repair accepts the loss; run their input again)")
        elif store.bloom_state is not BloomState.CURRENT:
            rep.facts.append(f"Bloom filter {store.bloom_state.value}: rebuilt at the next open")
        if store.n_docs != len(records) + len(bad):
            held = len(records) + len(bad)
            rep.problems.append(f"document counter says {store.n_docs}, records hold {held}")
        clusters = {k[4:].decode(): v for k, v in db.iterator(prefix=b"s/k/")}
        if store.n_clusters != len(clusters):
            rep.problems.append(f"cluster counter says {store.n_clusters}, records hold {len(clusters)}")
        digests = {k[4:].decode(): v.decode() for k, v in db.iterator(prefix=DIGEST_PREFIX)}
        wrong = [dg for dg, i in digests.items() if i not in records or records[i].content_digest != dg]
        unkeyed = {r.content_digest for r in records.values()} - digests.keys()
        if wrong or unkeyed:
            rep.problems.append(f"content digest keys: {len(wrong)} point at no such document, "
                                f"{len(unkeyed)} digests have no key")
        fp_keys = set(db.iterator(prefix=FP_PREFIX, include_value=False))
        want_fp = {fp_key(r.fingerprint, r.id) for r in records.values()}
        if fp_keys != want_fp:
            rep.problems.append(f"fingerprint keys: {len(want_fp - fp_keys)} missing, "
                                f"{len(fp_keys - want_fp)} of no record")
        if not store.bands_rebuilt:  # else rebuilt from the records at this open
            held_bands = store.bands.pairs()
            want_bands = store.rebuild_bands().pairs()  # what the records and the block index say
            if held_bands != want_bands:
                rep.problems.append(f"sketch band postings ({store.bands_path.name}): "
                                    f"{len(want_bands - held_bands)} missing, "
                                    f"{len(held_bands - want_bands)} of no record; repair rebuilds them")
        rep.problems += _index_problems(store.index, _expected_index(records), "block index")
        centres: dict[str, tuple[int, ...]] = {cid: (Cluster.from_bytes(cid, raw).centre,)
                                               for cid, raw in clusters.items()}
        rep.problems += _index_problems(store.centres, centres, "cluster centre index")
    finally:
        store.close()
    return rep


def _drop_prefix(db: plyvel.DB, prefix: bytes) -> None:
    with db.write_batch(transaction=True) as wb:
        for key in db.iterator(prefix=prefix, include_value=False):
            wb.delete(key)


def _salvage(store: Path, ldb: Path) -> Path:
    """Let LevelDB rebuild its manifest on a copy (table files linked, the rest copied), then swap it in.

    LevelDB's repair moves every write-ahead log aside once it has read it, even when writing its table
    failed (a full disk): run in place, a failed repair would lose the log's documents. Returns where the
    original folder is kept.
    """
    work = ldb.with_name(ldb.name + ".repairing")
    shutil.rmtree(work, ignore_errors=True)
    try:
        work.mkdir()
        for f in ldb.iterdir():
            if f.name == "LOCK" or not f.is_file():
                continue
            if f.name.endswith(TABLE_SUFFIXES):
                os.link(f, work / f.name)  # LevelDB never rewrites a table file in place
            else:
                shutil.copy2(f, work / f.name)
        plyvel.repair_db(str(work))
    except (plyvel.Error, OSError) as exc:
        shutil.rmtree(work, ignore_errors=True)
        raise describe(ldb, exc, store) from None
    kept = ldb.with_name(f"{ldb.name}.before-repair-{time.strftime('%Y%m%dT%H%M%S')}")
    os.replace(ldb, kept)
    os.replace(work, ldb)
    return kept


def repair(directory: str | Path) -> Report:
    """Rebuild what can be rebuilt from the document and cluster records; list what cannot be."""
    d = Path(directory)
    rep = Report(d)
    ldb = d / "leveldb"
    if not ldb.is_dir():
        raise StoreError(f"no store at {d}: {ldb} is missing, nothing to repair")
    if (d / "bloom.bin").exists() and not (d / "bloom.bin").is_file():
        raise StoreDamagedError(f"{d / 'bloom.bin'} is not a file: move it away, then run repair again")
    state, _, recorded = bloom_header(d / "bloom.bin")
    salvage = not (ldb / "CURRENT").is_file()
    if not salvage:
        try:
            probe = plyvel.DB(str(ldb), create_if_missing=False)
            try:
                for _ in probe.iterator(verify_checksums=True):
                    pass
            finally:
                probe.close()
        except plyvel.CorruptionError:
            salvage = True
        except plyvel.Error as exc:
            raise describe(ldb, exc, d) from None
    if salvage:
        kept = _salvage(d, ldb)
        rep.facts.append("LevelDB rebuilt its manifest from the table files and logs it could read; the "
                         f"folder as it was is kept as {kept.name} (remove it once the store checks healthy)")
    with EmbeddedStore(d, accept_lost_writes=True, upgrade=True) as store:
        db = store.db
        records, bad = _records(db, store.algorithm)
        before = store.n_docs
        with db.write_batch(transaction=True, sync=True) as wb:
            for doc_id in bad:
                wb.delete(b"s/d/" + doc_id.encode())
        rep.lost += [f"record of {i!r} was unreadable and is dropped" for i in bad]
        for prefix in _DERIVED:
            _drop_prefix(db, prefix)
        for ix in (store.index, store.centres):
            ix.clear()
        clusters = {c.id: c for c in (Cluster.from_bytes(k[4:].decode(), v)
                                      for k, v in db.iterator(prefix=b"s/k/"))}
        with db.write_batch(transaction=True, sync=True) as wb:
            for r in records.values():
                wb.put(fp_key(r.fingerprint, r.id), b"")
            for dg, i in _first_with_digest(records).items():
                wb.put(digest_key(dg), i.encode())
            for c in clusters.values():  # in the current form (a store of an earlier format kept JSON)
                wb.put(b"s/k/" + c.id.encode(), c.to_bytes())
            wb.put(b"s/meta/docs", str(len(records)).encode())
            wb.put(b"s/meta/clusters", str(len(clusters)).encode())
        store.index = LevelDBIndex(db=db, prefix=b"x/", algorithm=store.algorithm)
        store.index.add_docs((i, fps, None) for i, fps in _expected_index(records).items())
        store.centres = LevelDBIndex(db=db, prefix=b"k/", algorithm=store.algorithm)
        store.centres.add_many((c.id, c.centre, None) for c in clusters.values())
        store.n_docs, store.n_clusters = len(records), len(clusters)
        db.put(b"s/meta/format", FORMAT, sync=True)  # one synced write: the rebuilt keys are durable
        store.bloom = store.rebuild_bloom()
        store.bands = store.rebuild_bands()
        rep.facts.append(f"rebuilt from {len(records)} document and {len(clusters)} cluster records: "
                         "fingerprint and digest keys, counters, block index, centre index, "
                         "Bloom filter, band postings")
        if state is BloomState.CURRENT and recorded > store.generation:
            rep.lost.append(f"documents committed between generation {store.generation} and {recorded} "
                            "(lost from LevelDB's write-ahead log): run their input again")
        if before > len(records) + len(bad):
            rep.lost.append(f"{before - len(records) - len(bad)} documents the store had counted are not in "
                            "it any more: run their input again")
    return rep

