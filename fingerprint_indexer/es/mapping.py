"""The shipped mapping, the one rule of what a new index is, and the index admin calls (creation,
layout and copy-marks setting from ``_meta``, primaries, merges).

A new index has the permuted layout (:data:`ES_LAYOUT`: 20 keys of three blocks), an index of before
the four 16-bit blocks. The block layout is stored in the mapping's ``_meta`` so an index is always
queried with the layout it was written with.
"""

from __future__ import annotations

import json
import time
from importlib import resources
from typing import Any

from elasticsearch import ApiError, Elasticsearch

from fingerprint_indexer.es.codec import block_fields
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.verification import DEFAULT_POLICY

MAPPING_FILE = "news.json"
META_KEY = "fingerprint_indexer"

#: The layout of a new index: permuted keys of about 32 bits (:meth:`BlockLayout.permuted`), so that a
#: key matches almost no random document however large the index grows. An existing index keeps the
#: layout recorded in its mapping (``_meta``), whatever a writer's default.
ES_LAYOUT = BlockLayout.permuted(3)

#: Where a mapping's ``_meta`` records the layout. ``key_layout`` since keys of several blocks: a writer
#: of before, which reads only ``block_layout``, finds no layout in a new index and refuses it instead
#: of writing keys of another layout; ``block_layout`` is still read from the indexes it created.
LAYOUT_META = "key_layout"
OLD_LAYOUT_META = "block_layout"


def mapping_layout(mapping: dict[str, Any]) -> BlockLayout | None:
    """The layout one index's mapping records (None: none, so not a fingerprint index yet)."""
    meta = ((mapping.get("mappings") or {}).get("_meta") or {}).get(META_KEY) or {}
    raw = meta.get(LAYOUT_META) or meta.get(OLD_LAYOUT_META)
    return BlockLayout.from_dict(raw) if raw else None


def load_index_body(layout: BlockLayout | None = None, name: str = MAPPING_FILE,
                    copy_marks: str | None = None) -> dict[str, Any]:
    """Settings and mappings shipped in the package, with block fields and ``_meta`` for ``layout``;
    ``copy_marks`` (the winnowing parameters' tag) records that every writer adds copy marks."""
    text = (resources.files("fingerprint_indexer") / "mappings" / name).read_text(encoding="utf-8")
    body: dict[str, Any] = json.loads(text)
    if layout is not None:
        props = body["mappings"]["properties"]
        for field in [f for f in props if f.startswith("block_")]:
            del props[field]
        props.update({f: {"type": "keyword"} for f in block_fields(layout)})
        body["mappings"]["_meta"][META_KEY][LAYOUT_META] = layout.to_dict()
    if copy_marks is not None:
        body["mappings"]["_meta"][META_KEY]["copy_marks"] = copy_marks
    body["mappings"]["_meta"][META_KEY]["verify_policy"] = DEFAULT_POLICY.tag
    return body


def replicas_for(data_nodes: int) -> int:
    """Replicas of a new index: one on a cluster with more than one data node (so that a node can die
    without the index losing a shard or a write), none on a single node (where a replica could never be
    placed and the index would stay yellow)."""
    return 1 if data_nodes > 1 else 0


#: Suffix of the first concrete index behind an alias (``<name>-000001``).
FIRST_GENERATION = "-000001"


def index_creation(
    name: str, layout: BlockLayout, *, copy_marks: str | None, data_nodes: int, shards: int | None = None,
    replicas: int | None = None, alias: bool = False, dynamic: bool = False,
) -> tuple[str, dict[str, Any]]:  # fmt: skip
    """What a new fingerprint index is: (the concrete index to create, its request body: ``settings``,
    ``mappings`` and perhaps ``aliases``). Every path that creates an index asks this one rule, and only
    sends the request: ``es setup`` (:func:`create_index` with ``alias``), :class:`ElasticsearchIndex` with
    ``create`` (:func:`create_index`) and the sidecar before its first write (its own HTTP client).

    - ``copy_marks``: the winnowing parameters' tag recorded in ``_meta`` when every writer adds copy
      marks (None: no marks); ``layout``: the block fields and the recorded layout.
    - ``replicas`` None: :func:`replicas_for` the cluster's ``data_nodes``; ``shards`` None: the server's
      default.
    - ``alias``: create ``<name>-000001`` behind the write alias ``<name>``, so a later reindex into a new
      mapping swaps the alias without clients noticing (``es setup``, and so ``es index`` on a missing
      index). Without it the index is ``name`` itself: the sidecar and :class:`ElasticsearchIndex` create
      the name their callers write to, as they always have.
    - ``dynamic``: the sidecar's indexes map an indexer's own extra fields as Elasticsearch would without
      the proxy; the fingerprint fields keep their declared types. Otherwise undeclared fields stay in
      ``_source`` only.
    """
    body = load_index_body(layout, copy_marks=copy_marks)
    index_settings = body.setdefault("settings", {}).setdefault("index", {})
    if shards is not None:
        index_settings["number_of_shards"] = shards
    index_settings["number_of_replicas"] = replicas_for(data_nodes) if replicas is None else replicas
    if dynamic:
        body["mappings"]["dynamic"] = True
    if not alias:
        return name, body
    body["aliases"] = {name: {"is_write_index": True}}
    return name + FIRST_GENERATION, body


