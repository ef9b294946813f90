"""bench_gil.py times each step alone and beside a busy thread, and reports both."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_gil.py"


def test_each_case_is_timed_alone_and_beside_a_busy_thread(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    with corpus.open("w", encoding="utf-8") as f:
        text = "今天上午，市政府召开新闻发布会，介绍了全市交通建设的最新进展。"
        for i in range(40):
            doc = {"id": f"d{i}", "content": f"{text}{i % 7}"}
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
    p = subprocess.run([sys.executable, str(SCRIPT), "--corpus", str(corpus), "--docs", "40", "--rounds", "1",
                        "--batch-size", "16", "--puts", "100"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "40 documents of c.jsonl" in p.stdout
    for case in ("put", "dict put", "per doc", "per chunk", "decide"):
        assert re.search(rf"^{case} +[\d.]+ +[\d.]+ +[\d.]+x +[\d.]+ +[\d.]+$", p.stdout, re.M), case
