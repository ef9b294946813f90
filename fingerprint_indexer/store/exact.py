"""The embedded store: one LevelDB directory with exact records, block index and cluster centres.

Everything about a document is written in one LevelDB write batch (exact keys, block-index keys, cluster
record, generation counter), so a batch is all-or-nothing even under SIGKILL. Key prefixes::

    s/d/<doc id>              -> record JSON (fingerprint, digests, cluster id, decision, version, time)
    s/f/<fingerprint hex>/<id> -> b""             (fingerprint -> doc ids)
    s/c/<content digest>      -> doc id           (first document with that content)
    s/k/<cluster id>          -> cluster JSON     (centre fingerprint, founder, size)
    s/meta/...                -> format, generation, counts
    x/...                     -> block index of non-degenerate documents  (LevelDBIndex); a document's
                                 chunk fingerprints are entries ``<doc id>\x1f<n>`` beside ``<doc id>``
    k/...                     -> block index of cluster centres           (LevelDBIndex)
    w/d/<doc id>              -> winnowed copy marks (copies.winnow.Marks bytes)
    w/h/<mark hex>/<doc id>   -> cluster id       (copy mark -> doc ids: partial-copy search)

A scalable Bloom filter of content digests and fingerprints (``bloom.bin`` beside the ``leveldb``
directory) answers "certainly absent" without touching LevelDB; it is rebuilt from LevelDB whenever the
file is missing, corrupt or saved at another generation. LevelDB stays exact; the filter only says "maybe".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.copies.winnow import Marks
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.sketch import from_bytes, similarity
from fingerprint_indexer.index.base import Match
from fingerprint_indexer.index.leveldb import LevelDBIndex
from fingerprint_indexer.index.memory import MemoryIndex
from fingerprint_indexer.store.bloom import load_bloom, new_bloom, save_bloom
from fingerprint_indexer.store.db import CACHE_BYTES, open_db
from fingerprint_indexer.store.errors import StoreMismatchError
from fingerprint_indexer.verify import MIN_SIMILARITY, Verdict, closest

FORMAT = b"2"
CHUNK_SEP = "\x1f"  # separates a document id from its chunk number in block-index entry ids


def entry_id(doc_id: str, n: int) -> str:
    """Block-index entry of a document's ``n``-th fingerprint (0 = the document fingerprint)."""
    return doc_id if n == 0 else f"{doc_id}{CHUNK_SEP}{n}"


def doc_of(entry: str) -> str:
    """The document an index entry belongs to."""
    return entry.split(CHUNK_SEP, 1)[0]


@dataclass
class DocRecord:
    """What the store remembers about one document."""

    id: str
    fingerprint: int
    content_digest: str
    keyword_digest: str
    cluster_id: str
    decision: str
    duplicate_of: str | None
    distance: int | None
    degenerate: bool
    length: int
    published_at: str | None
    version: str
    time: float
    chunks: list[int] = field(default_factory=list)  # chunk fingerprints (also indexed)
    sketch: str = ""  # hex of the MinHash sketch: the second-stage check on candidates

    @property
    def fingerprints(self) -> list[int]:
        return [self.fingerprint, *self.chunks]

    def sketch_array(self) -> npt.NDArray[np.uint32]:
        return from_bytes(bytes.fromhex(self.sketch))

    def to_json(self) -> bytes:
        data = asdict(self)
        data["fingerprint"] = f"{self.fingerprint:016x}"
        data["chunks"] = [f"{c:016x}" for c in self.chunks]
        return json.dumps(data, ensure_ascii=False, sort_keys=True).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> DocRecord:
        data = json.loads(raw)
        data["fingerprint"] = int(data["fingerprint"], 16)
        data["chunks"] = [int(c, 16) for c in data.get("chunks", [])]
        return cls(**data)


def confirms(mine: npt.NDArray[np.uint32] | None, rec: DocRecord) -> bool:
    """Whether ``rec``'s sketch confirms a candidate; without a sketch on either side (degenerate
    text) the Hamming test alone decides."""
    return mine is None or not rec.sketch or similarity(mine, rec.sketch_array()) >= MIN_SIMILARITY


