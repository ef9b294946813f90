"""What verification reads of one document, whatever store it comes from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Evidence:
    """A document's fingerprints (document first, then lead and chunks), sketch bytes, facts and frames.

    Built from a fresh fingerprint, an embedded store record or an Elasticsearch document alike, so
    :func:`fingerprint_indexer.verification.check` is the one rule for all of them.
    """

    fingerprints: Sequence[int]
    sketch: bytes = b""
    facts: Sequence[str] = ()
    frames: Sequence[int] = ()
