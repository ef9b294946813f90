"""A real service process on loopback in front of the real local Elasticsearch, shared by a module."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from elasticsearch import Elasticsearch
from support.service import ServiceProcess

API_KEY = "test-key-" + "x" * 24


@pytest.fixture(scope="module")
def service(es_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """The service with an API key, default index unique to the module."""
    data = tmp_path_factory.mktemp("svc") / "data"
    index = f"fpi-test-svc-{uuid.uuid4().hex[:10]}"
    # two worker processes: serve's default
    with ServiceProcess(es_url, data, "--index", index, api_key=API_KEY, processes=2) as svc:
        svc.default_index = index  # type: ignore[attr-defined]
        yield svc
    client = Elasticsearch(es_url)
    client.indices.delete(index=index, ignore_unavailable=True)
    client.close()


@pytest.fixture
def http(service: ServiceProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service.url, headers=service.headers(), timeout=60) as client:
        yield client


@pytest.fixture
def svc_index(es_client: Elasticsearch) -> Iterator[str]:
    """A fresh index name for one test (deleted afterwards)."""
    name = f"fpi-test-svc-{uuid.uuid4().hex[:12]}"
    yield name
    es_client.indices.delete(index=name, ignore_unavailable=True)

