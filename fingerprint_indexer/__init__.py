"""Near-duplicate detection for news: SimHash fingerprints, block-key candidate index, embedded store."""

__version__ = "0.1.0"
