"""Near look-ups every store shares: block-index entry ids of a document's fingerprints, and the verified
candidates of an :class:`~fingerprint_indexer.fingerprint.evidence.Evidence` (block-index hits and shared
sketch bands, verified by :func:`fingerprint_indexer.verification.check_many`, nearest first).

The embedded store (:mod:`fingerprint_indexer.store.embedded`) and the in-memory store
(:mod:`fingerprint_indexer.store.memory`) look up near-duplicates through the same functions, over their own
block index and band keys, so they find and verify the same candidates.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Generic, TypeVar

from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.records.match import Match
from fingerprint_indexer.records.record import DocRecord
from fingerprint_indexer.verification import Verdict, check_many

MAX_CANDIDATES = 256  # candidates verified per document (judged_near)
LOOK_AHEAD_CHUNK = 4096  # keys per look-up when a batch's keys are asked ahead (LookAhead)
CHUNK_SEP = "\x1f"  # separates a document id from its chunk number in block-index entry ids
_ESC = "\x1e"  # escapes \x1e and \x1f inside ids, so that no id can look like another's chunk entry
_UNESCAPE = re.compile("\x1e([\x1e\x1d])")


def entry_id(doc_id: str, n: int) -> str:
    r"""Block-index entry of a document's ``n``-th fingerprint (0 = the document fingerprint).

    Ids without \x1e or \x1f are used as they are; in others \x1e becomes \x1e\x1e and \x1f becomes
    \x1e\x1d, so an id ``a\x1f1`` cannot collide with the first chunk entry of ``a``.
    """
    if _ESC in doc_id or CHUNK_SEP in doc_id:
        doc_id = doc_id.replace(_ESC, _ESC + _ESC).replace(CHUNK_SEP, _ESC + "\x1d")
    return doc_id if n == 0 else f"{doc_id}{CHUNK_SEP}{n}"


def doc_of(entry: str) -> str:
    """The document an index entry belongs to (the inverse of :func:`entry_id`)."""
    doc = entry.split(CHUNK_SEP, 1)[0]
    if _ESC not in doc:
        return doc
    return _UNESCAPE.sub(lambda m: _ESC if m.group(1) == _ESC else CHUNK_SEP, doc)




K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LookAhead(Generic[K, V]):
    """Answers of a look-up that cannot change while one batch is decided (the committed state of a
    store), asked for all the batch's keys at once and then served document by document: one pass over
    the block tables, one LevelDB iterator, instead of one per document. A key not asked ahead is
    looked up when it is needed; the answers are shared, so callers must not change them.

    Nearly every key of a batch finds nothing: ``lookup`` answers only the keys that found something (by
    their place in the keys it was given), and every other asked key is answered with ``empty``."""

    def __init__(self, lookup: Callable[[Sequence[K]], dict[int, V]], empty: V) -> None:
        self._lookup = lookup
        self._asked: set[K] = set()
        self._found: dict[K, V] = {}  # the keys whose answer is not empty
        self._none = empty

    def ahead(self, keys: Iterable[K]) -> None:
        """Look up the keys not asked yet, :data:`LOOK_AHEAD_CHUNK` at a time."""
        asked = self._asked
        todo = list(dict.fromkeys(keys))
        if asked:
            todo = [key for key in todo if key not in asked]
        for i in range(0, len(todo), LOOK_AHEAD_CHUNK):
            chunk = todo[i : i + LOOK_AHEAD_CHUNK]
            answers = self._lookup(chunk)
            asked.update(chunk)
            self._found.update((chunk[q], answer) for q, answer in answers.items())

    def none_found(self, keys: Sequence[K]) -> bool:
        """Whether every key was asked already and found nothing (a key not asked counts as found)."""
        return self._asked.issuperset(keys) and self._found.keys().isdisjoint(keys)

    def __call__(self, keys: Sequence[K]) -> list[V]:
        """The answer to each key, in order."""
        asked = self._asked
        missing = [key for key in keys if key not in asked]
        if missing:
            self.ahead(missing)
        found, none = self._found, self._none
        return [found.get(key, none) for key in keys]


def listed(found: Mapping[int, list[V]], n: int) -> list[list[V]]:
    """A sparse answer (by place, only the keys that found something, as :class:`LookAhead`'s look-ups
    give it) as one list per key of ``n``, an empty one for each key that found nothing."""
    return [found.get(q) or [] for q in range(n)]


def judged_near(
    ev: Evidence,
    k: int,
    query: Callable[[Sequence[int], int], list[list[Match]]],
    record: Callable[[str], DocRecord | None],
    exclude: str | None = None,
    bands: Callable[[Sequence[str]], list[list[str]]] | None = None,
    limit: int = MAX_CANDIDATES,
) -> list[tuple[DocRecord, Verdict]]:
    """Every document with a fingerprint within ``k`` of one of ``ev``'s, or sharing a sketch band key
    with it (``query``: the block-index entries within ``k`` of each of a list of fingerprints, all of
    ``ev``'s asked at once; ``bands``: the documents under each of a list of keys, likewise), with the
    rule's verdict on it (:func:`fingerprint_indexer.verification.check_many`), nearest first.

    At most ``limit`` candidates are verified: those matching the most of ``ev``'s fingerprints and band
    keys (a copy shares its document, lead and chunk fingerprints; a look-alike of the same template one
    stock chunk), then the nearest. It bounds the work of a document whose stock phrases match thousands
    of others."""
    hits: dict[str, list[int]] = {}  # doc -> [fingerprints and bands matched, smallest distance]
    for matches in query(ev.fingerprints, k):
        for m in matches:
            h = hits.setdefault(doc_of(m.doc_id), [0, k + 1])
            h[0] += 1
            h[1] = min(h[1], m.distance)
    if bands is not None:
        for docs in bands(ev.band_keys):
            for doc in docs:
                hits.setdefault(doc, [0, k + 1])[0] += 1
    hits.pop(exclude or "", None)
    ids = sorted(hits, key=lambda i: (-hits[i][0], hits[i][1], i))[:limit]
    recs = [r for r in map(record, sorted(ids)) if r is not None]
    judged = list(zip(recs, check_many(ev, [r.evidence for r in recs], k), strict=True))
    return sorted(judged, key=lambda x: (x[1].distance, x[0].id))


def verified_near(
    ev: Evidence,
    k: int,
    query: Callable[[Sequence[int], int], list[list[Match]]],
    record: Callable[[str], DocRecord | None],
    exclude: str | None = None,
    bands: Callable[[Sequence[str]], list[list[str]]] | None = None,
) -> list[Match]:
    """The documents :func:`judged_near` accepts, as matches (distance = smallest over all pairs)."""
    judged = judged_near(ev, k, query, record, exclude, bands)
    return [Match(r.id, v.distance) for r, v in judged if v.accepted]
