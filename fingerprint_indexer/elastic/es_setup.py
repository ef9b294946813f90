"""Create or check the news index from the shipped mapping (``fingerprint-indexer es setup``).

A new index is created as ``<name>-000001`` behind the alias ``<name>``, so a later reindex into a new
mapping can swap the alias without clients noticing. An existing index is checked field by field: a field
of another type is a conflict that only a reindex can solve; missing fields are added with
``--update-mapping`` (adding fields is always safe in Elasticsearch).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from elasticsearch import Elasticsearch

from fingerprint_indexer.errors import FingerprintIndexerError
from fingerprint_indexer.es.mapping import (
    ES_LAYOUT,
    META_KEY,
    create_index,
    load_index_body,
    stored_copy_marks,
    stored_layout,
)
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig
from fingerprint_indexer.fingerprint.winnow import WinnowParams


class MappingConflict(FingerprintIndexerError, ValueError):
    """The existing index cannot hold our fields as they are."""


@dataclass
class SetupReport:
    index: str
    action: str  # created | unchanged | updated
    concrete_indices: list[str] = field(default_factory=list)
    added_fields: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "action": self.action, "concrete_indices": self.concrete_indices,
                "added_fields": self.added_fields}  # fmt: skip


def _existing_properties(client: Elasticsearch, name: str) -> dict[str, dict[str, dict[str, Any]]]:
    return {
        idx: (m.get("mappings") or {}).get("properties") or {}
        for idx, m in client.indices.get_mapping(index=name).body.items()
    }


def compare(wanted: dict[str, Any], existing: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(missing field names, conflict descriptions) of an existing mapping against ours."""
    missing, conflicts = [], []
    for fname, spec in wanted.items():
        have = existing.get(fname)
        if have is None:
            missing.append(fname)
            continue
        for key in ("type", "analyzer"):
            want_v, have_v = spec.get(key), have.get(key, "object" if key == "type" else None)
            if key == "analyzer" and want_v is not None and have_v is None:
                have_v = "standard"  # the default analyzer of a text field
            if want_v is not None and want_v != have_v:
                conflicts.append(f"{fname}: {key} is {have_v!r}, needs {want_v!r}")
    return missing, conflicts


def setup_index(
    client: Elasticsearch,
    name: str,
    layout: BlockLayout | None = None,
    update_mapping: bool = False,
    shards: int | None = None,
    replicas: int | None = None,
    copy_marks: bool | None = None,
) -> SetupReport:
    """Create ``name`` (alias over ``name-000001``) or check/extend an existing index or alias.

    A new index is made by :func:`~fingerprint_indexer.es.mapping.create_index` (the one rule
    of :func:`~fingerprint_indexer.es.mapping.index_creation`): ``replicas`` None means one
    replica when the cluster has more than one data node, else none. ``copy_marks`` True records in a new
    index that its writers add copy marks (partial-copy search);
    on an existing index True or False must match what it records (None: no check).
    """
    if not client.indices.exists(index=name):
        concrete = create_index(client, name, layout or ES_LAYOUT, alias=True, shards=shards,
                                replicas=replicas, copy_marks=WinnowParams().tag if copy_marks else None)
        if concrete is not None:  # else another setup created it at the same moment: checked below
            return SetupReport(name, "created", [concrete])

    current = stored_layout(client, name)
    if current is not None and layout is not None and layout != current:
        raise MappingConflict(
            f"index {name!r} uses block layout {current}, not {layout}; reindex into a new index"
        )
    marks = index_config(client, name, FingerprintConfig(), copy_marks).winnow
    body = load_index_body(layout or current or ES_LAYOUT, copy_marks=marks.tag if marks else None)
    wanted = body["mappings"]["properties"]
    per_index = _existing_properties(client, name)
    missing: set[str] = set()
    problems: list[str] = []
    for idx, props in per_index.items():
        m, c = compare(wanted, props)
        missing.update(m)
        problems += [f"{idx}.{p}" for p in c]
    if problems:
        raise MappingConflict(
            f"index {name!r} has fields that conflict with the fingerprint mapping ({'; '.join(problems)}); "
            "these cannot be changed in place: reindex into a new index created by `es setup`"
        )
    if not missing and current is not None:
        return SetupReport(name, "unchanged", sorted(per_index))
    if not update_mapping:
        raise MappingConflict(
            f"index {name!r} lacks the fingerprint fields {sorted(missing) or '(_meta key layout)'}; "
            "rerun with --update-mapping to add them"
        )
    for idx, mapping in client.indices.get_mapping(index=name).body.items():
        meta = dict((mapping.get("mappings") or {}).get("_meta") or {})  # keep the owner's own _meta keys
        meta[META_KEY] = body["mappings"]["_meta"][META_KEY]
        client.indices.put_mapping(index=idx, properties={f: wanted[f] for f in sorted(missing)}, meta=meta)
    return SetupReport(name, "updated", sorted(per_index), sorted(missing))


ES_ENABLE_HINT = ("create a new index with copy marks (`fingerprint-indexer es setup --index NEW "
                  "--copy-marks`) and index the documents into it")


def index_config(client: Elasticsearch, name: str, config: FingerprintConfig,
                 copy_marks: bool | None = None) -> FingerprintConfig:
    """``config`` with the copy-marks setting the existing index ``name`` records, so every writer of an
    index adds copy marks or none does; ``copy_marks`` True or False must match it."""
    tag = stored_copy_marks(client, name)
    if copy_marks is not None and copy_marks != (tag is not None):
        raise MappingConflict(
            f"index {name!r} was created {'with' if tag else 'without'} copy marks; an index keeps them "
            f"for every document or none: create another (`es setup --index NEW"
            f"{' --copy-marks' if copy_marks else ''}`) and index the documents into it")
    winnow = WinnowParams.from_tag(tag) if tag else None
    return config if winnow == config.winnow else replace(config, winnow=winnow)


def require_index_marks(client: Elasticsearch, name: str) -> WinnowParams:
    """The index's winnowing parameters; a clear error when its writers add no copy marks."""
    tag = stored_copy_marks(client, name)
    if tag is None:
        raise MappingConflict(f"index {name!r} keeps no copy marks, which partial-copy search needs; "
                              f"{ES_ENABLE_HINT}")
    return WinnowParams.from_tag(tag)
