"""Ingest decisions against a real Elasticsearch node, held against an in-memory oracle on real news."""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import fields, replace

import pytest
from support.corpus import ZH_NEWS, iter_records
from support.differential import timeless
from support.templates import EDITED_HEADLINES

from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.es_ingest import EsDecider, EsDecision, pipelined
from fingerprint_indexer.elastic.es_setup import setup_index
from fingerprint_indexer.engine.rules import Decision
from fingerprint_indexer.es.codec import BANDS_FIELD, TIME_FIELDS
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, FingerprintResult
from fingerprint_indexer.index import elasticsearch as elasticsearch_index
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.verification import Evidence, check, joins

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]
K = 3


@pytest.fixture(scope="module")
def fingerprinted() -> list[tuple[Document, FingerprintResult]]:
    """Real Chinese news with its natural exact copies, plus planted edits (near duplicates)."""
    by_content: dict[str, list[dict]] = defaultdict(list)
    singles: list[dict] = []
    for rec in itertools.islice(iter_records(ZH_NEWS), 4000):
        by_content[rec["content"]].append(rec)
    groups = [g for c, g in by_content.items() if len(g) > 1 and len(c) > 300][:15]
    singles = [g[0] for c, g in by_content.items() if len(g) == 1 and len(c) > 600][:150]
    edits = [
        dict(r, id=f"{r['id']}-edit", content=r["content"][:-40] + "（本文有删改）") for r in singles[::10]
    ]
    tiny = [{"id": "tiny-1", "content": "短"}, {"id": "tiny-2", "content": "短"}]
    records = [*singles, *[r for g in groups for r in g], *edits, *tiny]
    fpr = Fingerprinter()
    docs = [Document.from_mapping(r) for r in records]
    return [(d, fpr.fingerprint_document(d)) for d in docs]


def _verified_distance(a: FingerprintResult, b: FingerprintResult) -> int | None:
    """Smallest Hamming distance over all fingerprint pairs when the verification rule accepts the pair."""
    v = check(a.evidence, b.evidence, K)
    return v.distance if v.accepted else None


def oracle(batch: list[tuple[Document, FingerprintResult]]) -> dict[str, tuple[str, str | None]]:
    """(decision, duplicate_of) by the documented rules (any document or chunk fingerprint within K,
    accepted by the verification rule, nearest first, whose canonical's facts agree), computed by brute
    force in memory."""
    seen: list[tuple[str, FingerprintResult, str | None]] = []  # (id, result, root)
    out = {}
    for doc, res in batch:
        kind, match = "new", None
        exact = [s for s in seen if s[1].content_digest == res.content_digest]
        if exact:
            kind, match = "exact_duplicate", exact[0]
        elif not res.degenerate:
            near = [(d, s[0], s) for s in seen if not s[1].degenerate
                    and (d := _verified_distance(s[1], res)) is not None]  # fmt: skip
            if near:
                best = min(near, key=lambda n: (n[0], n[1]))[2]
                canonical = next(s for s in seen if s[0] == (best[2] or best[0]))
                if joins(res.evidence, best[0], canonical[0], canonical[1].evidence):
                    kind, match = "near_duplicate", best
        root = None if match is None else (match[2] or match[0])
        seen.append((doc.id, res, root))
        out[doc.id] = (kind, root)
    return out


def _run(decider: EsDecider, items, size: int, overlap: bool = False):
    decisions, failures = [], []
    batches = [items[start : start + size] for start in range(0, len(items), size)]
    results = pipelined(decider, batches, refresh_every=2) if overlap else map(decider.index_batch, batches)
    for result in results:
        decisions += result.decisions
        failures += result.failures
    return decisions, failures


