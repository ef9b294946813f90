"""The Elasticsearch commands end to end, as a user runs them, against a real node and real news."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support.corpus import ZH_NEWS, iter_records

pytestmark = pytest.mark.elasticsearch
ES_CLI = "from fingerprint_indexer.cli.es_commands import es_group; es_group()"


def run(*args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ES_URL"}
    if url:
        env["ES_URL"] = url
    return subprocess.run([sys.executable, "-c", ES_CLI, *args], capture_output=True, text=True, timeout=600,
                          env=env, stdin=subprocess.DEVNULL)  # fmt: skip


def lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def news_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """250 real articles, an exact and a prefixed copy of the first, one with an unparsable date, and two
    identical documents too short for the block index."""
    recs = [r for r in iter_records(ZH_NEWS) if len(r["content"]) > 500][:250]
    first = recs[0]
    extra = [
        dict(first, id="copy-exact"),
        dict(first, id="copy-near", content="【转载】" + first["content"]),
        dict(recs[5], id="bad-date", content=recs[5]["content"] + "。", published_at="last tuesday"),
        {"id": "tiny-a", "content": "短讯。"},
        {"id": "tiny-b", "content": "短讯。"},
    ]
    path = tmp_path_factory.mktemp("news") / "news.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [*recs, *extra]))
    return path


@pytest.mark.corpus
def test_setup_index_similar_related_dedupe(es_url, es_client, es_index, news_file):
    created = run("setup", "--index", es_index, url=es_url)
    assert created.returncode == 0, created.stderr
    assert lines(created.stdout)[0]["action"] == "created"
    # one replica only where a second data node can hold it (one node: none, so the index is green)
    settings = es_client.indices.get_settings(index=es_index, name="index.number_of_replicas")
    replicas = "1" if es_client.cluster.health()["number_of_data_nodes"] > 1 else "0"
    assert {s["settings"]["index"]["number_of_replicas"] for s in settings.values()} == {replicas}
    assert lines(run("setup", "--index", es_index, url=es_url).stdout)[0]["action"] == "unchanged"

    indexed = run("index", str(news_file), "--index", es_index, "--batch-size", "64", url=es_url)
    assert indexed.returncode == 3, indexed.stderr  # one document failed to index
    decisions = {d["id"]: d for d in lines(indexed.stdout)}
    assert len(decisions) == 255
    assert "published_at" in decisions["bad-date"]["error"] and "bad-date" in indexed.stderr
    first = next(iter(decisions))
    assert decisions["copy-exact"]["decision"] == "exact_duplicate"
    assert decisions["copy-exact"]["duplicate_of"] == first
    assert decisions["copy-near"]["decision"] == "near_duplicate"
    es_client.indices.refresh(index=es_index)
    assert es_client.count(index=es_index)["count"] == 254
    assert decisions["tiny-b"]["decision"] == "exact_duplicate" and decisions["tiny-b"]["degenerate"]

    similar = run("similar", "--index", es_index, "--id", first, url=es_url)
    assert similar.returncode == 0, similar.stderr
    found = {d["id"]: d for d in lines(similar.stdout)}
    assert {"copy-exact", "copy-near"} <= set(found) and found["copy-exact"]["distance"] == 0
    text = json.loads(news_file.read_text().splitlines()[0])["content"]
    by_text = run("similar", "--index", es_index, "--text", text, url=es_url)
    assert {first, "copy-exact"} <= {d["id"] for d in lines(by_text.stdout)}

    tiny = run("similar", "--index", es_index, "--id", "tiny-a", url=es_url)
    assert [(d["id"], d["distance"]) for d in lines(tiny.stdout)] == [("tiny-b", 0)]

    rel = run("related", "--index", es_index, "--id", first, "--size", "3", url=es_url)
    assert rel.returncode == 0, rel.stderr
    result = lines(rel.stdout)[0]
    assert {"copy-exact", "copy-near"} <= {n["id"] for n in result["near_duplicates"]}
    assert 0 < len(result["related"]) <= 3

    dedupe = run("dedupe", "--index", es_index, "--dry-run", url=es_url)
    report = lines(dedupe.stdout)[0]
    assert dedupe.returncode == 0 and report["groups"] >= 1 and report["written"] == 0


def test_skip_policy_leaves_duplicates_out(es_url, es_client, es_index, news_file):
    res = run("index", str(news_file), "--index", es_index, "--on-duplicate", "skip", url=es_url)
    decisions = lines(res.stdout)
    skipped = [d for d in decisions if d.get("indexed") is False]
    assert {d["id"] for d in skipped} >= {"copy-exact", "copy-near"}
    es_client.indices.refresh(index=es_index)
    written = [d for d in decisions if d.get("indexed", True) and "error" not in d]
    assert es_client.count(index=es_index)["count"] == len(written) == len(decisions) - len(skipped)


@pytest.mark.corpus
def test_keep_longest_makes_the_longer_copy_canonical(es_url, es_client, es_index, news_file, tmp_path):
    first = json.loads(news_file.read_text().splitlines()[0])
    longer = dict(first, id="longer", content=first["content"] + "（完）")
    path = tmp_path / "longer.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (first, longer)))
    res = run("index", str(path), "--index", es_index, "--keep", "longest", url=es_url)
    assert res.returncode == 0, res.stderr
    out = lines(res.stdout)
    assert [(d["id"], d["duplicate_of"], d.get("replaces")) for d in out] == [
        (first["id"], None, None), ("longer", None, first["id"])]
    es_client.indices.refresh(index=es_index)
    assert es_client.get(index=es_index, id=first["id"])["_source"]["duplicate_of"] == "longer"


def test_setup_refuses_conflicts_and_adds_missing_fields_on_request(es_url, es_client, es_index):
    es_client.indices.create(
        index=es_index, mappings={"properties": {"title": {"type": "text"}, "content": {"type": "text"}}}
    )
    missing = run("setup", "--index", es_index, url=es_url)
    assert missing.returncode == 2 and "--update-mapping" in missing.stderr
    updated = run("setup", "--index", es_index, "--update-mapping", url=es_url)
    assert updated.returncode == 0, updated.stderr
    assert "fingerprint" in lines(updated.stdout)[0]["added_fields"]

    other = es_index + "-conflict"
    es_client.indices.create(index=other, mappings={"properties": {"fingerprint": {"type": "keyword"}}})
    try:
        conflict = run("setup", "--index", other, "--update-mapping", url=es_url)
        assert conflict.returncode == 2
        assert "fingerprint: type is 'keyword', needs 'long'" in conflict.stderr
    finally:
        es_client.indices.delete(index=other)


def test_unreachable_cluster_is_one_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"  # nothing listens here
    res = run("similar", "--es", url, "--text", "测试")
    assert res.returncode == 2
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: cannot reach Elasticsearch at {url}")
    assert run("setup").returncode == 2  # no URL at all


def test_update_mapping_adds_chunk_fingerprints_and_sketch_to_an_older_index(es_url, es_client, es_index):
    from fingerprint_indexer.es.mapping import load_index_body

    body = load_index_body()
    for name in ("fingerprints", "sketch"):  # the mapping before chunks and sketches were stored
        del body["mappings"]["properties"][name]
    es_client.indices.create(index=es_index, **body)
    assert run("setup", "--index", es_index, url=es_url).returncode == 2
    updated = run("setup", "--index", es_index, "--update-mapping", url=es_url)
    assert updated.returncode == 0, updated.stderr
    assert lines(updated.stdout)[0]["added_fields"] == ["fingerprints", "sketch"]
    props = es_client.indices.get_mapping(index=es_index)[es_index]["mappings"]["properties"]
    assert props["sketch"] == {"type": "binary", "doc_values": True}
    assert props["fingerprints"] == {"type": "long"}
    again = run("setup", "--index", es_index, url=es_url)
    assert again.returncode == 0 and lines(again.stdout)[0]["action"] == "unchanged"


def test_update_mapping_adds_the_decision_fields_to_an_index_made_before_them(es_url, es_client, es_index):
    """``text_length``, ``replaces`` and ``decided_at`` (written by every writer) were once in ``_source``
    only: ``es setup`` names them as missing and adds them with ``--update-mapping``."""
    from fingerprint_indexer.es.codec import DECIDED_FIELD
    from fingerprint_indexer.es.mapping import load_index_body

    body = load_index_body()
    new_fields = ["decided_at", "replaces", "text_length"]
    for name in new_fields:
        del body["mappings"]["properties"][name]
    es_client.indices.create(index=es_index, **body)
    missing = run("setup", "--index", es_index, url=es_url)
    assert missing.returncode == 2
    assert all(f"'{name}'" in missing.stderr for name in new_fields) and "--update-mapping" in missing.stderr
    updated = run("setup", "--index", es_index, "--update-mapping", url=es_url)
    assert updated.returncode == 0, updated.stderr
    assert lines(updated.stdout)[0]["added_fields"] == new_fields
    props = es_client.indices.get_mapping(index=es_index)[es_index]["mappings"]["properties"]
    assert props[DECIDED_FIELD] == {"type": "date", "format": "epoch_millis||strict_date_optional_time"}
    assert (props["text_length"], props["replaces"]) == ({"type": "long"}, {"type": "keyword"})
    es_client.index(index=es_index, id="d", document={DECIDED_FIELD: 1_700_000_000_000}, refresh=True)
    since = {"range": {DECIDED_FIELD: {"gte": "2023-11-14T00:00:00Z"}}}  # searchable now, as a date
    assert es_client.count(index=es_index, query=since)["count"] == 1


@pytest.mark.corpus
def test_reconcile_reports_the_window_and_refuses_a_bad_time(es_url, es_client, es_index, news_file):
    r = run("index", "--index", es_index, str(news_file), url=es_url)
    assert r.returncode == 3, r.stderr  # the document with an unparsable date is refused
    reports = []
    for _ in range(2):
        r = run("reconcile", "--index", es_index, "--since", "1h", url=es_url)
        assert r.returncode == 0, r.stderr
        reports.append(json.loads(r.stdout))
    assert reports[0]["documents"] == reports[1]["documents"] == 254
    assert reports[1]["changed"] == 0  # decided in the reconciled order already
    bad = run("reconcile", "--index", es_index, "--since", "yesterday", url=es_url)
    assert bad.returncode == 2 and "is not a duration" in bad.stderr
    later = run("reconcile", "--index", es_index, "--since", "1h", "--until", "2h", url=es_url)
    assert later.returncode == 2 and "--until must be later than --since" in later.stderr


def test_parse_time_reads_durations_iso_times_and_epoch_milliseconds():
    from fingerprint_indexer.cli.es_commands import parse_time

    now = 1_800_000_000_000
    assert parse_time("90s", now) == now - 90_000
    assert parse_time("10m", now) == now - 600_000
    assert parse_time("2h", now) == now - 7_200_000
    assert parse_time("1d", now) == now - 86_400_000
    assert parse_time("1700000000000", now) == 1_700_000_000_000
    assert parse_time("2026-11-23T20:00:00Z", now) == parse_time("2026-11-23T20:00:00", now)
    assert parse_time("2026-11-23T21:00:00+01:00", now) == parse_time("2026-11-23T20:00:00Z", now)


def test_an_index_of_the_plain_layout_keeps_it_for_every_command(es_url, es_client, es_index, news_file):
    """An index made before permuted keys (4 x 16-bit blocks, recorded as ``block_layout``) is written,
    looked up and deduplicated with its own layout; a new index gets the permuted keys."""
    from fingerprint_indexer.es.mapping import ES_LAYOUT, load_index_body, stored_layout
    from fingerprint_indexer.fingerprint.blocks import BlockLayout

    body = load_index_body(BlockLayout())
    meta = body["mappings"]["_meta"]["fingerprint_indexer"]
    meta["block_layout"] = meta.pop("key_layout")  # as the indexes of before recorded it
    es_client.indices.create(index=es_index, **body)
    indexed = run("index", str(news_file), "--index", es_index, "--batch-size", "64", url=es_url)
    assert indexed.returncode == 3, indexed.stderr  # the one bad date, as in a new index
    decisions = {d["id"]: d for d in lines(indexed.stdout)}
    assert decisions["copy-near"]["decision"] == "near_duplicate"
    es_client.indices.refresh(index=es_index)
    src = es_client.get(index=es_index, id="copy-near")["_source"]
    first_key = src["block_0"] if isinstance(src["block_0"], str) else src["block_0"][0]  # the document's
    assert first_key == BlockLayout().keys(int(src["fingerprint_hex"], 16))[0] and "block_4" not in src
    similar = run("similar", "--index", es_index, "--id", "copy-near", url=es_url)
    found = {d["id"] for d in lines(similar.stdout)}
    assert decisions["copy-near"]["duplicate_of"] in found
    refused = run("index", str(news_file), "--index", es_index, "--blocks", "5", url=es_url)
    assert refused.returncode != 0 and "block layout 16x16x16x16" in refused.stderr
    assert stored_layout(es_client, es_index) == BlockLayout()

    fresh = es_index + "-new"
    try:
        assert run("setup", "--index", fresh, url=es_url).returncode == 0
        assert stored_layout(es_client, fresh) == ES_LAYOUT
    finally:
        es_client.indices.delete(index=fresh + "-000001", ignore_unavailable=True)


def test_es_similar_explain_lists_rejected_look_alikes_as_similar_does(es_url, es_index, tmp_path):
    """Two items of one template, one figure apart: neither command lists the other as a near-duplicate,
    and with --explain both list it as rejected at the fact check, in the same lines."""
    auction = ("The central bank said on Monday it sold {x} million dollars of bonds at its weekly auction. "
               "Demand was steady and the yield on the ten-year note was little changed. "
               "Dealers said the next auction would follow the usual schedule.")  # fmt: skip
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "content": auction.format(x=x)}) + "\n"
                           for i, x in (("may", 450), ("june", 720))))  # fmt: skip
    assert run("index", str(src), "--index", es_index, url=es_url).returncode == 0
    main = [sys.executable, "-c", "from fingerprint_indexer.cli.main import cli; cli()"]
    store = str(tmp_path / "store")
    subprocess.run([*main, "dedupe", str(src), "--store", store], check=True, capture_output=True,
                   timeout=300)  # fmt: skip

    plain = run("similar", "--index", es_index, "--id", "june", url=es_url)
    assert plain.returncode == 0 and lines(plain.stdout) == []
    explained = run("similar", "--index", es_index, "--id", "june", "--explain", url=es_url)
    assert explained.returncode == 0, explained.stderr
    rows = lines(explained.stdout)
    assert [(r["id"], r["why"]["accepted"], r["why"]["rejected_at"]) for r in rows] == \
        [("may", False, "facts")]  # fmt: skip
    embedded = subprocess.run([*main, "similar", "--store", store, "--id", "june", "--explain"],
                              capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    for row in (embedded_rows := lines(embedded.stdout)):
        row["why"].pop("passages", None)
    assert embedded_rows == rows


@pytest.mark.corpus
def test_index_on_threads_decides_as_on_one(es_url, es_index, news_file):
    """Fingerprinting on threads (the default with the compiled pass) or on the main thread: the same
    decisions, in input order."""
    got = []
    for threads, name in (("1", es_index), ("2", f"{es_index}-threads")):  # both deleted by the fixture
        res = run("index", str(news_file), "--index", name, "--threads", threads, "--batch-size", "64",
                  url=es_url)
        assert res.returncode == 3, res.stderr  # the document with a bad date, as above
        got.append([(d["id"], d["decision"], d.get("duplicate_of")) for d in lines(res.stdout)])
    assert got[0] == got[1] and len(got[0]) == 255
