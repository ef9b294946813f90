"""The repost-robust fingerprint set measured in docs/quality.md, as one pure function of a text.

For a normalised text: strip page furniture, weight every term by ``tf ** TF_POWER * idf`` (a strong
emphasis on the article's recurring terms, which edits and boilerplate rarely touch), fold the document
SimHash, add one SimHash per content-defined chunk, and keep a MinHash sketch for the second stage.
This is the configuration proposed as the new default; :class:`~fingerprint_indexer.fingerprint.
fingerprinter.Fingerprinter` can adopt it piece by piece (see docs/quality.md, "Recommended defaults").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.fingerprint.chunks import CHUNK_EVERY, chunk_fingerprints, weighted_simhash
from fingerprint_indexer.fingerprint.sketch import sketch
from fingerprint_indexer.text.boilerplate import strip_boilerplate
from fingerprint_indexer.text.tokenize import Tokenizer
from fingerprint_indexer.text.weights import IdfTable, jieba_idf, top_terms

TF_POWER = 3.0


@dataclass(frozen=True)
class RepostPrint:
    """Document fingerprint first, then chunk fingerprints; the sketch; the top terms for explanations."""

    fingerprints: tuple[int, ...]
    sketch: npt.NDArray[np.uint32]
    top_terms: tuple[str, ...]

    @property
    def document(self) -> int:
        return self.fingerprints[0]


class RepostFingerprinter:
    """Fingerprints normalised text (from :func:`fingerprint_indexer.text.clean.clean`) for reposts."""

    def __init__(
        self,
        tokenizer: Tokenizer | None = None,
        idf: IdfTable | None = None,
        tf_power: float = TF_POWER,
        chunk_every: int = CHUNK_EVERY,
        strip: bool = True,
    ) -> None:
        self.tokenizer = tokenizer or Tokenizer()
        self.idf = idf or jieba_idf()
        self.tf_power = tf_power
        self.chunk_every = chunk_every
        self.strip = strip

    def weigh(self, counts: Mapping[str, int]) -> list[tuple[str, float]]:
        """All terms, weighted ``tf ** tf_power * idf``, heaviest first."""
        terms = top_terms(counts, self.idf, len(counts))
        return [(t, counts[t] ** self.tf_power * self.idf.weight(t)) for t, _ in terms]

    def fingerprint_text(self, text: str) -> RepostPrint:
        body = strip_boilerplate(text) if self.strip else text
        weighted = self.weigh(self.tokenizer.count(body))
        doc = weighted_simhash(weighted)
        chunks = chunk_fingerprints(body, self.tokenizer.count, self.weigh, every=self.chunk_every)
        fps = (doc, *(c for c in chunks if c != doc))
        return RepostPrint(fps, sketch(body), tuple(t for t, _ in weighted[:10]))
