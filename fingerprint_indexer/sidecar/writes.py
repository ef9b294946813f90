"""The write operations of a proxied request, from parsed operations to the items of its answer: ids
assigned, documents fingerprinted and decided (in the order the operations run), the duplicate policy
applied, the operations delivered to Elasticsearch (or the spool), and the embedded store kept to what
Elasticsearch accepted.

A ``create`` only enters the embedded store when Elasticsearch will accept it: for creates of ids the store
already holds, the same ``_mget`` as for updates asks whether they exist (earlier operations of the request
followed), and a create of an existing id is passed on unchanged, so Elasticsearch answers its own 409 and
the stored entry keeps describing the text Elasticsearch has. When Elasticsearch cannot be asked, such a
create is passed on unchanged too (the entry is kept; the id almost surely exists). Any fingerprinted
operation that Elasticsearch still refuses (a 409 for a document written behind the proxy's back, a
mapping error, an update of a missing document) leaves the store.

Under ``keep=longest|newest`` a document that becomes its group's canonical (``replaces`` in its
``fingerprint_indexer`` summary) is followed, in the same bulk request to Elasticsearch (or the same spool
frame), by an update that points the previous canonical at it; that update's item is not part of the
answer, which keeps one item per operation of the request. Under ``skip`` such a document is indexed (it
is the one kept), and the replaced canonical stays in Elasticsearch, tagged.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from fingerprint_indexer.documents import Document, source_document
from fingerprint_indexer.es.codec import SKETCH_FIELD, block_fields
from fingerprint_indexer.sidecar.bulk_codec import bulk_item, has_error
from fingerprint_indexer.sidecar.delivery import BulkOp
from fingerprint_indexer.sidecar.es_state import Stores
from fingerprint_indexer.sidecar.ingest import Decided, decide, decision_write, relink_op
from fingerprint_indexer.sidecar.state import ServiceState
from fingerprint_indexer.sidecar.updates import current_sources, plan_updates
from fingerprint_indexer.sidecar.worker import valid_index_name

log = logging.getLogger("fingerprint_indexer.sidecar")


def _stored_ids(stores: Stores, keys: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """The ``(index, id)`` pairs the embedded stores hold an entry for (runs on the store thread)."""
    return {key for key in keys if stores.record(*key) is not None}


def _fingerprint_nulls(layout: Any) -> dict[str, None]:
    """Fingerprint fields a result may leave out (block keys of degenerate documents, the sketch): set to
    null in a partial doc, so no stale value of the previous text survives the merge."""
    return dict.fromkeys([*block_fields(layout), SKETCH_FIELD])



async def process_ops(state: ServiceState, ops: list[BulkOp], params: dict[str, str],
                      answer: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Fingerprint, decide, apply the policy, deliver; one bulk item per operation, in order (``answer``
    gets Elasticsearch's other top-level answer fields, see :meth:`Delivery.submit`)."""
    assert state.pool is not None and state.delivery is not None
    out: list[dict[str, Any] | None] = [None] * len(ops)
    todo: list[tuple[int, str, Document]] = []
    named: list[tuple[str, str]] = []  # creates with the caller's own id (an assigned one is new)
    timed = state.metrics.write_step
    with timed("prepare"):
        for op in ops:
            if op.action in ("index", "create") and valid_index_name(op.index) \
                    and op.meta.get("_id") is None and op.source is not None:
                op.meta["_id"] = uuid.uuid4().hex
            elif op.action == "create" and valid_index_name(op.index):
                named.append((op.index, str(op.id)))
    # A create of an id the embedded store holds would replace that entry before Elasticsearch answers,
    # and Elasticsearch refuses a create of an existing id (409): so whether those ids exist is asked in
    # the same _mget as the updates' sources, and a create of an existing id is passed on unchanged.
    # When Elasticsearch cannot be asked (unreachable, writes being spooled), such a create is passed on
    # unchanged too and the stored entry is kept: it describes a document written through the proxy, so
    # the create almost surely meets that document and is refused (on replay, a 409 counts as applied).
    # Were the document in fact gone, it is created without fingerprint fields; index it again.
    stored = await state.stores.call(_stored_ids, state.stores, named) if named else set()
    current, why = await current_sources(state, ops, frozenset(stored))
    with timed("prepare"):
        plans, outcomes, held = plan_updates(ops, current)
        for pos, op in enumerate(ops):
            if op.action in ("index", "create") and valid_index_name(op.index):
                doc = source_document(str(op.meta["_id"]), op.source)
            elif pos in plans:
                doc = plans[pos].document
            else:
                continue
            if isinstance(doc, str):
                out[pos] = bulk_item(op, 400, error={"type": "illegal_argument_exception", "reason": doc})
            elif doc is not None and pos not in held:
                todo.append((pos, op.index, doc))
    for outcome in outcomes.values():
        state.metrics.updates.labels(outcome).inc()
    stale = [pos for pos, outcome in outcomes.items() if outcome == "unknown_source"]
    if stale:
        log.warning("%d update(s) passed on without fingerprints (%s); their entries leave the embedded "
                    "store", len(stale), why)
    unsure = sum(1 for reason in held.values() if reason == "unknown")
    if unsure:
        log.warning("%d create(s) of ids in the embedded store passed on without fingerprints (%s); their "
                    "entries are kept", unsure, why)
    t0 = time.perf_counter()
    decided = await decide_in_order(state, ops, todo)
    if todo:
        state.metrics.fingerprint_seconds.observe(time.perf_counter() - t0)
    policy = state.settings.on_duplicate
    relinks: dict[int, BulkOp] = {}  # updates of replaced canonicals, sent right after their operation
    # once per index and request: an index that does not exist yet has no layout to remember, and asking
    # per document would send one GET per document of the request that creates it
    layouts = {ix: await state.es_layout(ix) for ix in dict.fromkeys(ops[pos].index for pos, _, _ in todo)}
    skipped: dict[str, list[tuple[str, str]]] = {}  # by index: duplicates not sent, which leave the store
    with timed("apply"):
        for (pos, _, _), d in zip(todo, decided, strict=True):
            op = ops[pos]
            state.metrics.documents.labels(d.decision.decision).inc()
            summary = {k: v for k, v in d.decision.to_dict().items() if k != "id"}
            layout = layouts[op.index]
            write = decision_write(d.result, d.decision, layout, d.doc.length)
            plan = plans.get(pos)
            if plan is not None:  # an update: the fields go into the part of the body that gets applied
                extra = _fingerprint_nulls(layout) if plan.target == "doc" else {}
                op.source = {**op.source, plan.target: {**op.source[plan.target], **extra, **write.fields()}}
                op.raw = None  # re-encoded with the fields inside doc/upsert
            elif policy == "skip" and d.is_duplicate:
                state.metrics.skipped.inc()
                out[pos] = bulk_item(op, 200, result="noop", fingerprint_indexer=summary)
                skipped.setdefault(op.index, []).append((d.doc.id, d.result.content_digest))
                continue
            else:
                op.added = write
            op.fingerprinted = True
            op.extra = summary
            if (relink := relink_op(op.index, d.decision)) is not None:
                relinks[pos] = relink
    for name, unsent in skipped.items():
        await state.stores.call(state.stores.discard, name, unsent)
    # the last operation of the request decided into the store, per id: an entry it wrote is not
    # forgotten because of an earlier operation on the same id (delete X, then create X again)
    last_decided = {(idx, doc.id): pos for pos, idx, doc in todo}

    def superseded(pos: int, op: BulkOp) -> bool:
        return last_decided.get((op.index, str(op.id)), -1) > pos

    forward = [pos for pos in range(len(ops)) if out[pos] is None]
    sent = [o for pos in forward for o in (ops[pos], relinks.get(pos)) if o is not None]
    answered = await state.delivery.submit(sent, params, answer)
    written: dict[str, list[str]] = {}
    for o in sent:
        if (o.fingerprinted or o.relink) and o.id is not None:
            written.setdefault(o.index, []).append(o.id)
    for name, ids in written.items():
        await state.stores.call(state.stores.settle, name, ids)
    # the client sees one item per operation it sent: the relinks' items are left out (their failures
    # are logged by the delivery)
    items = [it for o, it in zip(sent, answered, strict=True) if not o.relink]
    for pos, item in zip(forward, items, strict=True):
        op = ops[pos]
        if op.fingerprinted and has_error(item):
            # Elasticsearch refused the operation (a create whose id existed after all, a mapping error, an
            # update of a missing document): the entry just decided describes text it does not hold
            if not superseded(pos, op):
                await state.stores.call(state.stores.forget, op.index, str(op.id))
        elif op.fingerprinted:
            body = next(iter(item.values()))
            body["fingerprint_indexer"] = {**op.extra, **body.get("fingerprint_indexer", {})}
        elif (op.action == "delete" or outcomes.get(pos) == "unknown_source") and op.id \
                and valid_index_name(op.index) and not has_error(item) and not superseded(pos, op):
            # deleted (or queued for deletion) in Elasticsearch, or its text changed in a way we could not
            # follow: later copies must not point at it
            await state.stores.call(state.stores.forget, op.index, op.id)
        out[pos] = item
    return [it for it in out if it is not None]


async def decide_in_order(state: ServiceState, ops: list[BulkOp], todo: list[tuple[int, str, Document]]
                          ) -> list[Decided]:
    """Decide the ``todo`` documents as if the request's operations ran one after the other: a ``delete``
    leaves the embedded store before the documents after it are decided, so a copy of a document
    deleted earlier in the same request is not called its duplicate. (Should Elasticsearch then refuse
    that delete, which it does only for a version conflict or a missing routing, the entry stays out of
    the store: later copies of it count as new rather than pointing at it.)"""
    assert state.pool is not None
    deletes = [pos for pos, op in enumerate(ops)
               if op.action == "delete" and op.id is not None and valid_index_name(op.index)]
    if not deletes or not todo:
        return await decide(state.pool, state.stores, [(idx, doc) for _, idx, doc in todo])
    out: list[Decided] = []
    start = 0
    for cut in [*deletes, len(ops)]:
        run = [t for t in todo if start <= t[0] < cut]
        if run:
            out += await decide(state.pool, state.stores, [(idx, doc) for _, idx, doc in run])
        if cut < len(ops):
            await state.stores.call(state.stores.forget, ops[cut].index, str(ops[cut].id))
        start = cut
    return out
