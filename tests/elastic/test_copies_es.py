"""Partial-copy search and passages on a real Elasticsearch node, documents written by `index`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support.corpus import EN_BBC, ZH_NEWS, load_records

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]
EXE = shutil.which("fingerprint-indexer") or "fingerprint-indexer"


def run(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ES_URL": url}
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=600, env=env,
                          stdin=subprocess.DEVNULL)


def rows(out: str) -> list[dict]:
    return [json.loads(x) for x in out.splitlines() if x.strip()]


def test_copies_found_through_the_copy_marks_field(es_url: str, es_client, es_index: str,
                                                  tmp_path: Path) -> None:
    recs = load_records(EN_BBC, limit=60, min_chars=1500) + load_records(ZH_NEWS, limit=60, min_chars=1500)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": r["id"], "title": r["title"], "content": r["content"]},
                                      ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    plain = es_index + "-plain"
    try:  # an index without copy marks (the default): no marks written, search says how to get them
        p = run(es_url, "index", str(src), "--index", plain)
        assert p.returncode == 0, p.stderr
        es_client.indices.refresh(index=plain)
        assert "copy_marks" not in es_client.get(index=plain, id=recs[0]["id"])["_source"]
        p = run(es_url, "es", "copies", recs[0]["content"][:600], "--text", "--index", plain)
        assert p.returncode == 2 and "--copy-marks" in p.stderr.strip().splitlines()[-1]
        p = run(es_url, "es", "copies", recs[0]["id"], recs[0]["id"], "--index", plain)
        assert p.returncode == 0 and len(rows(p.stdout)) == 1  # passages between two texts need none
        p = run(es_url, "index", str(src), "--index", plain, "--copy-marks")
        assert p.returncode == 2 and "without copy marks" in p.stderr
    finally:
        es_client.indices.delete(index=plain + "-000001", ignore_unavailable=True)
    p = run(es_url, "index", str(src), "--index", es_index, "--copy-marks")
    assert p.returncode == 0, p.stderr
    es_client.indices.refresh(index=es_index)
    stored = es_client.get(index=es_index, id=recs[0]["id"])["_source"]
    assert stored["copy_marks"] and all(len(m) == 16 for m in stored["copy_marks"])
    for source, host in [(recs[2], recs[30]), (recs[70], recs[100])]:
        planted = source["content"][400:1200]
        text = host["content"][:300] + planted + host["content"][300:]
        (tmp_path / "q.txt").write_text(text, encoding="utf-8")
        p = run(es_url, "es", "copies", str(tmp_path / "q.txt"), "--index", es_index)
        assert p.returncode == 0, p.stderr
        hits = {h["id"]: h for h in rows(p.stdout)}
        assert set(hits) == {source["id"], host["id"]}  # the host is indexed too: it shares its own text
        assert hits[source["id"]]["copied"] >= 0.9 * len(planted)
        for q in hits[source["id"]]["passages"]:
            assert 300 <= q["a_start"] < q["a_end"] <= 300 + len(planted)
            assert text[q["a_start"] : q["a_end"]] == source["content"][q["b_start"] : q["b_end"]]
    # two indexed ids: exact passages of their texts
    p = run(es_url, "es", "copies", recs[0]["id"], recs[0]["id"], "--index", es_index)
    [whole] = rows(p.stdout)
    assert whole["a_start"] == whole["b_start"] and whole["length"] > 0.9 * len(recs[0]["content"])
