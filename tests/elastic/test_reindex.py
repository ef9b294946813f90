"""Reindex of an existing index without fingerprints, on real news, including a kill and a resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from elasticsearch import Elasticsearch, helpers
from support.corpus import ZH_NEWS, iter_records

from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.es_setup import setup_index
from fingerprint_indexer.elastic.reindex import reindex
from fingerprint_indexer.es.codec import source_evidence
from fingerprint_indexer.es.mapping import segment_count
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.fingerprint.hamming import to_unsigned
from fingerprint_indexer.verification import closest

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]
ES_CLI = "from fingerprint_indexer.cli.es_commands import es_group; es_group()"


def _legacy_index(client: Elasticsearch, name: str, n: int) -> tuple[list[dict], list[str]]:
    """An index as a user has it: title/content only, dynamic mapping, no fingerprints."""
    records = [r for r in iter_records(ZH_NEWS) if len(r["content"]) > 200][:n]
    records += [dict(records[3], id="copy-of-3"), dict(records[7], id="copy-of-7")]
    missing = ["no-content", "empty-content"]
    client.indices.create(
        index=name, mappings={"properties": {"title": {"type": "text"}, "content": {"type": "text"}}}
    )
    actions = [
        {
            "_index": name,
            "_id": r["id"],
            "_source": {"title": r["title"], "content": r["content"], "category": r["category"]},
        }
        for r in records
    ]
    actions += [
        {"_index": name, "_id": "no-content", "_source": {"title": "只有标题"}},
        {"_index": name, "_id": "empty-content", "_source": {"title": "空", "content": " "}},
    ]
    helpers.bulk(client, actions, refresh=True)
    return records, missing


def _check_fields(client: Elasticsearch, name: str, records: list[dict]) -> dict[str, dict]:
    fpr = Fingerprinter()
    docs = {
        h["_id"]: h["_source"] for h in helpers.scan(client, index=name, query={"query": {"match_all": {}}})
    }
    for r in records:
        src = docs[r["id"]]
        want = fpr.fingerprint_document(Document(id=r["id"], title=r["title"], content=r["content"]))
        assert to_unsigned(src["fingerprint"]) == want.fingerprint, r["id"]
        assert src["fp_version"] == want.version and src["content"] == r["content"]
        ev = source_evidence(src)  # chunks, sketch, facts and frames too
        assert (list(ev.fingerprints), ev.sketch, list(ev.facts), list(ev.frames)) == (
            list(want.fingerprints), want.sketch, list(want.facts), list(want.frames))
        if src["duplicate_of"]:  # the smallest distance over all document and chunk fingerprint pairs
            canon = docs[src["duplicate_of"]]
            assert src["distance"] == closest(want.fingerprints, source_evidence(canon).fingerprints)[0]
    return docs


@pytest.mark.parametrize("processes, threads", [(2, 1), (1, 2)])
def test_reindex_fingerprints_in_place_and_reports(es_client, es_index, tmp_path, processes, threads):
    """Fingerprinted in worker processes or on threads of this one: every field as fingerprinting gives it."""
    records, missing = _legacy_index(es_client, es_index, 300)
    with pytest.raises(ValueError, match="--update-mapping"):
        reindex(es_client, es_index, progress=False)
    setup_index(es_client, es_index, update_mapping=True)
    report = reindex(es_client, es_index, processes=processes, threads=threads, batch_size=40,
                     checkpoint=tmp_path / "ck.json", progress=False)  # fmt: skip
    assert report.documents == len(records)
    assert report.new + report.exact_duplicates + report.near_duplicates == len(records)
    assert report.exact_duplicates >= 2  # the two planted copies
    assert (report.missing_source, sorted(report.missing_source_ids)) == (2, sorted(missing))
    assert report.failures == [] and report.done
    docs = _check_fields(es_client, es_index, records)
    assert docs["copy-of-3"]["decision"] == "exact_duplicate"
    assert docs["copy-of-3"]["duplicate_of"] == records[3]["id"] or docs[records[3]["id"]]["duplicate_of"]
    assert "fingerprint" not in docs["no-content"]

    again = reindex(es_client, es_index, checkpoint=tmp_path / "ck.json", progress=False)
    assert (again.documents, again.missing_source, again.runs) == (0, 2, 1)


def test_killed_reindex_resumes_and_reports_the_whole_job(es_client, es_index, es_url, tmp_path):
    records, _ = _legacy_index(es_client, es_index, 1200)
    setup_index(es_client, es_index, update_mapping=True)
    ck = tmp_path / "ck.json"
    cmd = [
        sys.executable,
        "-c",
        ES_CLI,
        "reindex",
        "--es",
        es_url,
        "--index",
        es_index,
        "--batch-size",
        "25",
        "--processes",
        "1",
        "--checkpoint",
        str(ck),
        "--no-progress",
    ]
    env = {**os.environ, "ES_URL": es_url}
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and first.poll() is None:
        if ck.exists() and json.loads(ck.read_text())["documents"] >= 200:
            break
        time.sleep(0.05)
    assert first.poll() is None, "the first run should still be working when it is killed"
    first.send_signal(signal.SIGKILL)
    first.wait()
    partial = json.loads(ck.read_text())
    assert 200 <= partial["documents"] < len(records) and not partial["done"]

    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    final = json.loads(second.stdout)
    assert final["runs"] == 2 and final["done"]
    assert final["documents"] == len(records)
    assert final["new"] + final["duplicates"] == len(records)
    assert final["missing_source"] == 2
    _check_fields(es_client, es_index, records)


def test_reindex_can_force_merge_what_it_loaded(es_client, es_index, es_url, tmp_path):
    """A bulk-loaded index is merged once every document is done (look-ups pay per segment)."""
    records = [r for r in iter_records(ZH_NEWS) if len(r["content"]) > 200][:90]
    es_client.indices.create(index=es_index, mappings={"properties": {"content": {"type": "text"}}})
    for part in range(3):  # three refreshed bulks: three segments at least
        helpers.bulk(es_client, ({"_index": es_index, "_id": r["id"], "_source": {"content": r["content"]}}
                                 for r in records[part * 30 : (part + 1) * 30]), refresh=True)
    setup_index(es_client, es_index, update_mapping=True)
    assert segment_count(es_client, es_index) > 1
    cmd = [sys.executable, "-c", ES_CLI, "reindex", "--es", es_url, "--index", es_index, "--batch-size",
           "20", "--processes", "1", "--checkpoint", str(tmp_path / "ck.json"), "--no-progress",
           "--force-merge", "1"]
    env = {**os.environ, "ES_URL": es_url}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["documents"] == len(records) and report["done"]
    assert report["force_merged"]["segments"] == 1 == segment_count(es_client, es_index)
    # a merge that fails after the job is done still prints the job's report, then fails clearly
    times_out = ("import elastic_transport\nfrom fingerprint_indexer.cli import es_commands\n"
                 "def merge(*a, **k): raise elastic_transport.ConnectionTimeout('merge timed out')\n"
                 "es_commands.force_merge = merge\nes_commands.es_group()\n")
    again = subprocess.run([sys.executable, "-c", times_out, *cmd[3:]], capture_output=True, text=True,
                           timeout=600, env=env)
    assert again.returncode == 2, again.stderr
    report = json.loads(again.stdout)
    assert report["done"] and "timed out" in report["force_merged"]["error"]
    assert "force-merge" in again.stderr and "the same command again merges it" in again.stderr
