"""What verification reads of one document, whatever store it comes from."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from fingerprint_indexer.fingerprint.sketch import band_keys


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

    @functools.cached_property
    def band_keys(self) -> tuple[str, ...]:
        """The sketch's band keys (:func:`~fingerprint_indexer.fingerprint.sketch.band_keys`), made once:
        a batch's look-ahead, the document's look-up and its write all read them."""
        return band_keys(self.sketch)
