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


def test_ingest_round_splits_the_pipelines_cpu_by_thread(es_client):
    """The ingest benchmark's rounds split the command's CPU into the deciding thread, the bulk writes and
    the rest, which add up to the process's CPU of that run; every document is decided once."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import bench_es  # beside the script's own imports
    finally:
        sys.path.remove(str(SCRIPT.parent))
    from fingerprint_indexer.documents import Document

    docs = [Document(id=f"d{i}", title=f"第{i}号", content=f"本市今天第{i}次通报了降温与降雨的消息。" * 20)
            for i in range(40)]  # fmt: skip
    out = bench_es.bench_ingest(es_client, docs, processes=1, threads=2, batch=16, repeat=1)
    (row,) = out["ours_us_per_document_per_round"]
    assert set(row) == {"deciding", "writing", "rest"} and row["deciding"] > 0 and row["writing"] > 0
    cpu = out["ours_main_process_cpu_s"]
    assert abs(sum(row.values()) * len(docs) / 1e6 - cpu) <= 0.1 + 0.05 * cpu  # rounded to 0.1 s
    assert sum(out["decisions"].values()) == len(docs)
    assert len(out["ours_vs_fingerprint_only_by_cpu_per_round"]) == 1


def test_the_commands_run_names_the_http_libraries_the_client_imports():
    """``--commands`` says which HTTP libraries the client's transport finds (they are part of ``es
    index``'s start-up): urllib3, a dependency of the client, always; the others as present or absent."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import bench_es
    finally:
        sys.path.remove(str(SCRIPT.parent))
    import importlib.util

    named = bench_es.http_libraries()
    assert [n.split()[0] for n in named] == ["urllib3", "httpx", "aiohttp", "requests"]
    assert named[0] == "urllib3"
    for name, line in zip(["urllib3", "httpx", "aiohttp", "requests"], named, strict=True):
        assert line.endswith("(absent)") == (importlib.util.find_spec(name) is None)
