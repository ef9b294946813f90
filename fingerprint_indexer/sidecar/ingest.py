"""The ingest hook shared by ``/v1/ingest`` and the ``_bulk``/``_doc`` proxy.

Documents are fingerprinted in the worker pool, decided (and committed) by the store thread, and turned
into the fields added to the Elasticsearch document. A decision is committed to the embedded store before
the Elasticsearch write; a retry of the same document repeats the stored decision (see
:mod:`fingerprint_indexer.pipeline`), so a request that failed half-way is safe to send again.

Under ``keep=longest|newest`` a decision may make the document the group's new canonical
(``Decision.replaces``); :func:`relink_op` is the update that makes the previous canonical's Elasticsearch
document say what its stored record now says (``duplicate_of`` the new canonical, and its ``distance``;
its ``decision`` is unchanged in the store and so left alone).
"""

from __future__ import annotations

import base64
import binascii
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fingerprint_indexer.documents import Document
from fingerprint_indexer.es.codec import DecisionWrite, Picture, image_fields
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintResult
from fingerprint_indexer.fingerprint.image import (
    ImageError,
    ImageFingerprint,
    decode,
    fingerprint_image,
    thumbnail,
)
from fingerprint_indexer.pipeline import Decision
from fingerprint_indexer.sidecar.delivery import BulkOp
from fingerprint_indexer.sidecar.es_state import Stores
from fingerprint_indexer.sidecar.worker import FingerprintPool

DUPLICATES = frozenset({"exact_duplicate", "near_duplicate"})


@dataclass(frozen=True)
class Decided:
    doc: Document
    result: FingerprintResult
    decision: Decision

    @property
    def is_duplicate(self) -> bool:
        """A copy of another kept document (what ``skip`` leaves out). A copy that replaced the group's
        canonical (``keep=longest|newest``) is the kept document now, so it is not one."""
        return self.decision.decision in DUPLICATES and self.decision.replaces is None


def decision_write(
    result: FingerprintResult, decision: Decision, layout: BlockLayout, text_length: int
) -> DecisionWrite:
    """The fields the service adds to an Elasticsearch document: the same as ``es index`` writes
    (:class:`~fingerprint_indexer.es.codec.DecisionWrite`)."""
    return DecisionWrite(result, layout, cluster_id=decision.cluster_id, duplicate_of=decision.duplicate_of,
                         distance=decision.distance, decision=decision.decision, text_length=text_length,
                         replaces=decision.replaces)


def es_fields(
    result: FingerprintResult, decision: Decision, layout: BlockLayout, text_length: int
) -> dict[str, Any]:
    """:func:`decision_write`'s fields as Python objects."""
    return decision_write(result, decision, layout, text_length).fields()


def picture_fields(encoded: Sequence[str]) -> dict[str, Any]:
    """The fields of a document's pictures sent as base64 bytes (named ``image-<n>`` in order); a picture
    that is not base64 or not a picture this package decodes is listed with its one-line error."""
    pictures: list[Picture] = []
    for n, text in enumerate(encoded):
        name = f"image-{n}"
        try:
            pictures.append(picture_of_base64(text, name))
        except ImageError as exc:
            pictures.append((name, str(exc), None))
    return image_fields(pictures)


def picture_of_base64(text: str, name: str) -> tuple[str, ImageFingerprint, str]:
    """(name, fingerprint, thumbnail) of a picture sent as base64; :class:`ImageError` for anything else."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ImageError(f"{name}: not base64") from None
    im = decode(data, name)
    return name, fingerprint_image(im), thumbnail(im)


def relink_op(index: str, decision: Decision) -> BulkOp | None:
    """The update of the canonical ``decision`` replaced (None when it replaced none)."""
    if decision.replaces is None:
        return None
    return BulkOp("update", {"_index": index, "_id": decision.replaces},
                  {"doc": {"duplicate_of": decision.id, "distance": decision.distance}}, relink=True)


async def decide(
    pool: FingerprintPool, stores: Stores, items: Sequence[tuple[str, Document]]
) -> list[Decided]:
    """Fingerprint and decide ``(index, document)`` pairs under the stores' keep policy; results in input
    order."""
    results = await pool.documents([doc for _, doc in items])
    by_index: dict[str, list[int]] = defaultdict(list)
    for i, (index, _) in enumerate(items):
        by_index[index].append(i)
    out: list[Decided | None] = [None] * len(items)
    for index, positions in by_index.items():
        pairs = [(items[i][1], results[i]) for i in positions]
        decisions = await stores.call(stores.decide, index, pairs)
        for i, (doc, res), dec in zip(positions, pairs, decisions, strict=True):
            out[i] = Decided(doc, res, dec)
    return [d for d in out if d is not None]
