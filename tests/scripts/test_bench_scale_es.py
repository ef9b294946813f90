"""bench_scale.py --es-scale runs end to end at a tiny size against the test node, from a fingerprint cache
the test fills, and leaves no index behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.corpus import DATA_DIR, require

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_scale.py"
N, SMALL, REAL, QUERIES = 1200, 400, 300, 60


def run(*args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"ES_URL": url} if url else {})}
    return subprocess.run([sys.executable, str(SCRIPT), "--no-real", *args], capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip


def test_es_scale_loads_indexes_times_both_paths_and_cleans_up(es_url, es_client, tmp_path):
    for name in ("zh_news", "zh_xwlb", "zh_toutiao_titles", "en_reuters"):
        require(DATA_DIR / f"{name}.jsonl.gz")
    cache = tmp_path / "fpc"
    filled = run("--generated", str(N), "--fingerprints", str(cache), "--fingerprint-only", "--processes",
                 "1")
    assert filled.returncode == 0, filled.stderr
    assert (cache / "generated-seed11" / "shard-00000.pkl").is_file()

    refused = run("--es-scale", str(N + 1), "--es-small", str(SMALL), "--fingerprints", str(cache),
                  url=es_url)  # a short cache is refused, never filled
    assert refused.returncode != 0 and "lacks the fingerprints of 1,201 documents" in refused.stderr
    assert sorted(p.name for p in (cache / "generated-seed11").iterdir()) == ["shard-00000.pkl"]

    out = tmp_path / "es.json"
    p = run("--es-scale", str(N), "--es-small", str(SMALL), "--es-real", str(REAL), "--es-queries",
            str(QUERIES), "--fingerprints", str(cache), "--json", str(out), url=es_url)  # fmt: skip
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())[-1]["es_scale"]
    assert r["load"]["docs"] == N and r["load_small"]["docs"] == SMALL
    assert r["load"]["store_bytes"] > 0
    runs = r["es_index"]
    assert [runs[k]["docs"] for k in ("empty_1", "at_n", "empty_2")] == [REAL] * 3
    assert runs["empty_1"]["decisions"] == runs["empty_2"]["decisions"]  # the same documents, the same rule
    assert runs["real_removed_from_n"] == REAL
    for name in (f"bench-es-scale-{SMALL}-of-{N}", f"bench-es-scale-{N}"):
        lat = r["similar"][name]
        assert lat["queries"] == QUERIES
        assert lat["found_mean"] >= 0.5  # half the queries are stored documents: each finds itself at least
        assert lat["candidates_max"] >= 1 and 0 < lat["p50_ms"] <= lat["p99_ms"]
    assert "### Elasticsearch at 1,200 documents" in p.stdout
    left = es_client.indices.get(index="bench-es-scale-*", allow_no_indices=True, ignore_unavailable=True)
    assert not list(left)
