"""Getting writes into Elasticsearch without losing an acknowledged one.

:class:`Delivery` sends a list of bulk operations straight to Elasticsearch while the spool is empty and
the cluster answers. When the cluster is down, slow or overloaded (connection failure, timeout, 429, 5xx,
or a 429/5xx on single items), the operations go to the durable :class:`Spool` instead and are answered
as queued. A queued item is answered the way Elasticsearch answers an applied one (``index``/``create``:
201 ``created``; ``update``: 200 ``updated``; ``delete``: 200 ``deleted``), so every official client
parses it and none retries a write that is already kept; what is not known yet is marked: ``_version``
-1, ``_seq_no`` -2, ``_shards.total`` 0 and ``"fingerprint_indexer": {"queued": true}``. While anything
is spooled, new writes are spooled behind it, so a document's versions reach Elasticsearch in the order
they were acknowledged.

:class:`Replayer` is the background task that drains the spool in order. Every operation carries its
``_index`` and ``_id``, so a replay that repeats an already-applied operation leaves one copy (``index``
overwrites; a ``create`` answered 409 on replay is taken as already applied). Items Elasticsearch rejects
for good (a mapping error, say) are listed with id and reason in ``rejected.ndjson`` beside the spool,
never dropped silently, and never with document bodies. A 401/403 is not such a rejection: it refuses the
service's own credentials, so the writes stay spooled (``/readyz`` says why) until the cluster takes them.

*Poison writes*: an item Elasticsearch keeps refusing with a retryable status (429, 5xx) on its own, while
the items around it are applied (or alone in its spool frame), is retried ``max_tries`` times and then
parked: listed in ``rejected.ndjson`` with its id and the last reason, counted as
``fpi_parked_operations_total``, shown by ``/readyz``; the writes behind it flow on. A replay in which
every item of several frames is refused is taken as an overloaded cluster: nothing is counted, and the
next try sends the oldest frame alone, which isolates a poison write from the rest.

A *relink* operation (:attr:`BulkOp.relink`) is an update the service adds itself: under ``keep=longest``
or ``newest`` it points the previous canonical of a group at the document that replaced it. It travels with
the write that caused it (the same request, or the same spool frame, whose head lists its position), and
an answer of 404 (the previous canonical is not in Elasticsearch, e.g. it was only decided, never indexed)
is no lost write: a warning without document bodies is logged, and nothing goes to ``rejected.ndjson``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from fingerprint_indexer.es.codec import DecisionWrite, json_bytes
from fingerprint_indexer.es.errors import EsUnavailable
from fingerprint_indexer.sidecar.es import BulkRejected, EsClient
from fingerprint_indexer.sidecar.spool import Position, Spool, SpoolFull, SpoolUnavailable
from fingerprint_indexer.sidecar.worker import valid_index_name

log = logging.getLogger("fingerprint_indexer.sidecar")
T = TypeVar("T")
SOURCE_ACTIONS = frozenset({"index", "create", "update"})
#: One replay request carries up to this many spooled frames / payload bytes.
REPLAY_RECORDS = 200
REPLAY_BYTES = 8 << 20


@dataclass
class BulkOp:
    """One bulk operation: action name, its metadata (with ``_index`` and ``_id``) and its source line."""

    action: str
    meta: dict[str, Any]
    source: Any = None
    #: the source line as received (None for operations the service makes): sent on byte for byte
    #: while the source is unchanged, so ``_source`` keeps the caller's exact JSON, and a line this
    #: service cannot read (``source`` None: invalid JSON or UTF-8) draws Elasticsearch's own item error
    raw: bytes | None = None
    #: the fields the service adds to the source (appended inside ``raw``'s object)
    added: DecisionWrite | None = None
    fingerprinted: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    relink: bool = False  # added by the service (see the module docstring), never answered to a client

    @property
    def index(self) -> str:
        return str(self.meta.get("_index", ""))

    @property
    def id(self) -> str | None:
        v = self.meta.get("_id")
        return None if v is None else str(v)

    def ndjson(self) -> bytes:
        out = json_bytes({self.action: self.meta}) + b"\n"
        if self.action not in SOURCE_ACTIONS:
            return out
        return out + self.source_line() + b"\n"

    def source_line(self) -> bytes:
        """The source line to send: the caller's bytes, with the added fields appended inside its object."""
        if self.raw is not None and (self.source is None or self.added is None):
            return self.raw
        if self.added is not None and isinstance(self.source, dict):
            return self.added.source(self.source, self.raw)
        return json_bytes(self.source)


def encode_ops(ops: Sequence[BulkOp]) -> bytes:
    return b"".join(op.ndjson() for op in ops)


