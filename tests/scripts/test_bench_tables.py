"""bench_tables.py runs end to end at a tiny size and reports both kinds of tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fingerprint_indexer.fingerprint import native

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_tables.py"


def test_quick_run_reports_both_tables():
    p = subprocess.run([sys.executable, str(SCRIPT), "--sizes", "3000", "--puts", "300", "--seconds", "0.03"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    kinds = [r["tables"] for r in rows if "tables" in r]
    assert kinds == (["reference", "compiled"] if native.enabled() else ["reference"])
    assert all(r["size"] == 3300 and r["query_8_budget_4096"] > 0 for r in rows if "tables" in r)
    assert "load_average_start" in rows[0] and "load_average_end" in rows[-1]
