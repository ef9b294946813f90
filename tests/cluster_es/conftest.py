"""Fixtures of the three-node cluster tests: a client of the cluster and a fresh index name on it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch
from support.es_cluster import LocalCluster


@pytest.fixture
def cluster_client(es_cluster: LocalCluster) -> Iterator[Elasticsearch]:
    client = es_cluster.client()
    yield client
    client.close()


@pytest.fixture
def cluster_index(cluster_client: Elasticsearch, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh index name on the cluster; what ``es setup`` creates behind it is deleted afterwards."""
    name = f"fpi-cluster-{request.node.name.lower().replace('_', '-')[:40]}-{time.time_ns() % 10**8}"
    yield name
    concrete = list(cluster_client.indices.get(index=f"{name},{name}-*", ignore_unavailable=True,
                                               allow_no_indices=True))  # fmt: skip
    if concrete:
        cluster_client.indices.delete(index=",".join(concrete), ignore_unavailable=True)
