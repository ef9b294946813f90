"""Updates through the proxy: what an update (or a create) will do to a document, worked out before the
request is sent, so that the fingerprint describes the document Elasticsearch will hold.

``update`` operations (bulk, and ``POST /{index}/_update/{id}``) whose partial ``doc`` or ``upsert`` sets a
text field are fingerprinted as the document will be after the update: the current text fields of those
ids are read in one ``_mget`` per request, the partial doc is merged over them as Elasticsearch merges it
(objects key by key, everything else replaced), earlier operations of the same request on the same id are
taken into account, and the fingerprint fields go into ``doc`` (or into ``upsert`` when the document does
not exist yet). The embedded store replaces the document's entry. Updates are always applied (the ``skip``
policy does not drop them). Scripted updates cannot be evaluated here and pass through unchanged, as do
updates that set no text field. When the current document cannot be read (Elasticsearch unreachable,
writes being spooled, ``_source`` disabled), the update passes through unchanged, a warning without
document bodies is logged, and the document is dropped from the embedded store, whose entry no longer
describes it.

The same one ``_mget`` tells whether ``create`` operations of ids the embedded store already holds meet an
existing document (:func:`plan_updates` holds those back, so Elasticsearch answers its own 409).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from fingerprint_indexer.documents import TEXT_FIELDS, Document, source_document
from fingerprint_indexer.es.errors import EsUnavailable
from fingerprint_indexer.sidecar.delivery import BulkOp
from fingerprint_indexer.sidecar.es import BulkRejected
from fingerprint_indexer.sidecar.state import ServiceState
from fingerprint_indexer.sidecar.worker import valid_index_name


class Unknown(enum.Enum):
    """The current source of a document could not be read."""

    SOURCE = "unknown"


#: What is known of a document's text fields: the fields (it exists), None (it does not), or Unknown.
Known = dict[str, Any] | None | Unknown


@dataclass
class UpdatePlan:
    """How one update operation is fingerprinted: the merged document, and the part of the update body
    (``doc`` or ``upsert``) that gets the fingerprint fields."""

    target: str
    document: Document | str


def merge_source(old: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Elasticsearch's merge of a partial ``doc`` into a source: objects key by key, recursively; every
    other value (strings, numbers, arrays, null) replaced."""
    out = dict(old)
    for key, value in changes.items():
        cur = out.get(key)
        out[key] = merge_source(cur, value) if isinstance(cur, dict) and isinstance(value, dict) else value
    return out


def _touches_text(part: Any) -> bool:
    return isinstance(part, dict) and any(f in part for f in TEXT_FIELDS)


def _text_part(source: Any) -> Known:
    return {f: source[f] for f in TEXT_FIELDS if f in source} if isinstance(source, dict) else Unknown.SOURCE


def is_scripted(op: BulkOp) -> bool:
    return op.action == "update" and isinstance(op.source, dict) and "script" in op.source


def update_wants_source(op: BulkOp) -> bool:
    """An unscripted update of a store-backed index whose ``doc`` or ``upsert`` sets a text field."""
    body = op.source
    return (op.action == "update" and isinstance(body, dict) and "script" not in body and op.id is not None
            and valid_index_name(op.index)
            and (_touches_text(body.get("doc")) or _touches_text(body.get("upsert"))))


def _routing(op: BulkOp) -> Any:
    return op.meta.get("routing", op.meta.get("_routing"))


