"""Shared fixtures: the real corpora and (from support.es_node) a real Elasticsearch node."""

from __future__ import annotations

import pytest
from support.corpus import EN_BBC, ZH_NEWS, load_records


@pytest.fixture(scope="session")
def zh_articles() -> list[dict]:
    """Real Chinese news articles of at least 600 characters (first 400 in file order)."""
    return load_records(ZH_NEWS, limit=400, min_chars=600)


@pytest.fixture(scope="session")
def en_articles() -> list[dict]:
    """Real English BBC articles of at least 1,000 characters (first 200 in file order)."""
    return load_records(EN_BBC, limit=200, min_chars=1000)


# A real Elasticsearch node for the tests that ask for it (started once per session), and a real three-node
# cluster for the tests that kill nodes (started only when one of them runs).
from support.es_cluster import es_cluster  # noqa: E402,F401
from support.es_node import es_client, es_client_kwargs, es_env, es_index, es_url  # noqa: E402,F401
