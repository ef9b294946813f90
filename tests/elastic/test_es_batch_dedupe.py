"""Batch dedupe inside Elasticsearch against brute-force connected components."""

from __future__ import annotations

import random

import pytest
from elasticsearch import helpers

from fingerprint_indexer.elastic.es_batch_dedupe import TOP_HITS, batch_dedupe, shared_buckets
from fingerprint_indexer.es.mapping import ES_LAYOUT
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import MASK64, hamming
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex

pytestmark = pytest.mark.elasticsearch
K = 3


def _flip(fp: int, rng: random.Random, n: int) -> int:
    for b in rng.sample(range(64), n):
        fp ^= 1 << b
    return fp


def _corpus(seed: int) -> list[tuple[str, int, dict]]:
    """Planted groups (members within K of a centre), pairs sharing a block but far apart, a bucket
    larger than one top_hits page, exact copies of degenerate documents, and random singletons."""
    rng = random.Random(seed)
    docs: list[tuple[str, int, dict]] = []
    for g in range(12):
        centre = rng.getrandbits(64)
        for m in range(rng.randint(2, 5)):
            fp = centre if m == 0 else _flip(centre, rng, rng.randint(0, K))
            docs.append(
                (
                    f"g{g}-m{m}",
                    fp,
                    {"published_at": f"2024-01-{10 + (m * 7 + g) % 17:02d}", "content_digest": f"g{g}m{m}"},
                )
            )
    shared_top = rng.getrandbits(33) << 31  # block_0 of both layouts: 16 bits, or blocks 0-2 (33 bits)
    for i in range(TOP_HITS + 30):  # one block_0 bucket bigger than TOP_HITS: read page by page
        docs.append((f"big-{i:03d}", shared_top | rng.getrandbits(31), {"content_digest": f"big{i}"}))
    for i in range(3):
        docs.append((f"tiny-{i}", rng.getrandbits(64), {"degenerate": True, "content_digest": "same-text"}))
    for i in range(200):
        docs.append((f"single-{i:03d}", rng.getrandbits(64), {"content_digest": f"s{i}"}))
    return docs