def data_nodes_of(client: Elasticsearch) -> int:
    """The number of data nodes of the cluster (what :func:`replicas_for` needs)."""
    return int(client.cluster.health()["number_of_data_nodes"])


def create_if_absent(client: Elasticsearch, index: str, body: dict[str, Any]) -> bool:
    """Create ``index`` with ``body``; False when it exists already (another writer, a sidecar say,
    created it at the same moment)."""
    try:
        client.indices.create(index=index, **body)
    except ApiError as exc:
        if exc.meta.status == 400 and exc.error == "resource_already_exists_exception":
            return False
        raise
    return True


def create_index(
    client: Elasticsearch, name: str, layout: BlockLayout, *, copy_marks: str | None = None,
    shards: int | None = None, replicas: int | None = None, alias: bool = False,
) -> str | None:  # fmt: skip
    """Create the index :func:`index_creation` describes through the official client; its concrete
    name, or None when another writer created it first. The cluster is asked for its data nodes only
    when ``replicas`` is not given."""
    nodes = data_nodes_of(client) if replicas is None else 1
    concrete, body = index_creation(name, layout, copy_marks=copy_marks, data_nodes=nodes, shards=shards,
                                    replicas=replicas, alias=alias)  # fmt: skip
    return concrete if create_if_absent(client, concrete, body) else None


def wait_for_primaries(client: Elasticsearch, index: str, timeout_s: float = 30.0) -> None:
    """Wait until every primary of ``index`` has started (at most ``timeout_s``; a read then fails with its
    own error). An index another writer has just created reports yellow, with no shard initialising,
    before its primaries are even assigned, so the health API's own waits return too early: the started
    primaries are counted instead."""
    settings = client.indices.get_settings(index=index, name="index.number_of_shards").body
    primaries = sum(int(s["settings"]["index"]["number_of_shards"]) for s in settings.values())
    deadline = time.monotonic() + timeout_s
    while int(client.cluster.health(index=index)["active_primary_shards"]) < primaries:
        if time.monotonic() > deadline:
            return
        time.sleep(0.05)


def segment_count(client: Elasticsearch, index: str) -> int:
    """Segments of the primaries of ``index`` (or an alias's indexes)."""
    stats = client.indices.stats(index=index, metric="segments").body
    return int(stats["_all"]["primaries"]["segments"]["count"])


def force_merge(client: Elasticsearch, index: str, segments: int = 1,
                timeout_s: float = 7200.0) -> dict[str, float]:  # fmt: skip
    """Force-merge ``index`` (or an alias's indexes) to at most ``segments`` per shard and wait for it.

    A look-up pays for every key in every segment, so an index loaded in bulk serves look-ups at the rate
    of an empty one only once merged (docs/architecture.md, "Block layout"). Returns the seconds taken and
    the primaries' segments afterwards."""
    if segments < 1:
        raise ValueError("segments must be at least 1")
    t = time.perf_counter()
    client.options(request_timeout=timeout_s).indices.forcemerge(index=index, max_num_segments=segments)
    client.indices.refresh(index=index)
    return {"seconds": round(time.perf_counter() - t, 1), "segments": segment_count(client, index)}


def stored_copy_marks(client: Elasticsearch, index: str) -> str | None:
    """The copy-marks setting recorded in the mapping of ``index`` (None: its writers add none)."""
    tags = set()
    for mapping in client.indices.get_mapping(index=index).body.values():
        meta = (mapping.get("mappings") or {}).get("_meta") or {}
        tags.add((meta.get(META_KEY) or {}).get("copy_marks"))
    if len(tags) > 1:
        raise ValueError(f"indices behind {index!r} disagree on copy marks: {sorted(map(str, tags))}")
    return tags.pop() if tags else None


def stored_layout(client: Elasticsearch, index: str) -> BlockLayout | None:
    """The block layout recorded in the mapping of ``index`` (or of every index behind the alias)."""
    layouts = {mapping_layout(m) for m in client.indices.get_mapping(index=index).body.values()}
    if len(layouts) > 1:
        names = sorted(map(str, layouts))
        raise ValueError(f"indices behind {index!r} disagree on the block layout: {names}")
    return layouts.pop() if layouts else None