def verified_near(
    fps: Sequence[int],
    sketch: bytes,
    k: int,
    query: Callable[[int, int], list[Match]],
    record: Callable[[str], DocRecord | None],
    exclude: str | None = None,
) -> list[Match]:
    """Documents with any fingerprint within ``k`` of any of ``fps`` whose sketch confirms the match.

    The distance is the smallest over all fingerprint pairs found. Without a sketch on either side
    (degenerate text) the Hamming test alone decides.
    """
    best: dict[str, int] = {}
    for fp in fps:
        for m in query(fp, k):
            d = doc_of(m.doc_id)
            if d != exclude and m.distance < best.get(d, k + 1):
                best[d] = m.distance
    mine = from_bytes(sketch) if sketch else None
    out: list[Match] = []
    for d, dist in sorted(best.items(), key=lambda x: (x[1], x[0])):
        rec = record(d)
        if rec is not None and confirms(mine, rec):
            out.append(Match(d, dist))
    return out


@dataclass
class Cluster:
    id: str
    centre: int
    founder: str
    size: int

    def to_json(self) -> bytes:
        data = {"centre": f"{self.centre:016x}", "founder": self.founder, "size": self.size}
        return json.dumps(data).encode()

    @classmethod
    def from_json(cls, cid: str, raw: bytes) -> Cluster:
        data = json.loads(raw)
        return cls(cid, int(data["centre"], 16), data["founder"], int(data["size"]))


def _fp_key(fp: int, doc_id: str) -> bytes:
    return b"s/f/%016x/" % fp + doc_id.encode()