def _brute_groups(docs: list[tuple[str, int, dict]]) -> list[set[str]]:
    parent = {d[0]: d[0] for d in docs}

    def find(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    for i, (a, fa, ma) in enumerate(docs):
        for b, fb, mb in docs[i + 1 :]:
            near = not ma.get("degenerate") and not mb.get("degenerate") and hamming(fa, fb) <= K
            if near or ma["content_digest"] == mb["content_digest"]:
                parent[find(a)] = find(b)
    groups: dict[str, set[str]] = {}
    for d in docs:
        groups.setdefault(find(d[0]), set()).add(d[0])
    return sorted((g for g in groups.values() if len(g) > 1), key=min)


LAYOUTS = {"plain": BlockLayout(), "permuted": ES_LAYOUT}


@pytest.mark.parametrize(("seed", "layout"), [(1, "plain"), (2, "plain"), (1, "permuted"), (2, "permuted")])
def test_groups_equal_brute_force_and_are_written_back(es_client, es_index, seed, layout):
    docs = _corpus(seed)
    index = ElasticsearchIndex(es_client, es_index, LAYOUTS[layout])
    index.add_many(docs)
    index.refresh()
    report = batch_dedupe(es_client, es_index, k=K)
    want = _brute_groups(docs)
    assert report.failures == []
    assert report.groups == len(want)
    assert report.documents_in_groups == sum(len(g) for g in want)
    assert report.written == report.documents_in_groups

    fps = {d[0]: d[1] for d in docs}
    meta = {d[0]: d[2] for d in docs}
    stored = {h["_id"]: h["_source"] for h in helpers.scan(es_client, index=es_index)}
    for group in want:
        canon = min(group, key=lambda i: (meta[i].get("published_at", "9999"), i))
        for doc_id in group:
            src = stored[doc_id]
            assert src["cluster_id"] == canon, (group, doc_id)
            if doc_id == canon:
                assert src["duplicate_of"] is None and src["decision"] == "new"
            else:
                assert src["duplicate_of"] == canon
                assert src["distance"] == hamming(fps[doc_id], fps[canon]) & MASK64
    assert {stored[f"tiny-{i}"]["decision"] for i in (1, 2)} <= {"exact_duplicate", "new"}
    grouped = set().union(*want)
    assert all("cluster_id" not in s for i, s in stored.items() if i not in grouped)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_bucket_larger_than_top_hits_comes_back_whole(es_client, es_index, layout):
    docs = _corpus(3)
    index = ElasticsearchIndex(es_client, es_index, LAYOUTS[layout])
    index.add_many(docs)
    index.refresh()
    sizes = sorted(len(members) for members in shared_buckets(es_client, es_index, "block_0", page=7))
    assert sizes[-1] == TOP_HITS + 30


def test_dry_run_writes_nothing_and_large_k_is_refused(es_client, es_index):
    index = ElasticsearchIndex(es_client, es_index)
    index.add_many([("a", 0, None), ("b", 1, None)])
    index.refresh()
    report = batch_dedupe(es_client, es_index, k=K, write=False)
    assert (report.groups, report.written) == (1, 0)
    assert "cluster_id" not in es_client.get(index=es_index, id="b")["_source"]
    with pytest.raises(ValueError, match="serves k <= 3"):
        batch_dedupe(es_client, es_index, k=4)


def test_pairs_need_the_sketch_and_match_through_chunks(es_client, es_index):
    """Fingerprints within K but disagreeing sketches stay apart; a chunk fingerprint within K of another
    document's fingerprint, with agreeing sketches, joins the two."""
    from fingerprint_indexer.es.codec import fingerprint_fields
    from fingerprint_indexer.fingerprint.sketch import sketch, to_bytes

    weather = "市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温。" * 3
    football = "国家队主教练在赛后新闻发布会上表示，球队在下半场调整了阵型。" * 3
    rng = random.Random(7)
    base, other = rng.getrandbits(64), rng.getrandbits(64)
    docs = {  # id: (document fingerprint, chunks, text)
        "a": (base, (), weather),
        "b": (base ^ 0b1, (), football),  # within K of a, another story
        "c": (other, (base ^ 0b110,), weather + "！"),  # a chunk within K of a, same text
    }
    index = ElasticsearchIndex(es_client, es_index, BlockLayout())
    index.write_actions(
        {"_op_type": "index", "_index": es_index, "_id": i,
         "_source": {"content_digest": i, **fingerprint_fields(fp, index.layout, chunks=chunks,
                                                               sketch=to_bytes(sketch(text)))}}
        for i, (fp, chunks, text) in docs.items()
    )  # fmt: skip
    index.refresh()
    report = batch_dedupe(es_client, es_index, k=K)
    assert report.groups == 1 and report.documents_in_groups == 2
    stored = {h["_id"]: h["_source"] for h in helpers.scan(es_client, index=es_index)}
    assert stored["c"]["duplicate_of"] == "a" and stored["c"]["decision"] == "near_duplicate"
    assert stored["c"]["distance"] == 2  # smallest over all fingerprint pairs: a ~ c's chunk
    assert "cluster_id" not in stored["b"]


def test_a_hot_bucket_is_read_and_compared_a_page_at_a_time(es_client, es_index):
    """2,400 documents in one block_0 bucket: two groups of near copies interleaved across ten pages,
    and far-apart singletons. The groups come out whole, and memory stays far below the n x n XOR matrix
    of the bucket (2,400^2 x 8 bytes = 46 MB) that comparing it whole would take."""
    import tracemalloc

    rng = random.Random(5)
    top = 0xBEEF << 48
    centres = [top | rng.getrandbits(48), top | rng.getrandbits(48)]
    docs = []
    for i in range(2400):
        if i % 3 == 2:  # a singleton: shares only the hot block with everything else
            fp = top | rng.getrandbits(48)
        else:
            fp = _flip(centres[i % 3], rng, rng.randint(0, 1)) & ~(0xFFFF << 48) | top
        docs.append((f"h{i:04d}", fp, {"content_digest": f"h{i}"}))
    index = ElasticsearchIndex(es_client, es_index, BlockLayout())
    index.add_many(docs)
    index.refresh()
    tracemalloc.start()
    try:
        report = batch_dedupe(es_client, es_index, k=K, member_page=240)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    want = [{d[0] for n, d in enumerate(docs) if n % 3 == g} for g in (0, 1)]  # within 2 bits of each other
    assert report.groups == 2
    assert report.documents_in_groups == sum(len(g) for g in want) == 1600
    assert report.failures == [] and report.written == 1600
    assert peak < 24 << 20, f"peak traced memory {peak / 2**20:.1f} MB"
    stored = {h["_id"]: h["_source"] for h in helpers.scan(es_client, index=es_index)}
    for group in want:
        assert len({stored[i]["cluster_id"] for i in group}) == 1
