"""bench_index.py runs end to end at a tiny size, and its backends agree with brute force there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_index.py"


def test_quick_run_reports_every_backend(tmp_path):
    out = tmp_path / "bench.json"
    p = subprocess.run([sys.executable, str(SCRIPT), "--sizes", "20000", "--pairs-size", "20000",
                        "--simhash-size", "2000", "--queries", "200", "--brute-queries", "20",
                        "--workdir", str(tmp_path / "work"), "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    res = json.loads(out.read_text())
    row = res["sizes"][0]
    assert row["n"] == 20000 and row["memory"]["hits"] > 0
    assert {"brute", "memory", "leveldb", "simhash_pkg"} <= set(row)
    assert row["memory"]["array_bytes_per_fp"] <= 40
    assert res["pairs"]["pairs"] > 0
    assert "| 20,000 | memory |" in p.stdout
