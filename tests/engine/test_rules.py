"""The engine's pure helpers on chosen values."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import given
from hypothesis import strategies as st

from fingerprint_indexer.documents import Document
from fingerprint_indexer.engine.rules import Decision, Engine, batch_canonical, duplicate_kind
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.store.memory import MemoryStore

members = st.lists(st.tuples(st.one_of(st.none(), st.floats(0, 1e12)), st.text(min_size=1, max_size=3)),
                   min_size=1, unique_by=lambda m: m[1])  # fmt: skip


@given(members)
def test_batch_canonical_is_the_first_published_then_the_smallest_id(group):
    canon = batch_canonical(group, lambda m: m[0], lambda m: m[1])
    dated = [m for m in group if m[0] is not None]
    if dated:
        assert canon[0] == min(m[0] for m in dated)
        assert canon[1] == min(m[1] for m in dated if m[0] == canon[0])
    else:
        assert canon[1] == min(m[1] for m in group)
    assert batch_canonical(list(reversed(group)), lambda m: m[0], lambda m: m[1]) == canon


def test_duplicate_kind_names_exact_copies_by_digest():
    assert duplicate_kind(True) == "exact_duplicate"
    assert duplicate_kind(False) == "near_duplicate"


def test_a_document_decided_alone_is_decided_as_the_questions_would():
    """A document the caller shows alone (nothing under its id, no copy of its text, nothing near) gets
    the decision and the record that asking the store gives it: new, founding its cluster."""
    texts = ["市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温，最低气温可能跌破零度。",
             "The Met Office said on Friday that London may see snow this weekend, the first of the winter.",
             "国务院常务会议今天在北京召开，部署进一步稳定就业的措施，会议要求各地抓好落实。"]  # fmt: skip
    fpr = Fingerprinter()
    asked, shown = MemoryStore(), MemoryStore()
    for n, text in enumerate(texts):
        doc = Document(id=f"d{n}", title="", content=text)
        res = fpr.fingerprint_document(doc)
        assert asked.record(doc.id) is None and asked.doc_with_digest(res.content_digest) is None
        assert not asked.near_docs(res.evidence, 3) and not res.degenerate
        d1, r1 = Engine().decide(asked, doc, res)
        d2, r2 = Engine().decide(shown, doc, res, alone=True)
        assert d1 == d2 and d1.decision == "new" and d1.cluster_id == doc.id
        assert r1 is not None and r2 is not None and replace(r1, time=0) == replace(r2, time=0)
        assert asked.n_clusters == shown.n_clusters == n + 1


def test_a_stored_record_holds_each_value_in_its_named_field():
    """The engine makes records by position (cheaper than by name, once a document): each field holds
    what its name says, for a document whose values all differ (a date, facts, chunks)."""
    text = ("国家统计局2023年5月15日发布数据，4月份全国居民消费价格同比上涨0.1%，环比下降0.1%。" * 3 +
            "其中，城市上涨0.1%，农村上涨0.2%；食品价格下降0.2%，非食品价格上涨0.2%。" * 3)
    doc = Document(id="d1", title="统计局发布4月CPI", content=text, published_at="2023-05-15T09:30:00Z")
    res = Fingerprinter().fingerprint_document(doc)
    store = MemoryStore()
    Engine().decide(store, doc, res)  # stored: the next one is a copy of it
    copy = Document(id="d2", title=doc.title, content=text, published_at="2023-05-16T08:00:00Z")
    d, rec = Engine().decide(store, copy, res)
    assert rec is not None and d.decision == "exact_duplicate" and res.facts and res.chunks
    want = {"id": "d2", "fingerprint": res.fingerprint, "content_digest": res.content_digest,
            "keyword_digest": res.keyword_digest, "cluster_id": "d1", "decision": "exact_duplicate",
            "duplicate_of": "d1", "distance": 0, "degenerate": res.degenerate, "length": copy.length,
            "published_at": copy.published_at, "version": res.version, "chunks": list(res.chunks),
            "sketch": res.sketch.hex(), "facts": list(res.facts), "frames": list(res.frames),
            "replaces": None}  # fmt: skip
    assert {name: getattr(rec, name) for name in want} == want
    assert isinstance(rec.time, float) and rec.time > 0


def test_the_engine_reports_decisions_of_the_type_it_is_given():
    @dataclass(slots=True)
    class Reported(Decision):
        extra: bool = True

    doc = Document(id="a", title="", content="市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温。")
    d, _ = Engine(report=Reported).decide(MemoryStore(), doc, Fingerprinter().fingerprint_document(doc))
    assert type(d) is Reported and d.extra and d.decision == "new"
