"""The embedded store: one LevelDB directory with exact records, block index and cluster centres.

Everything about a document is written in one LevelDB write batch (exact keys, block-index keys, cluster
record, generation counter), so a batch is all-or-nothing even under SIGKILL. Key prefixes::

    s/d/<doc id>              -> record (DocRecord.to_bytes: fingerprints, digests, sketch, decision, time)
    s/f/<fingerprint: 8 bytes><doc id>  -> b""    (fingerprint -> doc ids; :func:`fp_key`)
    s/c/<content digest>                -> doc id (first document with that content; :func:`digest_key`)
    s/k/<cluster id>          -> cluster record (Cluster.to_bytes: centre fingerprint, size, founder)
    s/meta/...                -> format, generation, counts, copy-marks setting (winnow: tag or "off"),
                                 the inputs whose documents were decided into it (sources: JSON paths)
    x/...                     -> block index of non-degenerate documents  (LevelDBIndex): a document
                                 under ``entry_id(<doc id>, 0)``, its lead and chunk fingerprints matched
                                 as entries ``<doc id>\x1f<n>`` (an id holding \x1e or \x1f is escaped:
                                 see :func:`entry_id`)
    k/...                     -> block index of cluster centres           (LevelDBIndex)
    w/d/<doc id>              -> copy marks (fingerprint.winnow.Marks bytes)     only in a store whose
    w/h/<mark hex>/<doc id>   -> cluster id (mark -> docs: partial-copy search)  s/meta/winnow names them

The documents under each sketch band key are held in memory, by the first number of their block-index
entries (:mod:`fingerprint_indexer.store.bands`), saved beside the store (``bands.bin``) and rebuilt
from the records whenever that file is not current: LevelDB keeps no band keys.

A scalable Bloom filter of content digests, fingerprints, document ids and cluster ids (``bloom.bin``
beside the ``leveldb`` directory) answers "certainly absent" without touching LevelDB. A batch asks it
once, before deciding, whether its documents' records and cluster ids are new: each LevelDB read gives
up the GIL, which a busy thread beside the decisions (a crawler's reactor, a service's event loop) then
takes. The filter is rebuilt from LevelDB whenever its file is missing, corrupt, of an older format,
older than the store or of another store (the store id ``s/meta/store_id`` is written at creation and
into the file). A file *newer* than the store means LevelDB lost committed writes (a truncated
write-ahead log): the store refuses to open until ``store repair`` accepts the loss. LevelDB stays
exact; the filter only says "maybe".
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import plyvel

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.fingerprint.hamming import MASK64
from fingerprint_indexer.fingerprint.native import record_decoder, record_encoder
from fingerprint_indexer.fingerprint.sketch import BANDS, MAX_BAND_READ
from fingerprint_indexer.fingerprint.winnow import Marks
from fingerprint_indexer.index.memory import KeyPostings
from fingerprint_indexer.records.match import Match
from fingerprint_indexer.records.neighbour import Neighbour, Neighbours, split_neighbours
from fingerprint_indexer.records.record import (
    Cluster,
    DocRecord,
    new_cluster_id,
    record_bytes,
    record_from_bytes,
)
from fingerprint_indexer.store.bands import BandPostings, load_bands, save_bands
from fingerprint_indexer.store.block_index import LevelDBIndex, load_tables, save_tables
from fingerprint_indexer.store.bloom import (
    BloomState,
    bloom_absent,
    bloom_add_many,
    bloom_has,
    bloom_header,
    compiled_test,
    load_bloom,
    new_bloom,
    save_bloom,
)
from fingerprint_indexer.store.db import CACHE_BYTES, describe, open_db, open_snapshot, writable
from fingerprint_indexer.store.errors import (
    StoreDamagedError,
    StoreMismatchError,
    StoreReadOnlyError,
    StoreWriteError,
    rebuild_error,
)
from fingerprint_indexer.store.near import LookAhead, doc_of, entry_id, judged_near, listed, verified_near
from fingerprint_indexer.verification import check_many

# 7: sketch band postings in memory (bands.bin), no band keys in LevelDB; 6: a document's block-index
# entries under two keys, not two each; 5: raw fingerprints, digests and bands
# in keys, binary cluster records; 4: block tables in memory (blocks.bin); 3 kept one key per (bucket,
# entry); 2 packed buckets
FORMAT = b"7"
#: formats that `store repair` brings to FORMAT in place (derived keys rebuilt)
UPGRADABLE = (b"4", b"5", b"6")
MARKS_OFF = b"off"  # s/meta/winnow of a store that keeps no copy marks


#: Prefixes of the keys derived from the document records (``store repair`` rebuilds them); stores of
#: format 6 and earlier also kept a key per (sketch band key, document) under ``s/b/``.
FP_PREFIX, DIGEST_PREFIX, OLD_BAND_PREFIX = b"s/f/", b"s/c/", b"s/b/"
RECORD_PREFIX, CLUSTER_PREFIX = b"s/d/", b"s/k/"


def fp_key(fp: int, doc_id: str = "") -> bytes:
    """LevelDB key of one document under its fingerprint (8 bytes, big-endian), or with no ``doc_id`` the
    prefix of all the documents with that fingerprint."""
    return FP_PREFIX + (fp & MASK64).to_bytes(8, "big") + doc_id.encode()


def digest_key(digest: str) -> bytes:
    """LevelDB key of a content digest (as text: a store's digests are whatever its writer computed)."""
    return DIGEST_PREFIX + digest.encode()


def band_bytes(band: str) -> bytes:
    """A sketch band key (see :func:`~fingerprint_indexer.fingerprint.sketch.band_keys`) as the 9 bytes
    the store keeps: its band number and its hash."""
    return bands_bytes([band])


# a band key is its band number in one hex digit, then 16 hex digits of its hash: as 9 bytes, the number
# is the first byte, so a "0" before each key turns the keys' hex into theirs
if BANDS > 16:
    raise ImportError("band numbers above 15 take two hex digits: bands_bytes cannot decode their keys")


def bands_bytes(bands: Sequence[str]) -> bytes:
    """:func:`band_bytes` of each key, one after the other in one buffer (decoded together)."""
    return bytes.fromhex("0" + "0".join(bands)) if bands else b""


def _lost_writes(directory: Path, stored: int, recorded: int) -> StoreDamagedError:
    return StoreDamagedError(
        f"store {directory} lost committed writes: its Bloom filter was saved at generation {recorded}, "
        f"LevelDB holds generation {stored} (a truncated write-ahead log?); documents committed after "
        f"generation {stored} are gone. 'fingerprint-indexer store repair {directory}' accepts the loss; "
        "then run their input again")


class EmbeddedStore:
    """Open a store directory (created if missing or empty); one process at a time (LevelDB's lock).

    The folder must be writable, checked before any work; ``readonly`` opens a store that cannot be
    written for reading only, through a private copy of LevelDB's small files (nothing is ever saved).
    ``accept_lost_writes`` opens a store whose Bloom filter is newer than LevelDB, and ``upgrade`` one of
    an :data:`UPGRADABLE` format, whose derived keys the caller rebuilds (both for ``store repair``).
    """

    def __init__(
        self,
        directory: str | Path,
        layout: BlockLayout | None = None,
        algorithm: str | None = None,
        cache_bytes: int = CACHE_BYTES,
        readonly: bool = False,
        accept_lost_writes: bool = False,
        upgrade: bool = False,
    ) -> None:
        self.directory = Path(directory)
        self.readonly = readonly
        self.bloom_path = self.directory / "bloom.bin"
        self.tables_path = self.directory / "blocks.bin"
        self.bands_path = self.directory / "bands.bin"
        self.side_file_error: str | None = None  # a side file (Bloom filter, block tables) not saved
        self._snapshot: Path | None = None
        self._decode = record_decoder()  # the compiled record reader, resolved once
        ldb = self.directory / "leveldb"
        if self.bloom_path.exists() and not self.bloom_path.is_file():
            raise StoreDamagedError(f"store {self.directory}: {self.bloom_path} is not a file; move it away "
                                    "(the Bloom filter is rebuilt from LevelDB)")
        if self.bloom_path.exists() and not ldb.exists():
            raise StoreDamagedError(f"store {self.directory} is damaged: {ldb} is missing")
        if readonly:
            self.db, self._snapshot = open_snapshot(ldb, cache_bytes, store=self.directory)
        else:
            if self.directory.exists() and not writable(self.directory):
                raise StoreReadOnlyError(f"store {self.directory} is read-only (its folder cannot be written)"
                                         "; nothing was read or decided")
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise describe(self.directory, exc) from None
            self.db = open_db(ldb, cache_bytes=cache_bytes, store=self.directory)
        try:
            self._open(layout, algorithm, accept_lost_writes, upgrade)
        except plyvel.Error as exc:
            self._release()
            raise describe(ldb, exc, self.directory) from None
        except BaseException:
            self._release()
            raise

    def _open(self, layout: BlockLayout | None, algorithm: str | None, accept_lost_writes: bool,
              upgrade: bool) -> None:  # fmt: skip
        fmt = self.db.get(b"s/meta/format")
        if fmt in UPGRADABLE and not upgrade:
            raise StoreMismatchError(
                f"store {self.directory} holds data of store format {fmt.decode()!r}, not "
                f"{FORMAT.decode()!r}; upgrade it in place: "
                f"'fingerprint-indexer store repair {self.directory}'")
        if fmt is not None and fmt != FORMAT and fmt not in UPGRADABLE:
            raise rebuild_error(f"store {self.directory}",
                                f"data of store format {fmt.decode()!r}, not {FORMAT.decode()!r}")
        saved_id = self.db.get(b"s/meta/store_id")
        saved = load_tables(self.tables_path, int(self.db.get(b"s/meta/generation") or b"0"),
                            saved_id) if saved_id else {}
        self.index = LevelDBIndex(db=self.db, prefix=b"x/", layout=layout, algorithm=algorithm,
                                  tables=saved.get("x"), upgrade=upgrade)
        self.centres = LevelDBIndex(db=self.db, prefix=b"k/", layout=self.index.layout,
                                    algorithm=algorithm, tables=saved.get("k"), upgrade=upgrade)
        self.layout = self.index.layout
        self.algorithm = self.index.algorithm
        if fmt is None:
            self.db.put(b"s/meta/format", FORMAT, sync=True)
        store_id = self.db.get(b"s/meta/store_id")
        if store_id is None and not self.readonly:  # a new store, or one made before stores had ids
            store_id = os.urandom(16)
            self.db.put(b"s/meta/store_id", store_id, sync=True)
        self.store_id = store_id or b""
        self.generation = int(self.db.get(b"s/meta/generation") or b"0")
        self.n_docs = int(self.db.get(b"s/meta/docs") or b"0")
        self.n_clusters = int(self.db.get(b"s/meta/clusters") or b"0")
        self.policies: list[str] = json.loads(self.db.get(b"s/meta/policies") or b"[]")
        loaded, self.bloom_state = load_bloom(self.bloom_path, self.generation, self.store_id)
        if self.bloom_state is BloomState.AHEAD and not accept_lost_writes:
            raise _lost_writes(self.directory, self.generation, bloom_header(self.bloom_path)[2])
        self.bloom_rebuilt = loaded is None
        self.bloom = loaded if loaded is not None else self.rebuild_bloom()
        loaded_bands = load_bands(self.bands_path, self.generation, self.store_id)
        self.bands_rebuilt = loaded_bands is None
        if loaded_bands is not None:
            self.bands = loaded_bands
        elif upgrade:  # for repair, which rebuilds them once the index is rebuilt
            self.bands = BandPostings()
        else:
            self.bands = self.rebuild_bands()

    def _release(self) -> None:
        if not self.db.closed:
            self.db.close()
        if self._snapshot is not None:
            shutil.rmtree(self._snapshot, ignore_errors=True)
            self._snapshot = None

    # ----------------------------------------------------------------- Bloom
    @property
    def bloom(self) -> Any:
        """The Bloom filter of content digests and fingerprints (pybloom-live's ``ScalableBloomFilter``)."""
        return self._bloom

    @bloom.setter
    def bloom(self, bloom: Any) -> None:
        self._bloom = bloom
        self._bloom_test = compiled_test(bloom)  # resolved once, not per item

    def _bloom_items(self) -> list[str]:
        items = [f"c:{k[4:].decode()}" for k in self.db.iterator(prefix=DIGEST_PREFIX, include_value=False)]
        items += [f"f:{k[4:12].hex()}" for k in self.db.iterator(prefix=FP_PREFIX, include_value=False)]
        for prefix in (RECORD_PREFIX, CLUSTER_PREFIX):  # ids of records and of clusters: one set of names
            items += [f"i:{k[4:].decode()}" for k in self.db.iterator(prefix=prefix, include_value=False)]
        return list(dict.fromkeys(items))

    def rebuild_bloom(self) -> Any:
        """A Bloom filter of every content digest, fingerprint, document id and cluster id LevelDB holds
        (saved unless read-only)."""
        items = self._bloom_items()
        bloom = new_bloom(items, capacity=max(100_000, 2 * len(items)))
        if not self.readonly:
            self._save_bloom(bloom)
        return bloom

    def rebuild_bands(self) -> BandPostings:
        """The band postings of every document in the block index, read from its record (saved at
        close), added a chunk of documents at a time."""
        bands = BandPostings()
        raw: list[bytes] = []
        nums: list[int] = []
        for eid, first, _fps in self.index.docs():
            try:
                rec = self.record(doc_of(eid))
            except StoreDamagedError:  # `store check` names it, `store repair` drops it
                continue
            if rec is None:  # an index entry without a record: `store check` names it
                continue
            keys = rec.bands
            raw.append(bands_bytes(keys))
            nums += [first] * len(keys)
            if len(nums) >= 1 << 16:
                bands.add(b"".join(raw), nums)
                raw, nums = [], []
        bands.add(b"".join(raw), nums)
        return bands

    def _save_side_file(self, path: Path, save: Callable[[], None]) -> None:
        """Run ``save`` (it writes ``path``); a side file that cannot be saved (disk full) costs only a
        rebuild from LevelDB at the next open, so it is noted in ``side_file_error`` rather than raised
        over whatever is being reported."""
        try:
            save()
        except OSError as exc:
            self.side_file_error = (f"{path} could not be saved ({exc.strerror or exc}); "
                                    "it is rebuilt from LevelDB at the next open")

    def _save_bloom(self, bloom: Any) -> None:
        self._save_side_file(self.bloom_path,
                             lambda: save_bloom(self.bloom_path, bloom, self.generation, self.store_id))

    # ----------------------------------------------------------------- reads
    def record(self, doc_id: str) -> DocRecord | None:
        # checksums verified: a damaged block is an error here, never a record silently missing
        raw = self.db.get(RECORD_PREFIX + doc_id.encode(), verify_checksums=True)
        if raw is None:
            return None
        try:
            return record_from_bytes(doc_id, raw, self.algorithm, self._decode)
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreDamagedError(f"store {self.directory} is damaged: the record of {doc_id!r} cannot be "
                                    f"read ({exc}); see 'fingerprint-indexer store check {self.directory}'"
                                    ) from None

    def doc_with_digest(self, digest: str) -> str | None:
        """The first stored document with this content digest (Bloom filter first, LevelDB decides)."""
        if not bloom_has(self.bloom, f"c:{digest}", self._bloom_test):
            return None
        raw = self.db.get(digest_key(digest))
        return None if raw is None else raw.decode()

    def never_stored(self, ids: Iterable[str]) -> set[str]:
        """Of ``ids``, those the Bloom filter says were never the id of a stored record or cluster (a
        cluster is named after its founder, so the two share one entry): certainly absent, answered
        without reading LevelDB."""
        ids = list(ids)
        absent = bloom_absent(self.bloom, [f"i:{i}" for i in ids], self._bloom_test)
        return {i for i, a in zip(ids, absent, strict=True) if a}

    def ids_with_fingerprint(self, fp: int) -> list[str]:
        if not bloom_has(self.bloom, f"f:{fp:016x}", self._bloom_test):
            return []
        pfx = fp_key(fp)
        return [k[len(pfx) :].decode() for k in self.db.iterator(prefix=pfx, include_value=False)]

    def cluster(self, cluster_id: str) -> Cluster | None:
        raw = self.db.get(CLUSTER_PREFIX + cluster_id.encode())
        return None if raw is None else Cluster.from_bytes(cluster_id, raw)

    def marks(self, doc_id: str) -> bytes | None:
        """A document's winnowed copy marks (None when it has none stored)."""
        return self.db.get(b"w/d/" + doc_id.encode())

    @property
    def marks_tag(self) -> str | None:
        """The winnowing parameters this store keeps copy marks of (None: it keeps none)."""
        raw = self.db.get(b"s/meta/winnow")
        return None if raw in (None, MARKS_OFF) else raw.decode()

    @property
    def marks_recorded(self) -> bool:
        """Whether the store records its copy-marks setting (a new store, or one made before the
        setting existed, does not)."""
        return self.db.get(b"s/meta/winnow") is not None

    def record_marks(self, tag: str | None) -> None:
        """Record that this store keeps copy marks of ``tag`` (None: none); every later write follows."""
        self.db.put(b"s/meta/winnow", MARKS_OFF if tag is None else tag.encode(), sync=True)

    def mark_postings(self, mark: int, limit: int) -> list[tuple[str, str]]:
        """(document, its cluster when stored) of at most ``limit`` documents holding copy mark ``mark``."""
        pfx = b"w/h/%016x/" % mark
        out = []
        for key, value in self.db.iterator(prefix=pfx):
            doc = key[len(pfx) :].decode()
            out.append((doc, value.decode() or doc))
            if len(out) >= limit:
                break
        return out

    def near(self, fp: int, k: int) -> list[Match]:
        """Raw block-index entries within ``k`` (entry ids: see :func:`doc_of`)."""
        return self.index.query(fp, k)

    def band_scan(self, band: str) -> list[str]:
        """The documents stored under a sketch band key, in id order; when more than
        :data:`MAX_BAND_READ` hold it (a stock phrase), :data:`MAX_BAND_READ` + 1 of them."""
        return self.band_scan_many([band])[0]

    def band_scan_many(self, bands: Sequence[str]) -> list[list[str]]:
        """:meth:`band_scan` of each key, all looked up at once (an id read per document found)."""
        return listed(self.band_scan_found(bands), len(bands))

    def band_scan_found(self, bands: Sequence[str]) -> dict[int, list[str]]:
        """:meth:`band_scan_many` of the keys that some document holds, by their place in ``bands``."""
        ids: dict[int, str] = {}  # first entry number -> doc id
        out: dict[int, list[str]] = {}
        for i, nums in enumerate(self.bands.find(bands_bytes(bands), MAX_BAND_READ + 1)):
            if not nums:
                continue
            for n in nums:
                if n not in ids:
                    eid = self.index.id_at(n)
                    if eid is None:
                        raise StoreDamagedError(f"store {self.directory} is damaged: a sketch band names "
                                                f"entry number {n}, which leads to no document; see "
                                                f"'fingerprint-indexer store check {self.directory}'")
                    ids[n] = doc_of(eid)
            out[i] = sorted(ids[n] for n in nums)
        return out

    def band_docs(self, band: str) -> list[str]:
        """Documents under a sketch band key; none when more than :data:`MAX_BAND_READ` hold it."""
        return self.band_docs_many([band])[0]

    def band_docs_many(self, bands: Sequence[str]) -> list[list[str]]:
        """:meth:`band_docs` of each key (one LevelDB iterator)."""
        return [found if len(found) <= MAX_BAND_READ else [] for found in self.band_scan_many(bands)]

    def near_docs(self, ev: Evidence, k: int, exclude: str | None = None) -> list[Match]:
        """Verified near-duplicate documents of a document with this evidence, nearest first."""
        return verified_near(ev, k, self.index.query_many, self.record, exclude, self.band_docs_many)

    def neighbours(self, ev: Evidence, digest: str, k: int, exclude: str | None = None) -> Neighbours:
        """Stored near-duplicates with the rule's verdict, nearest first, and the candidates the rule
        turned down, each with its reason: block-index candidates, exact copies (same content digest;
        always accepted), and documents with the same document fingerprint (degenerate ones are in no
        block bucket).

        A shared document fingerprint alone proves little: under ``tf^3`` weighting one dominant term
        (a person's name) can decide all 64 bits, so different articles about that person collide.
        """
        judged = {r.id: Neighbour.judged(r, v)
                  for r, v in judged_near(ev, k, self.index.query_many, self.record, exclude,
                                                   self.band_docs_many)}
        exact = self.doc_with_digest(digest)
        extra = {exact} if exact is not None else set()
        extra |= set(self.ids_with_fingerprint(ev.fingerprints[0]))
        extra -= {exclude or "", *judged}
        recs = [r for r in map(self.record, sorted(extra)) if r is not None]
        for rec, v in zip(recs, check_many(ev, [r.evidence for r in recs], k), strict=True):
            judged[rec.id] = Neighbour.judged(rec, v, exact=rec.id == exact)
        return split_neighbours(judged.values())

    def note_policy(self, tag: str) -> None:
        """Record that decisions of the verification policy ``tag`` are written to this store: the store
        names every policy its decisions were made by, oldest first."""
        if tag not in self.policies and not self.readonly:
            self.policies.append(tag)
            self.db.put(b"s/meta/policies", json.dumps(self.policies).encode(), sync=True)

    @property
    def sources(self) -> list[str]:
        """The input files whose documents were decided into this store (absolute paths, oldest first):
        a store keeps no texts, so a reader that shows them (``explore``) reads them from there."""
        raw = self.db.get(b"s/meta/sources")
        return list(json.loads(raw)) if raw else []

    def note_sources(self, paths: Iterable[str]) -> None:
        """Record input files (absolute paths) whose documents are being decided into this store."""
        known = self.sources
        added = [p for p in paths if p not in known]
        if added and not self.readonly:
            self.db.put(b"s/meta/sources", json.dumps(known + added, ensure_ascii=False).encode(), sync=True)

    def batch(self) -> StoreBatch:
        return StoreBatch(self)

    def delete(self, doc_id: str) -> bool:
        """Remove a document's records and index keys (its cluster and centre stay)."""
        tx = self.batch()
        found = tx.remove_doc(doc_id)
        tx.commit()
        return found

    def _save_tables(self) -> None:
        tables = {"x": self.index.table_arrays(), "k": self.centres.table_arrays()}
        self._save_side_file(self.tables_path,
                             lambda: save_tables(self.tables_path, tables, self.generation, self.store_id))

    def close(self) -> None:
        """Save the Bloom filter, the band postings and the block tables for the current generation and
        release the LevelDB lock."""
        if self.db.closed:
            return
        try:
            if not self.readonly:
                self._save_bloom(self.bloom)
                self._save_tables()
                self._save_side_file(self.bands_path, lambda: save_bands(self.bands_path, self.bands,
                                                                         self.generation, self.store_id))
        finally:
            self._release()

    def __enter__(self) -> EmbeddedStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class StoreBatch:
    """Staged changes that read their own writes and commit in one atomic LevelDB batch."""

    def __init__(self, store: EmbeddedStore) -> None:
        self.store = store
        self.wb = store.db.write_batch(transaction=True, sync=True)
        self.ix = store.index.writes(self.wb, queried=True)  # answers for this batch's own entries too
        self.cx = store.centres.writes(self.wb, queried=True)
        self._records: dict[str, DocRecord | None] = {}
        self._digests: dict[str, str | None] = {}  # written by this batch
        self._digests_read: dict[str, str | None] = {}  # committed answers read by this batch
        self._clusters: dict[str, Cluster] = {}
        # what the store held before this batch, looked up for the whole batch at once (look_ahead)
        self._near_ahead: dict[int, LookAhead[int, list[Match]]] = {}
        self._centres_ahead: dict[int, LookAhead[int, list[Match]]] = {}
        self._bands_ahead: LookAhead[str, list[str]] = LookAhead(store.band_scan_found, [])
        self._read: dict[str, DocRecord | None] = {}  # committed records read by this batch
        self._no_cluster: set[str] = set()  # cluster ids never stored before this batch (look_ahead)
        self._masked: set[str] = set()
        self._staged_bands = KeyPostings()  # band key -> documents staged here
        self._bloom_items: list[str] = []
        self._band_adds: list[tuple[bytes, int, int]] = []  # (a document's band keys, first number, count)
        self._band_removed: list[int] = []  # first numbers of documents removed here
        self._docs_delta = 0
        self._clusters_delta = 0
        self._marks: dict[str, bytes | None] = {}
        self._encode = record_encoder()  # the compiled record encoder, resolved once per batch

    # ------------------------------------------------------- reads (own writes first)
    def record(self, doc_id: str) -> DocRecord | None:
        """This batch's record of ``doc_id``, else the committed one, decoded once per batch (a record
        changed here is rewritten through :meth:`update_record`, which this batch reads first)."""
        if doc_id in self._records:
            return self._records[doc_id]
        if doc_id not in self._read:
            self._read[doc_id] = self.store.record(doc_id)
        return self._read[doc_id]

    def doc_with_digest(self, digest: str) -> str | None:
        """This batch's document with ``digest``, else the committed one (asked once per batch: the rules
        ask before deciding and the write asks again)."""
        if digest in self._digests:
            return self._digests[digest]
        if digest not in self._digests_read:
            self._digests_read[digest] = self.store.doc_with_digest(digest)
        return self._digests_read[digest]

    def cluster(self, cluster_id: str) -> Cluster | None:
        got = self._clusters.get(cluster_id)
        if got is not None or cluster_id in self._no_cluster:
            return got
        return self.store.cluster(cluster_id)

    def look_ahead(self, evs: Iterable[Evidence], k: int, ids: Iterable[str] = ()) -> None:
        """Look up the committed block index, cluster centres and band keys of the documents this batch
        is about to decide, all at once: the store's committed state does not change before
        :meth:`commit`, so the answers hold for every document of the batch (this batch's own writes are
        looked up document by document). ``ids``: the documents' ids, whose records and clusters (a
        cluster is named after its founder) the Bloom filter shows absent without reading LevelDB."""
        ids = list(ids)
        if ids:
            new = self.store.never_stored(ids)
            for doc_id in new:
                self._read.setdefault(doc_id, None)
            self._no_cluster |= new
        evs = list(evs)
        self._committed_near(k).ahead(itertools.chain.from_iterable(ev.fingerprints for ev in evs))
        self._committed_centres(k).ahead(ev.fingerprints[0] for ev in evs if ev.fingerprints)
        self._bands_ahead.ahead(itertools.chain.from_iterable(ev.band_keys for ev in evs))

    # The look-ups hold the store's indexes, never this batch: a batch that referred to itself would be
    # freed only by the cycle collector, which would traverse all it holds (records, answers) to do so.
    def _committed_near(self, k: int) -> LookAhead[int, list[Match]]:
        if k not in self._near_ahead:
            self._near_ahead[k] = LookAhead(functools.partial(self.store.index.query_found, k=k), [])
        return self._near_ahead[k]

    def _committed_centres(self, k: int) -> LookAhead[int, list[Match]]:
        if k not in self._centres_ahead:
            self._centres_ahead[k] = LookAhead(functools.partial(self.store.centres.query_found, k=k), [])
        return self._centres_ahead[k]

    def near(self, fp: int, k: int) -> list[Match]:
        """Indexed documents within ``k`` (see :meth:`near_many`)."""
        return self.near_many([fp], k)[0]

    def near_many(self, fps: Sequence[int], k: int) -> list[list[Match]]:
        """Indexed documents within ``k`` of each fingerprint: the committed index minus ids changed here,
        plus staged ones; each index asked once for all the fingerprints."""
        done = self._committed_near(k)(fps)
        staged = self.ix.query_many(fps, k)
        masked = self._masked
        out = []
        for q, hits in enumerate(done):
            if masked:
                hits = [m for m in hits if doc_of(m.doc_id) not in masked]
            if staged[q]:
                hits = sorted(hits + staged[q], key=lambda m: (m.distance, m.doc_id))
            out.append(list(hits))
        return out

    def band_docs(self, band: str) -> list[str]:
        """Documents under a sketch band key: committed ones minus ids changed here, plus staged ones."""
        return self.band_docs_many([band])[0]

    def band_docs_many(self, bands: Sequence[str]) -> list[list[str]]:
        """:meth:`band_docs` of each key; none under a key more than :data:`MAX_BAND_READ` hold."""
        masked, staged = self._masked, self._staged_bands
        out = []
        for band, done in zip(bands, self._bands_ahead(bands), strict=True):
            found = [i for i in done if i not in masked] if masked else list(done)
            found += sorted(staged.holders(band))
            out.append(found if len(found) <= MAX_BAND_READ else [])
        return out

    def near_docs(self, ev: Evidence, k: int) -> list[Match]:
        """Verified near-duplicate documents, this batch's own writes included."""
        if self._nothing_near(ev, k):
            return []
        return verified_near(ev, k, self.near_many, self.record, bands=self.band_docs_many)

    def _nothing_near(self, ev: Evidence, k: int) -> bool:
        """Whether :func:`verified_near` would find no candidate at all, read from what it would read: the
        committed answers looked up ahead (an id changed here only takes hits away), the staged band keys
        and the staged entries. Most documents of a batch are so; none of them then costs a look-up."""
        bands = ev.band_keys
        if not (self._committed_near(k).none_found(ev.fingerprints) and self._bands_ahead.none_found(bands)):
            return False
        return self._staged_bands.keys().isdisjoint(bands) and not self.ix.any_near(ev.fingerprints, k)

    def alone(self, doc_id: str, digest: str, ev: Evidence | None, k: int) -> bool:
        """Whether a document is alone, as :meth:`Engine.decide <fingerprint_indexer.engine.rules.Engine.
        decide>` takes it: not degenerate (``ev`` None), no record under its id and no document with its
        content ``digest`` (this batch's or committed), no candidate near it (:meth:`_nothing_near`) and
        no cluster centre within ``k``. Read from the answers the rules would read, asked once here
        instead of through each of their steps (most documents of a batch are alone)."""
        return (ev is not None and self.record(doc_id) is None and self.doc_with_digest(digest) is None
                and self._nothing_near(ev, k) and self._no_centre_near(ev.fingerprints[0], k))  # fmt: skip

    def _no_centre_near(self, fp: int, k: int) -> bool:
        """Whether no cluster centre is within ``k`` of ``fp``: none committed (asked ahead) and none
        staged."""
        return self._committed_centres(k).none_found((fp,)) and not self.cx.any_near((fp,), k)

    def centres_near(self, fp: int, k: int) -> list[Match]:
        committed = self._committed_centres(k)
        if self._no_centre_near(fp, k):
            return []  # most documents: nothing within k, asked ahead, and nothing staged
        hits = committed([fp])[0] + self.cx.query_many((fp,), k)[0]
        return sorted(hits, key=lambda m: (m.distance, m.doc_id))

    def missing(self, doc_id: str) -> StoreDamagedError:
        """A document found through an index key whose record is gone: only a damaged store does that."""
        where = self.store.directory
        return StoreDamagedError(f"store {where} is damaged: {doc_id!r} is indexed but has no record; "
                                 f"see 'fingerprint-indexer store check {where}'")

    # ----------------------------------------------------------------- writes
    def put_record(self, rec: DocRecord, index: bool, evidence: Evidence | None = None) -> None:
        """Store a new document (``index`` puts it into the block index: never for degenerate docs;
        ``evidence``: see :class:`~fingerprint_indexer.records.protocol.RecordStore`)."""
        # a document whose record this batch read as absent holds no index entries (they go with it)
        fresh = rec.id not in self._records and self._read.get(rec.id, rec) is None
        key = rec.id.encode()
        sketch = evidence.sketch if evidence is not None and type(evidence.sketch) is bytes else None
        self.wb.put(RECORD_PREFIX + key, record_bytes(rec, self.store.algorithm, self._encode, sketch))
        self.wb.put(fp_key(rec.fingerprint, rec.id), b"")
        if self.doc_with_digest(rec.content_digest) is None:
            self.wb.put(digest_key(rec.content_digest), key)
            self._digests[rec.content_digest] = rec.id
        self._records[rec.id] = rec
        self._bloom_items += [f"c:{rec.content_digest}", f"f:{rec.fingerprint:016x}", f"i:{rec.id}"]
        self._docs_delta += 1
        if index:
            eid = entry_id(rec.id, 0)
            if not fresh:  # a document stored again: its bands go with the entries it held
                was = self.ix.remove(eid)
                if was is not None:
                    self._band_removed.append(was[0])
            first = self.ix.add_doc(eid, rec.fingerprints, fresh=True)
            bands = rec.bands if evidence is None else evidence.band_keys
            self._staged_bands.add(rec.id, bands)
            self._band_adds.append((bands_bytes(bands), first, len(bands)))

    def put_marks(self, doc_id: str, marks: bytes, tag: str, cluster_id: str) -> None:
        """Store a decided document's winnowed copy marks (made under ``tag``, which must be the store's),
        each mark posted under the document's cluster. Not part of the engine's protocol: the pipeline
        writes them after the decision, and removing the document (:meth:`remove_doc`) drops them."""
        stored = self.store.marks_tag
        if stored != tag:
            held = f"copy marks of {stored!r}" if stored else "no copy marks"
            raise StoreMismatchError(f"store {self.store.directory} keeps {held}, not {tag!r}; rebuild it "
                                     "to change that")
        key = doc_id.encode()
        self.wb.put(b"w/d/" + key, marks)
        for h in Marks.from_bytes(marks).hex_hashes():
            self.wb.put(b"w/h/" + h.encode() + b"/" + key, cluster_id.encode())
        self._marks[doc_id] = marks

    def _drop_marks(self, doc_id: str) -> None:
        raw = self._marks[doc_id] if doc_id in self._marks else self.store.marks(doc_id)
        if raw:
            key = doc_id.encode()
            self.wb.delete(b"w/d/" + key)
            for h in Marks.from_bytes(raw).hex_hashes():
                self.wb.delete(b"w/h/" + h.encode() + b"/" + key)
        self._marks[doc_id] = None

    def update_record(self, rec: DocRecord) -> None:
        """Rewrite an existing record (e.g. its duplicate_of after the canonical changed)."""
        self.wb.put(RECORD_PREFIX + rec.id.encode(), record_bytes(rec, self.store.algorithm, self._encode))
        self._records[rec.id] = rec

    def remove_doc(self, doc_id: str) -> bool:
        rec = self.record(doc_id)
        if rec is None:
            return False
        self.wb.delete(RECORD_PREFIX + doc_id.encode())
        self.wb.delete(fp_key(rec.fingerprint, doc_id))
        self._drop_marks(doc_id)
        if self.doc_with_digest(rec.content_digest) == doc_id:
            heir = self._other_with_digest(rec, doc_id)
            if heir is None:
                self.wb.delete(digest_key(rec.content_digest))
            else:  # later exact copies still find the text through the documents that keep it
                self.wb.put(digest_key(rec.content_digest), heir.encode())
            self._digests[rec.content_digest] = heir
        held = self.ix.remove(entry_id(doc_id, 0))
        if held is not None:
            self._band_removed.append(held[0])
        self._staged_bands.remove(doc_id, rec.bands)
        self._masked.add(doc_id)
        self._records[doc_id] = None
        self._docs_delta -= 1
        return True

    def _other_with_digest(self, rec: DocRecord, doc_id: str) -> str | None:
        """The earliest other document holding ``rec``'s text (same text, same document fingerprint)."""
        ids = set(self.store.ids_with_fingerprint(rec.fingerprint))
        ids |= {i for i, r in self._records.items() if r is not None and r.fingerprint == rec.fingerprint}
        ids.discard(doc_id)
        holders = [r for r in map(self.record, ids)
                   if r is not None and r.content_digest == rec.content_digest]
        return min(holders, key=lambda r: (r.time, r.id)).id if holders else None

    def found_cluster(self, founder: str, centre: int) -> Cluster:
        """A new cluster whose id is its founder's doc id (suffixed if that id is taken)."""
        cid = new_cluster_id(founder, lambda taken: self.cluster(taken) is not None)
        c = Cluster(cid, centre, founder, 1)
        self.put_cluster(c)
        self.cx.add(cid, centre, fresh=True)  # no cluster of this id: no centre either (they go together)
        self._clusters_delta += 1
        return c

    def put_cluster(self, c: Cluster) -> None:
        # a cluster named after its founder shares the founder's entry, which its record puts (founded
        # with it, or stored before); a suffixed id needs its own
        if c.id != c.founder and c.id not in self._clusters:
            self._bloom_items.append(f"i:{c.id}")
        self.wb.put(CLUSTER_PREFIX + c.id.encode(), c.to_bytes())
        self._clusters[c.id] = c

    def commit(self) -> None:
        """Write everything in one synced batch, then let the in-memory state catch up."""
        store = self.store
        self.ix.finish()
        self.cx.finish()
        self.wb.put(b"s/meta/generation", str(store.generation + 1).encode())
        self.wb.put(b"s/meta/docs", str(store.n_docs + self._docs_delta).encode())
        self.wb.put(b"s/meta/clusters", str(store.n_clusters + self._clusters_delta).encode())
        try:
            self.wb.write()
        except plyvel.Error as exc:
            err = describe(store.directory, exc)
            raise StoreWriteError(f"{err}; nothing of this batch was stored") from None
        store.generation += 1
        store.n_docs += self._docs_delta
        store.n_clusters += self._clusters_delta
        self.ix.committed()
        self.cx.committed()
        bloom_add_many(store.bloom, self._bloom_items, store._bloom_test)
        adds, gone = self._band_adds, set(self._band_removed)
        if gone:  # documents removed: those staged here are never added, the others are forgotten
            adds = [a for a in adds if a[1] not in gone]
            store.bands.remove(gone.difference(a[1] for a in self._band_adds))
        if adds:
            raw, firsts, counts = zip(*adds, strict=True)
            store.bands.add(b"".join(raw), np.repeat(firsts, counts))
