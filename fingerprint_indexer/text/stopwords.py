"""Stopword lists shipped as package data."""

from __future__ import annotations

from functools import cache
from importlib import resources


def _read_list(name: str) -> frozenset[str]:
    text = resources.files("fingerprint_indexer.text").joinpath("data", name).read_text(encoding="utf-8")
    return frozenset(w.strip() for w in text.splitlines() if w.strip() and not w.startswith("#"))


@cache
def default_stopwords() -> frozenset[str]:
    """Chinese and English stopwords together (tokens are lower-cased before lookup)."""
    return _read_list("stopwords_zh.txt") | _read_list("stopwords_en.txt")
