"""The embedded store: Bloom filter rebuilds, exact deletions, locking and refusal of foreign stores."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.records.record import record_now
from fingerprint_indexer.store.bloom import MAGIC, new_bloom
from fingerprint_indexer.store.embedded import EmbeddedStore
from fingerprint_indexer.store.errors import StoreLockedError, StoreMismatchError
from fingerprint_indexer.store.sidefile import save_side
from fingerprint_indexer.verification import Evidence

ALGO = "test-algo/1"


def _add(store: EmbeddedStore, doc_id: str, fp: int, digest: str, degenerate: bool = False) -> None:
    tx = store.batch()
    rec = record_now(id=doc_id, fingerprint=fp, content_digest=digest, keyword_digest="kw", cluster_id=doc_id,
                     decision="new", duplicate_of=None, distance=None, degenerate=degenerate, length=10,
                     published_at=None, version=ALGO)
    tx.put_record(rec, index=not degenerate)
    tx.commit()


def _filled(path: Path, n: int = 50) -> None:
    with EmbeddedStore(path, algorithm=ALGO) as store:
        for i in range(n):
            _add(store, f"d{i}", i * 0x9E3779B97F4A7C15 & (2**64 - 1), f"digest{i}")
        tx = store.batch()
        for i in range(0, n, 10):  # every tenth document founds a cluster
            tx.found_cluster(f"d{i}", i * 0x9E3779B97F4A7C15 & (2**64 - 1))
        tx.commit()


def _assert_contents(store: EmbeddedStore, n: int = 50) -> None:
    """Everything the Bloom filter answers for first is found: digests, fingerprints, records, clusters."""
    for i in range(n):
        assert store.doc_with_digest(f"digest{i}") == f"d{i}"
        assert store.ids_with_fingerprint(i * 0x9E3779B97F4A7C15 & (2**64 - 1)) == [f"d{i}"]
        rec = store.record(f"d{i}")
        assert rec is not None and rec.content_digest == f"digest{i}"
        cluster = store.cluster(f"d{i}")
        assert (cluster is not None and cluster.founder == f"d{i}") if i % 10 == 0 else cluster is None
    assert store.doc_with_digest("never-stored") is None
    ids = [f"d{i}" for i in range(n)] + ["never-stored"]
    assert store.never_stored(ids) == {"never-stored"}


def test_a_batch_reads_new_ids_as_absent_and_still_sees_what_it_writes(tmp_path):
    _filled(tmp_path)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        tx = store.batch()
        tx.look_ahead([], 3, ids=["d0", "d1", "fresh"])
        assert tx.record("fresh") is None and tx.cluster("fresh") is None
        assert tx.record("d1") is not None and tx.cluster("d1") is None  # stored, founded no cluster
        assert tx.cluster("d0") is not None
        rec = tx.record("d1")
        assert rec is not None
        tx.put_record(replace(rec, id="fresh"), index=True)
        tx.found_cluster("fresh", rec.fingerprint)
        assert tx.record("fresh") is not None and tx.cluster("fresh") is not None
        tx.commit()
        assert store.never_stored(["fresh"]) == set()


def test_bloom_is_reused_when_current(tmp_path):
    _filled(tmp_path)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        assert not store.bloom_rebuilt
        _assert_contents(store)


def _damage(side_file: Path, how: str) -> None:
    """Damage a side file beside the store as a crash, a bad disk or a stray write would."""
    if how == "delete":
        side_file.unlink()
    elif how == "truncate":
        side_file.write_bytes(side_file.read_bytes()[: len(MAGIC) + 30])
    elif how == "flip_byte":
        data = bytearray(side_file.read_bytes())
        data[-5] ^= 0xFF
        side_file.write_bytes(bytes(data))
    else:
        side_file.write_bytes(b"not a side file")


@pytest.mark.parametrize("damage", ["delete", "truncate", "flip_byte", "garbage", "stale"])
def test_bloom_is_rebuilt_from_leveldb(tmp_path, damage):
    _filled(tmp_path)
    bloom = tmp_path / "bloom.bin"
    if damage != "stale":
        _damage(bloom, damage)
    else:  # stale: an old file left behind while the store moved on (e.g. after a crash)
        old = bloom.read_bytes()
        with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
            _add(store, "late", 12345, "late-digest")
        bloom.write_bytes(old)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        assert store.bloom_rebuilt
        _assert_contents(store)
        if damage == "stale":
            assert store.doc_with_digest("late-digest") == "late"
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:  # the rebuilt file was saved and is trusted
        assert not store.bloom_rebuilt


def test_a_bloom_file_of_the_previous_format_is_rebuilt_with_the_ids(tmp_path):
    """The previous format held digests and fingerprints only: trusted, it would call every stored
    document and cluster absent, so it is rebuilt (and then trusted) however current its header."""
    _filled(tmp_path)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        generation, store_id = store.generation, store.store_id
        items = [i for i in store._bloom_items() if i.startswith(("c:", "f:"))]
    buf = io.BytesIO()
    new_bloom(items).tofile(buf)
    save_side(tmp_path / "bloom.bin", b"FPIBLOOM2\n", buf.getvalue(), generation, store_id)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        assert store.bloom_rebuilt
        _assert_contents(store)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        assert not store.bloom_rebuilt
        _assert_contents(store)


def _near_all(store: EmbeddedStore, n: int = 50) -> None:
    for i in range(n):
        assert [m.doc_id for m in store.near(i * 0x9E3779B97F4A7C15 & (2**64 - 1), 0)] == [f"d{i}"]


@pytest.mark.parametrize("damage", ["none", "delete", "flip_byte", "stale", "foreign"])
def test_block_tables_are_read_back_only_when_current(tmp_path, damage):
    _filled(tmp_path)
    tables = tmp_path / "blocks.bin"
    if damage in ("delete", "flip_byte"):
        _damage(tables, damage)
    elif damage == "stale":  # the file of an earlier close, as a crash leaves it
        old = tables.read_bytes()
        with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
            _add(store, "late", 12345, "late-digest")
            tx = store.batch()
            tx.remove_doc("d3")
            tx.commit()
        tables.write_bytes(old)
    elif damage == "foreign":
        _filled(tmp_path / "other", 5)
        tables.write_bytes((tmp_path / "other" / "blocks.bin").read_bytes())
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        assert store.index.tables_rebuilt is (damage != "none")
        if damage == "stale":
            assert [m.doc_id for m in store.near(12345, 0)] == ["late"]
            assert store.near(3 * 0x9E3779B97F4A7C15 & (2**64 - 1), 0) == []
        else:
            _near_all(store)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:  # saved again at close, and trusted
        assert not store.index.tables_rebuilt and not store.centres.tables_rebuilt


def test_deletion_keeps_leveldb_exact_although_bloom_says_maybe(tmp_path):
    _filled(tmp_path, 3)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        fp1 = 0x9E3779B97F4A7C15
        assert store.delete("d1")
        assert not store.delete("d1")
        assert "c:digest1" in store.bloom  # the filter cannot forget...
        assert store.doc_with_digest("digest1") is None  # ...LevelDB decides
        assert store.ids_with_fingerprint(fp1) == []
        assert store.record("d1") is None
        assert [m.doc_id for m in store.near(fp1, 3)] == []
        assert store.n_docs == 2


def test_degenerate_documents_stay_out_of_the_block_index(tmp_path):
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        _add(store, "short", 0, "dg", degenerate=True)
        assert store.near(0, 3) == []
        assert store.doc_with_digest("dg") == "short"


def test_other_algorithm_version_or_layout_is_refused(tmp_path):
    _filled(tmp_path, 2)
    with pytest.raises(StoreMismatchError, match="algorithm 'test-algo/1', not 'test-algo/2'; rebuild it"):
        EmbeddedStore(tmp_path, algorithm="test-algo/2")
    with pytest.raises(StoreMismatchError, match="block layout"):
        EmbeddedStore(tmp_path, layout=BlockLayout.even(6), algorithm=ALGO)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:  # refusal left it intact and unlocked
        assert store.n_docs == 2


def test_store_of_the_bucket_key_layout_is_refused_with_a_rebuild_hint(tmp_path):
    _filled(tmp_path, 2)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:  # as a store of the earlier layout reads
        store.db.put(b"s/meta/format", b"3")
    with pytest.raises(StoreMismatchError, match=r"store format '3', not '7'; rebuild it: deduplicate the "
                                                 r"input again into a new store directory"):
        EmbeddedStore(tmp_path, algorithm=ALGO)
    import plyvel

    plyvel.DB(str(tmp_path / "leveldb")).close()  # the refusal released LevelDB's lock


def test_second_process_gets_a_clear_lock_error(tmp_path):
    _filled(tmp_path, 2)
    holder = textwrap.dedent(f"""
        import sys, time
        from fingerprint_indexer.store.embedded import EmbeddedStore
        s = EmbeddedStore({str(tmp_path)!r}, algorithm={ALGO!r})
        print("open", flush=True)
        sys.stdin.readline()
        s.close()
    """)
    p = subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "open"
        with pytest.raises(StoreLockedError, match=f"store {tmp_path}.* is locked by another process"):
            EmbeddedStore(tmp_path, algorithm=ALGO)
    finally:
        p.communicate("\n", timeout=30)
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:  # released when the holder closed it
        assert store.n_docs == 2


def test_neighbours_by_shared_document_fingerprint_need_the_sketch(tmp_path):
    """Different articles can share a document fingerprint (one dominant term decides every bit): only
    those whose sketch agrees are neighbours; a document without a sketch is judged by the fingerprint."""
    from fingerprint_indexer.fingerprint.sketch import sketch, to_bytes

    text = "the same article text about one person, told at some length so shingles exist " * 3
    other = "a different story about that person, on another day and with other details entirely " * 3
    fp = 0x0123_4567_89AB_CDEF
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        tx = store.batch()
        for doc_id, body, deg in (("copy", text, False), ("other", other, False), ("short", "", True)):
            rec = record_now(id=doc_id, fingerprint=fp, content_digest=f"digest-{doc_id}",
                             keyword_digest="kw", cluster_id=doc_id, decision="new", duplicate_of=None,
                             distance=None, degenerate=deg, length=10, published_at=None, version=ALGO,
                             sketch=to_bytes(sketch(body)).hex() if body else "")
            tx.put_record(rec, index=not deg)
        tx.commit()
        mine = to_bytes(sketch(text))
        hits = {n.id for n in store.neighbours(Evidence([fp], mine), "digest-query", 3).matches}
    assert hits == {"copy", "short"}


def test_record_json_round_trips_and_is_what_asdict_gave() -> None:
    import dataclasses
    import json

    from fingerprint_indexer.store.embedded import DocRecord

    rec = DocRecord(id="a", fingerprint=0xF00, content_digest="c", keyword_digest="k", cluster_id="a",
                    decision="new", duplicate_of=None, distance=None, degenerate=False, length=3,
                    published_at=None, version="v", time=1.5, chunks=[1, 2], sketch="00ff",
                    facts=["#第3次", "@北京"], frames=[7], replaces="b")
    expected = dataclasses.asdict(rec)
    expected.update(fingerprint="0000000000000f00", chunks=["0000000000000001", "0000000000000002"],
                    frames=["0000000000000007"])
    assert json.loads(rec.to_json()) == expected
    assert DocRecord.from_json(rec.to_json()) == rec


def test_a_document_verifies_at_most_max_candidates_and_copies_first(tmp_path):
    """300 stored documents share one stock chunk with the query; a copy shares all three of its
    fingerprints. The copy is among the MAX_CANDIDATES verified, and no more are verified."""
    import random

    from fingerprint_indexer.store.near import MAX_CANDIDATES, judged_near

    rng = random.Random(4)
    stock, doc_fp, lead_fp = (rng.getrandbits(64) for _ in range(3))
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        tx = store.batch()
        stored = [[rng.getrandbits(64), stock] for _ in range(300)] + [[doc_fp, lead_fp, stock]]
        for i, fps in enumerate(stored):
            doc_id = "copy" if i == 300 else f"t{i:03d}"
            rec = record_now(id=doc_id, fingerprint=fps[0], chunks=fps[1:], content_digest=doc_id,
                             keyword_digest="kw", cluster_id=doc_id, decision="new", duplicate_of=None,
                             distance=None, degenerate=False, length=10, published_at=None, version=ALGO)
            tx.put_record(rec, index=True)
        tx.commit()
        judged = judged_near(Evidence([doc_fp, lead_fp, stock]), 3, store.index.query_many, store.record)
        assert len(judged) == MAX_CANDIDATES
        assert judged[0][0].id == "copy" and all(v.accepted for _, v in judged)
        everything = judged_near(Evidence([doc_fp, lead_fp, stock]), 3, store.index.query_many, store.record,
                                 limit=10**6)
        assert len(everything) == 301


def test_a_batch_answers_the_same_with_its_look_ups_asked_ahead(tmp_path):
    """Look-ups asked ahead for the whole batch see the committed state; the batch's own writes (a
    removal, new records, a new centre) are still seen document by document."""
    sketch = bytes(range(256)).hex()  # every record holding it shares all 8 band keys
    fps = [i * 0x9E3779B97F4A7C15 & (2**64 - 1) for i in range(6)]

    def rec(doc_id: str, fp: int):  # type: ignore[no-untyped-def]
        return record_now(id=doc_id, fingerprint=fp, chunks=[fp ^ 1], content_digest=doc_id,
                          keyword_digest="kw", cluster_id=doc_id, decision="new", duplicate_of=None,
                          distance=None, degenerate=False, length=10, published_at=None, version=ALGO,
                          sketch=sketch)

    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        tx = store.batch()
        for i, fp in enumerate(fps[:4]):
            tx.put_record(rec(f"d{i}", fp), index=True)
            tx.found_cluster(f"d{i}", fp)
        tx.commit()
        answers = []
        for ahead in (False, True):
            tx = store.batch()
            if ahead:
                tx.look_ahead([Evidence([fp, fp ^ 1, fp ^ 3], bytes.fromhex(sketch)) for fp in fps], 3)
            tx.remove_doc("d1")
            tx.put_record(rec("n4", fps[4]), index=True)
            tx.found_cluster("n4", fps[4])
            answers.append([(tx.near_many([fp, fp ^ 3], 3), tx.centres_near(fp, 3),
                             tx.band_docs(rec("x", fp).bands[0])) for fp in fps])
        assert answers[0] == answers[1]
        assert answers[1][1][0] == [[], []] and answers[1][4][0][0][0].doc_id == "n4"
        assert answers[1][0][2] == ["d0", "d2", "d3", "n4"]


@pytest.mark.parametrize(("seed", "batch_size"), [(1, 7), (2, 32), (3, 500)])
def test_documents_with_nothing_near_skip_the_look_up_and_decide_the_same(tmp_path, monkeypatch, seed,
                                                                          batch_size):
    """A document that nothing committed or staged is near (asked ahead) is passed over without a look-up
    of its candidates or centres: shuffled originals, exact and edited copies, in batches that split a
    story's copies or hold them together, decide and store as with every look-up made."""
    import random

    from support.synthetic_news import documents

    from fingerprint_indexer.documents import Document
    from fingerprint_indexer.pipeline import Pipeline
    from fingerprint_indexer.store.near import LookAhead

    docs = documents(seed=seed)
    random.Random(seed).shuffle(docs)
    skipped = 0
    none_found = LookAhead.none_found

    def counted(self, keys):  # type: ignore[no-untyped-def]
        nonlocal skipped
        found = none_found(self, keys)
        skipped += found
        return found

    outcomes = []
    for fast in (True, False):
        monkeypatch.setattr(LookAhead, "none_found", counted if fast else lambda self, keys: False)
        with Pipeline(tmp_path / f"s{fast}", batch_size=batch_size) as pipe:
            got = pipe.process_many(Document(id=d["id"], content=d["content"], title=d["title"])
                                    for d in docs)
            decisions = [(d.id, d.decision, d.duplicate_of, d.cluster_id) for d in got]
            records = [pipe.store.record(d["id"]) for d in docs]
        outcomes.append((decisions, [(r.decision, r.duplicate_of, r.cluster_id) for r in records if r]))
    assert outcomes[0] == outcomes[1]
    assert skipped > len(docs) // 2
    kinds = {d[1] for d in outcomes[0][0]}
    assert {"new", "exact_duplicate", "near_duplicate"} <= kinds


