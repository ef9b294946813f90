"""``es reconcile`` on a real node: two writers of one index that cannot see each other's documents (the
index is never refreshed while they write; exact copies are agreed through digest claims) end, after
reconciliation, with the decisions one writer given the documents in the order they were decided writes;
a window leaves older decisions alone."""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Any

import pytest
from elasticsearch import Elasticsearch, helpers
from support.decision_contract import edited
from support.stateless import StatelessSidecarStore

from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.es_setup import setup_index
from fingerprint_indexer.elastic.reconcile import decided_order, reconcile
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]
FIELDS = ["decision", "duplicate_of", "cluster_id", "distance"]


def stored(client: Elasticsearch, index: str, with_time: bool = False) -> dict[str, dict[str, Any]]:
    fields = [*FIELDS, "content_digest", *(["decided_at"] if with_time else [])]
    client.indices.refresh(index=index)
    return {h["_id"]: {f: h["_source"].get(f) for f in fields}
            for h in helpers.scan(client, index=index, source=fields)}  # fmt: skip


@pytest.fixture
def indices(es_client: Elasticsearch, es_index: str):
    names = [f"{es_index}-one", f"{es_index}-two"]
    for name in names:
        setup_index(es_client, name)
        es_client.indices.put_settings(index=name, settings={"index": {"refresh_interval": "-1"}})
    yield names
    made = list(es_client.indices.get(index=",".join(f"{n}-*" for n in names), allow_no_indices=True))
    if made:
        es_client.indices.delete(index=",".join(made))


def test_two_writers_reconciled_equal_one_writer_in_their_order(es_client, indices, zh_articles):
    arts = zh_articles[:120]
    docs = [Document(id=f"n{i}", content=a["content"]) for i, a in enumerate(arts)]
    docs += [Document(id=f"x{i}", content=arts[i]["content"]) for i in range(0, 120, 6)]
    docs += [Document(id=f"e{i}", content=edited(arts[i]["content"])) for i in range(3, 120, 5)]
    random.Random(7).shuffle(docs)
    fpr = Fingerprinter()
    items = {d.id: (d, fpr.fingerprint_document(d)) for d in docs}
    batches = [list(items.values())[s : s + 20] for s in range(0, len(items), 20)]
    writers = [StatelessSidecarStore(es_client, indices[1], "first") for _ in range(2)]
    for n, batch in enumerate(batches):
        writers[n % 2].decide(batch)
        time.sleep(0.002)  # batches decided in different milliseconds
    for w in writers:
        w.close()
    two = stored(es_client, indices[1], with_time=True)
    news = Counter(d["content_digest"] for d in two.values() if d["decision"] == "new")
    assert max(news.values()) == 1  # exact copies agreed through the claims

    # one writer given the documents in the order the two decided them
    order = sorted(two, key=lambda i: decided_order(two[i]["decided_at"], two[i]["duplicate_of"], i))
    one = StatelessSidecarStore(es_client, indices[0], "first")
    for s in range(0, len(order), 20):
        one.decide([items[i] for i in order[s : s + 20]])
    one.close()
    reference = stored(es_client, indices[0])
    before = {i: {f: v for f, v in d.items() if f != "decided_at"} for i, d in two.items()}
    missed = [i for i in reference if reference[i]["decision"] == "near_duplicate"
              and before[i]["decision"] == "new"]  # fmt: skip
    assert missed, "the writers never missed each other's near copies: the test shows nothing"

    report = reconcile(es_client, indices[1], 0)
    after = stored(es_client, indices[1])
    assert report.documents == len(docs) and report.changed >= len(missed)
    assert after == reference
    assert {"new", "exact_duplicate", "near_duplicate"} <= {d["decision"] for d in after.values()}
    # what the race got right stays: every document the two writers decided as the reference did
    assert report.changed == sum(before[i] != reference[i] for i in reference)

    again = reconcile(es_client, indices[1], 0)
    assert (again.documents, again.changed) == (len(docs), 0)
    assert reconcile(es_client, indices[0], 0).changed == 0


def test_a_window_leaves_older_decisions_alone(es_client, indices, zh_articles):
    fpr = Fingerprinter()
    old = [Document(id=f"o{i}", content=a["content"]) for i, a in enumerate(zh_articles[:10])]
    store = StatelessSidecarStore(es_client, indices[0], "first")
    store.decide([(d, fpr.fingerprint_document(d)) for d in old])
    es_client.indices.refresh(index=indices[0])
    cut = max(int(h["_source"]["decided_at"]) for h in helpers.scan(es_client, index=indices[0],
                                                                     source=["decided_at"])) + 1  # fmt: skip
    time.sleep(0.01)  # the later decisions carry a later decided_at
    new = [Document(id="c0", content=zh_articles[0]["content"]),
           Document(id="e1", content=edited(zh_articles[1]["content"]))]
    store.decide([(d, fpr.fingerprint_document(d)) for d in new])
    store.close()
    first = stored(es_client, indices[0])
    report = reconcile(es_client, indices[0], cut)
    assert report.documents == 2
    after = stored(es_client, indices[0])
    assert after == first
    assert (after["c0"]["decision"], after["c0"]["duplicate_of"]) == ("exact_duplicate", "o0")
