"""The stateless commands, run as real subprocesses of the installed console script."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

EXE = shutil.which("fingerprint-indexer")
pytestmark = pytest.mark.skipif(EXE is None, reason="package not installed (pip install -e .)")
TEXT = "市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温，最低气温可能跌破零度。"


def run(*args: str, stdin: bytes | str | None = None) -> subprocess.CompletedProcess[str]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    p = subprocess.run([EXE or "", *args], input=data, capture_output=True, timeout=120)
    return subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(), p.stderr.decode())


def test_fingerprint_text_from_stdin() -> None:
    p = run("fingerprint", stdin=TEXT)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert len(out["fingerprint"]) == 16 and len(out["blocks"]) == 4
    assert out["top_terms"] and not out["degenerate"]
    assert out["version"].startswith("simhash64")


def test_policy_names_every_threshold_and_its_tag() -> None:
    from fingerprint_indexer.verification import DEFAULT_POLICY

    p = run("policy")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["tag"] == DEFAULT_POLICY.tag and out["min_similarity"] == DEFAULT_POLICY.min_similarity
    assert out["fingerprint_version"].startswith("simhash64-tfidf/8;")


def test_fingerprint_jsonl_file_and_bad_line(tmp_path: Path) -> None:
    f = tmp_path / "docs.jsonl"
    f.write_text(json.dumps({"id": "a", "content": TEXT}, ensure_ascii=False) + "\n{broken\n"
                 + json.dumps({"id": "c", "html": f"<p>{TEXT}</p>"}, ensure_ascii=False) + "\n",
                 encoding="utf-8")
    p = run("fingerprint", str(f))
    assert p.returncode != 0
    assert "docs.jsonl:2" in p.stderr and "Traceback" not in p.stderr
    p = run("fingerprint", "--skip-errors", "--no-terms", str(f))
    assert p.returncode == 0
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert [r["id"] for r in rows] == ["a", "c"]
    assert rows[0]["fingerprint"] == rows[1]["fingerprint"]
    assert "docs.jsonl:2" in p.stderr


def test_empty_input_is_degenerate() -> None:
    p = run("fingerprint", "--format", "text", stdin="   ")
    assert p.returncode == 0
    assert json.loads(p.stdout)["degenerate"] is True


def test_undecodable_stdin_is_a_clear_error() -> None:
    p = run("fingerprint", "--format", "text", stdin=b"\xff\xfe bad")
    assert p.returncode != 0 and "not valid UTF-8" in p.stderr and "Traceback" not in p.stderr


def test_distance_of_hex_texts_and_files(tmp_path: Path) -> None:
    p = run("distance", "ffffffffffffffff", "0000000000000000")
    assert json.loads(p.stdout)["distance"] == 64
    f = tmp_path / "a.txt"
    f.write_text(TEXT, encoding="utf-8")
    p = run("distance", str(f), TEXT)
    assert json.loads(p.stdout)["distance"] == 0


def test_idf_fit_and_use(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    lines = [{"id": str(i), "content": TEXT if i % 2 else "足球联赛今晚继续进行，主队在主场战胜客队。"}
             for i in range(6)]
    corpus.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    idf = tmp_path / "idf.txt"
    p = run("idf", "fit", str(corpus), "-o", str(idf))
    assert p.returncode == 0, p.stderr
    assert idf.read_text(encoding="utf-8").startswith("# fingerprint_indexer idf v1 docs=6")
    p = run("fingerprint", "--idf", str(idf), "--no-terms", stdin=TEXT)
    assert p.returncode == 0
    assert "idf=file-" in json.loads(p.stdout)["version"]


def test_missing_file_error() -> None:
    p = run("fingerprint", "/nonexistent.jsonl")
    assert p.returncode != 0 and "no such file" in p.stderr
