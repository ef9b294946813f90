"""Shared fixtures: the real corpora, (from support.es_node) a real Elasticsearch node and (from
support.browser) a headless browser; and the markers that say which tier each test is in (support.tiers)."""

from __future__ import annotations

from collections.abc import Generator

import pytest
from support import tiers
from support.corpus import EN_BBC, ZH_NEWS, load_records


@pytest.hookimpl(tryfirst=True)  # before -m selects by markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses Elasticsearch, the three-node cluster or the browser through a fixture is marked so;
    a test that needs none of the heavy things is marked ``fast`` (the everyday tier)."""
    tiers.mark(items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """The running test, for support.tiers.require (helpers that start a server check its markers)."""
    tiers.set_current(item)
    try:
        return (yield)
    finally:
        tiers.set_current(None)


@pytest.fixture(scope="session")
def zh_articles() -> list[dict]:
    """Real Chinese news articles of at least 600 characters (first 400 in file order)."""
    return load_records(ZH_NEWS, limit=400, min_chars=600)


@pytest.fixture(scope="session")
def en_articles() -> list[dict]:
    """Real English BBC articles of at least 1,000 characters (first 200 in file order)."""
    return load_records(EN_BBC, limit=200, min_chars=1000)


# A real Elasticsearch node for the tests that ask for it (started once per session), a real three-node
# cluster for the tests that kill nodes (started only when one of them runs), and headless Chromium.
from support.browser import browser  # noqa: E402,F401
from support.es_cluster import es_cluster  # noqa: E402,F401
from support.es_node import es_client, es_client_kwargs, es_env, es_index, es_url  # noqa: E402,F401
