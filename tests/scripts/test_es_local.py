"""scripts/es-local against the node it runs, plus its verification and JDK selection on real files."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from elasticsearch import Elasticsearch
from support.es_node import ES_LOCAL
from support.ingest_driver import wait_spool_empty
from support.service import ServiceProcess


def _load_es_local() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("es_local_script", str(ES_LOCAL))
    spec = importlib.util.spec_from_loader("es_local_script", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


es_local = _load_es_local()


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ES_LOCAL), *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def local_node(es_url: str) -> str:
    if os.environ.get("ES_URL"):
        pytest.skip("ES_URL points at an external cluster; scripts/es-local is not in use")
    return es_url


@pytest.mark.elasticsearch
def test_status_and_url_report_the_running_node(local_node: str) -> None:
    status = _run("status", "--json")
    assert status.returncode == 0, status.stderr
    info = json.loads(status.stdout)
    assert info["running"] is True
    assert info["url"] == local_node
    assert info["health"] in ("yellow", "green")
    assert info["version"] == es_local.ES_VERSION
    assert os.getpid() in info["leases"] or info["pinned"]

    url = _run("url")
    assert url.returncode == 0, url.stderr
    assert url.stdout.strip() == local_node


@pytest.mark.elasticsearch
def test_start_when_running_is_a_noop_printing_the_url(local_node: str) -> None:
    before = json.loads(_run("status", "--json").stdout)["pid"]
    res = _run("start", "--lease", str(os.getpid()))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == local_node
    assert json.loads(_run("status", "--json").stdout)["pid"] == before


@pytest.mark.elasticsearch
def test_url_answers_with_a_9x_server(local_node: str) -> None:
    client = Elasticsearch(local_node)
    try:
        # This distribution has no `GET /` handler, so the version comes from the nodes info API.
        nodes = client.nodes.info(node_id="_local")["nodes"]
        versions = {n["version"] for n in nodes.values()}
        health = client.cluster.health()["status"]
    finally:
        client.close()
    assert len(versions) == 1
    assert versions.pop().startswith("9.")
    assert health in ("yellow", "green")


def test_verify_rejects_a_zip_with_the_wrong_digest(tmp_path: Path) -> None:
    bogus = tmp_path / "elasticsearch.zip"
    with zipfile.ZipFile(bogus, "w") as zf:
        zf.writestr("elasticsearch/README", "not the pinned distribution")
    with pytest.raises(SystemExit):
        es_local.verify_zip(bogus)
    assert not bogus.exists(), "a zip that fails verification must be removed from the cache"


def _fake_jdk(root: Path, version: str, modules: str | None) -> Path:
    (root / "bin").mkdir(parents=True)
    java = root / "bin" / "java"
    java.write_text("#!/bin/sh\nexit 0\n")
    java.chmod(0o755)
    release = f'JAVA_VERSION="{version}"\n'
    if modules is not None:
        release += f'MODULES="{modules}"\n'
    (root / "release").write_text(release)
    return root


def test_jdk_selection_needs_java_21_and_the_modules_elasticsearch_boots_with(tmp_path: Path) -> None:
    full = "java.base jdk.jlink jdk.management jdk.unsupported jdk.incubator.vector"
    assert es_local.suitable(_fake_jdk(tmp_path / "j25", "25.0.3", full)) == 25
    assert es_local.suitable(_fake_jdk(tmp_path / "j21", "21.0.5", None)) == 21
    assert es_local.suitable(_fake_jdk(tmp_path / "j17", "17.0.15", full)) is None
    trimmed = _fake_jdk(tmp_path / "trimmed", "25.0.2", "java.base jdk.management jdk.unsupported")
    assert es_local.suitable(trimmed) is None
    assert es_local.missing_modules(trimmed) == ["jdk.jlink"]


@pytest.mark.parametrize(("ci", "outcome"), [("true", "error"), ("", "skipped")])
def test_unreachable_cluster_fails_in_ci_and_skips_elsewhere(tmp_path: Path, ci: str, outcome: str) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text("def test_needs_es(es_url):\n    assert es_url\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    repo = ES_LOCAL.parents[1]  # the child imports the package and test support of this tree
    env = {**os.environ, "ES_URL": f"http://127.0.0.1:{port}", "CI": ci,
           "PYTHONPATH": os.pathsep.join([str(repo / "tests"), str(repo)])}  # fmt: skip
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "support.es_node", "-q", "-rfs", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(probe)],
        capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert f"1 {outcome}" in res.stdout, res.stdout + res.stderr  # a fixture failure counts as an error
    assert (res.returncode != 0) == (outcome == "error")
    assert f"127.0.0.1:{port}" in res.stdout


def _node_pid(*args: str) -> int:
    status = _run("status", "--json", *args)
    assert status.returncode == 0, status.stdout + status.stderr
    return int(json.loads(status.stdout)["pid"])


@pytest.mark.elasticsearch
@pytest.mark.slow
def test_a_killed_node_restarts_with_its_data_and_address_and_serve_reconnects(
    local_node: str, tmp_path: Path, en_articles: list[dict]
) -> None:
    """A node of its own (``--name``), so the session's node is not disturbed: SIGKILL it under a running
    ``serve``, write meanwhile, ``start`` again: same URL, earlier documents still there, the spooled write
    delivered by the same ``serve`` process."""
    node = ("--name", "restart-test")
    _run("stop", "--purge", *node)
    index = "fpi-test-restart"
    try:
        first = subprocess.run([sys.executable, str(ES_LOCAL), "start", *node], capture_output=True,
                               text=True, timeout=600)  # fmt: skip
        assert first.returncode == 0, first.stderr
        url = first.stdout.strip()
        a, b = en_articles[0], en_articles[1]
        with ServiceProcess(url, tmp_path / "data", "--index", index) as svc:
            body = {"documents": [{"id": "a", "content": a["content"]}], "index": True}
            r = httpx.post(f"{svc.url}/v1/ingest", json=body, timeout=60)
            assert r.json()["results"][0]["index"]["status"] == 201, r.text

            pid = _node_pid(*node)
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
            while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _run("url", *node).returncode == 3  # known to be down

            body = {"documents": [{"id": "b", "content": b["content"]}], "index": True}
            r = httpx.post(f"{svc.url}/v1/ingest", json=body, timeout=60)
            assert r.json()["results"][0]["index"]["status"] == 202, r.text  # spooled

            again = subprocess.run([sys.executable, str(ES_LOCAL), "start", *node], capture_output=True,
                                   text=True, timeout=600)  # fmt: skip
            assert again.returncode == 0, again.stderr
            assert again.stdout.strip() == url, "a restart must keep the node's address"
            assert "data and address kept" in again.stderr
            wait_spool_empty(svc.url, {}, timeout=120)
        client = Elasticsearch(url)
        try:
            client.indices.refresh(index=index)
            assert client.get(index=index, id="a")["found"], "the node lost data written before the kill"
            assert client.get(index=index, id="b")["found"], "serve did not deliver after the restart"
        finally:
            client.close()
    finally:
        _run("stop", "--purge", *node)


def _run_in(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FPI_ES_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, str(ES_LOCAL), *args], capture_output=True, text=True, timeout=60,
                          env=env, stdin=subprocess.DEVNULL)  # fmt: skip


def test_a_cluster_is_refused_where_its_name_or_size_does_not_fit(tmp_path: Path) -> None:
    """Checked before anything is provisioned or started: a name that is a single node, another size
    than the cluster recorded, an impossible size; and a cluster that never ran is reported down."""
    slug = es_local.DEFAULT.slug
    (tmp_path / "run" / f"{slug}-solo" / "node").mkdir(parents=True)
    solo = _run_in(tmp_path, "start", "--nodes", "3", "--name", "solo")
    assert solo.returncode == 2 and "'solo' is a single node" in solo.stderr
    (tmp_path / "run" / f"{slug}-trio").mkdir(parents=True)
    (tmp_path / "run" / f"{slug}-trio" / "cluster.json").write_text('{"nodes": 3}')
    five = _run_in(tmp_path, "start", "--nodes", "5", "--name", "trio")
    assert five.returncode == 2 and "has 3 nodes, not 5" in five.stderr
    single = _run_in(tmp_path, "start", "--name", "trio", "--nodes", "1")
    assert single.returncode == 2 and "is a cluster of 3 nodes" in single.stderr
    assert _run_in(tmp_path, "start", "--nodes", "0").returncode == 2
    down = _run_in(tmp_path, "status", "--name", "trio", "--json")
    assert down.returncode == 3 and json.loads(down.stdout)["running"] is False
    assert _run_in(tmp_path, "url", "--name", "trio").returncode == 3
    purged = _run_in(tmp_path, "stop", "--purge", "--name", "trio")
    assert purged.returncode == 0 and not (tmp_path / "run" / f"{slug}-trio" / "cluster.json").exists()
