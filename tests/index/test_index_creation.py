"""One rule says what a new fingerprint index is (:func:`index_creation`), and every path that creates one
(``es setup``, :class:`ElasticsearchIndex` with ``create``, the sidecar before its first write) makes
exactly that on a real node; the mapping declares every field the writers write."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.es_setup import compare, setup_index
from fingerprint_indexer.env import EsSettings
from fingerprint_indexer.es.codec import DECIDED_FIELD, decision_fields, now_millis
from fingerprint_indexer.es.mapping import (
    ES_LAYOUT,
    META_KEY,
    index_creation,
    load_index_body,
    replicas_for,
    stored_copy_marks,
)
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter
from fingerprint_indexer.fingerprint.winnow import WinnowParams
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.sidecar.es import EsClient
from fingerprint_indexer.verification import DEFAULT_POLICY

LAYOUT = ES_LAYOUT  # what every path gives a new index by default
TAG = WinnowParams().tag


# ------------------------------------------------------------------------------------------ the rule
def test_replicas_one_only_when_a_replica_can_be_placed_on_another_data_node() -> None:
    assert [replicas_for(n) for n in (0, 1, 2, 3)] == [0, 0, 1, 1]


def test_a_plain_index_is_the_name_itself_with_the_replicas_rule() -> None:
    for nodes, replicas in ((1, 0), (3, 1)):
        concrete, body = index_creation("news", LAYOUT, copy_marks=None, data_nodes=nodes)
        assert concrete == "news" and "aliases" not in body
        assert body["settings"]["index"]["number_of_replicas"] == replicas
        assert "number_of_shards" not in body["settings"]["index"]  # the server's default
        assert body["mappings"]["dynamic"] is False
        assert "copy_marks" not in body["mappings"]["_meta"][META_KEY]


def test_explicit_shards_and_replicas_win_over_the_rule() -> None:
    _, body = index_creation("news", LAYOUT, copy_marks=None, data_nodes=3, shards=4, replicas=0)
    assert (body["settings"]["index"]["number_of_shards"], body["settings"]["index"]["number_of_replicas"]) \
        == (4, 0)
    _, body = index_creation("news", LAYOUT, copy_marks=None, data_nodes=1, replicas=2)
    assert body["settings"]["index"]["number_of_replicas"] == 2


def test_alias_copy_marks_dynamic_and_layout() -> None:
    layout = BlockLayout.even(6)
    concrete, body = index_creation("news", layout, copy_marks=TAG, data_nodes=1, alias=True, dynamic=True)
    assert concrete == "news-000001" and body["aliases"] == {"news": {"is_write_index": True}}
    meta = body["mappings"]["_meta"][META_KEY]
    assert meta["copy_marks"] == TAG and BlockLayout.from_dict(meta["key_layout"]) == layout
    assert meta["verify_policy"] == DEFAULT_POLICY.tag  # the rule the index's writers decide by
    assert body["mappings"]["dynamic"] is True
    blocks = sorted(f for f in body["mappings"]["properties"] if f.startswith("block_"))
    assert blocks == [f"block_{i}" for i in range(layout.n_blocks)]


def test_the_mapping_declares_every_field_a_writer_writes(zh_articles: list[dict[str, Any]]) -> None:
    """The mapping is not dynamic: a field it does not declare is in ``_source`` only, not searchable."""
    fpr = Fingerprinter(FingerprintConfig(winnow=WinnowParams()))
    res = fpr.fingerprint_document(Document(id="a", title=zh_articles[0]["title"],
                                            content=zh_articles[0]["content"]))  # fmt: skip
    before = now_millis()
    fields = decision_fields(res, LAYOUT, cluster_id="a", duplicate_of=None, distance=None, decision="new",
                             text_length=len(zh_articles[0]["content"]), replaces="b")  # fmt: skip
    assert res.marks and "copy_marks" in fields
    props = load_index_body(LAYOUT)["mappings"]["properties"]
    assert set(fields) - set(props) == set()
    assert {f: props[f]["type"] for f in ("text_length", "replaces", DECIDED_FIELD)} == \
        {"text_length": "long", "replaces": "keyword", DECIDED_FIELD: "date"}
    assert isinstance(fields[DECIDED_FIELD], int) and before <= fields[DECIDED_FIELD] <= now_millis()
    fixed = decision_fields(res, LAYOUT, cluster_id="a", duplicate_of=None, distance=None, decision="new",
                            text_length=1, decided_at=1_700_000_000_000)  # fmt: skip
    assert fixed[DECIDED_FIELD] == 1_700_000_000_000
    assert fixed["verify_policy"] == DEFAULT_POLICY.tag and fixed["fp_version"] == res.version
    assert props["verify_policy"]["type"] == "keyword"


# ------------------------------------------------------------------------------- each path, real node
def _es_setup(client: Elasticsearch, url: str, name: str) -> None:
    setup_index(client, name, copy_marks=True)


def _index_class(client: Elasticsearch, url: str, name: str) -> None:
    ElasticsearchIndex(client, name, copy_marks=TAG).close()


def _sidecar(client: Elasticsearch, url: str, name: str) -> None:
    async def create() -> None:
        es = EsClient(EsSettings.from_env(url))
        es.copy_marks = TAG
        try:
            await es.ensure_index(name)
        finally:
            await es.close()

    asyncio.run(create())


PATHS: dict[str, tuple[Callable[[Elasticsearch, str, str], None], bool, bool]] = {
    # path: (create, alias, dynamic)
    "es setup": (_es_setup, True, False),
    "ElasticsearchIndex": (_index_class, False, False),
    "sidecar": (_sidecar, False, True),
}


@pytest.mark.elasticsearch
@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_path_creates_what_the_rule_says(es_url: str, es_client: Elasticsearch, es_index: str,
                                               path: str) -> None:  # fmt: skip
    create, alias, dynamic = PATHS[path]
    nodes = int(es_client.cluster.health()["number_of_data_nodes"])
    concrete, want = index_creation(es_index, LAYOUT, copy_marks=TAG, data_nodes=nodes, alias=alias,
                                    dynamic=dynamic)  # fmt: skip
    create(es_client, es_url, es_index)
    got = es_client.indices.get(index=es_index).body
    assert list(got) == [concrete]
    index = got[concrete]
    assert index["settings"]["index"]["number_of_replicas"] == str(replicas_for(nodes))
    assert set(index["aliases"]) == set(want.get("aliases", {}))
    props = index["mappings"]["properties"]
    assert set(props) == set(want["mappings"]["properties"])
    assert compare(want["mappings"]["properties"], props) == ([], [])  # what `es setup` checks
    assert props[DECIDED_FIELD] == want["mappings"]["properties"][DECIDED_FIELD]  # its format too
    assert str(index["mappings"].get("dynamic")).lower() == str(dynamic).lower()
    assert index["mappings"]["_meta"] == want["mappings"]["_meta"]
    assert stored_copy_marks(es_client, es_index) == TAG