@pytest.mark.parametrize(("seed", "batch_size"), [(4, 7), (5, 32), (6, 500)])
def test_documents_the_batch_shows_alone_are_decided_as_the_questions_would(tmp_path, monkeypatch, seed,
                                                                             batch_size):
    """A document the batch shows alone (:meth:`StoreBatch.alone`) skips the engine's questions: shuffled
    originals, exact and edited copies, some sent twice and some under an id already used, decide and
    store as when no document is shown alone; most originals are, no copy is."""
    import random

    from support.synthetic_news import documents

    from fingerprint_indexer.documents import Document
    from fingerprint_indexer.pipeline import Pipeline
    from fingerprint_indexer.store.embedded import StoreBatch

    docs = documents(seed=seed)
    rng = random.Random(seed)
    rng.shuffle(docs)
    docs += rng.sample(docs, len(docs) // 10)  # sent again: stored under their id already
    docs += [{**d, "id": docs[0]["id"]} for d in rng.sample(docs, 3)]  # another text under a used id
    alone = StoreBatch.alone
    shown: dict[str, list[bool]] = {}

    def watched(self, doc_id, digest, ev, k):  # type: ignore[no-untyped-def]
        got = alone(self, doc_id, digest, ev, k)
        shown.setdefault(doc_id, []).append(got)
        return got

    outcomes = []
    for flags in (True, False):
        monkeypatch.setattr(StoreBatch, "alone", watched if flags else lambda *_: False)
        with Pipeline(tmp_path / f"s{flags}", batch_size=batch_size) as pipe:
            got = list(pipe.process_many(Document(id=d["id"], content=d["content"], title=d["title"])
                                         for d in docs))
            decisions = [(d.id, d.decision, d.duplicate_of, d.distance, d.cluster_id) for d in got]
            records = [pipe.store.record(d["id"]) for d in docs]
            counts = (pipe.store.n_docs, pipe.store.n_clusters)
        outcomes.append((decisions, counts, [(r.decision, r.duplicate_of, r.cluster_id) for r in records
                                             if r]))  # fmt: skip
    assert outcomes[0] == outcomes[1]
    firsts = {d[0]: d for d in reversed(outcomes[0][0])}  # each id's first decision
    for doc_id, decision in firsts.items():
        if decision[1] != "new":
            assert not shown[doc_id][0], f"{doc_id} was shown alone but decided {decision[1]}"
    assert sum(flags[0] for flags in shown.values()) > len(firsts) // 3
    assert {d[1] for d in outcomes[0][0]} >= {"new", "exact_duplicate", "near_duplicate"}


def test_each_question_the_alone_flag_answers_keeps_a_document_from_it(tmp_path, monkeypatch):
    """Chosen fingerprints, one clause of :meth:`StoreBatch.alone` each: a text stored under another
    fingerprint (its digest), a cluster centre left by a document since replaced (no index entry holds
    it), the id itself, a degenerate text and a staged neighbour; each is decided as with no document
    shown alone, and only the documents with none of these are shown alone."""
    from fingerprint_indexer.documents import Document
    from fingerprint_indexer.fingerprint.fingerprinter import FingerprintResult
    from fingerprint_indexer.pipeline import Pipeline
    from fingerprint_indexer.store.embedded import StoreBatch

    def item(doc_id: str, fp: int, digest: str, degenerate: bool = False):  # type: ignore[no-untyped-def]
        return (Document(id=doc_id, content="x" * 10), FingerprintResult(
            id=doc_id, fingerprint=fp, blocks=[], content_digest=digest, keyword_digest="k", top_terms=[],
            degenerate=degenerate, n_tokens=10, version=version))

    batches = lambda: [  # noqa: E731
        [item("a", 0, "ha"), item("z", 0xFFFF_0000_0000, "hz")],
        [item("a", 0xFFFF, "ha2")],  # a replaced: its centre 0 stays, its index entry goes
        [item("b", 0xF0F0_F0F0_0000_0000, "hz"),  # z's text under a far fingerprint: an exact copy
         item("c", 0b11, "hc"),  # near a's old centre only (its founder's text now far): not alone
         item("a", 0xFFFF, "ha2"),  # a again, unchanged
         item("d", 0x0F0F_0000_0000_0000, "hd", degenerate=True),
         item("e", 0xAAAA_0000_0000_0000, "he"), item("f", 0xAAAA_0000_0000_0001, "hf"),  # f near e
         item("g", 0x5555_0000_0000_0000, "hg")],  # alone
    ]
    alone = StoreBatch.alone
    shown: list[tuple[str, bool]] = []

    def watched(self, doc_id, digest, ev, k):  # type: ignore[no-untyped-def]
        shown.append((doc_id, alone(self, doc_id, digest, ev, k)))
        return shown[-1][1]

    outcomes = []
    for flags in (True, False):
        monkeypatch.setattr(StoreBatch, "alone", watched if flags else lambda *_: False)
        with Pipeline(tmp_path / f"s{flags}", k=3) as pipe:
            version = pipe.fingerprinter.version
            outcomes.append([d.to_dict() for batch in batches() for d in pipe.decide_batch(batch)])
    assert outcomes[0] == outcomes[1]
    got = {d["id"]: d for d in outcomes[0][3:]}
    assert (got["b"]["decision"], got["b"]["duplicate_of"]) == ("exact_duplicate", "z")
    assert (got["c"]["decision"], got["c"]["cluster_id"]) == ("new", "c")
    assert (got["f"]["decision"], got["f"]["duplicate_of"]) == ("near_duplicate", "e")
    assert [d for d, flag in shown if flag] == ["a", "z", "e", "g"]


def test_a_batch_is_freed_by_reference_counting(tmp_path):
    """A batch, its records and its look-up answers are freed when the batch is dropped: the cycle
    collector never has to traverse them (a batch referring to itself would leave all it holds to it)."""
    import gc
    import weakref

    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        _add(store, "d0", 0x1234, "digest0")
        gc.disable()
        try:
            tx = store.batch()
            tx.look_ahead([Evidence([0x1234, 0x1235], bytes(256))], 3)
            tx.near_many([0x1234], 3)
            tx.centres_near(0x1234, 3)
            tx.commit()
            gone = weakref.ref(tx)
            del tx
            assert gone() is None
        finally:
            gc.enable()


def test_a_document_removed_and_put_again_in_one_batch_keeps_one_entry_each(tmp_path):
    """A record read as absent lets its entries be staged without reading them first; one removed in the
    same batch is not absent, and its entries are replaced, never doubled."""
    with EmbeddedStore(tmp_path, algorithm=ALGO) as store:
        _add(store, "d0", 0x1234, "digest0")
        tx = store.batch()
        old = tx.record("d0")
        assert old is not None and tx.record("n1") is None
        tx.remove_doc("d0")
        for doc_id in ("d0", "n1"):
            tx.put_record(record_now(id=doc_id, fingerprint=0x1234, chunks=[0x99], content_digest=doc_id,
                                     keyword_digest="kw", cluster_id=doc_id, decision="new",
                                     duplicate_of=None, distance=None, degenerate=False, length=10,
                                     published_at=None, version=ALGO), index=True)
        tx.commit()
        assert len(store.index) == 4 and store.index.numbers_held() == 2  # two documents of two entries
        assert sorted(m.doc_id for m in store.near(0x1234, 0)) == ["d0", "n1"]
