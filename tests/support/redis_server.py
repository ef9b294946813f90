"""A real redis-server on a free loopback port with no persistence (installed from Debian when missing)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.tiers import require


def ensure_redis_server() -> str:
    """The redis-server binary; as root, ``apt-get install redis-server`` when it is missing (idempotent)."""
    found = shutil.which("redis-server")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        reason = "redis-server is missing and cannot be installed here (install Debian's redis-server)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", "redis-server"]
    for cmd in (["apt-get", "update"], install):
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
        assert res.returncode == 0, f"{' '.join(cmd)} failed: {res.stderr[-2000:]}"
    found = shutil.which("redis-server")
    assert found, "apt-get installed redis-server but it is not on PATH"
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """``redis://127.0.0.1:PORT`` of a fresh server for the block (no RDB, no AOF); stopped afterwards.
    The tests that start one are marked ``runtimes``."""
    require("runtimes", "starts redis-server")
    binary = ensure_redis_server()
    port = _free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
           "--dir", str(workdir), "--daemonize", "no"]  # fmt: skip
    with open(workdir / "redis.log", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            assert proc.poll() is None, (workdir / "redis.log").read_text(errors="replace")
            assert time.monotonic() < deadline, "redis-server did not answer PING within 20 s"
            time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
