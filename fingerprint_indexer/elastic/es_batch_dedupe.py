"""Deduplicate a whole index inside Elasticsearch (``fingerprint-indexer es dedupe``).

Composite aggregations page through every block field (and the content digest); a bucket holding two or
more documents is a candidate group, whose members are read with only doc values (the small buckets of a
page together, a larger one by itself, a page at a time). Block fields hold the keys of every
document and chunk fingerprint, so a pair is a candidate when the fingerprints that put both members in the
bucket lie within Hamming ``k``; it is accepted only by the verification rule (sketch and facts,
:func:`fingerprint_indexer.verification.check`, as every writer). Accepted pairs are joined into groups
(connected components); a member whose facts conflict with the canonical's stays out of the group (it
was linked through another story of the same template: :func:`fingerprint_indexer.verification.joins`), and
every member of a group gets ``cluster_id`` and ``duplicate_of`` (the group's canonical document:
:func:`fingerprint_indexer.engine.rules.batch_canonical`, earliest ``published_at``, then smallest id)
written back, with ``distance`` the smallest Hamming distance over all
fingerprint pairs with the canonical.
Elasticsearch distributes the bucket work over its shards; the client only verifies and joins.

Memory is bounded by a page of a bucket, however large the bucket: its members are read a page at a time
(``MEMBER_PAGE``), and each page is compared with itself, the page before it and one member of each group
already linked in the bucket (at most a page of them), never as an n x n matrix of the whole bucket. A
member is verified against at most ``PARTNERS`` candidates of other groups, nearest first (candidates
already in its group are skipped), so a bucket of identical copies costs a page of work per page. Exact
copies (a ``content_digest`` bucket) are each joined to the bucket's first member. Only members of
accepted pairs are kept until the write-back.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from elasticsearch import Elasticsearch

from fingerprint_indexer.engine.rules import batch_canonical, duplicate_kind
from fingerprint_indexer.es.codec import (
    BANDS_FIELD,
    FP_FIELD,
    VERIFY_FIELDS,
    block_fields,
    hit_evidence,
    hit_fingerprints,
)
from fingerprint_indexer.es.errors import ElasticsearchWriteError
from fingerprint_indexer.es.scan import pit_scan
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import MASK64
from fingerprint_indexer.fingerprint.sketch import MAX_BAND_READ
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.verification import Evidence, check, closest, joins

TOP_HITS = 100  # a bucket of more members is read by itself, a page at a time
MEMBER_PAGE = 1000  # members of an oversized bucket read and compared at a time
PARTNERS = 64  # candidates of other groups verified per member and bucket, nearest first
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


def _bucket_pages(
    client: Elasticsearch, index: str, fname: str, key: str, page: int
) -> Iterator[list[Member]]:
    """The members of a bucket of more than TOP_HITS, a page at a time (point-in-time scan)."""
    hits = pit_scan(client, index, {"term": {fname: key}}, page, source=False, docvalue_fields=MEMBER_FIELDS)
    out: list[Member] = []
    for hit in hits:
        m = _member(hit)
        if m is not None:
            out.append(m)
        if len(out) == page:
            yield out
            out = []
    if out:
        yield out


def shared_buckets(client: Elasticsearch, index: str, fname: str, page: int = 2000) -> Iterator[list[Member]]:
    """Members of every bucket of ``fname`` that holds two or more documents (each bucket whole: for
    inspection; :func:`batch_dedupe` reads oversized buckets page by page)."""
    for _, pages in keyed_buckets(client, index, fname, page):
        yield [m for members in pages for m in members]


def keyed_buckets(
    client: Elasticsearch, index: str, fname: str, page: int = 2000, member_page: int = MEMBER_PAGE,
    skip_above: int | None = None,
) -> Iterator[tuple[str, Iterator[list[Member]]]]:
    """(key, pages of members) of every bucket of ``fname`` that holds two or more documents (and at most
    ``skip_above``, when given); read each bucket's pages before asking for the next bucket.

    A composite aggregation pages through the keys with their counts only: with keys of about 32 bits
    nearly every bucket holds one document, and fetching members per bucket would read the whole index.
    The shared buckets of a page are then read together, by one ``terms`` search of up to
    ``MEMBER_PAGE`` documents each, and one larger than ``TOP_HITS`` a page at a time by itself."""
    after: dict[str, Any] | None = None
    while True:
        composite: dict[str, Any] = {"size": page, "sources": [{"key": {"terms": {"field": fname}}}]}
        if after:
            composite["after"] = after
        resp = client.search(index=index, size=0, aggs={"buckets": {"composite": composite}},
                             track_total_hits=False)  # fmt: skip
        agg = resp["aggregations"]["buckets"]
        batch: list[tuple[str, int]] = []
        for b in agg["buckets"]:
            count = int(b["doc_count"])
            if count < 2 or (skip_above is not None and count > skip_above):
                continue
            key = str(b["key"]["key"])
            if count > TOP_HITS:
                yield from _shared_members(client, index, fname, batch)
                batch = []
                yield key, _bucket_pages(client, index, fname, key, member_page)
                continue
            if sum(c for _, c in batch) + count > member_page:
                yield from _shared_members(client, index, fname, batch)
                batch = []
            batch.append((key, count))
        yield from _shared_members(client, index, fname, batch)
        after = agg.get("after_key")
        if not after or not agg["buckets"]:
            return


def _shared_members(
    client: Elasticsearch, index: str, fname: str, batch: list[tuple[str, int]]
) -> Iterator[tuple[str, Iterator[list[Member]]]]:
    """(key, its members) of buckets of at most ``TOP_HITS`` documents, read by one search."""
    if not batch:
        return
    wanted = {key for key, _ in batch}
    resp = client.search(index=index, query={"terms": {fname: sorted(wanted)}}, source=False,
                         docvalue_fields=[*MEMBER_FIELDS, {"field": fname}],
                         size=sum(c for _, c in batch), track_total_hits=False)  # fmt: skip
    by_key: dict[str, list[Member]] = {key: [] for key, _ in batch}
    for hit in resp["hits"]["hits"]:
        m = _member(hit)
        if m is None:
            continue
        for key in set((hit.get("fields") or {}).get(fname) or ()) & wanted:
            by_key[key].append(m)
    for key, _ in batch:
        yield key, iter([by_key[key]])


def _bucket_fps(
    members: list[Member], layout: BlockLayout | None, block: int, key: str
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
    """(owner position, fingerprint) of each fingerprint that puts a member into this bucket (key number
    ``block`` of ``layout`` equal to ``key``; all of a member's fingerprints without ``layout``): any pair
    within k shares a key, so it is found in the bucket of that key."""
    owner = [n for n, m in enumerate(members) for _ in m.all_fingerprints()]
    values = [fp & MASK64 for m in members for fp in m.all_fingerprints()]
    own, fps = np.array(owner, dtype=np.int64), np.array(values, dtype=np.uint64)
    if layout is None or not len(fps):
        return own, fps
    here = layout.key_values_many(fps)[:, block] == np.uint64(int(key, 16))
    return own[here], fps[here]


class _Linker:
    """Joins the members of buckets that the verification rule accepts, with memory bounded by a page."""

    def __init__(self, k: int, report: BatchDedupeReport, partners: int = PARTNERS) -> None:
        self.k, self.report, self.partners = k, report, partners
        self.uf = _UnionFind()
        self.linked: dict[str, Member] = {}  # members of accepted pairs (the groups to write back)

    def _link(self, a: Member, b: Member) -> None:
        self.linked.setdefault(a.id, a)
        self.linked.setdefault(b.id, b)
        self.uf.union(a.id, b.id)
        self.report.verified_pairs += 1

    def exact(self, pages: Iterable[list[Member]]) -> None:
        """A content-digest bucket: every member is an exact copy of the first."""
        first: Member | None = None
        n = 0
        for page in pages:
            for m in page:
                n += 1
                if first is None:
                    first = m
                else:
                    self._link(first, m)
        self.report.candidate_pairs += n * (n - 1) // 2

    def banded(self, members: list[Member]) -> None:
        """A shared sketch band (at most MAX_BAND_READ members): the rule decides each pair (check tells
        a band match by itself)."""
        n = len(members)
        self.report.candidate_pairs += n * (n - 1) // 2
        for a in range(n):
            for b in range(a + 1, n):
                if self.uf.find(members[a].id) != self.uf.find(members[b].id) and check(
                        members[a].evidence, members[b].evidence, self.k).accepted:
                    self._link(members[a], members[b])

    def near(self, pages: Iterable[list[Member]], layout: BlockLayout | None = None, block: int = 0,
             key: str = "") -> None:
        """A block bucket: each page against itself, the page before and one member per linked group."""
        previous: list[Member] = []
        reps: list[Member] = []  # one member per group linked in this bucket, at most a page of them
        rep_roots: set[str] = set()
        n = 0
        for page in pages:
            n += len(page)
            here = {m.id for m in page}
            pool = page + [m for m in previous if m.id not in here]
            seen = here | {m.id for m in previous}
            pool += [m for m in reps if m.id not in seen]
            self._page(page, pool, layout, block, key)
            for m in pool:
                if len(reps) >= max(len(page), 1):
                    break
                if m.id in self.linked:
                    root = self.uf.find(m.id)
                    if root not in rep_roots:
                        rep_roots.add(root)
                        reps.append(m)
            previous = page
        self.report.candidate_pairs += n * (n - 1) // 2

    def _page(self, page: list[Member], pool: list[Member], layout: BlockLayout | None, block: int,
              key: str) -> None:
        """Verify and join the pairs of (page member, earlier page member or other pool member) within k."""
        own, fps = _bucket_fps(pool, layout, block, key)
        if not len(fps):
            return
        roots: dict[str, int] = {}
        labels = np.array([roots.setdefault(self.uf.find(m.id), len(roots)) for m in pool], dtype=np.int64)
        n_page = len(page)
        for i, m in enumerate(page):
            rows = np.flatnonzero(own == i)
            if not len(rows):
                continue
            dist = np.bitwise_count(fps[rows][:, None] ^ fps[None, :]).min(axis=0)  # (fingerprints of pool)
            near = np.flatnonzero(dist <= self.k)
            partner = own[near]
            keep = (partner != i) & ((partner < i) | (partner >= n_page))
            partner, d = partner[keep], dist[near][keep]
            if not len(partner):
                continue
            ordered = partner[np.lexsort((partner, d))]  # nearest first, then pool order
            _, first = np.unique(ordered, return_index=True)
            cands = ordered[np.sort(first)]  # each partner once, at its smallest distance
            cands = cands[labels[cands] != labels[i]][: self.partners]  # of other groups
            for j in cands.tolist():
                if labels[j] == labels[i]:  # joined through an earlier partner of this member
                    continue
                if check(m.evidence, pool[j].evidence, self.k).accepted:
                    self._link(pool[j], m)
                    labels[labels == labels[j]] = labels[i]


def batch_dedupe(
    client: Elasticsearch, index: str, k: int = 3, write: bool = True, page: int = 2000,
    member_page: int = MEMBER_PAGE,
) -> BatchDedupeReport:
    """Find and (with ``write``) record every near-duplicate group of ``index``; ``page`` buckets per
    aggregation request, ``member_page`` members of an oversized bucket read and compared at a time."""
    started = time.perf_counter()
    es_index = ElasticsearchIndex(client, index, create=False)
    es_index.layout.check_k(k)
    report = BatchDedupeReport(index, k)
    linker = _Linker(k, report)
    layout = es_index.layout
    for fname in [*block_fields(layout), BANDS_FIELD, "content_digest"]:
        report.fields_scanned.append(fname)
        exact, banded = fname == "content_digest", fname == BANDS_FIELD
        block = -1 if exact or banded else int(fname.removeprefix("block_"))
        # a band key of more than MAX_BAND_READ documents is a stock phrase, as the embedded store treats it
        skip = MAX_BAND_READ if banded else None
        for key, pages in keyed_buckets(client, index, fname, page, member_page, skip_above=skip):
            report.shared_buckets += 1
            if exact:
                linker.exact(pages)
            elif banded:
                linker.banded([m for members in pages for m in members])
            else:
                linker.near(pages, layout, block, key)

    groups: dict[str, list[Member]] = {}
    for doc_id, m in linker.linked.items():
        groups.setdefault(linker.uf.find(doc_id), []).append(m)
    actions = []
    for linked in groups.values():
        canon = batch_canonical(linked, lambda m: m.published, lambda m: m.id)
        # as in the engine: a member whose facts conflict with the canonical's was linked through
        # another story of the same template, and stays out of the group
        group = [m for m in linked if joins(m.evidence, m.id, canon.id, canon.evidence)]
        if len(group) < 2:
            continue
        report.groups += 1
        report.documents_in_groups += len(group)
        for m in group:
            is_canon = m.id == canon.id
            same = m.digest is not None and m.digest == canon.digest
            decision = "new" if is_canon else duplicate_kind(same)
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
