"""The HTTP sidecar: ingest hook, Elasticsearch-compatible ``_bulk``/``_doc`` proxy, similar/related look-ups.

``create_app(settings)`` in :mod:`fingerprint_indexer.sidecar.app` builds the ASGI application;
``fingerprint-indexer serve`` runs it under uvicorn.
"""
