"""64-bit weighted SimHash fingerprints, digests and block keys.

The names below are imported on first use (PEP 562), so that importing one light submodule (say
:mod:`fingerprint_indexer.fingerprint.hamming`) does not import NumPy and the whole pipeline.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fingerprint_indexer.fingerprint.blocks import BlockLayout
    from fingerprint_indexer.fingerprint.fingerprinter import (
        FingerprintConfig,
        Fingerprinter,
        FingerprintResult,
        fingerprint_many,
    )
    from fingerprint_indexer.fingerprint.hamming import hamming

_WHERE = {
    "BlockLayout": "blocks",
    "FingerprintConfig": "fingerprinter",
    "FingerprintResult": "fingerprinter",
    "Fingerprinter": "fingerprinter",
    "fingerprint_many": "fingerprinter",
    "hamming": "hamming",
}

__all__ = [
    "BlockLayout",
    "FingerprintConfig",
    "FingerprintResult",
    "Fingerprinter",
    "fingerprint_many",
    "hamming",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
