"""bench_fingerprint.py runs end to end at its smallest, the code before timed beside ours."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_fingerprint.py"


def _corpus(path: Path, texts: list[str]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for text in texts:
            f.write(json.dumps({"content": text}, ensure_ascii=False) + "\n")
    return path


def test_baseline_is_timed_beside_ours(tmp_path: Path) -> None:
    zh_text = "第{}届全国会议在北京召开,代表{}人出席。会议讨论了经济发展。"
    zh = _corpus(tmp_path / "zh.jsonl.gz", [zh_text.format(i, i * 7) * 4 for i in range(3)])
    en_text = "The bank held rates at {}.5% on Tuesday. Markets rose. "
    en = _corpus(tmp_path / "en.jsonl.gz", [en_text.format(i) * 4 for i in range(3)])
    p = subprocess.run(
        [sys.executable, str(SCRIPT), "--corpus", str(zh), "--en-corpus", str(en), "--docs", "3",
         "--min-chars", "10", "--repeat", "1", "--only-ours", "--baseline", str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert "baseline vs ours:" in p.stdout
    assert "English baseline" in p.stdout
    assert "# load average after:" in p.stdout