def item_status(item: dict[str, Any]) -> int:
    return int(next(iter(item.values())).get("status", 500))


#: The status and ``result`` a queued operation is answered with (as Elasticsearch answers it applied).
QUEUED_ANSWER = {"index": (201, "created"), "create": (201, "created"), "update": (200, "updated"),
                 "delete": (200, "deleted")}


def queued_item(op: BulkOp) -> dict[str, Any]:
    status, result = QUEUED_ANSWER[op.action]
    return {op.action: {"_index": op.index, "_id": op.id, "_version": -1, "result": result,
                        "_shards": {"total": 0, "successful": 0, "failed": 0}, "_seq_no": -2,
                        "_primary_term": 0, "status": status, "fingerprint_indexer": {"queued": True}}}


def is_queued(item: dict[str, Any]) -> bool:
    """The item was spooled, not yet applied (see :func:`queued_item`)."""
    extra = next(iter(item.values())).get("fingerprint_indexer")
    return isinstance(extra, dict) and extra.get("queued") is True


def retryable(status: int) -> bool:
    return status == 429 or status >= 500


def ensure_indices(ops: Sequence[BulkOp]) -> list[str]:
    """The indices a request writes documents into, which must exist with the fingerprint mapping before
    it is sent (else Elasticsearch would create them with a dynamic mapping). Only store-backed names:
    the proxy passes everything else through unchanged."""
    return sorted({op.index for op in ops if creates_documents(op) and valid_index_name(op.index)})


def creates_documents(op: BulkOp) -> bool:
    """Whether Elasticsearch creates a missing index for ``op``: for ``index``, ``create`` and every
    ``update`` (even one without upsert, which then fails with ``document_missing_exception``), not for
    ``delete``."""
    return op.action in SOURCE_ACTIONS


def _error_type(item_body: dict[str, Any]) -> str:
    err = item_body.get("error")
    return str(err.get("type")) if isinstance(err, dict) else str(err)


def _error_text(err: Any) -> str:
    """``type: reason`` of an Elasticsearch error object, shortened (reasons never hold bodies)."""
    if isinstance(err, dict):
        return f"{err.get('type')}: {str(err.get('reason'))[:300]}"
    return str(err)[:300]


def _split(payload: bytes) -> tuple[dict[str, Any], bytes]:
    head, _, body = payload.partition(b"\n")
    return json.loads(head), body


def _same_params(recs: list[tuple[Position, bytes]]) -> list[tuple[Position, bytes]]:
    """The leading frames that share the first one's bulk parameters (they can go in one request)."""
    first = _split(recs[0][1])[0].get("params")
    out = [recs[0]]
    for rec in recs[1:]:
        if _split(rec[1])[0].get("params") != first:
            break
        out.append(rec)
    return out


def _spool_payload(ops: Sequence[BulkOp], params: dict[str, str], ensure: list[str]) -> bytes:
    head: dict[str, Any] = {"params": params, "ensure": ensure, "n": len(ops)}
    relinks = [i for i, op in enumerate(ops) if op.relink]
    if relinks:
        head["relink"] = relinks
    return json.dumps(head).encode() + b"\n" + encode_ops(ops)


def _relink_flags(heads: Sequence[dict[str, Any]]) -> list[bool]:
    """Per operation of the spooled frames (in order): whether it is a relink."""
    flags: list[bool] = []
    for head in heads:
        mine = [False] * int(head.get("n", 0))
        for i in head.get("relink", []):
            mine[i] = True
        flags.extend(mine)
    return flags


def relink_missing(item: dict[str, Any]) -> bool:
    """A relink answered 404: the previous canonical is not in Elasticsearch (nothing to update)."""
    return item_status(item) == 404


def log_relinks(relinks: Sequence[tuple[bool, dict[str, Any]]]) -> list[int]:
    """Log the relinks answered 404 (ids only, no bodies); their positions."""
    missing = [i for i, (flag, it) in enumerate(relinks) if flag and relink_missing(it)]
    if missing:
        ids = [next(iter(relinks[i][1].values())).get("_id") for i in missing]
        log.warning("%d replaced canonical(s) not in Elasticsearch, left as they are: %s", len(missing),
                    ", ".join(map(str, ids[:10])))
    return missing


