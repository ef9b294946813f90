"""A real three-node Elasticsearch cluster for the tests that kill and restart nodes.

``scripts/es-local start --nodes 3 --name pytest-cluster`` runs it once per test session on its own ports
and directories, beside the single node the rest of the suite uses (which keeps running meanwhile); it
is leased by the test process and stopped at the end. A cluster that cannot start fails the run when
``CI`` is set and skips the dependent tests otherwise, as for the single node.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from support.es_node import ES_LOCAL, MAIN_DISTRIBUTION, START_TIMEOUT_S, _unavailable, es_client_kwargs
from support.tiers import require

__all__ = ["CLUSTER_NAME", "NODES", "LocalCluster", "es_cluster", "es_local"]

#: The es-local name of the test cluster (its nodes are ``fpi-<name>-1`` ... ``-3``).
CLUSTER_NAME = "pytest-cluster"
NODES = 3


def es_local(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``scripts/es-local`` on the test cluster."""
    cmd = [sys.executable, str(ES_LOCAL), *args, "--distribution", MAIN_DISTRIBUTION, "--name", CLUSTER_NAME]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@dataclass
class LocalCluster:
    """The running test cluster: its node URLs, and node-level control through es-local."""

    urls: list[str]

    @property
    def url(self) -> str:
        """All node URLs, comma-separated, as ``--es`` and ``ES_URL`` take them."""
        return ",".join(self.urls)

    def client(self) -> Elasticsearch:
        return Elasticsearch(self.urls, **es_client_kwargs())

    def status(self) -> dict[str, Any]:
        res = es_local("status", "--json")
        return dict(json.loads(res.stdout))

    def pid_of(self, node_name: str) -> int:
        """The process id of the node called ``node_name`` (as Elasticsearch names it)."""
        for node in self.status()["nodes"]:
            if node["name"] == node_name and node["pid"]:
                return int(node["pid"])
        raise LookupError(f"node {node_name!r} does not run: {self.status()}")

    def kill(self, node_name: str) -> int:
        """SIGKILL one node (no shutdown of any kind) and wait until its process is gone."""
        pid = self.pid_of(node_name)
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        return pid

    def start(self) -> subprocess.CompletedProcess[str]:
        """``es-local start`` again: brings back the nodes that no longer run, with their data."""
        return es_local("start", "--nodes", str(NODES), "--lease", str(os.getpid()), timeout=START_TIMEOUT_S)


@pytest.fixture(scope="session")
def es_cluster() -> Iterator[LocalCluster]:
    """A green three-node cluster of the suite's main distribution, started (or reused) by es-local."""
    require("cluster", "starts the three-node cluster")
    try:
        res = es_local("start", "--nodes", str(NODES), "--lease", str(os.getpid()), timeout=START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _unavailable(f"scripts/es-local start --nodes {NODES} did not finish within {START_TIMEOUT_S}s")
    if res.returncode != 0:
        _unavailable(f"scripts/es-local start --nodes {NODES} failed (exit {res.returncode}):\n"
                     f"{res.stderr[-4000:]}")  # fmt: skip
    try:
        yield LocalCluster(res.stdout.strip().splitlines()[-1].split(","))
    finally:
        es_local("stop", "--lease", str(os.getpid()))
