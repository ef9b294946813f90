"""Poison input through the real `dedupe` command: one clear line naming file and line, nothing lost."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from fingerprint_indexer.store.embedded import EmbeddedStore

EXE = shutil.which("fingerprint-indexer")
pytestmark = pytest.mark.skipif(EXE is None, reason="package not installed (pip install -e .)")
A = "市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温，最低气温可能跌破零度。" * 4
B = "国家队主教练在赛后新闻发布会上表示，球队在下半场调整了阵型，最终以两球优势获胜。" * 4


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE or "", *args], capture_output=True, text=True, timeout=300)


def test_lone_surrogate_is_one_line_or_skipped(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    good = [json.dumps({"id": i, "content": t}, ensure_ascii=False) for i, t in (("a", A), ("b", B))]
    poison = '{"id": "p", "content": "poison \\udc80"}'
    src.write_text(f"{good[0]}\n{poison}\n{good[1]}\n", encoding="utf-8")
    p = run("dedupe", str(src), "--store", str(tmp_path / "s1"))
    assert p.returncode == 1 and p.stdout.count("\n") == 0
    assert p.stderr.strip().splitlines() == [f"error: {src}:2: field 'content' holds a lone surrogate escape "
                                             "(\\udc80 at character 7), which is not valid Unicode text"]
    p = run("dedupe", str(src), "--store", str(tmp_path / "s2"), "--skip-errors")
    assert p.returncode == 0, p.stderr
    assert [json.loads(x)["id"] for x in p.stdout.splitlines()] == ["a", "b"]
    assert f"warning: {src}:2: field 'content' holds a lone surrogate" in p.stderr
    assert "1 input errors" in p.stderr and "Traceback" not in p.stderr


def test_folder_with_same_file_names_keeps_every_document(tmp_path: Path) -> None:
    tree = tmp_path / "bbc"
    for sub, text in (("business", A), ("sport", B)):
        (tree / sub).mkdir(parents=True)
        (tree / sub / "001.txt").write_text(text, encoding="utf-8")
    p = run("dedupe", str(tree), "--store", str(tmp_path / "s"))
    assert p.returncode == 0, p.stderr
    assert [json.loads(x)["id"] for x in p.stdout.splitlines()] == ["business/001.txt", "sport/001.txt"]
    with EmbeddedStore(tmp_path / "s") as store:
        assert store.n_docs == 2


def test_similar_by_an_empty_example_file_is_one_line(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "content": A}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert run("dedupe", str(src), "--store", str(tmp_path / "s")).returncode == 0
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    p = run("similar", "--store", str(tmp_path / "s"), "--file", str(empty))
    assert p.returncode == 1 and p.stderr == f"error: {empty}: holds no document\n"