@pytest.mark.parametrize("overlap", [False, True], ids=["sync", "pipelined"])
def test_decisions_match_the_oracle_and_rerun_is_idempotent(es_client, es_index, fingerprinted, overlap):
    setup_index(es_client, es_index)
    decider = EsDecider(ElasticsearchIndex(es_client, es_index), k=K)
    decisions, failures = _run(decider, fingerprinted, 37, overlap)  # batches split duplicate groups
    assert failures == []
    want = oracle(fingerprinted)
    got = {d.id: (d.decision, d.duplicate_of) for d in decisions}
    assert got == want
    kinds = {d.decision for d in decisions}
    assert kinds == {"new", "exact_duplicate", "near_duplicate"}
    for d in decisions:  # a duplicate joins its canonical's cluster; a new story founds its own
        assert d.cluster_id == (d.id if d.decision == "new" else got_cluster(decisions, d.duplicate_of))
    es_client.indices.refresh(index=es_index)
    assert es_client.count(index=es_index)["count"] == len(fingerprinted)
    stored = es_client.get(index=es_index, id=decisions[-1].id)["_source"]
    assert stored["decision"] == decisions[-1].decision and stored["degenerate"] is True
    assert "block_0" not in stored  # degenerate documents stay out of the buckets

    again, _ = _run(decider, fingerprinted, 50, overlap)
    assert [d.to_dict() | {"indexed": False} for d in decisions] == [d.to_dict() for d in again]


def test_an_es_decision_is_the_engines_with_written() -> None:
    """EsDecision.of passes the engine's fields by position: they must stay the same fields."""
    assert [f.name for f in fields(EsDecision)] == [f.name for f in fields(Decision)] + ["written"]
    d = Decision("a", "00ff", "near_duplicate", "b", 2, "b", "c", True, "p@1", ({"path": "x"},))
    engine_fields = {f.name: getattr(d, f.name) for f in fields(d)}  # a slotted dataclass has no vars()
    assert EsDecision.of(d, False) == EsDecision(**engine_fields, written=False)
    assert EsDecision.of(d, False).to_dict() == d.to_dict() | {"indexed": False}
    assert EsDecision.of(d, True).to_dict() == d.to_dict()


def got_cluster(decisions, doc_id):
    return next(d.cluster_id for d in decisions if d.id == doc_id)


def test_skip_leaves_duplicates_out_of_the_index(es_client, es_index, fingerprinted):
    decider = EsDecider(ElasticsearchIndex(es_client, es_index), k=K, on_duplicate="skip")
    decisions, _ = _run(decider, fingerprinted, 64)
    es_client.indices.refresh(index=es_index)
    new = [d.id for d in decisions if d.decision == "new"]
    assert es_client.count(index=es_index)["count"] == len(new) < len(decisions)
    assert all(not d.to_dict().get("indexed", True) for d in decisions if d.decision != "new")


def test_bulk_failures_are_reported_with_ids_and_the_rest_is_written(es_client, es_index, fingerprinted):
    decider = EsDecider(ElasticsearchIndex(es_client, es_index), k=K)
    bad = Document(
        id="bad-date", content="完全不同的一篇文章，讲的是天气和交通。" * 5, published_at="yesterday"
    )
    batch = [*fingerprinted[:5], (bad, Fingerprinter().fingerprint_document(bad))]
    result = decider.index_batch(batch)
    assert [i for i, _ in result.failures] == ["bad-date"]
    assert "published_at" in result.failures[0][1]
    es_client.indices.refresh(index=es_index)
    assert es_client.count(index=es_index)["count"] == 5


def test_wire_archive_and_feed_dates_are_written_in_iso_form(es_client, es_index):
    decider = EsDecider(ElasticsearchIndex(es_client, es_index), k=K)
    docs = [Document(id="wire", content="路透社报道，某公司宣布季度利润增长。" * 5,
                     published_at="3-MAR-1987 06:01:20.61"),
            Document(id="feed", content="天气预报说明天有大雨，请注意出行安全。" * 5,
                     published_at="Sun, 29 Sep 2024 19:00:00 +0800")]
    result = decider.index_batch([(d, Fingerprinter().fingerprint_document(d)) for d in docs])
    assert result.failures == []
    es_client.indices.refresh(index=es_index)
    hits = es_client.search(index=es_index, query={"match_all": {}}, source=["published_at"])["hits"]["hits"]
    assert {h["_id"]: h["_source"]["published_at"] for h in hits} == {
        "wire": "1987-03-03T06:01:20.610000", "feed": "2024-09-29T19:00:00+08:00"}


