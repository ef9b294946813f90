"""ElasticsearchIndex against brute force on a real node, plus its mapping and encoding edges."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from elasticsearch import Elasticsearch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.index_contract import Scenario, brute_force, check_scenario, index_scenarios

from fingerprint_indexer.es.errors import ElasticsearchWriteError
from fingerprint_indexer.es.mapping import ES_LAYOUT, load_index_body, stored_layout
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import MASK64, to_signed, to_unsigned
from fingerprint_indexer.index import elasticsearch as elasticsearch_index
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex

pytestmark = pytest.mark.elasticsearch
REPO = Path(__file__).resolve().parents[2]
EDGES = [0, 1, (1 << 63) - 1, 1 << 63, (1 << 63) + 1, MASK64, 0x8000_0000_0000_FFFF, 0xFFFF_0000_0000_0000]


@pytest.fixture
def fresh_index(es_client: Elasticsearch) -> Iterator[Callable[[], str]]:
    """Unique index names per hypothesis example (function fixtures are shared across examples)."""
    created: list[str] = []

    def make() -> str:
        created.append(f"fpi-test-prop-{uuid.uuid4().hex[:12]}")
        return created[-1]

    yield make
    for name in created:
        es_client.indices.delete(index=name, ignore_unavailable=True)


def _run(es_client: Elasticsearch, name: str, scenario: Scenario, layout: BlockLayout, page: int) -> None:
    check_scenario(
        lambda: ElasticsearchIndex(es_client, name, layout, page_size=page, msearch_batch=3),
        scenario,
        reopen=True,
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=index_scenarios(), page=st.sampled_from([2, 10_000]))
def test_matches_brute_force_with_removals_and_reopen(es_client, fresh_index, scenario, page):
    """Every stored fingerprint within k is returned and nothing farther, also after removals; a page
    size of 2 forces the point-in-time scan of buckets larger than one page."""
    _run(es_client, fresh_index(), scenario, BlockLayout(), page)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=index_scenarios(max_k=5))
def test_wider_layout_serves_larger_k(es_client, fresh_index, scenario):
    _run(es_client, fresh_index(), scenario, BlockLayout.for_k(5), 10_000)


@given(st.integers(0, MASK64))
def test_signed_long_conversion_is_exact(fp):
    signed = to_signed(fp)
    assert -(1 << 63) <= signed < 1 << 63
    assert to_unsigned(signed) == fp


def test_extreme_fingerprints_round_trip_through_elasticsearch(es_client, es_index):
    index = ElasticsearchIndex(es_client, es_index)
    index.add_many((f"e{i}", fp, None) for i, fp in enumerate(EDGES))
    assert len(index) == len(EDGES)
    for i, fp in enumerate(EDGES):
        assert index.get(f"e{i}") == fp
        assert index.query(fp, 0)[0].doc_id == f"e{i}"
    live = {f"e{i}": fp for i, fp in enumerate(EDGES)}
    for got, fp in zip(index.query_many(EDGES, 3), EDGES, strict=True):
        assert got == brute_force(live, fp, 3)
    stored = es_client.get(index=es_index, id="e3")["_source"]
    assert stored["fingerprint"] == -(1 << 63)
    assert stored["fingerprint_hex"] == "8000000000000000"
    keys = [stored[f"block_{b}"] for b in range(20)]  # the top bit is the first of blocks 0, 1 and 2
    assert keys == ES_LAYOUT.keys(1 << 63) and keys[0] == "100000000" and keys[-1] == "00000000"


def test_degenerate_documents_stay_out_of_the_buckets(es_client, es_index):
    index = ElasticsearchIndex(es_client, es_index)
    index.add("short", 0xABCD, {"degenerate": True, "title": "x"})
    index.add("normal", 0xABCD, {"title": "y"})
    assert index.get("short") == 0xABCD
    assert [m.doc_id for m in index.query(0xABCD, 3)] == ["normal"]


def test_meta_fields_are_stored_and_bulk_failures_name_the_documents(es_client, es_index):
    index = ElasticsearchIndex(es_client, es_index)
    index.add("ok", 7, {"cluster_id": "c1", "fp_version": "v1", "published_at": "2024-05-01T10:00:00Z"})
    with pytest.raises(ElasticsearchWriteError) as err:
        index.add_many([("good", 8, None), ("bad-date", 9, {"published_at": "not a date"})])
    assert [i for i, _ in err.value.failures] == ["bad-date"]
    assert "bad-date" in str(err.value)
    assert index.get("good") == 8
    src = es_client.get(index=es_index, id="ok")["_source"]
    assert (src["cluster_id"], src["fp_version"]) == ("c1", "v1")


def test_bulk_writes_go_in_bounded_requests_and_each_answer_meets_its_action(es_client, es_index,
                                                                             monkeypatch):
    """write_actions joins its own bulk bodies: actions of every kind (a source as a dict or as JSON text,
    a partial update, a delete) go in requests of at most ``chunk_size`` actions and ``BULK_MAX_BYTES``
    bytes, and each item of an answer is read as its own action's: the refused ones are named, the rest
    applied."""
    index = ElasticsearchIndex(es_client, es_index, chunk_size=3)
    monkeypatch.setattr(elasticsearch_index, "BULK_MAX_BYTES", 150)
    sent: list[int] = []
    bulk = es_client.bulk

    BULK_OPS = {"index", "create", "update", "delete"}  # an action line; a source or doc line has other keys

    def counted(**kw):  # the real request (one NDJSON text), its actions counted
        lines = [orjson.loads(line) for line in kw["operations"].splitlines()]
        sent.append(sum(1 for x in lines if x.keys() & BULK_OPS and "_id" in next(iter(x.values()))))
        return bulk(**kw)

    monkeypatch.setattr(es_client, "bulk", counted)
    name = index.index
    actions = [{"_op_type": "index", "_index": name, "_id": f"d{i}", "_source": {"title": f"t{i}"}}
               for i in range(7)]  # fmt: skip
    actions += [
        {"_op_type": "index", "_index": name, "_id": "raw", "_source": b'{"title":"as text"}'},
        {"_op_type": "update", "_index": name, "_id": "d1", "doc": {"title": "changed"}},
        {"_op_type": "delete", "_index": name, "_id": "d2"},
        {"_op_type": "index", "_index": name, "_id": "bad", "_source": {"published_at": "not a date"}},
        {"_op_type": "update", "_index": name, "_id": "missing", "doc": {"title": "x"}},
    ]  # fmt: skip
    with pytest.raises(ElasticsearchWriteError) as err:
        index.write_actions(actions)
    assert sorted(i for i, _ in err.value.failures) == ["bad", "missing"]
    assert sum(sent) == len(actions) and max(sent) <= 3 and len(sent) > len(actions) / 3  # bytes bound too
    es_client.indices.refresh(index=name)
    title = {h["_id"]: h["_source"]["title"] for h in es_client.search(index=name, size=20)["hits"]["hits"]}
    assert title == {"d0": "t0", "d1": "changed", "d3": "t3", "d4": "t4", "d5": "t5", "d6": "t6",
                     "raw": "as text"}  # fmt: skip
    assert index.write_actions([{"_op_type": "index", "_index": name, "_id": "d7", "_source": {"t": 1}}]) == 1


def test_layout_is_kept_in_the_mapping_and_enforced(es_client, es_index):
    ElasticsearchIndex(es_client, es_index, BlockLayout.even(6))
    assert stored_layout(es_client, es_index) == BlockLayout.even(6)
    assert ElasticsearchIndex(es_client, es_index).layout == BlockLayout.even(6)
    with pytest.raises(ValueError, match="was built with block layout"):
        ElasticsearchIndex(es_client, es_index, BlockLayout())
    with pytest.raises(ValueError, match="needs at least 7 blocks"):
        ElasticsearchIndex(es_client, es_index).query(0, 6)


def test_an_index_without_the_fingerprint_mapping_is_refused(es_client, es_index):
    es_client.indices.create(index=es_index, mappings={"properties": {"title": {"type": "text"}}})
    with pytest.raises(ValueError, match="--update-mapping"):
        ElasticsearchIndex(es_client, es_index)


def test_remove_reports_presence(es_client, es_index):
    index = ElasticsearchIndex(es_client, es_index)
    index.add("a", 1)
    assert index.remove("a") is True
    assert index.remove("a") is False
    assert len(index) == 0 and index.query(1, 3) == []


@pytest.mark.parametrize("name", ["news.json"])
def test_packaged_mapping_is_identical_to_the_top_level_copy(name):
    top = REPO / "mappings" / name
    packaged = REPO / "fingerprint_indexer" / "mappings" / name
    assert top.read_bytes() == packaged.read_bytes()
    assert sorted(p.name for p in (REPO / "mappings").glob("*.json")) == sorted(
        p.name for p in (REPO / "fingerprint_indexer" / "mappings").glob("*.json")
    )


def test_mapping_uses_only_core_features():
    """The minimal distribution lacks analysis-common and unsigned_long: the mapping must not need them."""
    body = load_index_body()
    props = body["mappings"]["properties"]
    assert props["fingerprint"]["type"] == "long"
    assert props["terms"]["analyzer"] == "whitespace"
    analyzers = {p.get("analyzer") for p in props.values()} - {None}
    assert analyzers <= {"standard", "whitespace"}
    assert "analysis" not in body.get("settings", {}).get("index", {})
    assert BlockLayout.from_dict(body["mappings"]["_meta"]["fingerprint_indexer"]["key_layout"]) == ES_LAYOUT
    assert load_index_body(ES_LAYOUT) == body  # the shipped mapping is the default layout's
