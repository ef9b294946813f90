"""Exact-identity digests: of the whole normalised text (with the headline when the text alone cannot tell
articles apart), and of the sorted top keywords."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from fingerprint_indexer.text.clean import compact


def content_digest(normalized_text: str) -> str:
    """128-bit BLAKE2b of the text with all whitespace removed: equal for reformatted copies."""
    return hashlib.blake2b(compact(normalized_text).encode("utf-8"), digest_size=16).hexdigest()


def titled_digest(body_digest: str, normalized_title: str) -> str:
    """The content digest of a degenerate document (too few terms to fingerprint): of its headline and its
    body's digest. A body that short is often what a failed scrape kept of a page (the site's slogan, a
    word like "undefined") under many different headlines; the same text under another headline is then
    another article, not an exact copy."""
    data = compact(normalized_title).encode("utf-8") + b"\x00" + body_digest.encode("ascii")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def keyword_digest(keywords: Iterable[str]) -> str:
    """64-bit BLAKE2b of the keywords sorted: the exact "semantic fingerprint" of the seed design."""
    body = "\n".join(sorted(keywords))
    return hashlib.blake2b(body.encode("utf-8"), digest_size=8).hexdigest()