def _edit(text: str) -> str:
    """A realistic repost: site header and footer, one sentence dropped, one ad line inserted."""
    parts = [p for p in text.split("。") if p.strip()]
    del parts[len(parts) // 2]
    parts.insert(len(parts) // 3, "点击下载客户端，阅读更多精彩内容")
    return "本文来源：某某网 作者：张三\n" + "。".join(parts) + "。\n(责任编辑：李四)"


def test_edited_reposts_found_through_chunks_and_sketch(es_client, es_index, zh_articles):
    """Edited reposts are near-duplicates of their originals, in the index and within one batch."""
    arts = [a for a in zh_articles if a["content"].count("。") >= 12][:40]
    fpr = Fingerprinter()
    originals = [Document(id=f"o{i}", content=a["content"]) for i, a in enumerate(arts)]
    reposts = [Document(id=f"r{i}", content=_edit(a["content"])) for i, a in enumerate(arts)]
    setup_index(es_client, es_index)
    decider = EsDecider(ElasticsearchIndex(es_client, es_index), k=K)
    batch = [(d, fpr.fingerprint_document(d)) for d in originals]
    first = {d.id: d for d in decider.index_batch(batch).decisions}
    decider.refresh()
    # half of the reposts against the index, the rest in one batch after a fresh copy of their original
    later = [(d, fpr.fingerprint_document(d)) for d in reposts[:20]]
    copies = [Document(id=f"o{i}-b", content=arts[i]["content"] + "（完）") for i in range(20, 40)]
    pairs = zip(copies, reposts[20:], strict=True)
    later += [(d, fpr.fingerprint_document(d)) for pair in pairs for d in pair]
    out = {d.id: d for d in decider.index_batch(later).decisions}
    found = [o for o in out.values() if o.id.startswith("r") and o.decision == "near_duplicate"]
    assert len(found) >= 0.9 * len(reposts)
    for o in found:
        original = first["o" + o.id[1:]]
        # its own original's group (the corpus itself holds a few copies of one story)
        assert o.duplicate_of in ("o" + o.id[1:], original.duplicate_of)
        assert o.cluster_id == original.cluster_id
        assert o.distance is not None and o.distance <= K


def test_colliding_fingerprints_of_different_texts_stay_apart(es_client, es_index):
    """Fingerprints within k but sketches that disagree: neither a duplicate nor the same cluster, both in
    the index and within one batch; the same fingerprints with an agreeing sketch are a near-duplicate."""
    from fingerprint_indexer.fingerprint.sketch import sketch, to_bytes

    texts = {"a": "市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温。" * 3,
             "b": "国家队主教练在赛后新闻发布会上表示，球队在下半场调整了阵型。" * 3,
             "c": "市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温！" * 3,
             "d": "央行今天宣布下调存款准备金率零点五个百分点，释放长期资金约一万亿元。" * 3}
    fps = {"a": (0b0, ()), "b": (0b1, ()), "c": (0xF0F0F0F0F0F0F0F0, (0b11,)), "d": (0b111, ())}
    version = Fingerprinter().version

    def item(i: str) -> tuple[Document, FingerprintResult]:
        fp, chunks = fps[i]
        return Document(id=i, content=texts[i]), FingerprintResult(
            id=i, fingerprint=fp, blocks=[], content_digest=i, keyword_digest="k", top_terms=[],
            degenerate=False, n_tokens=10, version=version, chunks=chunks, sketch=to_bytes(sketch(texts[i])))

    setup_index(es_client, es_index)
    decider = EsDecider(ElasticsearchIndex(es_client, es_index), k=K)
    out = [d.to_dict() for d in decider.index_batch([item("a"), item("b"), item("c")]).decisions]
    assert [o["decision"] for o in out] == ["new", "new", "near_duplicate"]
    assert [o["cluster_id"] for o in out] == ["a", "b", "a"]
    assert out[2]["duplicate_of"] == "a" and out[2]["distance"] == 2  # c's chunk ~ a
    decider.refresh()
    late = decider.index_batch([item("d")]).decisions[0]  # within k of a, b and c's chunk; another story
    assert (late.decision, late.duplicate_of, late.cluster_id) == ("new", None, "d")
    decider.refresh()
    index = ElasticsearchIndex(es_client, es_index)
    assert {m.doc_id for m in index.query(0b111, K)} == {"a", "b", "d"}  # the plain lookup still sees them
    verified = index.query_verified(Evidence([0b0], to_bytes(sketch(texts["a"]))), K, exclude="a")
    assert [(m.doc_id, m.distance) for m in verified] == [("c", 2)]


def test_a_copy_points_at_the_end_of_a_relinked_chain(es_client, es_index, zh_articles):
    """Under keep longest/newest (the sidecar) a replaced canonical points at the copy that replaced it:
    a later copy must point at the end of the chain, not at the document it happened to match."""
    setup_index(es_client, es_index)
    fpr = Fingerprinter()
    text = zh_articles[5]["content"]

    def item(doc_id: str, body: str) -> tuple[Document, FingerprintResult]:
        doc = Document(id=doc_id, content=body)
        return doc, fpr.fingerprint_document(doc)

    decider = EsDecider(ElasticsearchIndex(es_client, es_index), k=K)
    first = decider.index_batch([item("c", text), item("a", text)]).decisions
    assert [(d.decision, d.duplicate_of) for d in first] == [("new", None), ("exact_duplicate", "c")]
    longer = item("b", text + "。（完）")
    decider.index_batch([longer])
    # what the sidecar's keep policy leaves: the old canonical re-pointed at the longer copy
    es_client.update(index=es_index, id="c", doc={"duplicate_of": "b", "decision": "near_duplicate"})
    es_client.update(index=es_index, id="b", doc={"duplicate_of": None, "decision": "new"})
    es_client.indices.refresh(index=es_index)
    fresh = EsDecider(ElasticsearchIndex(es_client, es_index), k=K)
    late = fresh.index_batch([item("d", text)]).decisions[0]
    assert (late.decision, late.duplicate_of) == ("exact_duplicate", "b")


def test_edited_headlines_are_found_through_sketch_bands(es_client, es_index):
    """Fingerprints farther than k, a shared sketch band: found in the index, among pending documents and
    within one batch, and by es dedupe, as the embedded pipeline finds them."""
    from fingerprint_indexer.elastic.es_batch_dedupe import batch_dedupe

    fpr = Fingerprinter()

    def fp(doc_id: str, text: str) -> tuple[Document, FingerprintResult]:
        return Document(id=doc_id, content=text), fpr.fingerprint(text=text, doc_id=doc_id)

    setup_index(es_client, es_index)
    decider = EsDecider(ElasticsearchIndex(es_client, es_index), k=K)
    decider.index_batch([fp("a0", EDITED_HEADLINES[0][0]), fp("a1", EDITED_HEADLINES[1][0])])
    decider.refresh()  # a0 and a1 are searchable; a2 stays pending
    decider.index_batch([fp("a2", EDITED_HEADLINES[2][0])])
    later = [fp(f"b{i}", pair[1]) for i, pair in enumerate(EDITED_HEADLINES)]
    out = {d.id: d for d in decider.index_batch([*later, fp("c1", EDITED_HEADLINES[1][1] + "？")]).decisions}
    for i in range(len(EDITED_HEADLINES)):
        assert (out[f"b{i}"].decision, out[f"b{i}"].duplicate_of) == ("near_duplicate", f"a{i}")
        assert out[f"b{i}"].distance is not None and out[f"b{i}"].distance > K
    assert out["c1"].duplicate_of == "a1"
    decider.refresh()
    report = batch_dedupe(es_client, es_index, k=K)
    assert "bands" in report.fields_scanned and report.groups == len(EDITED_HEADLINES)
    src = {h["_id"]: h["_source"] for h in es_client.search(index=es_index, size=20)["hits"]["hits"]}
    assert all(src[f"b{i}"]["duplicate_of"] == f"a{i}" for i in range(len(EDITED_HEADLINES)))


def test_a_band_held_by_more_than_max_band_read_documents_is_passed_over(es_client, es_index):
    """A stock phrase shared by very many documents is not evidence: Elasticsearch look-ups skip its band
    key, as the embedded store does, so their cost does not grow with it."""
    import numpy as np

    from fingerprint_indexer.fingerprint.sketch import MAX_BAND_READ, band_keys, to_bytes

    rng = np.random.default_rng(7)
    stock = rng.integers(1, 2**32, size=64, dtype=np.uint64).astype(np.uint32)

    def item(n: int) -> tuple[Document, FingerprintResult]:
        minima = rng.integers(1, 2**32, size=64, dtype=np.uint64).astype(np.uint32)
        minima[:4] = stock[:4]  # band 0 is the stock phrase's
        doc_id = f"d{n}"
        return Document(id=doc_id, content=doc_id), FingerprintResult(
            id=doc_id, fingerprint=int(rng.integers(0, 2**63)), blocks=[], content_digest=doc_id,
            keyword_digest="k", top_terms=[], degenerate=False, n_tokens=10, version=Fingerprinter().version,
            chunks=(), sketch=to_bytes(minima))

    setup_index(es_client, es_index)
    decider = EsDecider(ElasticsearchIndex(es_client, es_index), k=K)
    decider.index_batch([item(n) for n in range(MAX_BAND_READ)])
    decider.refresh()
    index = ElasticsearchIndex(es_client, es_index)
    key = band_keys(to_bytes(stock))[0]
    assert index.hot_bands(band_keys(to_bytes(stock))) == set()  # 64 holders: still a lookup key
    query = index.candidates_query([0], sketch=to_bytes(stock), hot={key})
    assert key not in str(query)
    decider.index_batch([item(MAX_BAND_READ)])
    decider.refresh()
    assert index.hot_bands(band_keys(to_bytes(stock))) == {key}
    # asked in parts of two keys (one round trip of several searches): the same answer
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(elasticsearch_index, "HOT_BANDS_PART", 2)
        assert index.hot_bands([*band_keys(to_bytes(stock)), "other"]) == {key}
    # the same among documents not yet searchable: one batch of MAX_BAND_READ + 2 holders of one band
    # whose other minima equal the first's would all be near copies through it, were it not passed over
    twins = [item(MAX_BAND_READ + 1 + n) for n in range(MAX_BAND_READ + 2)]
    same = [(doc, replace(res, sketch=twins[0][1].sketch)) for doc, res in twins]
    out = decider.index_batch(same).decisions
    assert (out[1].decision, out[1].duplicate_of) == ("near_duplicate", twins[0][0].id)
    assert out[-1].decision == "new"  # its band has more than MAX_BAND_READ earlier holders
    # the counts come from the matching documents: no map of every band value in the shard (global
    # ordinals, rebuilt after each refresh) was built for them, where the server reports such builds
    stats = es_client.indices.stats(index=es_index, metric="fielddata", fields="*").body
    built = stats["_all"]["total"]["fielddata"].get("global_ordinals")
    if built is not None:
        assert BANDS_FIELD not in (built.get("fields") or {}), built


def test_es_index_and_the_sidecar_write_the_same_fields(es_client, es_index, tmp_path, zh_articles):
    """One document builder: what ``es index`` stores beside the text equals what the sidecar adds for the
    same decision (the embedded pipeline decides the same, as the decision contract holds)."""
    from fingerprint_indexer.pipeline import Pipeline
    from fingerprint_indexer.sidecar.ingest import es_fields

    fpr = Fingerprinter()
    text = zh_articles[7]["content"]
    docs = [Document(id="a", content=text, published_at="2024-05-01"),
            Document(id="b", content=text + "（完）")]
    items = [(d, fpr.fingerprint_document(d)) for d in docs]
    setup_index(es_client, es_index)
    EsDecider(ElasticsearchIndex(es_client, es_index), k=K, keep="longest").index_batch(items)
    with Pipeline(tmp_path, k=K, keep="longest") as pipe:
        decisions = pipe.decide_batch(items)
    layout = ElasticsearchIndex(es_client, es_index).layout
    for (doc, res), dec in zip(items, decisions, strict=True):
        stored = es_client.get(index=es_index, id=doc.id)["_source"]
        body = {k: stored.pop(k) for k in ("title", "content", "published_at") if k in stored}
        assert body["content"] == doc.content
        sidecar = es_fields(res, dec, layout, doc.length)
        if doc.id == "a":  # re-pointed at the longer copy by the relink update, as the sidecar's own update
            sidecar.update(duplicate_of="b", distance=decisions[1].distance)
        assert set(TIME_FIELDS) <= stored.keys() & sidecar.keys()
        assert timeless(stored) == timeless(sidecar)
        assert len(stored["terms"].split()) <= 1024 and stored["keyword_digest"] == res.keyword_digest
