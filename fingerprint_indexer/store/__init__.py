"""Persistent embedded store: exact records, Bloom filter and block index in one LevelDB directory."""
