"""The overview a reader browses: clusters largest first, counts, and the latest duplicates of many."""

from __future__ import annotations

from fingerprint_indexer.records.record import DocRecord
from fingerprint_indexer.store.overview import RECENT_KEPT, Overview


def _rec(doc_id: str, cluster: str, t: float, duplicate_of: str | None = None) -> DocRecord:
    return DocRecord(id=doc_id, fingerprint=1, content_digest="ab", keyword_digest="cd", cluster_id=cluster,
                     decision="near_duplicate" if duplicate_of else "new", duplicate_of=duplicate_of,
                     distance=1 if duplicate_of else None, degenerate=False, length=10, published_at=None,
                     version="v", time=t)


def test_the_overview_counts_every_duplicate_and_keeps_the_latest() -> None:
    n = RECENT_KEPT * 3 + 7
    records = [_rec("big", "big", 0.0), _rec("alone", "alone", 1.0)]
    records += [_rec(f"copy {i:05d}", "big", 10.0 + i, duplicate_of="big") for i in range(n)]
    ov = Overview.of(reversed(records))
    assert ov.documents == n + 2 and ov.duplicates == n
    assert ov.counts == {"new": 2, "near_duplicate": n}
    assert [r.id for r in ov.recent] == [f"copy {i:05d}" for i in range(n - 1, n - 1 - RECENT_KEPT, -1)]
    big, alone = ov.clusters
    assert (big.id, big.size, big.canonical, big.members[0]) == ("big", n + 1, "big", "big")
    assert big.members[1:4] == ("copy 00000", "copy 00001", "copy 00002")  # by decision time
    assert (alone.size, alone.canonical) == (1, "alone") and ov.cluster("alone") is alone
