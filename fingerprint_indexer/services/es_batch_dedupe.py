"""Deduplicate a whole index inside Elasticsearch (``fingerprint-indexer es dedupe``).

Composite aggregations page through every block field (and the content digest); a bucket holding two or
more documents is a candidate group, whose members come back in the same response (``top_hits`` with only
doc values; a bucket larger than that is fetched by a ``term`` query). Block fields hold the keys of every
document and chunk fingerprint, so a pair is a candidate when the fingerprints that put both members in the
bucket lie within Hamming ``k``; it is accepted only by the verification rule (sketch and facts,
:func:`fingerprint_indexer.verify.check`, as every writer). Accepted pairs are joined into groups
(connected components); a member whose facts conflict with the canonical's stays out of the group (it
was linked through another story of the same template), and every member of a group gets
``cluster_id`` and ``duplicate_of`` (the group's canonical document: earliest ``published_at``, then
smallest id) written back, with ``distance`` the smallest Hamming distance over all
fingerprint pairs with the canonical.
Elasticsearch distributes the bucket work over its shards; the client only verifies and joins.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from elasticsearch import Elasticsearch

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import MASK64
from fingerprint_indexer.index.elasticsearch import (
    BANDS_FIELD,
    FP_FIELD,
    VERIFY_FIELDS,
    ElasticsearchIndex,
    ElasticsearchWriteError,
    hit_evidence,
    hit_fingerprints,
    pit_scan,
)
from fingerprint_indexer.store.exact import MAX_BAND_READ
from fingerprint_indexer.verify import Evidence, check, closest, same_facts

TOP_HITS = 100  # Elasticsearch's default index.max_inner_result_window
MEMBER_FIELDS = [
    *VERIFY_FIELDS,
    {"field": "content_digest"},
    {"field": "published_at", "format": "epoch_millis"},
]


@dataclass
class Member:
    id: str
    fingerprint: int
    digest: str | None
    published: float | None
    evidence: Evidence = field(default_factory=lambda: Evidence([]))  # fingerprints in doc-value order

    def all_fingerprints(self) -> list[int]:
        return list(self.evidence.fingerprints) or [self.fingerprint]


@dataclass
class BatchDedupeReport:
    index: str
    k: int
    fields_scanned: list[str] = field(default_factory=list)
    shared_buckets: int = 0
    candidate_pairs: int = 0
    verified_pairs: int = 0
    groups: int = 0
    documents_in_groups: int = 0
    duplicates: int = 0
    written: int = 0
    failures: list[list[str]] = field(default_factory=list)
    elapsed_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        root = x
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while x != root:  # path compression
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)
            self.parent.setdefault(min(ra, rb), min(ra, rb))


def _member(hit: dict[str, Any]) -> Member | None:
    f = hit.get("fields") or {}
    if not f.get(FP_FIELD):
        return None
    published = f.get("published_at")
    return Member(str(hit["_id"]), hit_fingerprints({FP_FIELD: f[FP_FIELD]})[0],
                  (f.get("content_digest") or [None])[0], float(published[0]) if published else None,
                  hit_evidence(f))  # fmt: skip


def _bucket_members(client: Elasticsearch, index: str, fname: str, key: str, page: int) -> list[Member]:
    """All members of a bucket too large for top_hits (point-in-time scan)."""
    hits = pit_scan(client, index, {"term": {fname: key}}, page, source=False, docvalue_fields=MEMBER_FIELDS)
    return [m for m in map(_member, hits) if m is not None]


def shared_buckets(client: Elasticsearch, index: str, fname: str, page: int = 2000) -> Iterator[list[Member]]:
    """Members of every bucket of ``fname`` that holds two or more documents."""
    for _, members in keyed_buckets(client, index, fname, page):
        yield members


def keyed_buckets(
    client: Elasticsearch, index: str, fname: str, page: int = 2000
) -> Iterator[tuple[str, list[Member]]]:
    """(key, members) of every bucket of ``fname`` that holds two or more documents."""
    after: dict[str, Any] | None = None
    while True:
        composite: dict[str, Any] = {"size": page, "sources": [{"key": {"terms": {"field": fname}}}]}
        if after:
            composite["after"] = after
        aggs = {"buckets": {"composite": composite, "aggs": {"members": {"top_hits": {
            "size": TOP_HITS, "_source": False, "docvalue_fields": MEMBER_FIELDS}}}}}  # fmt: skip
        resp = client.search(index=index, size=0, aggs=aggs, track_total_hits=False)
        agg = resp["aggregations"]["buckets"]
        for b in agg["buckets"]:
            if b["doc_count"] < 2:
                continue
            key = str(b["key"]["key"])
            if b["doc_count"] > TOP_HITS:
                yield key, _bucket_members(client, index, fname, key, 5000)
            else:
                members = [m for m in map(_member, b["members"]["hits"]["hits"]) if m is not None]
                yield key, members
        after = agg.get("after_key")
        if not after or not agg["buckets"]:
            return


def _close_pairs(
    members: list[Member], k: int, layout: BlockLayout | None = None, block: int = 0, key: str = ""
) -> list[tuple[int, int]]:
    """Index pairs (i < j) of members with fingerprints within distance k that the verification rule
    accepts (:func:`fingerprint_indexer.verify.check`).

    With ``layout`` only the fingerprints that put a member into this bucket (block ``block`` = ``key``)
    are compared: any pair within k shares a block key, so it is found in the bucket of that key.
    """
    owner: list[int] = []
    values: list[int] = []
    for n, m in enumerate(members):
        for fp in m.all_fingerprints():
            if layout is None or layout.keys(fp & MASK64)[block] == key:
                owner.append(n)
                values.append(fp & MASK64)
    if not values:
        return []
    fps = np.array(values, dtype=np.uint64)
    own = np.array(owner)
    dist = np.bitwise_count(fps[:, None] ^ fps[None, :])
    a, b = np.nonzero(np.triu(dist <= k, 1))
    pairs = {(int(min(x, y)), int(max(x, y))) for x, y in zip(own[a].tolist(), own[b].tolist(), strict=True)
             if x != y}  # fmt: skip
    return sorted((i, j) for i, j in pairs if check(members[i].evidence, members[j].evidence, k).accepted)


def batch_dedupe(
    client: Elasticsearch, index: str, k: int = 3, write: bool = True, page: int = 2000
) -> BatchDedupeReport:
    """Find and (with ``write``) record every near-duplicate group of ``index``."""
    started = time.perf_counter()
    es_index = ElasticsearchIndex(client, index, create=False)
    es_index.layout.check_k(k)
    report = BatchDedupeReport(index, k)
    uf = _UnionFind()
    members_by_id: dict[str, Member] = {}
    layout = es_index.layout
    for fname in [f"block_{b}" for b in range(layout.n_blocks)] + [BANDS_FIELD, "content_digest"]:
        report.fields_scanned.append(fname)
        exact, banded = fname == "content_digest", fname == BANDS_FIELD
        block = -1 if exact or banded else int(fname.removeprefix("block_"))
        for key, members in keyed_buckets(client, index, fname, page):
            n = len(members)
            if banded and n > MAX_BAND_READ:  # a stock phrase, as the embedded store treats it
                continue
            report.shared_buckets += 1
            report.candidate_pairs += n * (n - 1) // 2
            for m in members:
                members_by_id.setdefault(m.id, m)
            if exact:
                pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
            elif banded:  # a shared band: the rule decides each pair (check tells band matches itself)
                pairs = [(a, b) for a in range(n) for b in range(a + 1, n)
                         if check(members[a].evidence, members[b].evidence, k).accepted]
            else:
                pairs = _close_pairs(members, k, layout, block, key)
            for a, b in pairs:
                uf.union(members[a].id, members[b].id)
            report.verified_pairs += len(pairs)

    groups: dict[str, list[Member]] = {}
    for doc_id in uf.parent:
        groups.setdefault(uf.find(doc_id), []).append(members_by_id[doc_id])
    actions = []
    for linked in groups.values():
        canon = min(linked, key=lambda m: (m.published if m.published is not None else float("inf"), m.id))
        # as in the pipeline: a member whose facts conflict with the canonical's was linked through
        # another story of the same template, and stays out of the group
        group = [m for m in linked if m is canon or same_facts(m.evidence, canon.evidence)]
        if len(group) < 2:
            continue
        report.groups += 1
        report.documents_in_groups += len(group)
        for m in group:
            is_canon = m.id == canon.id
            same = m.digest is not None and m.digest == canon.digest
            decision = "new" if is_canon else "exact_duplicate" if same else "near_duplicate"
            report.duplicates += not is_canon
            distance = None if is_canon else closest(m.all_fingerprints(), canon.all_fingerprints())[0]
            fields = {"cluster_id": canon.id, "duplicate_of": None if is_canon else canon.id,
                      "distance": distance, "decision": decision}  # fmt: skip
            actions.append({"_op_type": "update", "_index": index, "_id": m.id, "doc": fields})
    if write and actions:
        try:
            report.written = es_index.write_actions(actions)
        except ElasticsearchWriteError as err:
            report.failures = [[i, r] for i, r in err.failures]
            report.written = len(actions) - len(err.failures)
        es_index.refresh()
    report.elapsed_s = round(time.perf_counter() - started, 3)
    return report