class ExactStore:
    """Open a store directory (created if missing); one process at a time (LevelDB's lock)."""

    def __init__(
        self,
        directory: str | Path,
        layout: BlockLayout | None = None,
        algorithm: str | None = None,
        cache_bytes: int = CACHE_BYTES,
    ) -> None:
        self.directory = Path(directory)
        self.db = open_db(self.directory / "leveldb", cache_bytes=cache_bytes)
        try:
            fmt = self.db.get(b"s/meta/format")
            if fmt is not None and fmt != FORMAT:
                raise StoreMismatchError(
                    f"store {self.directory} has format {fmt.decode()!r}; "
                    f"this version reads {FORMAT.decode()!r}"
                )
            self.index = LevelDBIndex(db=self.db, prefix=b"x/", layout=layout, algorithm=algorithm)
            self.centres = LevelDBIndex(db=self.db, prefix=b"k/", layout=self.index.layout,
                                        algorithm=algorithm)
            self.layout = self.index.layout
            self.algorithm = self.index.algorithm
            if fmt is None:
                self.db.put(b"s/meta/format", FORMAT, sync=True)
            self.generation = int(self.db.get(b"s/meta/generation") or b"0")
            self.n_docs = int(self.db.get(b"s/meta/docs") or b"0")
            self.n_clusters = int(self.db.get(b"s/meta/clusters") or b"0")
            self.bloom_path = self.directory / "bloom.bin"
            loaded = load_bloom(self.bloom_path, self.generation)
            self.bloom_rebuilt = loaded is None
            self.bloom = loaded if loaded is not None else self._rebuild_bloom()
        except BaseException:
            self.db.close()
            raise

    # ----------------------------------------------------------------- Bloom
    def _bloom_items(self) -> list[str]:
        items = [f"c:{k[4:].decode()}" for k in self.db.iterator(prefix=b"s/c/", include_value=False)]
        items += [f"f:{k[4:20].decode()}" for k in self.db.iterator(prefix=b"s/f/", include_value=False)]
        return items

    def _rebuild_bloom(self) -> Any:
        items = self._bloom_items()
        bloom = new_bloom(items, capacity=max(100_000, 2 * len(items)))
        save_bloom(self.bloom_path, bloom, self.generation)
        return bloom

    # ----------------------------------------------------------------- reads
    def record(self, doc_id: str) -> DocRecord | None:
        raw = self.db.get(b"s/d/" + doc_id.encode())
        return None if raw is None else DocRecord.from_json(raw)

    def doc_with_digest(self, digest: str) -> str | None:
        """The first stored document with this content digest (Bloom filter first, LevelDB decides)."""
        if f"c:{digest}" not in self.bloom:
            return None
        raw = self.db.get(b"s/c/" + digest.encode())
        return None if raw is None else raw.decode()

    def ids_with_fingerprint(self, fp: int) -> list[str]:
        if f"f:{fp:016x}" not in self.bloom:
            return []
        pfx = b"s/f/%016x/" % fp
        return [k[len(pfx) :].decode() for k in self.db.iterator(prefix=pfx, include_value=False)]

    def cluster(self, cluster_id: str) -> Cluster | None:
        raw = self.db.get(b"s/k/" + cluster_id.encode())
        return None if raw is None else Cluster.from_json(cluster_id, raw)

    def marks(self, doc_id: str) -> bytes | None:
        """A document's winnowed copy marks (None when it has none stored)."""
        return self.db.get(b"w/d/" + doc_id.encode())

    @property
    def marks_tag(self) -> str | None:
        """The winnowing parameters the copy marks were made with (None before the first)."""
        raw = self.db.get(b"s/meta/winnow")
        return None if raw is None else raw.decode()

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

    def near_docs(
        self, fps: Sequence[int], sketch: bytes, k: int, exclude: str | None = None
    ) -> list[Match]:
        """Verified near-duplicate documents of the given fingerprints and sketch, nearest first."""
        return verified_near(fps, sketch, k, self.index.query, self.record, exclude)

    def neighbours(
        self, fps: Sequence[int], sketch: bytes, digest: str, k: int, exclude: str | None = None
    ) -> list[tuple[DocRecord, Verdict]]:
        """Stored near-duplicates with why they match, nearest first: verified block-index matches,
        exact copies (same content digest), and documents with the same document fingerprint (degenerate
        ones are in no block bucket) whose sketch confirms them.

        A shared document fingerprint alone proves little: under ``tf^3`` weighting one dominant term
        (a person's name) can decide all 64 bits, so different articles about that person collide.
        """
        ids = {m.doc_id for m in self.near_docs(fps, sketch, k)}
        exact = self.doc_with_digest(digest)
        if exact is not None:
            ids.add(exact)
        same_fp = set(self.ids_with_fingerprint(fps[0])) - ids
        ids.discard(exclude or "")
        same_fp.discard(exclude or "")
        mine = from_bytes(sketch) if sketch else None
        out = []
        for other in ids | same_fp:
            rec = self.record(other)
            if rec is None or (other in same_fp and not confirms(mine, rec)):
                continue
            theirs = rec.sketch_array() if rec.sketch else None
            d, where = closest(fps, rec.fingerprints)
            sim = similarity(mine, theirs) if mine is not None and theirs is not None else 1.0
            out.append((rec, Verdict(d, where, sim, True)))
        return sorted(out, key=lambda x: (x[1].distance, x[0].id))

    def batch(self) -> StoreBatch:
        return StoreBatch(self)

    def delete(self, doc_id: str) -> bool:
        """Remove a document's records and index keys (its cluster and centre stay)."""
        tx = self.batch()
        found = tx.remove_doc(doc_id)
        tx.commit()
        return found

    def close(self) -> None:
        """Save the Bloom filter for the current generation and release the LevelDB lock."""
        if self.db.closed:
            return
        try:
            save_bloom(self.bloom_path, self.bloom, self.generation)
        finally:
            self.db.close()

    def __enter__(self) -> ExactStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class StoreBatch:
    """Staged changes that read their own writes and commit in one atomic LevelDB batch."""

    def __init__(self, store: ExactStore) -> None:
        self.store = store
        self.wb = store.db.write_batch(transaction=True, sync=True)
        self.ix = store.index.writes(self.wb)
        self.cx = store.centres.writes(self.wb)
        self._records: dict[str, DocRecord | None] = {}
        self._digests: dict[str, str | None] = {}
        self._clusters: dict[str, Cluster] = {}
        self._staged_index = MemoryIndex(store.layout, merge_threshold=1 << 30)
        self._staged_centres = MemoryIndex(store.layout, merge_threshold=1 << 30)
        self._masked: set[str] = set()
        self._bloom_items: list[str] = []
        self._docs_delta = 0
        self._clusters_delta = 0
        self._marks: dict[str, bytes | None] = {}

    # ------------------------------------------------------- reads (own writes first)
    def record(self, doc_id: str) -> DocRecord | None:
        if doc_id in self._records:
            return self._records[doc_id]
        return self.store.record(doc_id)

    def doc_with_digest(self, digest: str) -> str | None:
        if digest in self._digests:
            return self._digests[digest]
        return self.store.doc_with_digest(digest)

    def cluster(self, cluster_id: str) -> Cluster | None:
        return self._clusters.get(cluster_id) or self.store.cluster(cluster_id)

    def near(self, fp: int, k: int) -> list[Match]:
        """Indexed documents within ``k``: the committed index minus ids changed here, plus staged ones."""
        hits = [m for m in self.store.index.query(fp, k) if doc_of(m.doc_id) not in self._masked]
        hits += self._staged_index.query(fp, k)
        return sorted(hits, key=lambda m: (m.distance, m.doc_id))

    def near_docs(self, fps: Sequence[int], sketch: bytes, k: int) -> list[Match]:
        """Verified near-duplicate documents, this batch's own writes included."""
        return verified_near(fps, sketch, k, self.near, self.record)

    def centres_near(self, fp: int, k: int) -> list[Match]:
        hits = self.store.centres.query(fp, k) + self._staged_centres.query(fp, k)
        return sorted(hits, key=lambda m: (m.distance, m.doc_id))

    # ----------------------------------------------------------------- writes
    def put_record(self, rec: DocRecord, index: bool, marks: bytes = b"",
                   marks_tag: str | None = None) -> None:
        """Store a new document (``index`` puts it into the block index: never for degenerate docs) and
        its winnowed copy marks (made under ``marks_tag``)."""
        key = rec.id.encode()
        if marks and marks_tag is not None:
            self._put_marks(rec.id, marks, marks_tag, rec.cluster_id)
        self.wb.put(b"s/d/" + key, rec.to_json())
        self.wb.put(_fp_key(rec.fingerprint, rec.id), b"")
        if self.doc_with_digest(rec.content_digest) is None:
            self.wb.put(b"s/c/" + rec.content_digest.encode(), key)
            self._digests[rec.content_digest] = rec.id
        self._records[rec.id] = rec
        self._bloom_items += [f"c:{rec.content_digest}", f"f:{rec.fingerprint:016x}"]
        self._docs_delta += 1
        if index:
            for n, fp in enumerate(rec.fingerprints):
                self.ix.add(entry_id(rec.id, n), fp)
                self._staged_index.add(entry_id(rec.id, n), fp)

    def _put_marks(self, doc_id: str, marks: bytes, tag: str, cluster_id: str) -> None:
        stored = self.store.marks_tag
        if stored is not None and stored != tag:
            raise StoreMismatchError(f"store {self.store.directory} holds copy marks of {stored!r}, not "
                                     f"{tag!r}; rebuild it to change the winnowing parameters")
        if stored is None:
            self.wb.put(b"s/meta/winnow", tag.encode())
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
        self.wb.put(b"s/d/" + rec.id.encode(), rec.to_json())
        self._records[rec.id] = rec

    def remove_doc(self, doc_id: str) -> bool:
        rec = self.record(doc_id)
        if rec is None:
            return False
        self.wb.delete(b"s/d/" + doc_id.encode())
        self.wb.delete(_fp_key(rec.fingerprint, doc_id))
        self._drop_marks(doc_id)
        if self.doc_with_digest(rec.content_digest) == doc_id:
            self.wb.delete(b"s/c/" + rec.content_digest.encode())
            self._digests[rec.content_digest] = None
        for n in range(len(rec.fingerprints)):
            self.ix.remove(entry_id(doc_id, n))
            self._staged_index.remove(entry_id(doc_id, n))
        self._masked.add(doc_id)
        self._records[doc_id] = None
        self._docs_delta -= 1
        return True

    def found_cluster(self, founder: str, centre: int) -> Cluster:
        """A new cluster whose id is its founder's doc id (suffixed if that id is taken)."""
        cid, n = founder, 1
        while self.cluster(cid) is not None:
            n += 1
            cid = f"{founder}~{n}"
        c = Cluster(cid, centre, founder, 1)
        self.put_cluster(c)
        self.cx.add(cid, centre)
        self._staged_centres.add(cid, centre)
        self._clusters_delta += 1
        return c

    def put_cluster(self, c: Cluster) -> None:
        self.wb.put(b"s/k/" + c.id.encode(), c.to_json())
        self._clusters[c.id] = c

    def commit(self) -> None:
        """Write everything in one synced batch, then let the in-memory state catch up."""
        store = self.store
        self.ix.finish()
        self.cx.finish()
        self.wb.put(b"s/meta/generation", str(store.generation + 1).encode())
        self.wb.put(b"s/meta/docs", str(store.n_docs + self._docs_delta).encode())
        self.wb.put(b"s/meta/clusters", str(store.n_clusters + self._clusters_delta).encode())
        self.wb.write()
        store.generation += 1
        store.n_docs += self._docs_delta
        store.n_clusters += self._clusters_delta
        self.ix.committed()
        self.cx.committed()
        for item in self._bloom_items:
            store.bloom.add(item)


def record_now(**fields: Any) -> DocRecord:
    """A record stamped with the current time."""
    return DocRecord(time=round(time.time(), 3), **fields)
