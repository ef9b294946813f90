"""Run the real service (``fingerprint-indexer serve``) as a subprocess on a loopback port."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

START_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServiceProcess:
    """One service process; ``start`` waits until it answers /healthz."""

    def __init__(self, es_url: str | None, data_dir: Path, *extra: str, api_key: str | None = None,
                 port: int | None = None, processes: int = 1, log: Path | None = None,
                 command: str = "serve") -> None:
        """``es_url`` None: no Elasticsearch (the embedded store alone); ``command`` ``explore`` serves the
        store ``data_dir`` read-only."""
        self.es_url, self.data_dir, self.extra, self.command = es_url, data_dir, list(extra), command
        self.api_key, self.processes = api_key, processes
        self.port = port or free_port()
        self.log = log or data_dir.parent / f"service-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def headers(self) -> dict[str, str]:
        return {"X-API-Key": self.api_key} if self.api_key else {}

    def start(self) -> ServiceProcess:
        env = {k: v for k, v in os.environ.items() if k not in ("FPI_API_KEY", "ES_URL")}
        if self.api_key:
            env["FPI_API_KEY"] = self.api_key
        cmd = [sys.executable, "-m", "fingerprint_indexer.cli.main", self.command]
        if self.command == "explore":
            cmd += [str(self.data_dir)]
        else:
            cmd += ["--store", str(self.data_dir), "--no-access-log"]
            cmd += ["--es", self.es_url] if self.es_url else []
        cmd += ["--port", str(self.port), "--processes", str(self.processes), "--log-level", "warning",
                *self.extra]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                         stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"service exited with {self.proc.returncode}: {self.log_text()[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"service did not start within {START_TIMEOUT_S}s: {self.log_text()[-3000:]}")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def children(self) -> set[int]:
        """Pids of the service's child processes (its fingerprint workers)."""
        assert self.proc is not None
        out: set[int] = set()
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            with contextlib.suppress(OSError):
                out.update(int(p) for p in (task / "children").read_text().split())
        return out

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM (graceful: in-flight requests finish) and wait; SIGKILL if it hangs."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
            raise

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def running(procs: list[ServiceProcess]) -> Iterator[list[ServiceProcess]]:
    """Start every service of ``procs``; stop them all afterwards (also those that failed to start)."""
    try:
        for p in procs:
            p.start()
        yield procs
    finally:
        for p in procs:
            p.stop()
