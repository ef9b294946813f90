"""Pipeline rules on chosen fingerprints (decide_batch), and end to end on real fingerprinting."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.templates import EDITED_HEADLINES

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, FingerprintResult
from fingerprint_indexer.pipeline import Pipeline


def _res(doc_id: str, fp: int, digest: str, degenerate: bool = False, version: str = "") -> FingerprintResult:
    return FingerprintResult(id=doc_id, fingerprint=fp, blocks=[], content_digest=digest, keyword_digest="k",
                             top_terms=[], degenerate=degenerate, n_tokens=10, version=version)


def _decide(pipe: Pipeline, *items: tuple[Document, int, str] | tuple[Document, int, str, bool]):
    version = pipe.fingerprinter.version
    batch = [(it[0], _res(it[0].id, it[1], it[2], bool(it[3:] and it[3]), version)) for it in items]
    return [d.to_dict() for d in pipe.decide_batch(batch)]


def doc(doc_id: str, length: int = 10, published_at: str | None = None) -> Document:
    return Document(id=doc_id, content="x" * length, published_at=published_at)


def test_new_exact_near_and_clusters(tmp_path):
    with Pipeline(tmp_path, k=3) as p:
        out = _decide(p, (doc("a"), 0b0, "h1"), (doc("b"), 0b0, "h1"), (doc("c"), 0b111, "h2"),
                      (doc("far"), 0xFFFF, "h3"))
    assert [o["decision"] for o in out] == ["new", "exact_duplicate", "near_duplicate", "new"]
    assert [o["duplicate_of"] for o in out] == [None, "a", "a", None]
    assert [o["distance"] for o in out] == [None, 0, 3, None]
    assert [o["cluster_id"] for o in out] == ["a", "a", "a", "far"]


def test_each_decision_and_the_store_name_the_verification_policy(tmp_path):
    from fingerprint_indexer.store.embedded import EmbeddedStore
    from fingerprint_indexer.verification import DEFAULT_POLICY

    with Pipeline(tmp_path, k=3) as p:
        out = _decide(p, (doc("a"), 0b0, "h1"), (doc("c"), 0b111, "h2"))
    assert {o["policy"] for o in out} == {DEFAULT_POLICY.tag}
    with EmbeddedStore(tmp_path, readonly=True) as store:
        assert store.policies == [DEFAULT_POLICY.tag]
    with Pipeline(tmp_path, k=3) as p:  # opened again: named once
        assert p.store.policies == [DEFAULT_POLICY.tag]


def test_runs_are_incremental_and_idempotent(tmp_path):
    with Pipeline(tmp_path, k=3) as p:
        first = _decide(p, (doc("a"), 0, "h1"), (doc("b"), 1, "h2"))
    with Pipeline(tmp_path, k=3) as p:
        again = _decide(p, (doc("a"), 0, "h1"), (doc("b"), 1, "h2"))
        later = _decide(p, (doc("c"), 3, "h3"))
        assert p.store.n_docs == 3 and p.store.n_clusters == 1
    assert again == first
    assert later[0]["cluster_id"] == "a" and later[0]["duplicate_of"] == "a"


def test_changed_content_under_same_id_replaces_the_old_record(tmp_path):
    with Pipeline(tmp_path, k=3) as p:
        _decide(p, (doc("a"), 0, "h1"))
        out = _decide(p, (doc("a"), 0xFFFF_FFFF, "h9"), (doc("b"), 0, "h1"))
        assert out[0]["decision"] == "new"
        assert out[1]["decision"] == "new"  # the old content of "a" is gone from every index
        assert p.store.n_docs == 2


def test_degenerate_documents_only_get_exact_checks(tmp_path):
    with Pipeline(tmp_path, k=3) as p:
        out = _decide(p, (doc("a"), 0, "h1", True), (doc("b"), 1, "h2", True), (doc("c"), 0, "h1", True),
                      (doc("d"), 0, "h4"))
        assert p.store.near(0, 3)[0].doc_id == "d" and len(p.store.near(0, 3)) == 1
    assert [o["decision"] for o in out] == ["new", "new", "exact_duplicate", "new"]
    assert out[2]["duplicate_of"] == "a" and out[2]["cluster_id"] == out[0]["cluster_id"] == "a"
    assert out[3]["cluster_id"] == "d"  # degenerate docs found no searchable centre


def test_keep_longest_makes_the_longer_duplicate_canonical(tmp_path):
    with Pipeline(tmp_path, k=3, keep="longest") as p:
        out = _decide(p, (doc("short", 5), 0, "h1"), (doc("long", 50), 1, "h2"), (doc("mid", 20), 2, "h3"))
        assert p.store.record("short").duplicate_of == "long"
    assert out[1]["duplicate_of"] is None and out[1]["replaces"] == "short" and out[1]["distance"] == 1
    assert out[2]["duplicate_of"] == "long"  # resolved through short -> long


def test_keep_newest(tmp_path):
    with Pipeline(tmp_path, k=3, keep="newest") as p:
        out = _decide(p, (doc("old", published_at="2020-01-01"), 0, "h1"),
                      (doc("new", published_at="2021-01-01"), 0, "h2"),
                      (doc("undated"), 0, "h3"))
    assert out[1]["replaces"] == "old" and out[2]["duplicate_of"] == "new"


def test_process_many_on_real_text(tmp_path):
    body = "市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温，最低气温可能跌破零度。" * 5
    other = "国家队主教练在赛后新闻发布会上表示，球队在下半场调整了阵型，最终以两球优势获胜。" * 5
    docs = [Document(id="1", content=body), Document(id="2", content=other),
            Document(id="3", content=body.replace("，", ",")), Document(id="4", content="")]
    with Pipeline(tmp_path, batch_size=2) as p:
        out = [d.to_dict() for d in p.process_many(docs)]
        assert p.process(Document(id="1", content=body)).decision == "new"  # stored decision repeated
    assert [o["decision"] for o in out] == ["new", "new", "exact_duplicate", "new"]
    assert out[2]["duplicate_of"] == "1" and out[3].get("degenerate") is True


def test_copies_stay_in_the_cluster_of_what_they_matched_when_a_nearer_centre_appeared(tmp_path):
    with Pipeline(tmp_path, k=3) as p:
        out = _decide(p, (doc("a"), 0b0000, "h1"), (doc("d"), 0b0111, "h2"), (doc("x"), 0b1111, "h3"),
                      (doc("e"), 0b0111, "h2"), (doc("f"), 0b0111, "h4"))
        assert p.store.cluster("a").size == 5
    # x is 4 bits from the centre a but 1 from d, so it is a near copy of d's group and joins it: a
    # duplicate always shares the cluster of the document it duplicates
    assert [o["decision"] for o in out] == ["new", "near_duplicate", "near_duplicate", "exact_duplicate",
                                            "near_duplicate"]
    assert [o["cluster_id"] for o in out] == ["a"] * 5
    assert out[3]["duplicate_of"] == "a" and out[4]["duplicate_of"] == "a"


def test_new_documents_found_clusters_by_single_pass(tmp_path):
    with Pipeline(tmp_path, k=3) as p:
        out = _decide(p, (doc("a"), 0b0000, "h1"), (doc("b"), 0xF0F0, "h2"), (doc("c"), 0xFF00FF, "h3"))
    assert [o["cluster_id"] for o in out] == ["a", "b", "c"]


def test_removing_one_of_several_exact_copies_keeps_the_text_findable(tmp_path):
    """The digest key passes to a document that still holds the text, so later copies stay exact."""
    with Pipeline(tmp_path, k=3) as p:
        _decide(p, (doc("a"), 0b0, "h1"), (doc("b"), 0b0, "h1"), (doc("c"), 0b0, "h1"))
        assert p.store.delete("a")
        assert p.store.doc_with_digest("h1") == "b"
        later = _decide(p, (doc("d"), 0b0, "h1"))
        assert p.store.delete("b") and p.store.delete("c")
        gone = _decide(p, (doc("e"), 0b0, "h1"))
    assert (later[0]["decision"], later[0]["duplicate_of"]) == ("exact_duplicate", "b")
    assert (gone[0]["decision"], gone[0]["duplicate_of"]) == ("exact_duplicate", "d")


def test_a_centre_whose_founder_was_removed_is_passed_over(tmp_path):
    """The founder is what a new document is verified against before it joins a centre: without it there
    is nothing to verify, so the document founds its own cluster."""
    with Pipeline(tmp_path, k=3) as p:
        _decide(p, (doc("a"), 0b0, "h1"))
        assert p.store.delete("a") and p.store.cluster("a") is not None  # the centre stays
        out = _decide(p, (doc("b"), 0b1, "h2"))
    assert (out[0]["decision"], out[0]["cluster_id"]) == ("new", "b")


def _edit(text: str) -> str:
    """A realistic repost: site header and footer, one sentence dropped, one ad line inserted."""
    parts = [p for p in text.split("。") if p.strip()]
    del parts[len(parts) // 2]
    parts.insert(len(parts) // 3, "点击下载客户端，阅读更多精彩内容")
    return "本文来源：某某网 作者：张三\n" + "。".join(parts) + "。\n(责任编辑：李四)"


@pytest.mark.corpus
def test_edited_reposts_found_through_chunks_and_sketch(tmp_path, zh_articles):
    arts = [a for a in zh_articles if a["content"].count("。") >= 12][:40]
    originals = [Document(id=f"o{i}", content=a["content"]) for i, a in enumerate(arts)]
    reposts = [Document(id=f"r{i}", content=_edit(a["content"])) for i, a in enumerate(arts)]
    with Pipeline(tmp_path) as p:
        first = {d.id: d for d in p.process_many(originals)}
        out = [d.to_dict() for d in p.process_many(reposts)]
    found = [o for o in out if o["decision"] == "near_duplicate"]
    assert len(found) >= 0.9 * len(out)
    for o in found:
        original = first["o" + o["id"][1:]]
        # matched to its own original's group (the corpus itself holds a few copies of one story)
        assert o["duplicate_of"] in ("o" + o["id"][1:], original.duplicate_of)
        assert o["cluster_id"] == original.cluster_id


def test_colliding_fingerprints_of_different_texts_stay_apart(tmp_path):
    """Fingerprints within k but sketches that disagree: neither a duplicate nor the same cluster."""
    from fingerprint_indexer.fingerprint.sketch import sketch, to_bytes

    texts = {"a": "市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温。" * 3,
             "b": "国家队主教练在赛后新闻发布会上表示，球队在下半场调整了阵型。" * 3,
             "c": "市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温！" * 3}
    with Pipeline(tmp_path, k=3) as p:
        version = p.fingerprinter.version
        batch = [(doc(i), FingerprintResult(id=i, fingerprint=fp, blocks=[], content_digest=i,
                                            keyword_digest="k", top_terms=[], degenerate=False, n_tokens=10,
                                            version=version, sketch=to_bytes(sketch(texts[i]))))
                 for i, fp in (("a", 0b0), ("b", 0b1), ("c", 0b11))]
        out = [d.to_dict() for d in p.decide_batch(batch)]
    assert [o["decision"] for o in out] == ["new", "new", "near_duplicate"]
    assert [o["cluster_id"] for o in out] == ["a", "b", "a"]
    assert out[2]["duplicate_of"] == "a"


@pytest.mark.parametrize("batch_size", [1, 8])
def test_an_edited_headline_is_found_through_a_sketch_band(tmp_path, batch_size):
    """One word changes the SimHash of a headline by far more than k; the 5-gram sketch shares a band."""
    docs = [Document(id=f"{i}{side}", content=text) for i, pair in enumerate(EDITED_HEADLINES)
            for side, text in zip("ab", pair, strict=True)]
    with Pipeline(tmp_path / "s", batch_size=batch_size) as p:
        out = {d.id: d for d in p.process_many(docs)}
        for i in range(len(EDITED_HEADLINES)):
            assert out[f"{i}b"].decision == "near_duplicate" and out[f"{i}b"].duplicate_of == f"{i}a"
            assert out[f"{i}b"].distance > 3
        assert p.store.delete("0a")
        again = p.process(Document(id="0c", content=EDITED_HEADLINES[0][1] + "？"))
        assert again.duplicate_of == "0b"  # the removed document's band keys are gone with it


def test_fingerprinting_threads_change_no_decision(tmp_path):
    """Threads fingerprint ahead of the decision step; decisions come in input order, the same."""
    texts = [text * 4 for pair in EDITED_HEADLINES for text in pair]
    docs = [Document(id=f"{i}-{j}", content=text) for j in range(2) for i, text in enumerate(texts)]
    outs = []
    for threads in (1, 3):
        with Pipeline(tmp_path / str(threads), k=3, threads=threads, batch_size=4) as p:
            outs.append([d.to_dict() for d in p.process_many(docs)])
    assert outs[0] == outs[1]
    assert [o["id"] for o in outs[0]] == [d.id for d in docs]


def test_fingerprinting_on_one_thread_and_deciding_on_another_changes_no_decision(tmp_path):
    """``fingerprint_batch`` on a worker thread, then ``decide_batch`` on the caller's (as the Scrapy
    pipeline does with the reactor's): the decisions ``process_many`` gives, batch by batch."""
    import threading

    texts = [text * 4 for pair in EDITED_HEADLINES for text in pair]
    docs = [Document(id=f"{i}-{j}", content=text) for j in range(2) for i, text in enumerate(texts)]
    with Pipeline(tmp_path / "together", k=3, batch_size=4) as p:
        together = [d.to_dict() for d in p.process_many(docs)]

    def on_a_thread(p: Pipeline, batch: list[Document]) -> list:
        pairs: list = []
        worker = threading.Thread(target=lambda: pairs.extend(p.fingerprint_batch(batch)))
        worker.start()
        worker.join()
        return pairs

    apart: list[dict] = []
    with Pipeline(tmp_path / "apart", k=3, batch_size=4) as p:
        for start in range(0, len(docs), 4):
            pairs = on_a_thread(p, docs[start : start + 4])
            assert [d.id for d, _res in pairs] == [d.id for d in docs[start : start + 4]]
            apart += [d.to_dict() for d in p.decide_batch(pairs)]
    assert apart == together
    assert {"new", "near_duplicate", "exact_duplicate"} <= {d["decision"] for d in together}


