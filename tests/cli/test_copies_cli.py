"""`copies` as a real subprocess: texts, files, stored ids, the store search, errors."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

EXE = shutil.which("fingerprint-indexer")
pytestmark = pytest.mark.skipif(EXE is None, reason="package not installed (pip install -e .)")

QUOTE = ("The finance ministry said on Monday that the budget deficit narrowed to 2.1 percent of output in "
         "the "
         "first half, helped by stronger corporate tax receipts and lower spending on energy subsidies, and "
         "that it expected to meet its target for the full year without new measures.")
HOST = "Markets opened higher in Asia. " + QUOTE + " Analysts were cautious about the outlook for exports."
OTHER = ("Heavy snow closed mountain passes across the region overnight, stranding hundreds of trucks and "
         "forcing schools in three valleys to stay shut while crews cleared roads and power lines.")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE or "", *args], capture_output=True, text=True, timeout=300)


def rows(out: str) -> list[dict]:
    return [json.loads(x) for x in out.splitlines() if x.strip()]


def test_copies_of_two_texts_and_files(tmp_path: Path) -> None:
    p = run("copies", "--text", HOST, QUOTE, "--show")
    assert p.returncode == 0, p.stderr
    [row] = rows(p.stdout)
    assert HOST[row["a_start"] : row["a_end"]] == QUOTE[row["b_start"] : row["b_end"]] == row["text"]
    # passages run from the first to the last shared term ("The" is a stopword)
    assert row["a_start"] == HOST.index("finance") and row["a_end"] == HOST.index(". Analysts")
    assert row["length"] == row["a_end"] - row["a_start"] and row["terms"] >= 10
    (tmp_path / "a.txt").write_text(HOST, encoding="utf-8")
    (tmp_path / "b.html").write_text(f"<html><body><p>{OTHER}</p></body></html>", encoding="utf-8")
    p = run("copies", str(tmp_path / "a.txt"), str(tmp_path / "b.html"))
    assert p.returncode == 0 and p.stdout == "" and "no copied passage" in p.stderr


def test_copies_with_stored_ids_and_the_store_search(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in [
        {"id": "quote", "content": QUOTE}, {"id": "other", "content": OTHER}]), encoding="utf-8")
    store = str(tmp_path / "s")
    plain = str(tmp_path / "plain")
    assert run("dedupe", str(src), "--store", plain).returncode == 0  # no copy marks by default
    p = run("copies", HOST, "--store", plain)
    assert p.returncode == 1 and p.stderr.strip().splitlines()[-1].startswith("error: store")
    assert "--copy-marks" in p.stderr
    p = run("copies", "quote", HOST, "--store", plain)
    assert p.returncode == 1 and "--copy-marks" in p.stderr
    p = run("similar", "--store", plain, "--text", QUOTE + " It said so again.", "--explain")
    [near] = rows(p.stdout)
    assert near["id"] == "quote" and "passages" not in near["why"] and "--copy-marks" in p.stderr
    p = run("dedupe", str(src), "--store", plain, "--copy-marks")
    assert p.returncode == 1 and "without copy marks" in p.stderr
    assert run("dedupe", str(src), "--store", store, "--copy-marks").returncode == 0
    p = run("copies", HOST, "--store", store, "--min-chars", "50")
    assert p.returncode == 0, p.stderr
    [hit] = rows(p.stdout)
    assert hit["id"] == "quote" and hit["copied"] >= 150
    assert all(HOST.index("The finance") <= q["a_start"] < q["a_end"] <= HOST.index(" Analysts")
               for q in hit["passages"])
    p = run("copies", "quote", HOST, "--store", store)
    assert p.returncode == 0 and rows(p.stdout)
    assert all(r["b_start"] >= HOST.index("The") for r in rows(p.stdout))
    p = run("copies", "quote", "other", "--store", store)
    assert p.returncode == 0 and p.stdout == ""
    p = run("similar", "--store", store, "--text", QUOTE + " It said so again.", "--explain")
    [near] = rows(p.stdout)
    # from stored marks: the passage starts and ends at kept marks, at the same offsets in both texts
    [passage] = near["why"]["passages"]
    assert near["id"] == "quote" and passage["a_start"] == passage["b_start"] < passage["a_end"] <= len(QUOTE)


def test_copies_errors_are_one_line(tmp_path: Path) -> None:
    p = run("copies", "x", "y", "--noise", "6", "--guarantee", "4")
    assert p.returncode != 0 and p.stderr.strip().splitlines()[-1].startswith("error: guarantee threshold")
    p = run("copies", "x", "--store", str(tmp_path / "none"))
    assert p.returncode == 1 and "no store at" in p.stderr
