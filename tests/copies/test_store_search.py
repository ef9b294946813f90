"""Partial-copy search on the embedded store: marks written with the document, found, removed, capped."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.corpus import EN_BBC, ZH_NEWS, load_records

from fingerprint_indexer.copies import CopyFinder
from fingerprint_indexer.copies.passages import find_passages
from fingerprint_indexer.copies.search import MAX_STORIES, default_max_df
from fingerprint_indexer.copies.stored import search_store
from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter
from fingerprint_indexer.fingerprint.winnow import Marks, WinnowParams
from fingerprint_indexer.pipeline import Pipeline
from fingerprint_indexer.store.embedded import EmbeddedStore
from fingerprint_indexer.store.errors import StoreMismatchError

PARAMS = WinnowParams()


def _mark_keys(store: EmbeddedStore) -> list[bytes]:
    return list(store.db.iterator(prefix=b"w/", include_value=False))


@pytest.mark.corpus
def test_planted_passages_are_found_in_the_store_and_nothing_else(tmp_path: Path) -> None:
    recs = load_records(EN_BBC, limit=120, min_chars=1200) + load_records(ZH_NEWS, limit=120, min_chars=1200)
    docs = [Document(id=r["id"], content=r["content"]) for r in recs]
    with Pipeline(tmp_path / "s", copy_marks=True) as pipe:
        list(pipe.process_many(docs))
        finder = CopyFinder(pipe.fingerprinter.tokenizer, PARAMS)
        for src, host in [(recs[3], recs[50]), (recs[150], recs[200])]:
            s, h = src["content"], host["content"]
            planted = s[300:1000]
            text = h[:200] + planted + h[200:]
            hits, _ = search_store(pipe.store, finder.marked(text), PARAMS, min_chars=100, exclude=host["id"])
            assert hits and hits[0].id == src["id"]
            for p in hits[0].passages:
                assert p.a_start >= 200 and p.a_end <= 200 + len(planted)
                assert text[p.a_start : p.a_end] == s[p.b_start : p.b_end]
            assert hits[0].copied >= 0.8 * len(planted)
            assert all(hit.id in (src["id"], host["id"]) for hit in hits)


def test_marks_are_written_with_the_document_replaced_and_deleted(tmp_path: Path) -> None:
    a = "The central bank raised its benchmark interest rate by half a point on Thursday, citing " \
        "stubborn inflation in services and a labour market that remains unusually tight this year."
    b = "Rescue teams searched collapsed buildings through the night after the earthquake struck the " \
        "coastal province, while aid agencies warned that clean water was running short in shelters."
    with Pipeline(tmp_path / "s", copy_marks=True) as pipe:
        store = pipe.store
        tx = store.batch()
        pipe.decide(tx, Document(id="x", content=a), pipe.fingerprinter.fingerprint_document(
            Document(id="x", content=a)))
        assert _mark_keys(store) == []  # nothing before the batch commits
        tx.commit()
        stored = store.marks("x")
        assert stored is not None and len(Marks.from_bytes(stored)) > 0
        n_a = len(_mark_keys(store))
        list(pipe.process_many([Document(id="x", content=b)]))  # same id, new text: marks replaced
        got = Marks.from_bytes(store.marks("x") or b"")
        kept = set(CopyFinder(params=PARAMS).marks(b).hashes.tolist())
        assert set(got.winnowed().hashes.tolist()) == kept and got.kept is not None and len(got) > len(kept)
        assert len(_mark_keys(store)) == 1 + len(kept) and n_a > 1
        store.delete("x")
        assert _mark_keys(store) == []


def test_stock_marks_above_the_cap_are_not_evidence(tmp_path: Path) -> None:
    stock = ("Xinhua reports that the state council executive meeting chaired by the premier studied "
             "measures to further stabilise employment and promote consumption across the country")
    topics = ["wheat harvest in henan", "rail link to laos", "satellite launch from jiuquan",
              "flood relief in guangdong", "vaccine approval for children", "bond issuance by provinces",
              "forest fire in sichuan", "trade fair in canton", "chip export controls", "rural pensions",
              "panda loans to zoos", "ocean survey ships"]
    docs = [Document(id=f"d{i}", content=f"{stock}. Separately, officials discussed the {t} with local "
                     f"leaders number {i * 7919} and announced follow-up inspections next month.")
            for i, t in enumerate(topics)]
    with Pipeline(tmp_path / "s", copy_marks=True) as pipe:
        list(pipe.process_many(docs))
        finder = CopyFinder(pipe.fingerprinter.tokenizer, PARAMS)
        query = finder.marked(docs[0].content or "")
        hits, n_stock = search_store(pipe.store, query, PARAMS, min_chars=50, max_df=5, exclude="d0")
        assert hits == [] and n_stock > 0
        # under the document cap, but in more than MAX_STORIES stories: still a stock phrase
        hits, n_stock = search_store(pipe.store, query, PARAMS, min_chars=50, max_df=50, exclude="d0")
        assert hits == [] and n_stock > 0
        assert len({pipe.store.record(d.id).cluster_id for d in docs}) > MAX_STORIES  # type: ignore[union-attr]
    assert default_max_df(0) == default_max_df(10_000) == 10 and default_max_df(1_000_000) == 1000


def test_reposts_of_one_story_count_once(tmp_path: Path) -> None:
    """A passage reposted in several copies of one story (one cluster) stays evidence."""
    story = ("The regional water authority approved a plan on Tuesday to build two desalination plants on "
             "the southern coast, costing 1.4 billion dollars, after three dry winters left reservoirs at "
             "a fifth of capacity and forced rationing in eleven towns.")
    copies = [Document(id=f"r{i}", content=f"{story} (repost {i})") for i in range(6)]
    with Pipeline(tmp_path / "s", copy_marks=True) as pipe:
        decided = list(pipe.process_many(copies))
        assert len({d.cluster_id for d in decided}) == 1
        quoting = "In other news. " + story[:170] + " More details to follow later in the week."
        finder = CopyFinder(pipe.fingerprinter.tokenizer, PARAMS)
        hits, n_stock = search_store(pipe.store, finder.marked(quoting), PARAMS, min_chars=50)
        assert {h.id for h in hits} == {f"r{i}" for i in range(6)} and n_stock == 0


def test_store_of_other_winnowing_parameters_is_refused(tmp_path: Path) -> None:
    text = "Officials said the new bridge would open to traffic in the spring after two years of delays " \
           "caused by flooding and a dispute over the contract with the builder and local councils."
    with Pipeline(tmp_path / "s", copy_marks=True) as pipe:
        pipe.process(Document(id="a", content=text))
    other = FingerprintConfig(winnow=WinnowParams(k=3, g=8))
    with pytest.raises(StoreMismatchError, match="rebuild"):
        Pipeline(tmp_path / "s", other, copy_marks=True)
    with Pipeline(tmp_path / "s", other) as pipe:  # following the store: its own parameters
        assert pipe.config.winnow == PARAMS
        pipe.process(Document(id="b", content=text + " more"))
        assert pipe.store.marks("b")
        with pytest.raises(StoreMismatchError, match="copy marks"):
            search_store(pipe.store, CopyFinder(params=other.winnow).marked(text), other.winnow or PARAMS)


def test_copy_marks_are_opt_in_and_a_store_keeps_them_for_all_documents_or_none(tmp_path: Path) -> None:
    text = "Officials said the new bridge would open to traffic in the spring after two years of delays " \
           "caused by flooding and a dispute over the contract with the builder and local councils."
    doc = Document(id="a", content=text)
    plain = Fingerprinter().fingerprint_document(doc)
    marked = Fingerprinter(FingerprintConfig(winnow=PARAMS)).fingerprint_document(doc)
    assert plain.marks == b"" and marked.marks and plain.version == marked.version
    assert plain.fingerprint == marked.fingerprint
    with Pipeline(tmp_path / "off") as pipe:  # the default: no marks, nothing under w/
        pipe.process(Document(id="a", content=text))
        assert pipe.config.winnow is None and _mark_keys(pipe.store) == [] and pipe.store.marks_tag is None
        with pytest.raises(StoreMismatchError, match="--copy-marks"):
            search_store(pipe.store, CopyFinder(params=PARAMS).marked(text), PARAMS)
    with pytest.raises(StoreMismatchError, match="without copy marks"):
        Pipeline(tmp_path / "off", copy_marks=True)
    with Pipeline(tmp_path / "off", FingerprintConfig(winnow=PARAMS)) as pipe:  # follows the store: off
        pipe.process(Document(id="b", content=text + " again"))
        assert pipe.config.winnow is None and _mark_keys(pipe.store) == []
    with Pipeline(tmp_path / "on", copy_marks=True) as pipe:
        pipe.process(Document(id="a", content=text))
    with pytest.raises(StoreMismatchError, match="with copy marks"):
        Pipeline(tmp_path / "on", copy_marks=False)
    with Pipeline(tmp_path / "on") as pipe:  # follows the store: on
        pipe.process(Document(id="b", content=text + " again"))
        assert pipe.store.marks("a") and pipe.store.marks("b")


def test_a_passage_held_by_two_stories_counts_only_with_max_stories_two(tmp_path: Path) -> None:
    notice = ("The port authority said container traffic through the northern terminal rose by a fifth in "
              "the third quarter, as new cranes and a dredged channel let larger ships call on the way.")
    wire = ("Freight rates for bulk carriers fell for a third week as iron ore demand in Asia slowed and "
            "owners sent idle vessels to anchor off Singapore; brokers expect a recovery only after the "
            "new year, when steel mills restock. ")
    daily = ("The town council voted to rebuild the old fish market as a covered hall with stalls for local "
             "growers, a cafe and a small museum of the herring trade, paid for by a regional grant and a "
             "loan that the mayor said would be repaid from rents within fifteen years. ")
    docs = [Document(id="wire", content=f"{wire}In port news, {notice} Officials declined further comment."),
            Document(id="daily", content=f"{daily}Harbour bulletin from our correspondent on the quay. "
                                         f"{notice} Fishing boats were kept in port by the storm.")]
    with Pipeline(tmp_path / "s", copy_marks=True) as pipe:
        assert len({d.cluster_id for d in pipe.process_many(docs)}) == 2
        query = CopyFinder(pipe.fingerprinter.tokenizer, PARAMS).marked(f"From the archive: {notice}")
        hits, n_stock = search_store(pipe.store, query, PARAMS, min_chars=50)
        assert hits == [] and n_stock > 0
        hits, _ = search_store(pipe.store, query, PARAMS, min_chars=50, max_stories=2)
        assert {h.id for h in hits} == {"wire", "daily"}
        # the stored daily's own text pasted: its stored copy is the query, not another story
        pasted = CopyFinder(pipe.fingerprinter.tokenizer, PARAMS).marked(docs[1].content or "")
        hits, _ = search_store(pipe.store, pasted, PARAMS, min_chars=50)
        assert {h.id for h in hits} == {"wire", "daily"}


def test_a_passage_whose_marks_are_mostly_no_evidence_is_not_reported() -> None:
    finder = CopyFinder(params=PARAMS)
    text = ("The committee met on Tuesday to review the draft budget, heard reports from the audit office "
            "and the statistics bureau, and asked the ministries to submit revised spending plans within a "
            "month so that the plenary session could vote on them before the end of the year.")
    a, b = finder.marked(text), finder.marked("Minutes. " + text)
    kept = sorted(set(a.winnowed().hashes.tolist()))
    assert len(kept) >= 4
    few, half = kept[: len(kept) // 2 - 1], kept[: (len(kept) + 1) // 2]
    assert find_passages(a, b, PARAMS, seeds=few, min_share=0.5) == []
    [p] = find_passages(a, b, PARAMS, seeds=half, min_share=0.5)
    assert (p.a_start, p.a_end) == (text.index("committee"), len(text) - 1)  # "The": a stopword
    assert find_passages(a, b, PARAMS, seeds=half, min_seeds=len(half) + 1) == []
