"""64-bit weighted SimHash fingerprints, digests and block keys."""

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.fingerprinter import (
    FingerprintConfig,
    Fingerprinter,
    FingerprintResult,
    fingerprint_many,
)
from fingerprint_indexer.fingerprint.hamming import hamming

__all__ = [
    "BlockLayout",
    "FingerprintConfig",
    "FingerprintResult",
    "Fingerprinter",
    "fingerprint_many",
    "hamming",
]
