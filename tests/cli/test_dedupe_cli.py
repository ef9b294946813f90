"""`dedupe` and `similar` as real subprocesses: output, errors, locking, SIGKILL durability, real corpus."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections import defaultdict
from pathlib import Path

import pytest
from support.corpus import ZH_NEWS, iter_records
from support.templates import DAY_1, DAY_2

from fingerprint_indexer.store.embedded import EmbeddedStore

EXE = shutil.which("fingerprint-indexer")
pytestmark = pytest.mark.skipif(EXE is None, reason="package not installed (pip install -e .)")
A = "市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温，最低气温可能跌破零度。" * 4
B = "国家队主教练在赛后新闻发布会上表示，球队在下半场调整了阵型，最终以两球优势获胜。" * 4


def run(*args: str, stdin: str | None = None, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE or "", *args], input=stdin, capture_output=True, text=True, timeout=timeout)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def lines(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def test_dedupe_writes_one_line_per_document_and_a_summary(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", [
        {"id": "a", "content": A}, {"id": "b", "content": B}, {"id": "a2", "title": "t", "content": A},
        {"id": "e", "content": ""},
    ])
    p = run("dedupe", str(src), "--store", str(tmp_path / "s"))
    assert p.returncode == 0, p.stderr
    out = lines(p.stdout)
    assert [o["id"] for o in out] == ["a", "b", "a2", "e"]
    assert set(out[0]) >= {"id", "fingerprint", "decision", "duplicate_of", "distance", "cluster_id"}
    assert out[2]["decision"] == "exact_duplicate" and out[2]["duplicate_of"] == "a"
    assert "4 documents" in p.stderr and "duplicate rate" in p.stderr and "\r" not in p.stderr
    assert "3 new clusters" in p.stderr  # a, b and the empty e found one each; a2 joins a
    sim = run("similar", "--store", str(tmp_path / "s"), "--id", "a")
    assert sim.returncode == 0, sim.stderr
    assert lines(sim.stdout)[0] == {"id": "a2", "distance": 0, "cluster_id": "a", "duplicate_of": "a"}
    sim = run("similar", "--store", str(tmp_path / "s"), "--text", A)
    assert [o["id"] for o in lines(sim.stdout)] == ["a", "a2"]
    out_file = tmp_path / "o.jsonl"
    p = run("dedupe", "-", "--store", str(tmp_path / "s"), "--output", str(out_file),
            stdin=json.dumps({"id": "c", "content": B + "。"}, ensure_ascii=False))
    assert p.returncode == 0 and p.stdout == ""
    assert lines(out_file.read_text())[0]["duplicate_of"] == "b"
    assert "0 new clusters" in p.stderr  # c joins the cluster b founded in the first run


def test_bad_input_and_bad_arguments_fail_cleanly(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"id": "a", "content": "x"}\n{oops\n', encoding="utf-8")
    p = run("dedupe", str(src), "--store", str(tmp_path / "s"))
    assert p.returncode != 0 and "bad.jsonl:2" in p.stderr and "Traceback" not in p.stderr
    p = run("dedupe", str(src), "--store", str(tmp_path / "s"), "--skip-errors")
    assert p.returncode == 0 and "1 input errors" in p.stderr
    p = run("dedupe", str(src), "--store", str(tmp_path / "s"), "--k", "5")
    assert p.returncode != 0 and "needs at least 6 blocks" in p.stderr and "Traceback" not in p.stderr
    p = run("similar", "--store", str(tmp_path / "nowhere"), "--id", "a")
    assert p.returncode != 0 and "no store at" in p.stderr
    p = run("similar", "--store", str(tmp_path / "s"), "--id", "missing")
    assert p.returncode != 0 and "no document 'missing'" in p.stderr


def test_store_of_another_algorithm_or_layout_is_refused(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "content": A}])
    assert run("dedupe", str(src), "--store", str(tmp_path / "s")).returncode == 0
    for extra in (["--top-k", "16"], ["--blocks", "6"]):
        p = run("dedupe", str(src), "--store", str(tmp_path / "s"), *extra)
        assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
        assert "not" in p.stderr and ("algorithm" in p.stderr or "block layout" in p.stderr)


def test_second_process_on_same_store_gets_lock_error(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "content": A}])
    store = tmp_path / "s"
    assert run("dedupe", str(src), "--store", str(store)).returncode == 0
    holder = textwrap.dedent(f"""
        import sys
        from fingerprint_indexer.store.embedded import EmbeddedStore
        s = EmbeddedStore({str(store)!r})
        print("open", flush=True)
        sys.stdin.readline()
        s.close()
    """)
    h = subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        assert h.stdout is not None and h.stdout.readline().strip() == "open"
        p = run("dedupe", str(src), "--store", str(store))
        assert p.returncode != 0
        assert f"store {store}" in p.stderr and "locked by another process" in p.stderr
        assert "Traceback" not in p.stderr
    finally:
        h.communicate("\n", timeout=30)


def _zh_slice(n: int) -> list[dict]:
    out = []
    for rec in iter_records(ZH_NEWS):
        out.append({"id": rec["id"], "title": rec.get("title") or "", "content": rec.get("content") or ""})
        if len(out) >= n:
            break
    return out


def _complete_lines(path: Path) -> list[dict]:
    data = path.read_bytes()
    return [json.loads(x) for x in data[: data.rfind(b"\n") + 1].decode().splitlines()]


@pytest.mark.corpus
@pytest.mark.slow
def test_sigkill_mid_run_loses_nothing_reported(tmp_path):
    src = write_jsonl(tmp_path / "zh.jsonl", _zh_slice(3000))
    store, out = tmp_path / "store", tmp_path / "out.jsonl"
    for kill_after in (150, 700):  # kill a fresh run, then kill the resumed run further on
        proc = subprocess.Popen([EXE or "", "dedupe", str(src), "--store", str(store), "--output", str(out),
                                 "--batch-size", "16", "--processes", "2"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 240
        while (not out.exists() or len(_complete_lines(out)) < kill_after) and proc.poll() is None:
            assert time.monotonic() < deadline, "dedupe made no progress"
            time.sleep(0.02)
        assert proc.poll() is None, "run finished before it could be killed; raise the slice size"
        os.killpg(proc.pid, signal.SIGKILL)  # the command and its fingerprinting workers, mid-batch
        proc.wait(timeout=30)
        reported = _complete_lines(out)
        assert len(reported) >= kill_after
        with EmbeddedStore(store) as s:  # reopens cleanly (lock released by the kernel, Bloom rebuilt)
            assert s.bloom_rebuilt
            for line in reported:
                rec = s.record(line["id"])
                assert rec is not None, f"reported {line['id']} missing after SIGKILL"
                assert (f"{rec.fingerprint:016x}", rec.decision, rec.cluster_id) == (
                    line["fingerprint"], line["decision"], line["cluster_id"])
    p = run("dedupe", str(src), "--store", str(store), "--output", str(out))
    assert p.returncode == 0, p.stderr
    final = {o["id"]: o for o in _complete_lines(out)}
    assert len(final) == len({r["id"] for r in _zh_slice(3000)})
    for line in reported:  # a resumed run repeats what was already reported
        assert final[line["id"]]["decision"] == line["decision"]


@pytest.mark.corpus
def test_zh_news_exact_copy_groups_come_out_as_exact_duplicates(tmp_path):
    records = list(iter_records(ZH_NEWS))
    by_content: dict[str, list[str]] = defaultdict(list)
    for rec in records:
        if len(rec.get("content") or "") >= 200:
            by_content[rec["content"]].append(rec["id"])
    groups = [ids for ids in by_content.values() if len(ids) > 1]
    members = {i for g in groups for i in g}
    chosen = [r for n, r in enumerate(records) if r["id"] in members or n % 10 == 0]
    src = write_jsonl(tmp_path / "slice.jsonl", [
        {"id": r["id"], "title": r.get("title") or "", "content": r.get("content") or ""} for r in chosen])
    p = run("dedupe", str(src), "--store", str(tmp_path / "s"), "--processes", "2", timeout=600)
    assert p.returncode == 0, p.stderr
    out = {o["id"]: o for o in lines(p.stdout)}
    assert len(groups) >= 80
    for ids in groups:
        first, *rest = ids
        assert out[first]["decision"] in ("new", "near_duplicate")
        for other in rest:
            assert out[other]["decision"] == "exact_duplicate", (other, out[other])
            assert out[other]["duplicate_of"] in (first, out[first]["duplicate_of"])
            assert out[other]["cluster_id"] == out[first]["cluster_id"]


def test_template_items_stay_apart_and_explain_says_why(tmp_path):
    docs = [{"id": "nov7", "content": DAY_1}, {"id": "nov2", "content": DAY_2}]
    src = write_jsonl(tmp_path / "in.jsonl", docs)
    p = run("dedupe", str(src), "--store", str(tmp_path / "s"))
    assert p.returncode == 0, p.stderr
    assert [o["decision"] for o in lines(p.stdout)] == ["new", "new"]
    plain = run("similar", "--store", str(tmp_path / "s"), "--id", "nov2")
    assert plain.returncode == 0 and lines(plain.stdout) == []
    explained = run("similar", "--store", str(tmp_path / "s"), "--id", "nov2", "--explain")
    rows = lines(explained.stdout)
    assert [r["id"] for r in rows] == ["nov7"]
    why = rows[0]["why"]
    assert why["accepted"] is False and why["distance"] <= 3
    assert "differ" in why["rejected_because"] or "same template" in why["rejected_because"]
