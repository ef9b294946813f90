"""Pictures in the embedded store: one record per picture in the store's LevelDB, found through an
in-memory :class:`~fingerprint_indexer.index.images.ImageIndex` built from those records.

Keys, beside the documents' (no document key starts with ``i/``, so nothing that reads documents sees
them)::

    i/p/<image id>  -> JSON: the fingerprint, the decision, duplicate_of, distance, source

A store written before pictures were kept simply has no ``i/`` keys: its format (``s/meta/format``) is
unchanged and it opens as it did. The look-up tables are not saved: they are rebuilt from the records
when pictures are first used (fingerprints are kept whole, so nothing is lost).

A picture is decided as a document is: ``exact_duplicate`` (the same pixels as a stored picture),
``near_duplicate`` (the rule :func:`~fingerprint_indexer.fingerprint.image.same_photo` accepts a stored
picture; the nearest wins) or ``new``; ``duplicate_of`` names the group's first picture.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fingerprint_indexer.fingerprint.image import THRESHOLDS, ImageFingerprint, ImageThresholds
from fingerprint_indexer.index.images import ImageIndex, ImageMatch
from fingerprint_indexer.store.embedded import EmbeddedStore

PREFIX = b"i/p/"


def image_key(image_id: str) -> bytes:
    """LevelDB key of one picture's record."""
    return PREFIX + image_id.encode()


@dataclass(frozen=True)
class ImageDecision:
    """What became of one picture: new, exact_duplicate or near_duplicate, of which stored picture (the
    group's first), at what window distance."""

    id: str
    decision: str
    duplicate_of: str | None = None
    distance: int | None = None
    mirrored: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "decision": self.decision, "duplicate_of": self.duplicate_of,
                "distance": self.distance, "mirrored": self.mirrored}


class ImageStore:
    """The pictures of one open :class:`EmbeddedStore`."""

    def __init__(self, store: EmbeddedStore, limits: ImageThresholds = THRESHOLDS) -> None:
        self.store = store
        self.limits = limits
        self.index = ImageIndex(limits)
        for key, raw in store.db.iterator(prefix=PREFIX):
            rec = json.loads(raw)
            self.index.add(key[len(PREFIX):].decode(), ImageFingerprint.from_json(rec["fingerprint"]))
        self.index.flush()

    def __len__(self) -> int:
        return len(self.index)

    def record(self, image_id: str) -> dict[str, Any] | None:
        """The stored record of a picture (fingerprint as JSON, decision, duplicate_of, distance,
        source), or None."""
        raw = self.store.db.get(image_key(image_id))
        return None if raw is None else dict(json.loads(raw))

    def similar(self, fp: ImageFingerprint) -> list[ImageMatch]:
        """Stored pictures the rule accepts for ``fp``, the same pixels first, then nearest first."""
        return self.index.query(fp)

    def decide(self, image_id: str, fp: ImageFingerprint, source: str | None = None,
               sync: bool = True) -> ImageDecision:
        """Decide a picture against the stored ones and keep it (committed before this returns; with
        ``sync`` False, made durable by the next synced write, such as the batch of the document it
        belongs to). A picture already stored under ``image_id`` is decided again without matching
        itself, and replaced."""
        matches = [m for m in self.similar(fp) if m.image_id != image_id]
        if not matches:
            decision = ImageDecision(image_id, "new")
        else:
            best = matches[0]
            other = self.record(best.image_id) or {}
            group = other.get("duplicate_of") or best.image_id
            decision = ImageDecision(image_id, "exact_duplicate" if best.exact else "near_duplicate",
                                     group, best.distance, best.mirrored)
        rec = {**decision.to_dict(), "fingerprint": fp.to_json(), "source": source}
        self.store.db.put(image_key(image_id), json.dumps(rec, separators=(",", ":")).encode(), sync=sync)
        self.index.add(image_id, fp)
        return decision

    def delete(self, image_id: str) -> bool:
        """Forget a picture; False if it was not stored."""
        if self.store.db.get(image_key(image_id)) is None:
            return False
        self.store.db.delete(image_key(image_id), sync=True)
        self.index.remove(image_id)
        return True
