"""bench_scrapy.py crawls a local site with the pipeline, and with another checkout's beside it."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "bench_scrapy.py"


@pytest.mark.slow  # two crawls in fresh processes
def test_a_crawl_timed_per_thread_shows_the_decision_step_off_the_worker(tmp_path: Path) -> None:
    """``--per-thread``: the pipeline's own calls timed inside a real crawl. The decision step runs on the
    reactor thread, so its CPU is counted beside the worker thread's, and none of it on the worker."""
    corpus = tmp_path / "c.jsonl.gz"
    with gzip.open(corpus, "wt", encoding="utf-8") as f:
        for i in range(24):
            text = f"第{i}条消息：市政府召开新闻发布会，介绍了全市交通建设的最新进展。\n地铁{i}号线年底通车。"
            f.write(json.dumps({"title": f"新闻{i}", "content": text}, ensure_ascii=False) + "\n")
    p = subprocess.run([sys.executable, str(SCRIPT), "--corpus", str(corpus), "--docs", "24", "--rounds", "1",
                        "--cases", "pipeline", "--per-thread", "--baseline", str(REPO)],
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    for name in ("pipeline", "baseline"):
        split = re.search(rf"^# round 1 {name}: .* per thread own=([\d.]+) worker=([\d.]+) decide=([\d.]+) "
                          r"fingerprint=([\d.]+) decide_off_worker=([\d.]+)$", p.stdout, re.M)  # fmt: skip
        assert split, p.stdout
        own, worker, decide, _fingerprint, off_worker = map(float, split.groups())
        assert decide > 0 and off_worker == decide, "the decision step ran on the reactor thread"
        assert abs(own - worker - off_worker) < 0.002
        assert re.search(rf"^{name} own threads +[\d.]+s", p.stdout, re.M)
    assert re.search(r"^own threads vs baseline +[\d.]+x", p.stdout, re.M)
    assert not re.search(r"^(pipeline-b1|decide)\b", p.stdout, re.M), "--cases runs only the cases named"
