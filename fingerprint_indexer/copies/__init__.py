"""Passage-level copy detection: copied passages between two texts, partial-copy search.

The copy marks themselves (winnowing) are part of the fingerprint:
:mod:`fingerprint_indexer.fingerprint.winnow`.
"""

from __future__ import annotations

from fingerprint_indexer.copies.passages import Passage, covered, find_passages
from fingerprint_indexer.fingerprint.winnow import (
    Marks,
    WinnowParams,
    blocks,
    marked,
    marks,
    winnow,
)
from fingerprint_indexer.text.tokenize import Tokenizer

__all__ = ["CopyFinder", "Passage", "covered", "find_passages"]


class CopyFinder:
    """Copied passages between texts under one tokeniser and one pair of thresholds."""

    def __init__(self, tokenizer: Tokenizer | None = None, params: WinnowParams | None = None) -> None:
        self.tokenizer = tokenizer or Tokenizer()
        self.params = params or WinnowParams()

    def blocks(self, text: str) -> Marks:
        return blocks(text, self.tokenizer, self.params.k)

    def marks(self, text: str) -> Marks:
        """Winnowed marks of ``text`` (what the copy indexes hold)."""
        return marks(text, self.tokenizer, self.params)

    def marked(self, text: str) -> Marks:
        """All blocks of ``text`` with the winnowed ones flagged (what a store keeps)."""
        return marked(text, self.tokenizer, self.params)

    def passages(self, a: str, b: str, min_terms: int | None = None) -> list[Passage]:
        """Passages of ``a`` copied in ``b`` (exact extents: all blocks of both texts are compared)."""
        return find_passages(self.blocks(a), self.blocks(b), self.params, min_terms)

    def winnowed(self, all_blocks: Marks) -> Marks:
        return winnow(all_blocks, self.params)
