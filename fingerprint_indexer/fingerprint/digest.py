"""Exact-identity digests: of the whole normalised text, and of the sorted top keywords."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from fingerprint_indexer.text.clean import compact


def content_digest(normalized_text: str) -> str:
    """128-bit BLAKE2b of the text with all whitespace removed: equal for reformatted copies."""
    return hashlib.blake2b(compact(normalized_text).encode("utf-8"), digest_size=16).hexdigest()


def keyword_digest(keywords: Iterable[str]) -> str:
    """64-bit BLAKE2b of the keywords sorted: the exact "semantic fingerprint" of the seed design."""
    body = "\n".join(sorted(keywords))
    return hashlib.blake2b(body.encode("utf-8"), digest_size=8).hexdigest()
