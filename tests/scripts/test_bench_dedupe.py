"""bench_dedupe.py times the decision step on a small corpus, and says what its instruction count needs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_dedupe.py"


def _corpus(path: Path) -> Path:
    texts = ["今天上午，市政府召开新闻发布会，介绍了全市交通建设的最新进展。",
             "The council approved the new budget on Tuesday after a long debate."]
    with path.open("w", encoding="utf-8") as f:
        for i in range(40):
            doc = {"id": f"d{i}", "content": f"{texts[i % 2]} {i % 7}"}
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
    return path


def test_decision_step_is_timed_per_document(tmp_path):
    corpus, cache = _corpus(tmp_path / "c.jsonl"), tmp_path / "c.pkl"
    for _ in range(2):  # the cache is written, then read
        p = subprocess.run([sys.executable, str(SCRIPT), "--decide", "--corpus", str(corpus), "--cache",
                            str(cache), "--rounds", "1", "--batch-size", "16"],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        assert "40 documents, batch 16" in p.stdout
        assert re.search(r"round 0: [\d.]+ CPU s, \d+ µs per document", p.stdout)
    assert cache.exists()


def test_instruction_count_says_what_it_needs(tmp_path):
    corpus = _corpus(tmp_path / "c.jsonl")
    no_valgrind = {**os.environ, "PATH": str(tmp_path)}  # nothing on it
    p = subprocess.run([sys.executable, str(SCRIPT), "--decide", "--corpus", str(corpus),
                        "--instructions", "8"], capture_output=True, text=True, timeout=300, env=no_valgrind)
    assert p.returncode == 1 and "--instructions needs --cache" in p.stderr
    p = subprocess.run([sys.executable, str(SCRIPT), "--decide", "--corpus", str(corpus), "--cache",
                        str(tmp_path / "c.pkl"), "--instructions", "8"],
                       capture_output=True, text=True, timeout=300, env=no_valgrind)
    assert p.returncode == 1 and "--instructions needs valgrind" in p.stderr
