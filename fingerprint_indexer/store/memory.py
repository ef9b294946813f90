"""A record store in memory: plain dicts and NumPy block tables beside the embedded and Elasticsearch
stores, for tests and for short jobs that need no persistence.

It implements :class:`~fingerprint_indexer.records.protocol.RecordStore` the way the embedded store's
batch (:class:`fingerprint_indexer.store.embedded.StoreBatch`) does, without LevelDB: records by id, the
first document of each content digest (handed to the earliest other holder when it is removed), near
look-ups through a :class:`~fingerprint_indexer.index.memory.MemoryIndex` of every document's document,
lead and chunk fingerprints and a dict of sketch band keys, verified by the same
:func:`~fingerprint_indexer.store.near.verified_near` (a band key held by more than
:data:`~fingerprint_indexer.fingerprint.sketch.MAX_BAND_READ` documents is a stock phrase and skipped),
clusters and a second index of their centres. Every write is visible at once; there is nothing to commit
and nothing survives the object.
"""

from __future__ import annotations

from collections.abc import Sequence

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.fingerprint.sketch import MAX_BAND_READ
from fingerprint_indexer.index.memory import KeyPostings, MemoryIndex
from fingerprint_indexer.records.match import Match
from fingerprint_indexer.records.record import Cluster, DocRecord, new_cluster_id
from fingerprint_indexer.store.errors import StoreDamagedError
from fingerprint_indexer.store.near import entry_id, verified_near


class MemoryStore:
    """Records, digests, block and band keys and clusters in memory, under one block layout."""

    def __init__(self, layout: BlockLayout | None = None) -> None:
        self.layout = layout or BlockLayout()
        self._records: dict[str, DocRecord] = {}
        self._digests: dict[str, str] = {}  # content digest -> the first stored document with it
        self._by_fp: dict[int, set[str]] = {}  # document fingerprint -> documents (degenerate ones too)
        self._bands = KeyPostings()  # sketch band key -> indexed documents
        self._clusters: dict[str, Cluster] = {}
        self.index = MemoryIndex(self.layout)
        self.centres = MemoryIndex(self.layout)

    @property
    def n_docs(self) -> int:
        return len(self._records)

    @property
    def n_clusters(self) -> int:
        return len(self._clusters)

    # ----------------------------------------------------------------- reads
    def record(self, doc_id: str) -> DocRecord | None:
        return self._records.get(doc_id)

    def doc_with_digest(self, digest: str) -> str | None:
        return self._digests.get(digest)

    def band_docs(self, band: str) -> list[str]:
        """Documents under a sketch band key; none when more than :data:`MAX_BAND_READ` hold it."""
        return self.band_docs_many([band])[0]

    def band_docs_many(self, bands: Sequence[str]) -> list[list[str]]:
        """:meth:`band_docs` of each key."""
        out = []
        for band in bands:
            found = self._bands.holders(band)
            out.append(sorted(found) if len(found) <= MAX_BAND_READ else [])
        return out

    def near_docs(self, ev: Evidence, k: int) -> list[Match]:
        """Verified near-duplicate documents, nearest first (distance, then id)."""
        return verified_near(ev, k, self.index.query_many, self.record, bands=self.band_docs_many)

    def centres_near(self, fp: int, k: int) -> list[Match]:
        return self.centres.query(fp, k)

    def cluster(self, cluster_id: str) -> Cluster | None:
        return self._clusters.get(cluster_id)

    def missing(self, doc_id: str) -> StoreDamagedError:
        return StoreDamagedError(f"in-memory store: {doc_id!r} is indexed but has no record")

    # ----------------------------------------------------------------- writes
    def put_record(self, rec: DocRecord, index: bool, evidence: Evidence | None = None) -> None:
        """Store a decided document (``index``: into the block index and band keys; never for degenerate
        documents; ``evidence``: see :class:`~fingerprint_indexer.records.protocol.RecordStore`)."""
        self._records[rec.id] = rec
        self._by_fp.setdefault(rec.fingerprint, set()).add(rec.id)
        self._digests.setdefault(rec.content_digest, rec.id)
        if index:
            for n, fp in enumerate(rec.fingerprints):
                self.index.add(entry_id(rec.id, n), fp)
            self._bands.add(rec.id, rec.bands if evidence is None else evidence.band_keys)

    def update_record(self, rec: DocRecord) -> None:
        self._records[rec.id] = rec

    def remove_doc(self, doc_id: str) -> bool:
        rec = self._records.pop(doc_id, None)
        if rec is None:
            return False
        self._by_fp[rec.fingerprint].discard(doc_id)
        if self._digests.get(rec.content_digest) == doc_id:
            heir = self._other_with_digest(rec)
            if heir is None:
                del self._digests[rec.content_digest]
            else:  # later exact copies still find the text through the documents that keep it
                self._digests[rec.content_digest] = heir
        for n in range(len(rec.fingerprints)):
            self.index.remove(entry_id(doc_id, n))
        self._bands.remove(doc_id, rec.bands)
        return True

    def _other_with_digest(self, rec: DocRecord) -> str | None:
        """The earliest other document holding ``rec``'s text (same text, same document fingerprint)."""
        holders = [r for i in self._by_fp.get(rec.fingerprint, ())
                   if (r := self._records[i]).content_digest == rec.content_digest]
        return min(holders, key=lambda r: (r.time, r.id)).id if holders else None

    def found_cluster(self, founder: str, centre: int) -> Cluster:
        """A new cluster whose id is its founder's doc id (suffixed if that id is taken)."""
        cid = new_cluster_id(founder, lambda taken: taken in self._clusters)
        c = Cluster(cid, centre, founder, 1)
        self.put_cluster(c)
        self.centres.add(cid, centre)
        return c

    def put_cluster(self, c: Cluster) -> None:
        self._clusters[c.id] = c
