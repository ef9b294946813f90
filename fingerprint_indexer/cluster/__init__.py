"""Clustering of fingerprints (pure logic; storage is supplied by the caller)."""
