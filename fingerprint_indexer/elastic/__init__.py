"""Services built on the core: Elasticsearch ingest, reindex, batch dedupe and related articles."""
