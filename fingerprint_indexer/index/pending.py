"""The documents a writer decided since the index's last refresh (``es index``'s pending set), matched against
each batch before Elasticsearch can find them: their fingerprints in block tables of their own, their sketch
band keys as postings.

A batch asks once, for all its documents (:meth:`PendingSet.candidates`): per position, the held documents
with a fingerprint within ``k`` of one of its own or a band key in common, and the earlier positions of the
batch so related to it. These are candidates only: the caller keeps those still pending when the document
is decided, and the verification rule judges them.

:class:`PendingSet` is the reference; :class:`CompiledPendingSet` gives the same answers from the compiled
core in one call a batch, with no Python object made per fingerprint or key (:func:`pending_set` picks).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

import numpy as np

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import MASK64
from fingerprint_indexer.fingerprint.sketch import MAX_BAND_READ
from fingerprint_indexer.index.memory import MERGE_THRESHOLD, DocumentIndex, KeyPostings
from fingerprint_indexer.index.pairs import near_pairs

#: Per position, the held documents (id -> distance) and the earlier positions (position -> distance)
#: found for it; a band key in common alone counts as ``k + 1``.
Candidates = tuple[list[dict[str, int]], list[dict[int, int]]]


class PendingSet:
    """The reference: a :class:`~fingerprint_indexer.index.memory.DocumentIndex` of ``k + 1`` blocks (so
    buckets stay small) and :class:`~fingerprint_indexer.index.memory.KeyPostings` of the band keys."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.layout = BlockLayout.for_k(k)
        self._near = DocumentIndex(self.layout)
        self._bands = KeyPostings()
        self._keys: dict[str, Sequence[str]] = {}  # id -> the band keys it holds

    def __len__(self) -> int:
        return len(self._keys)

    def put_many(self, ids: Sequence[str], fingerprints: Sequence[Sequence[int]],
                 keys: Sequence[Sequence[str]]) -> None:  # fmt: skip
        """Put each document ``ids[i]`` with its fingerprints (document, lead, chunks) and its sketch band
        keys; an id held already, or given twice, holds what it was given last."""
        latest = {doc_id: (fps, held) for doc_id, fps, held in zip(ids, fingerprints, keys, strict=True)}
        for doc_id in latest.keys() & self._keys.keys():
            self.remove(doc_id)
        self._near.put_many((doc_id, fps) for doc_id, (fps, _) in latest.items())
        for doc_id, (_, doc_keys) in latest.items():
            self._bands.add(doc_id, doc_keys)
            self._keys[doc_id] = doc_keys

    def remove(self, doc_id: str) -> bool:
        """Forget a document; whether it was held."""
        keys = self._keys.pop(doc_id, None)
        if keys is None:
            return False
        self._near.remove(doc_id)
        self._bands.remove(doc_id, keys)
        return True

    def candidates(self, fingerprints: Sequence[Sequence[int]], keys: Sequence[Sequence[str]]) -> Candidates:
        """Per position of a batch whose documents have these fingerprints and band keys (none for a
        degenerate one), the smallest Hamming distance (when within ``k``) to each held document and to
        each earlier position, and those sharing a band key (``k + 1``: the rule measures it); a key held by
        more than :data:`MAX_BAND_READ` of them is a stock phrase, passed over as in the index. One
        block-table query for all the batch's fingerprints and one all-pairs pass over them."""
        batch = list(zip(fingerprints, keys, strict=True))
        before: list[dict[str, int]] = [{} for _ in batch]
        within: list[dict[int, int]] = [{} for _ in batch]
        owner = [i for i, (fps, _) in enumerate(batch) for _ in fps]
        flat = np.array([f & MASK64 for fps, _ in batch for f in fps], dtype=np.uint64)
        limit = self.k + 1
        if len(self._near):
            qs, docs, dists = self._near.near(flat, self.k)
            for q, d, dist in zip(qs, docs, dists, strict=True):
                best = before[owner[q]]
                if dist < best.get(d, limit):
                    best[d] = dist
        ii, jj, dd = near_pairs(flat, self.k, self.layout)
        own = np.array(owner, dtype=np.int64)
        oi, oj = own[ii], own[jj]
        other = oi != oj
        for a, b, d in zip(oi[other].tolist(), oj[other].tolist(), dd[other].tolist(), strict=True):
            later, earlier = (a, b) if a > b else (b, a)
            best_j = within[later]
            if d < best_j.get(earlier, limit):
                best_j[earlier] = d
        # the keys that can matter: held by two of the batch, or by a held document (most are neither)
        counts = Counter(itertools.chain.from_iterable(keys for _, keys in batch))
        held = self._bands
        shared = {key for key, n in counts.items() if n > 1}
        if held:
            shared |= counts.keys() & held.keys()
        earlier_with: dict[str, list[int]] = {}
        for i, (_, keys) in enumerate(batch):
            if shared.isdisjoint(keys):
                continue
            for key in keys:
                if key not in shared:
                    continue
                earlier = earlier_with.setdefault(key, [])
                holders = held.holders(key)
                if len(holders) + len(earlier) <= MAX_BAND_READ:
                    for d in holders:
                        before[i].setdefault(d, limit)
                    for j in earlier:
                        within[i].setdefault(j, limit)
                earlier.append(i)
        return before, within


class CompiledPendingSet:
    """:class:`PendingSet` in compiled code (``_core.PendingSet``), with the same answers."""

    def __init__(self, k: int) -> None:
        from fingerprint_indexer.fingerprint import native  # the compiled core's one place; loaded on use

        self.k = k
        self._set = native.pending_set(k, BlockLayout.for_k(k).widths, MERGE_THRESHOLD)

    def __len__(self) -> int:
        return len(self._set)

    def put_many(self, ids: Sequence[str], fingerprints: Sequence[Sequence[int]],
                 keys: Sequence[Sequence[str]]) -> None:  # fmt: skip
        """:meth:`PendingSet.put_many`, in one call (a document without a fingerprint: ValueError)."""
        self._set.put_many(list(ids), list(fingerprints), list(keys))

    def remove(self, doc_id: str) -> bool:
        """:meth:`PendingSet.remove`."""
        return bool(self._set.remove(doc_id))

    def candidates(self, fingerprints: Sequence[Sequence[int]], keys: Sequence[Sequence[str]]) -> Candidates:
        """:meth:`PendingSet.candidates`, found in one call: dicts are made only for what it found."""
        (bi, bd, bdist), (wi, wj, wdist) = self._set.candidates(list(fingerprints), list(keys), MAX_BAND_READ)
        before: list[dict[str, int]] = [{} for _ in fingerprints]
        within: list[dict[int, int]] = [{} for _ in fingerprints]
        for i, d, dist in zip(bi, bd, bdist, strict=True):
            before[i][d] = dist
        for i, j, dist in zip(wi, wj, wdist, strict=True):
            within[i][j] = dist
        return before, within


def pending_set(k: int) -> PendingSet | CompiledPendingSet:
    """An empty pending set matching within ``k``: the compiled one when the compiled core is built and not
    switched off (``FPI_NATIVE=0``), else the reference."""
    from fingerprint_indexer.fingerprint.native import enabled  # the switch's one place; loaded on use

    return CompiledPendingSet(k) if enabled() else PendingSet(k)
