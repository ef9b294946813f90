"""Store faults through the real command: a full disk (small tmpfs), a read-only store (read-only mount), a
damaged table file. Each ends in one line naming the store, never a traceback, and loses nothing reported."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.corpus import ZH_NEWS, iter_records

from fingerprint_indexer.store.embedded import EmbeddedStore

EXE = shutil.which("fingerprint-indexer")
pytestmark = pytest.mark.skipif(EXE is None, reason="package not installed (pip install -e .)")
A = "市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温，最低气温可能跌破零度。" * 4


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE or "", *args], capture_output=True, text=True, timeout=300)


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs of our own (4 MB); skipped with the reason where this process may not mount."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    got = _mount("-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt))
    if got.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({got.stderr.strip()}); needs root")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _slice(path: Path, n: int) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for i, rec in enumerate(iter_records(ZH_NEWS)):
            if i >= n:
                break
            doc = {"id": rec["id"], "content": rec.get("content") or ""}
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
    return path


@pytest.mark.corpus
def test_disk_full_is_one_line_and_keeps_every_reported_decision(tmpfs: Path, tmp_path: Path) -> None:
    src = _slice(tmp_path / "zh.jsonl", 3000)
    store = tmpfs / "store"
    p = run("dedupe", str(src), "--store", str(store), "--batch-size", "64")
    assert p.returncode == 1, p.stderr[-500:]
    assert "Traceback" not in p.stderr
    err = [x for x in p.stderr.splitlines() if x.startswith("error:")]
    assert len(err) == 1 and f"store {store}: disk full" in err[0] and "nothing of this batch" in err[0]
    reported = [json.loads(x) for x in p.stdout.splitlines()]
    assert 0 < len(reported) < 3000
    assert _mount("-o", "remount,size=64m", str(tmpfs)).returncode == 0
    with EmbeddedStore(store) as s:
        for line in reported:
            rec = s.record(line["id"])
            assert rec is not None and rec.decision == line["decision"], line["id"]


def test_read_only_store_is_refused_before_work_and_similar_reads_it(tmpfs: Path, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "content": A}, ensure_ascii=False) + "\n", encoding="utf-8")
    store = tmpfs / "store"
    assert run("dedupe", str(src), "--store", str(store)).returncode == 0
    assert _mount("-o", "remount,ro", str(tmpfs)).returncode == 0
    p = run("dedupe", str(src), "--store", str(store))
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.strip() == (f"error: store {store} is read-only (its folder cannot be written); "
                                "nothing was read or decided")
    p = run("similar", "--store", str(store), "--text", A)
    assert p.returncode == 0, p.stderr
    assert [json.loads(x)["id"] for x in p.stdout.splitlines()] == ["a"]
    assert "locked" not in p.stderr


def test_damaged_table_file_is_one_line_and_named_by_check(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"n{i}", "content": f"{A} 第{i}号"}, ensure_ascii=False) + "\n"
                           for i in range(300)), encoding="utf-8")
    store = tmp_path / "s"
    assert run("dedupe", str(src), "--store", str(store)).returncode == 0
    with EmbeddedStore(store) as s:
        s.db.compact_range()  # everything into table files
    table = max((store / "leveldb").glob("*.ldb"), key=lambda p: p.stat().st_size)
    data = bytearray(table.read_bytes())
    lo, hi = len(data) // 10, len(data) * 8 // 10  # most data blocks: whatever a command reads is hit
    data[lo:hi] = bytes(hi - lo)
    table.write_bytes(bytes(data))
    p = run("similar", "--store", str(store), "--text", A)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.startswith(f"error: store {store} is damaged") and p.stderr.count("\n") == 1
    p = run("dedupe", str(src), "--store", str(store))
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.startswith(f"error: store {store} is damaged") and p.stderr.count("\n") == 1
    p = run("store", "check", str(store))
    # the damage is met opening the store or reading its records, depending on where the zeros fell
    assert p.returncode == 1 and ("damaged: table data is damaged" in p.stdout
                                  or f"damaged: store {store} is damaged (Corruption" in p.stdout), p.stdout
    p = run("store", "repair", str(store))  # salvages what LevelDB can read and says what is lost
    assert p.returncode == 0 and "not recoverable: " in p.stdout and "run their input again" in p.stdout
    assert run("store", "check", str(store)).returncode == 0


def test_store_check_and_repair_commands_on_a_lost_current(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "content": A}, ensure_ascii=False) + "\n", encoding="utf-8")
    store = tmp_path / "s"
    first = run("dedupe", str(src), "--store", str(store))
    assert first.returncode == 0
    (store / "leveldb" / "CURRENT").unlink()
    p = run("dedupe", str(src), "--store", str(store))
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "CURRENT is missing" in p.stderr
    p = run("store", "check", str(store))
    assert p.returncode == 1 and "damaged:" in p.stdout and "CURRENT is missing" in p.stdout
    p = run("store", "repair", str(store))
    assert p.returncode == 0 and p.stdout.startswith(f"store {store}: repaired\n"), p.stdout
    assert "not recoverable" not in p.stdout
    p = run("store", "check", str(store))
    assert p.returncode == 0 and p.stdout.startswith(f"store {store}: healthy\n")
    again = run("dedupe", str(src), "--store", str(store))
    assert again.returncode == 0 and again.stdout == first.stdout


def test_repair_on_a_full_disk_is_one_line_and_can_be_run_again(tmpfs: Path, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"n{i}", "content": f"{A} 第{i}号"}, ensure_ascii=False) + "\n"
                           for i in range(50)), encoding="utf-8")
    store = tmpfs / "store"
    assert run("dedupe", str(src), "--store", str(store)).returncode == 0
    (store / "leveldb" / "CURRENT").unlink()
    with (tmpfs / "filler").open("wb") as f:  # take every free byte of the file system
        try:
            while True:
                f.write(bytes(1 << 16))
                f.flush()
        except OSError:
            pass
    p = run("store", "repair", str(store))
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("error: ") and "disk full" in p.stderr, p.stderr
    (tmpfs / "filler").unlink()
    assert run("store", "repair", str(store)).returncode == 0
    p = run("store", "check", str(store))
    assert p.returncode == 0 and "50 documents" in p.stdout, p.stdout
