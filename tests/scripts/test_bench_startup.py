"""bench_startup.py runs end to end at its smallest and reports every case as JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_startup.py"


def test_one_run_reports_medians_and_load(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, str(SCRIPT), "--runs", "1", "--corpus", str(tmp_path / "absent")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert {"help", "distance-hex", "distance-text-zh", "distance-text-zh-nocache"} <= set(report["commands"])
    assert "dedupe" not in report["commands"]  # no corpus: the case is skipped, not failed
    assert all(c["median_s"] > 0 for c in report["commands"].values())
    tables = {"idf-parse", "idf-cache", "dictionary-parse", "dictionary-cache"}
    assert set(report["tables_in_process"]) == tables
    assert len(report["load_average_before"]) == 3