def test_pictures_are_decided_beside_the_text_and_never_decide_it(tmp_path):
    """Two different stories illustrated by one wire photo (the second a resized re-save) stay two
    stories; the photo is found again, kept in the store, and a bad picture is an error, not a crash."""
    from support.pictures import scene

    from fingerprint_indexer.store.images import ImageStore

    photo, copy, bad = tmp_path / "wire.jpg", tmp_path / "copy.jpg", tmp_path / "broken.jpg"
    scene(7).save(photo, quality=90)
    scene(7).resize((240, 180)).save(copy, quality=60)
    bad.write_bytes(b"not a picture")
    texts = [text * 4 for text, _ in EDITED_HEADLINES[:2]]
    docs = [Document(id="a", content=texts[0], images=(str(photo),)),
            Document(id="b", content=texts[1], images=(str(copy), str(bad)))]
    with Pipeline(tmp_path / "store") as p:
        out = [d.to_dict() for d in p.process_many(docs)]
    assert [o["decision"] for o in out] == ["new", "new"]
    assert out[0]["pictures"] == [{"image": str(photo), "decision": "new", "duplicate_of": None,
                                   "distance": None, "mirrored": False}]
    seen, broken = out[1]["pictures"]
    assert seen["decision"] == "near_duplicate" and seen["duplicate_of"] == f"a/{photo}"
    assert broken["image"] == str(bad) and "error" in broken
    with Pipeline(tmp_path / "store") as p:  # kept: the store finds them after a restart
        stored = ImageStore(p.store)
        assert len(stored) == 2 and stored.record(f"b/{copy}")["duplicate_of"] == f"a/{photo}"