class Delivery:
    """Direct writes while healthy, the spool otherwise; see the module docstring."""

    def __init__(self, es: EsClient, spool: Spool, on_spooled: Callable[[int], None] | None = None,
                 timed: Callable[[str], AbstractContextManager[object]] = nullcontext) -> None:
        self.es, self.spool = es, spool
        self.es_down = False
        self.wake = asyncio.Event()
        self._spool_thread = ThreadPoolExecutor(1, thread_name_prefix="spool")
        self._on_spooled = on_spooled
        #: counts the CPU time of a step of a request (:meth:`Metrics.write_step`)
        self._timed = timed

    async def in_spool_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._spool_thread, fn, *args)

    def close(self) -> None:
        self._spool_thread.shutdown(wait=True)

    async def _to_spool(self, ops: Sequence[BulkOp], params: dict[str, str]) -> list[dict[str, Any]]:
        ensure = ensure_indices(ops)
        await self.in_spool_thread(self.spool.append, _spool_payload(ops, params, ensure))
        self.wake.set()
        if self._on_spooled:
            self._on_spooled(len(ops))
        return [queued_item(op) for op in ops]

    async def submit(self, ops: Sequence[BulkOp], params: dict[str, str],
                     answer: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """One ES-style bulk item per operation, in order; ``answer`` receives the other top-level
        fields of Elasticsearch's answer worth passing on (``ingest_took``). Raises SpoolFull /
        SpoolUnavailable (whole request, nothing spooled) and BulkRejected (Elasticsearch refused the
        whole request with a 4xx)."""
        if not ops:
            return []
        if self.spool.depth > 0 or self.es_down:
            return await self._to_spool(ops, params)
        try:
            for index in ensure_indices(ops):
                await self.es.ensure_index(index)
            with self._timed("encode"):
                body = encode_ops(ops)
            data = await self.es.bulk(body, params)
        except EsUnavailable as exc:
            log.warning("Elasticsearch unavailable (%s): spooling %d operation(s)", exc, len(ops))
            self.es_down = True
            return await self._to_spool(ops, params)
        if answer is not None and "ingest_took" in data:
            answer["ingest_took"] = data["ingest_took"]
        items: list[dict[str, Any]] = list(data["items"])
        again = [i for i, it in enumerate(items) if retryable(item_status(it))]
        if again:
            try:
                queued = await self._to_spool([ops[i] for i in again], params)
            except (SpoolFull, SpoolUnavailable) as exc:  # not kept: say so per item (clients retry 429s)
                full = isinstance(exc, SpoolFull)
                for i in again:
                    body = next(iter(items[i].values()))
                    body["status"] = 429 if full else 503
                    body["error"] = {"type": "spool_full" if full else "spool_unavailable",
                                     "reason": str(exc)}
            else:
                for i, q in zip(again, queued, strict=True):
                    items[i] = q
        log_relinks([(op.relink, it) for op, it in zip(ops, items, strict=True)])
        for op, it in zip(ops, items, strict=True):
            if op.relink and "error" in next(iter(it.values())) and not relink_missing(it):
                log.error("the relink of replaced canonical %s failed with status %d", op.id, item_status(it))
        return items


class Replayer:
    """Drains the spool into Elasticsearch, oldest first, with capped exponential backoff; parks poison
    writes after ``max_tries`` (see the module docstring)."""

    def __init__(self, delivery: Delivery, backoff_max_s: float = 5.0,
                 on_replayed: Callable[[int], None] | None = None,
                 on_rejected: Callable[[int], None] | None = None,
                 on_parked: Callable[[int], None] | None = None, max_tries: int = 10) -> None:
        self.d, self.backoff_max_s, self.max_tries = delivery, backoff_max_s, max(1, max_tries)
        self.rejected_path = Path(delivery.spool.dir) / "rejected.ndjson"
        self._on_replayed, self._on_rejected, self._on_parked = on_replayed, on_rejected, on_parked
        self._task: asyncio.Task[None] | None = None
        #: tries so far of the items refused with a retryable status, by (frame position, op in frame)
        self._tries: dict[tuple[Position, int], int] = {}
        self._alone = False  # next try: the oldest frame alone
        #: parked writes since start, and the last one (index, id, reason): shown by /readyz
        self.parked = 0
        self.last_parked: dict[str, Any] | None = None
        #: why the head of the spool is waiting (None while it flows)
        self.waiting: str | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="spool-replayer")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _idle(self, seconds: float) -> None:
        self.d.wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.d.wake.wait(), timeout=seconds)

    async def _run(self) -> None:
        backoff = 0.2
        while True:
            try:
                recs = await self.d.in_spool_thread(self.d.spool.peek_many, REPLAY_RECORDS, REPLAY_BYTES)
                if not recs:
                    self.waiting = None
                    if self.d.es_down:
                        if await self.d.es.ping():
                            self.d.es_down = False
                            continue
                        await asyncio.sleep(backoff)
                        backoff = min(backoff * 2, self.backoff_max_s)
                    else:
                        await self._idle(1.0)
                    continue
                recs = _same_params(recs)
                if self._alone:
                    recs = recs[:1]
                if await self._deliver(recs):
                    size = sum(len(p) for _, p in recs)
                    await self.d.in_spool_thread(self.d.spool.ack, recs[-1][0], size, len(recs))
                    self._tries.clear()
                    self._alone, self.waiting = False, None
                    backoff = 0.2
                else:
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, self.backoff_max_s)
            except asyncio.CancelledError:
                raise
            except Exception:  # never let the replayer die: log (no bodies) and try again later
                log.exception("spool replay failed; retrying")
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.backoff_max_s)

    async def _deliver(self, recs: list[tuple[Position, bytes]]) -> bool:
        """Send spooled frames (with equal parameters) as one bulk request; True when they are done
        with (applied, or rejected for good / parked, and recorded)."""
        heads, bodies = zip(*(_split(p) for _, p in recs), strict=True)
        try:
            for index in sorted({i for h in heads for i in h.get("ensure", [])}):
                await self.d.es.ensure_index(index)
            data = await self.d.es.bulk(b"".join(bodies), heads[0].get("params") or {})
        except EsUnavailable as exc:
            self.d.es_down = True
            self.waiting = f"Elasticsearch unavailable: {exc}"
            return False
        except BulkRejected as exc:
            if len(recs) > 1:  # e.g. 413 for the batch: try the frames one by one before judging any
                self._alone = True
                return False
            self._reject([{"index": None, "id": None, "status": exc.status, "error": exc.body.get("error")}])
            return True
        self.d.es_down = False
        items = data["items"]
        where = [(pos, j) for (pos, _), h in zip(recs, heads, strict=True) for j in range(int(h.get("n", 0)))]
        if len(where) != len(items):
            where = [(recs[0][0], j) for j in range(len(items))]
        again = [i for i, it in enumerate(items) if retryable(item_status(it))]
        parked: set[int] = set()
        if again:
            if len(again) == len(items) and len(recs) > 1:  # an overloaded cluster, or poison at the head
                self._alone = True
                self.waiting = f"{len(again)} item(s) refused with {item_status(items[again[0]])}; retrying"
                return False
            for i in again:
                self._tries[where[i]] = self._tries.get(where[i], 0) + 1
            if any(self._tries[where[i]] < self.max_tries for i in again):
                first = next(iter(items[again[0]].values()))
                self.waiting = (f"{len(again)} item(s) refused with {first.get('status')} "
                                f"({_error_type(first)}), e.g. id {first.get('_id')}; try "
                                f"{self._tries[where[again[0]]]} of {self.max_tries}")
                return False
            parked = set(again)
        flags = _relink_flags(heads)
        if len(flags) != len(items):
            flags = [False] * len(items)
        missing = set(log_relinks(list(zip(flags, items, strict=True))))
        bad, poison = [], []
        for i, it in enumerate(items):
            action, body_ = next(iter(it.items()))
            status = int(body_.get("status", 500))
            row = {"index": body_.get("_index"), "id": body_.get("_id"), "status": status,
                   "error": body_.get("error")}
            if i in parked:
                poison.append({**row, "parked_after_tries": self.max_tries})
            elif i not in missing and status >= 400 and not (action == "create" and status == 409):
                bad.append(row)
        if poison:
            self._park(poison)
        if bad:
            self._reject(bad)
        if self._on_replayed:
            self._on_replayed(len(items) - len(bad) - len(missing) - len(poison))
        return True

    def _park(self, rows: list[dict[str, Any]]) -> None:
        log.error("%d spooled operation(s) refused by Elasticsearch %d times in a row, parked in %s: %s",
                  len(rows), self.max_tries, self.rejected_path,
                  ", ".join(f"{r['index']}/{r['id']}" for r in rows[:10]))
        self._write_rows(rows)
        self.parked += len(rows)
        last = rows[-1]
        self.last_parked = {"index": last["index"], "id": last["id"], "status": last["status"],
                            "reason": _error_text(last["error"])}
        if self._on_parked:
            self._on_parked(len(rows))

    def _write_rows(self, rows: list[dict[str, Any]]) -> None:
        with open(self.rejected_path, "a", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps({"time": round(time.time(), 3), **row}, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _reject(self, rows: list[dict[str, Any]]) -> None:
        log.error("%d spooled operation(s) rejected by Elasticsearch; listed in %s", len(rows),
                  self.rejected_path)
        self._write_rows(rows)
        if self._on_rejected:
            self._on_rejected(len(rows))
