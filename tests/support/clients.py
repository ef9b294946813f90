"""The official Node.js and Java Elasticsearch clients for the client suite, installed by the suite itself.

``node_driver()`` installs ``@elastic/elasticsearch`` (pinned in ``clients/package.json``) with npm and
``java_driver()`` resolves ``elasticsearch-java`` (pinned in ``clients/pom.xml``) from Maven Central with
``mvn dependency:copy-dependencies`` and compiles ``clients/Driver.java``. Both are cached per user under
``FPI_CLIENTS_CACHE`` (default ``${XDG_CACHE_HOME:-~/.cache}/fingerprint_indexer/clients``), keyed by the
content of those files, behind a file lock, so a second run installs nothing. Missing tools (``node``,
``npm``, ``mvn``, ``javac``) are installed from Debian's packages when running as root (``apt-get update``
first); elsewhere the tests that need them are skipped, and fail in CI. The tests that run them are
marked ``runtimes``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.tiers import require

HERE = Path(__file__).resolve().parent / "clients"
#: tool -> the Debian package that provides it
DEBIAN = {"node": "nodejs", "npm": "npm", "mvn": "maven", "javac": "default-jdk-headless",
          "java": "default-jdk-headless"}
INSTALL_TIMEOUT_S = 1200


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"client suite cannot run (CI is set, so this fails): {reason}", pytrace=False)
    pytest.skip(reason)


def cache_root() -> Path:
    base = os.environ.get("FPI_CLIENTS_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "fingerprint_indexer" / "clients"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_tools(*tools: str) -> None:
    """Each tool on PATH; as root, missing ones are installed from Debian's packages."""
    missing = [t for t in tools if shutil.which(t) is None]
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        _unavailable(f"{', '.join(missing)} not installed (and not root, so not installed here)")
    packages = sorted({DEBIAN[t] for t in missing})
    with _locked(cache_root() / "apt.lock"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-q"], check=False, capture_output=True,
                       timeout=INSTALL_TIMEOUT_S)
        res = subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages],
                             env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    if res.returncode != 0 or any(shutil.which(t) is None for t in tools):
        _unavailable(f"apt-get install {' '.join(packages)} failed: {res.stderr[-2000:]}")


def _key(*files: Path) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    try:
        res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        _unavailable(f"{what} did not finish within {INSTALL_TIMEOUT_S}s")
        return
    if res.returncode != 0:
        _unavailable(f"{what} failed (exit {res.returncode}): {(res.stdout + res.stderr)[-3000:]}")


def node_driver(script: Path = HERE / "driver.mjs") -> list[str]:
    """The command that runs ``script`` (an ES module; default ``clients/driver.mjs``) with the official
    Node.js client installed beside it (modules resolve from the script's folder, so it is copied there)."""
    require("runtimes", "runs the Node.js client")
    ensure_tools("node", "npm")
    src = HERE / "package.json"
    home = cache_root() / f"node-{_key(src)}"
    with _locked(cache_root() / "node.lock"):
        if not (home / ".done").exists():
            home.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, home / "package.json")
            _run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], home, "npm install")
            (home / ".done").touch()
        target = home / f"{script.stem}-{_key(script)}.mjs"
        if not target.exists():
            shutil.copy(script, target)
    return ["node", str(target)]


def java_driver() -> list[str]:
    """The command that runs ``clients/Driver.java`` with the official Java client on the class path."""
    require("runtimes", "runs the Java client")
    ensure_tools("mvn", "javac", "java")
    pom, source = HERE / "pom.xml", HERE / "Driver.java"
    home = cache_root() / f"java-{_key(pom, source)}"
    with _locked(cache_root() / "java.lock"):
        if not (home / ".done").exists():
            home.mkdir(parents=True, exist_ok=True)
            shutil.copy(pom, home / "pom.xml")
            _run(["mvn", "-B", "-q", "-f", "pom.xml", "dependency:copy-dependencies",
                  "-DoutputDirectory=lib"], home, "mvn dependency:copy-dependencies")
            _run(["javac", "-encoding", "UTF-8", "-d", str(home / "classes"), "-cp", str(home / "lib" / "*"),
                  str(source)], home, "javac Driver.java")
            (home / ".done").touch()
    classpath = f"{home / 'classes'}{os.pathsep}{home / 'lib' / '*'}"
    return ["java", "-Dfile.encoding=UTF-8", "-cp", classpath, "Driver"]