def test_a_scrape_failure_under_many_headlines_is_not_one_article(tmp_path):
    """A body too short to fingerprint (what a failed scrape kept: the site's slogan) is the same text under
    each headline; only the same headline makes it a copy."""
    slogan = "精度知天下，新闻更悦己"
    docs = [Document(id="a", title="组图:童年经典再现 仙剑奇侠传将翻拍", content=slogan),
            Document(id="b", title="老干部变凯三岁 王凯随身带儿童水杯", content=slogan),
            Document(id="c", title="组图:童年经典再现  仙剑奇侠传将翻拍", content=slogan),
            Document(id="d", title=slogan, content=slogan)]
    with Pipeline(tmp_path / "s") as p:
        out = [d.to_dict() for d in p.process_many(docs)]
    assert [o["decision"] for o in out] == ["new", "new", "exact_duplicate", "new"]
    assert out[2]["duplicate_of"] == "a"
    assert len({o["cluster_id"] for o in out}) == 3


def test_more_chunks_than_the_store_numbers_are_refused_before_anything_is_opened(tmp_path):
    with pytest.raises(ValueError, match=r"max_chunks must be at most 65533 for the embedded store"):
        Pipeline(tmp_path / "s", FingerprintConfig(max_chunks=65534))
    assert not (tmp_path / "s").exists()
    with Pipeline(tmp_path / "s", FingerprintConfig(max_chunks=65533)) as p:
        assert p.process(Document(id="a", content="国际学校的教师通常来自国外。" * 8)).decision == "new"


def test_the_batch_size_changes_no_decision(tmp_path):
    """A batch reads its own writes, so how many documents one commit holds (one, a few, the default)
    changes no decision and no record: shuffled originals with their exact and edited copies."""
    import random

    from support.synthetic_news import documents

    from fingerprint_indexer.pipeline import BATCH_SIZE

    docs = documents(seed=5)
    random.Random(5).shuffle(docs)
    outcomes = []
    for size in (1, 13, BATCH_SIZE):
        with Pipeline(tmp_path / str(size), batch_size=size) as p:
            got = [d.to_dict() for d in p.process_many(
                Document(id=d["id"], content=d["content"], title=d["title"]) for d in docs)]
            records = [replace(r, time=0.0) for r in map(p.store.record, (d["id"] for d in docs)) if r]
        outcomes.append((got, records))
    assert outcomes[0] == outcomes[1] == outcomes[2]
    assert {"new", "exact_duplicate", "near_duplicate"} <= {d["decision"] for d in outcomes[0][0]}