async def current_sources(state: ServiceState, ops: list[BulkOp],
                          creates: frozenset[tuple[str, str]] = frozenset(),
                          ) -> tuple[dict[tuple[str, str], Known], str]:
    """The text fields of every document an update in ``ops`` needs, and whether the ``creates`` ids
    exist, as they are before the request (one ``_mget``); with the reason why they are Unknown when they
    cannot be read."""
    assert state.es is not None and state.delivery is not None and state.spool is not None
    specs: dict[tuple[str, str], dict[str, Any]] = {}
    for op in ops:
        if update_wants_source(op) or (op.action == "create" and (op.index, str(op.id)) in creates):
            spec: dict[str, Any] = {"_index": op.index, "_id": op.id, "_source": list(TEXT_FIELDS)}
            if _routing(op) is not None:
                spec["routing"] = _routing(op)
            specs.setdefault((op.index, str(op.id)), spec)
    if not specs:
        return {}, ""
    unknown: dict[tuple[str, str], Known] = dict.fromkeys(specs, Unknown.SOURCE)
    if state.spool.depth > 0 or state.delivery.es_down:
        # writes are queued in the spool: Elasticsearch's copy may be older than what was acknowledged
        return unknown, "writes are being spooled"
    try:
        answers = await state.es.mget(list(specs.values()))
    except EsUnavailable as exc:
        return unknown, f"_mget failed: {exc}"
    except BulkRejected as exc:
        return unknown, f"_mget refused with {exc.status}"
    out: dict[tuple[str, str], Known] = {}
    for key, ans in zip(specs, answers, strict=True):
        error = ans.get("error")
        if error is not None:
            missing = isinstance(error, dict) and error.get("type") == "index_not_found_exception"
            out[key] = None if missing else Unknown.SOURCE
        elif ans.get("found"):
            out[key] = _text_part(ans.get("_source"))  # no _source (disabled in the mapping): Unknown
        else:
            out[key] = None
    return out, "some documents could not be read"


def plan_updates(ops: list[BulkOp], current: dict[tuple[str, str], Known]
                 ) -> tuple[dict[int, UpdatePlan], dict[int, str], dict[int, str]]:
    """Replay ``ops`` in order over the documents' current text fields: a plan per update to fingerprint,
    the metric outcome of every update operation, and the ``create`` operations to pass on unchanged (by
    position): ``"exists"`` when Elasticsearch will refuse them with 409, ``"unknown"`` when it is not
    known whether the id exists. A create whose id is not in ``current`` is taken as a new id."""
    known = dict(current)
    for op in ops:
        if op.action == "create" and op.id is not None:
            known.setdefault((op.index, op.id), None)
    plans: dict[int, UpdatePlan] = {}
    outcomes: dict[int, str] = {}
    held: dict[int, str] = {}
    for pos, op in enumerate(ops):
        if op.action == "update":
            outcomes[pos] = "scripted" if is_scripted(op) else "no_text"
        key = (op.index, str(op.id))
        if op.id is None or key not in known:
            continue
        prev = known[key]
        if op.action == "index":
            known[key] = _text_part(op.source)
        elif op.action == "create":
            if prev is None:
                known[key] = _text_part(op.source)
            else:  # on an existing id: 409, nothing changes (or, when unknown, nothing is known)
                held[pos] = "unknown" if isinstance(prev, Unknown) else "exists"
        elif op.action == "delete":
            known[key] = None
        elif not isinstance(op.source, dict) or "script" in op.source or isinstance(prev, Unknown):
            if update_wants_source(op):
                outcomes[pos] = "unknown_source"
            known[key] = Unknown.SOURCE
        else:
            body = op.source
            doc, upsert = body.get("doc"), body.get("upsert")
            target, after = "", prev
            if prev is not None and isinstance(doc, dict):
                target, after = "doc", merge_source(prev, doc)
            elif prev is None and body.get("doc_as_upsert") is True and isinstance(doc, dict):
                target, after = "doc", doc
            elif prev is None and isinstance(upsert, dict):
                target, after = "upsert", upsert
            # otherwise Elasticsearch answers the item with an error and nothing changes
            known[key] = _text_part(after)
            applied = body[target] if target else None
            if target and _touches_text(applied):
                document = source_document(str(op.id), after)
                if document is not None:
                    plans[pos] = UpdatePlan(target, document)
                    outcomes[pos] = "fingerprinted"
    return plans, outcomes, held

