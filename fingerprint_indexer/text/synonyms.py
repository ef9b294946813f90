"""Synonym maps: ``variant<TAB>canonical`` per line, applied to tokens after segmentation."""

from __future__ import annotations

import hashlib
import unicodedata
from pathlib import Path

from fingerprint_indexer.errors import FingerprintIndexerError


class SynonymFileError(FingerprintIndexerError, ValueError):
    """A synonym file line that is not ``variant<TAB>canonical``."""


def load_synonyms(path: str | Path) -> dict[str, str]:
    """Read a synonym file; blank lines and ``#`` comments are ignored; keys are normalised like tokens."""
    mapping: dict[str, str] = {}
    p = Path(path)
    for lineno, raw in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise SynonymFileError(f"{p}:{lineno}: expected 'variant<TAB>canonical', got {raw!r}")
        variant, canonical = (unicodedata.normalize("NFKC", s.strip()).lower() for s in parts)
        mapping[variant] = canonical
    return mapping


def synonyms_id(mapping: dict[str, str]) -> str:
    """Short stable identifier of a synonym map, part of the fingerprint version."""
    if not mapping:
        return "none"
    body = "\n".join(f"{k}\t{v}" for k, v in sorted(mapping.items()))
    return hashlib.blake2b(body.encode("utf-8"), digest_size=4).hexdigest()
