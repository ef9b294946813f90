"""Pytest fixtures for a real Elasticsearch node.

``ES_URL`` (with optional ``ES_API_KEY``, ``ES_USERNAME``/``ES_PASSWORD``, ``ES_CA_CERTS``) points the tests
at an existing cluster; otherwise ``scripts/es-local start`` provides a local node once per test session and
it is stopped at the end unless something else still uses it.  An unreachable Elasticsearch fails the run when
``CI`` is set and skips the dependent tests otherwise.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from elasticsearch import Elasticsearch

from fingerprint_indexer.es.servers import hosts
from support.tiers import require

__all__ = ["ES_ENV", "ES_LOCAL", "MAIN_DISTRIBUTION", "es_client", "es_client_kwargs", "es_env", "es_index",
           "es_url",
           "local_node"]

REPO_ROOT = Path(__file__).resolve().parents[2]
ES_LOCAL = REPO_ROOT / "scripts" / "es-local"
#: The server the whole suite runs against (the compatibility suite adds the others).
MAIN_DISTRIBUTION = "elasticsearch:9.5.2"
START_TIMEOUT_S = 1200  # first run downloads ~130 MB and may install Maven
#: The variables through which the CLI and the service take Elasticsearch credentials and TLS settings.
ES_ENV = ("ES_CA_CERTS", "ES_API_KEY", "ES_USERNAME", "ES_PASSWORD", "ES_VERIFY_CERTS")


def _unavailable(reason: str) -> NoReturn:
    """In CI a missing Elasticsearch is a failure, never a skip."""
    if os.environ.get("CI"):
        pytest.fail(f"Elasticsearch unavailable (CI is set, so this fails): {reason}", pytrace=False)
    pytest.skip(f"Elasticsearch unavailable: {reason}")


def es_client_kwargs() -> dict[str, Any]:
    """Client options from ES_API_KEY, ES_USERNAME/ES_PASSWORD and ES_CA_CERTS."""
    kwargs: dict[str, Any] = {"request_timeout": 60}
    if os.environ.get("ES_API_KEY"):
        kwargs["api_key"] = os.environ["ES_API_KEY"]
    elif os.environ.get("ES_USERNAME"):
        kwargs["basic_auth"] = (os.environ["ES_USERNAME"], os.environ.get("ES_PASSWORD", ""))
    if os.environ.get("ES_CA_CERTS"):
        kwargs["ca_certs"] = os.environ["ES_CA_CERTS"]
    return kwargs


def _check_reachable(url: str) -> None:
    client = Elasticsearch(hosts(url), **es_client_kwargs())
    try:
        status = client.cluster.health(wait_for_status="yellow", timeout="30s")["status"]
    except Exception as exc:  # any transport or API error means "not usable"
        _unavailable(f"{url} did not answer cluster health: {exc}")
    finally:
        client.close()
    if status not in ("yellow", "green"):
        _unavailable(f"{url} cluster health is {status}")


@contextlib.contextmanager
def local_node(distribution: str) -> Iterator[str]:
    """URL of the ``scripts/es-local`` node of ``distribution``, leased by this process for the block (the
    node stops afterwards unless something else still uses it; its data is kept for the next start)."""
    require("elasticsearch", f"starts an Elasticsearch node ({distribution})")
    lease = str(os.getpid())
    cmd = [sys.executable, str(ES_LOCAL), "start", "--distribution", distribution, "--lease", lease]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=START_TIMEOUT_S,
                             stdin=subprocess.DEVNULL)  # fmt: skip
    except subprocess.TimeoutExpired:
        _unavailable(f"scripts/es-local start did not finish within {START_TIMEOUT_S}s")
    if res.returncode != 0:
        _unavailable(f"scripts/es-local start failed (exit {res.returncode}):\n{res.stderr[-4000:]}")
    try:
        yield res.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(
            [sys.executable, str(ES_LOCAL), "stop", "--distribution", distribution, "--lease", lease],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip


@pytest.fixture(scope="session")
def es_url() -> Iterator[str]:
    """URL of a healthy Elasticsearch 9 cluster for this test session."""
    require("elasticsearch", "uses Elasticsearch")
    external = os.environ.get("ES_URL")
    if external:
        _check_reachable(external)
        yield external
        return
    with local_node(MAIN_DISTRIBUTION) as url:
        _check_reachable(url)
        yield url


@pytest.fixture(scope="session")
def es_client(es_url: str) -> Iterator[Elasticsearch]:
    """The official client connected to :func:`es_url`."""
    client = Elasticsearch(hosts(es_url), **es_client_kwargs())
    yield client
    client.close()


@pytest.fixture
def es_index(es_client: Elasticsearch, request: pytest.FixtureRequest) -> Iterator[str]:
    """A unique index name for one test; the index (if created, also ``name-*``) is deleted afterwards."""
    stem = re.sub(r"[^a-z0-9_-]+", "-", request.node.name.lower()).strip("-_")[:60] or "test"
    name = f"fpi-test-{stem}-{uuid.uuid4().hex[:10]}"
    yield name
    # the name may have become an alias (``es setup`` creates name-000001 behind it): delete what it points to
    pattern = f"{name},{name}-*"
    concrete = list(es_client.indices.get(index=pattern, ignore_unavailable=True, allow_no_indices=True))
    if concrete:
        es_client.indices.delete(index=",".join(concrete), ignore_unavailable=True)


@pytest.fixture
def es_env(monkeypatch: pytest.MonkeyPatch, es_client: Elasticsearch) -> pytest.MonkeyPatch:
    """A clean slate of the ES_* credential/TLS variables (the test's own client is made already)."""
    for name in ES_ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch
