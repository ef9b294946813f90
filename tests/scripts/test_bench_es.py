"""bench_es.py's instruction count says in one line what it needs, before it connects to anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_es.py"


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "ES_URL"}
    return subprocess.run([sys.executable, str(SCRIPT), "--instructions", "8", *args], capture_output=True,
                          text=True, timeout=300, env={**base, **env})  # fmt: skip


def test_instruction_count_says_what_it_needs(tmp_path):
    p = _run(tmp_path, "--es", "http://127.0.0.1:9")
    assert p.returncode == 1 and "--instructions needs --cache" in p.stderr
    p = _run(tmp_path, "--cache", str(tmp_path / "c.pkl"))
    assert p.returncode == 1 and "--instructions needs --es or ES_URL" in p.stderr
    cache = tmp_path / "c.pkl"
    cache.write_bytes(b"")  # present: nothing is fingerprinted before valgrind is looked for
    p = _run(tmp_path, "--es", "http://127.0.0.1:9", "--cache", str(cache), PATH=str(tmp_path))
    assert p.returncode == 1 and "--instructions needs valgrind" in p.stderr
