"""The Elasticsearch adapter: everything that speaks to an Elasticsearch (or OpenSearch) server, below
every store and job that uses one.

- :mod:`.servers`: which server is at the other end and its wire format (dialects);
- :mod:`.connection`: a client for the configured URL (settings, retries, one check);
- :mod:`.errors`: the adapter's errors;
- :mod:`.codec`: the document fields a fingerprint is written as and read back from;
- :mod:`.mapping`: the shipped mapping, the one index-creation rule and the index admin calls;
- :mod:`.scan`: reading every hit of a query from a point-in-time snapshot.

The near-duplicate backend built on these is :mod:`fingerprint_indexer.index.elasticsearch`.
"""
