"""Elasticsearch backend of :class:`NearDupIndex`, on the adapter of :mod:`fingerprint_indexer.es`
(documents are written with the fields of :mod:`fingerprint_indexer.es.codec`).

:meth:`ElasticsearchIndex.query` is the plain :class:`NearDupIndex` lookup of one fingerprint against
document fingerprints. :meth:`ElasticsearchIndex.query_verified` is the measured rule of the embedded
pipeline (docs/quality.md, :mod:`fingerprint_indexer.verification`): a candidate shares a block key
with any of the query's fingerprints, and is accepted by
:func:`fingerprint_indexer.verification.check_many` (some fingerprint pair within ``k``, sketches
that agree, facts that do not conflict); its distance is the smallest over all
pairs. Candidates come from ``terms`` filters on the block fields, their fingerprints, sketch, facts and
frames from doc values, and verification runs on the client (scripting is absent on minimal clusters).
The block layout is stored in the mapping's ``_meta`` so an index is always queried with the layout it
was written with.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

import numpy as np
import orjson
from elasticsearch import ApiError, Elasticsearch

from fingerprint_indexer.es.codec import (
    BANDS_FIELD,
    FACTS_FIELD,
    FP_FIELD,
    FPS_FIELD,
    FRAMES_FIELD,
    HEX_FIELD,
    SKETCH_FIELD,
    VERIFY_FIELDS,
    block_fields,
    bulk_failures,
    bulk_lines,
    candidates_json,
    fingerprint_fields,
    hit_evidence,
    searches_json,
)
from fingerprint_indexer.es.connection import connect
from fingerprint_indexer.es.errors import ElasticsearchWriteError, EsError, EsUnavailable, es_errors
from fingerprint_indexer.es.mapping import ES_LAYOUT, create_index, stored_layout
from fingerprint_indexer.es.scan import WHOLE, pit_scan
from fingerprint_indexer.es.servers import close_pit, open_pit
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import MASK64, to_unsigned
from fingerprint_indexer.fingerprint.sketch import MAX_BAND_READ, band_keys
from fingerprint_indexer.index.base import Meta, NearDupIndex
from fingerprint_indexer.records.match import Match
from fingerprint_indexer.verification import Evidence, Verdict, check_many

#: Fields the index writes itself; a caller's meta cannot override them.
RESERVED_FIELDS = frozenset({FP_FIELD, HEX_FIELD, FPS_FIELD, SKETCH_FIELD, FACTS_FIELD, FRAMES_FIELD})
VERIFY_PAGE = 1000  # candidates of an oversized bucket verified at a time
#: Band keys per search of :meth:`ElasticsearchIndex.hot_bands` (one round trip holds them all): well below
#: the ``terms`` query's limit (``index.max_terms_count``, 65,536 by default).
HOT_BANDS_PART = 8192
#: What a verified lookup reads of an ``msearch`` response (less JSON to send and parse than whole hits).
MSEARCH_FILTER = ["responses.hits.hits._id", "responses.hits.hits.fields", "responses.error",
                  "responses.pit_id", "responses.status", "responses.aggregations"]  # fmt: skip
#: Searches one multi-search request carries at most (``msearch_batch``). Each request costs the client a
#: fixed share besides its searches (sending, reading the answer, the client library's steps): the variable
#: it keys on is that share against a search's own, about a fifth of ``es index``'s look-ups at 250 a
#: request; at this size a batch of the Elasticsearch commands (``es_ingest.DECIDE_BATCH``) asks in one.
MSEARCH_BATCH = 1000
#: What a bulk answer is read for: whether any item failed, and each item's id, status and error.
BULK_FILTER = ["errors", "items.*._id", "items.*.status", "items.*.error"]
#: The largest bulk request body sent (as the bulk helper's ``max_chunk_bytes``).
BULK_MAX_BYTES = 100 * 1024 * 1024
#: A bulk action already written: its document's id and its NDJSON lines (newline-terminated).
BulkLines = tuple[str, bytes]
#: Bulk items refused with these statuses are sent again, up to ``WRITE_ATTEMPTS`` times in all: the
#: cluster is overloaded or a shard's primary is moving to another node; any other item error is final.
RETRY_ITEM_STATUSES = frozenset({429, 500, 502, 503, 504})
WRITE_ATTEMPTS = 5
#: A failed multi-search is tried ``READ_ATTEMPTS`` times in all (searches are :data:`WHOLE`).
READ_ATTEMPTS = 4


class ElasticsearchIndex(NearDupIndex):
    """Near-duplicate lookups on an Elasticsearch index (or alias) that holds the news documents.

    ``read_your_writes`` refreshes the index before the first read that follows a write, so a query sees
    every earlier ``add``; turn it off for ingest paths that do not read back immediately. With ``create``
    a missing ``index`` is created by :func:`create_index` (that name, no alias), recording ``copy_marks``.
    """

    def __init__(
        self,
        client: Elasticsearch,
        index: str,
        layout: BlockLayout | None = None,
        *,
        create: bool = True,
        copy_marks: str | None = None,
        read_your_writes: bool = True,
        page_size: int = 10_000,
        msearch_batch: int = MSEARCH_BATCH,
        chunk_size: int = 1000,
        own_client: bool = False,
    ) -> None:
        self.client, self.index = client, index
        self.read_your_writes, self.page_size = read_your_writes, page_size
        self.msearch_batch, self.chunk_size = msearch_batch, chunk_size
        self._own_client, self._dirty = own_client, False
        self._pit: str | None = None
        self._pit_keep_alive = "10m"
        created = False
        if create and not client.indices.exists(index=index):
            created = create_index(client, index, layout or ES_LAYOUT, copy_marks=copy_marks) is not None
        if created:
            self.layout = layout or ES_LAYOUT
        elif client.indices.exists(index=index):  # also one another writer created at the same moment
            stored = stored_layout(client, index)
            if stored is None:
                raise ValueError(
                    f"index {index!r} has no fingerprint mapping; run `fingerprint-indexer es setup "
                    f"--index {index} --update-mapping` first"
                )
            if layout is not None and layout != stored:
                raise ValueError(f"index {index!r} was built with block layout {stored}, not {layout}")
            self.layout = stored
        else:
            raise ValueError(f"index {index!r} does not exist")
        self._fields = block_fields(self.layout)

    @classmethod
    def open(
        cls, url: str | None, index: str, layout: BlockLayout | None = None, **kw: Any
    ) -> ElasticsearchIndex:
        """Connect to ``url`` (default ES_URL) and open ``index``; the client is closed with the index."""
        return cls(connect(url), index, layout, own_client=True, **kw)

    # ------------------------------------------------------------------------------------- writes
    def _action(self, doc_id: str, fingerprint: int, meta: Meta | None) -> dict[str, Any]:
        source = {k: v for k, v in (meta or {}).items() if k not in RESERVED_FIELDS and k not in self._fields}
        source.update(fingerprint_fields(fingerprint, self.layout, with_blocks=not source.get("degenerate")))
        return {"_op_type": "index", "_index": self.index, "_id": doc_id, "_source": source}

    def add(self, doc_id: str, fingerprint: int, meta: Meta | None = None) -> None:
        """Index (or replace) the document; a ``degenerate`` meta flag keeps it out of the block buckets."""
        self.add_many([(doc_id, fingerprint, meta)])

    def add_many(self, items: Iterable[tuple[str, int, Meta | None]]) -> None:
        """Bulk-index; raises :class:`ElasticsearchWriteError` naming every document that failed."""
        actions = (self._action(i, fp, meta) for i, fp, meta in items)
        self.write_actions(actions)

    def write_actions(self, actions: Iterable[dict[str, Any] | BulkLines]) -> int:
        """Send bulk actions (as :func:`elasticsearch.helpers.bulk` takes them; a ``_source`` may be JSON
        text, sent as it is; or an action already written, as its id and its NDJSON lines:
        :func:`~fingerprint_indexer.es.codec.index_lines`); returns how many succeeded. Items refused for
        a passing reason (429, or a 5xx while a node dies and its shards move), or a whole request refused
        with 429, are sent again with backoff, each as the last action given for its id (a repeat replaces
        the document); :class:`ElasticsearchWriteError` names the documents that still failed or were
        refused for good (a bad document).

        The request bodies are joined here and the answers read through ``filter_path`` (each item's
        ``_id``, ``status`` and ``error``): the bulk helper's per-action bookkeeping and the whole
        answer it parses cost a writer about as much as deciding the documents."""
        todo = [a if isinstance(a, tuple) else (str(a["_id"]) if "_id" in a else None, bulk_lines(a))
                for a in actions]  # fmt: skip
        failures: list[tuple[str, str]] = []
        ok = 0
        self._dirty = True
        for attempt in range(WRITE_ATTEMPTS):
            final = attempt == WRITE_ATTEMPTS - 1
            last = {doc_id: (doc_id, lines) for doc_id, lines in todo if doc_id is not None}
            again: dict[str, tuple[str | None, bytes]] = {}
            for chunk in self._chunks(todo):
                items = self._send(chunk)
                if items is None:  # the whole request refused: each action sent again, as a refused item is
                    for doc_id, _ in chunk:
                        if doc_id is not None and not final:
                            again[doc_id] = last[doc_id]
                        else:
                            failures.append((str(doc_id), "bulk request refused: too many requests (429)"))
                    continue
                for (doc_id, _), item in zip(chunk, items, strict=True):
                    op = next(iter(item.values()))
                    status = op.get("status", 500)
                    if status < 300:
                        ok += 1
                    elif status in RETRY_ITEM_STATUSES and doc_id in last and not final:
                        again[doc_id] = last[doc_id]
                    else:
                        failures.extend(bulk_failures([item]))
            if not again:
                break
            todo = list(again.values())
            time.sleep(min(2.0**attempt, 30.0))
        if failures:
            raise ElasticsearchWriteError(failures)
        return ok

    def _chunks(self, todo: list[tuple[str | None, bytes]]) -> Iterator[list[tuple[str | None, bytes]]]:
        """The actions in requests of at most ``chunk_size`` actions and :data:`BULK_MAX_BYTES` bytes."""
        chunk: list[tuple[str | None, bytes]] = []
        size = 0
        for item in todo:
            if chunk and (len(chunk) >= self.chunk_size or size + len(item[1]) > BULK_MAX_BYTES):
                yield chunk
                chunk, size = [], 0
            chunk.append(item)
            size += len(item[1])
        if chunk:
            yield chunk

    def _send(self, chunk: list[tuple[str | None, bytes]]) -> list[dict[str, Any]] | None:
        """The items of one bulk request, in the order sent; None when Elasticsearch refused the whole
        request with 429 (too many requests)."""
        body = b"".join([lines for _, lines in chunk])  # NDJSON text, which the serializer passes on as it is
        try:
            resp = self.client.bulk(operations=cast(Any, body), filter_path=BULK_FILTER)
        except ApiError as exc:
            if exc.meta.status == 429:
                return None
            raise
        items: list[dict[str, Any]] = resp.get("items") or []
        if len(items) != len(chunk):
            raise EsUnavailable(f"bulk on {self.index!r}: {len(items)} items answered for {len(chunk)} "
                                "actions")
        return items

    def remove(self, doc_id: str) -> bool:
        self._dirty = True
        gone = self.client.options(ignore_status=404).delete(index=self.index, id=doc_id)
        return bool(gone.get("result") == "deleted")

    def refresh(self) -> None:
        self.client.indices.refresh(index=self.index)
        self._dirty = False

    def _before_read(self) -> None:
        if self._dirty and self.read_your_writes:
            self.refresh()

    # -------------------------------------------------------------------------------------- reads
    def get(self, doc_id: str) -> int | None:
        doc = self.client.options(ignore_status=404).get(index=self.index, id=doc_id,
                                                         source_includes=[FP_FIELD])  # fmt: skip
        if doc.meta.status == 404:  # no such document, or no such index
            return None
        value = (doc.get("_source") or {}).get(FP_FIELD)
        return None if value is None else to_unsigned(int(value))

    def __len__(self) -> int:
        self._before_read()
        return int(self.client.count(index=self.index, query={"exists": {"field": FP_FIELD}})["count"])

    def candidate_query(self, fingerprint: int) -> dict[str, Any]:
        """Documents sharing at least one block key with ``fingerprint`` (filter context: no scoring)."""
        keys = self.layout.keys(fingerprint)
        should = [{"term": {f: key}} for f, key in zip(self._fields, keys, strict=True)]
        return {"bool": {"filter": [{"bool": {"should": should, "minimum_should_match": 1}}]}}

    def _search_body(self, fingerprint: int) -> dict[str, Any]:
        return {
            "query": self.candidate_query(fingerprint),
            "_source": False,
            "docvalue_fields": [{"field": FP_FIELD}],
            "size": self.page_size,
            "track_total_hits": False,
        }

    def _scan_candidates(
        self, query: dict[str, Any], fields: list[dict[str, str]] | None = None, pinned: bool = False
    ) -> Iterator[dict[str, Any]]:
        """Every candidate of an oversized bucket (from the pinned snapshot when ``pinned``)."""
        pit = self._pit if pinned else None
        keep_alive = self._pit_keep_alive if pit else "1m"
        return pit_scan(self.client, self.index, query, self.page_size, keep_alive, pit_id=pit, source=False,
                        docvalue_fields=fields or [{"field": FP_FIELD}])  # fmt: skip

    def _verify(self, fingerprint: int, hits: Iterable[Mapping[str, Any]], k: int) -> list[Match]:
        """Exact Hamming distance of each candidate; keep those within ``k``, by (distance, id)."""
        ids: list[str] = []
        values: list[int] = []
        for h in hits:
            fp = (h.get("fields") or {}).get(FP_FIELD)
            if fp:
                ids.append(str(h["_id"]))
                values.append(int(fp[0]))
        if not ids:
            return []
        fps = np.array(values, dtype=np.int64).view(np.uint64)
        dist = np.bitwise_count(fps ^ np.uint64(fingerprint & MASK64))
        keep = np.flatnonzero(dist <= k)
        out = [Match(ids[i], int(dist[i])) for i in keep.tolist()]
        out.sort(key=lambda m: (m.distance, m.doc_id))
        return out

    def _finish(self, fingerprint: int, hits: list[dict[str, Any]], k: int) -> list[Match]:
        if len(hits) >= self.page_size:  # the first page may not hold the whole bucket
            return self._verify(fingerprint, self._scan_candidates(self.candidate_query(fingerprint)), k)
        return self._verify(fingerprint, hits, k)

    def query(self, fingerprint: int, k: int = 3) -> list[Match]:
        self.layout.check_k(k)
        self._before_read()
        resp = self.client.search(index=self.index, **self._search_body(fingerprint))
        return self._finish(fingerprint, resp["hits"]["hits"], k)

    def query_many(self, fingerprints: Sequence[int], k: int = 3) -> list[list[Match]]:
        """One ``msearch`` round trip per ``msearch_batch`` fingerprints."""
        self.layout.check_k(k)
        self._before_read()
        out: list[list[Match]] = []
        fps = [int(f) for f in fingerprints]
        for start in range(0, len(fps), self.msearch_batch):
            chunk = fps[start : start + self.msearch_batch]
            searches: list[dict[str, Any]] = []
            for fp in chunk:
                searches += [{"index": self.index}, self._search_body(fp)]
            responses = self.client.msearch(searches=searches)["responses"]
            for fp, resp in zip(chunk, responses, strict=True):
                if "error" in resp:
                    raise EsUnavailable(f"msearch on {self.index!r} failed: {resp['error']}")
                out.append(self._finish(fp, resp["hits"]["hits"], k))
        return out

    # ---------------------------------------------------------------------------- verified lookups
    def hot_bands(self, bands: Iterable[str]) -> set[str]:
        """The band keys among ``bands`` that more than :data:`MAX_BAND_READ` documents hold: a stock
        phrase, not a copy, passed over as the embedded store passes it over (one aggregation per
        :data:`HOT_BANDS_PART` keys, all in one round trip, on the pinned snapshot while there is one).

        The aggregation counts the values of the matching documents (``execution_hint: map``). By default
        a ``terms`` aggregation first maps every distinct value of the field in the shard to a global
        ordinal, and rebuilds that map after each refresh: for the band field, nearly one value per band
        of every document, a cost that grows with the index while the answer only needs a few keys."""
        keys = list(set(bands))  # in no order: the answer is a set, and a batch has thousands of keys
        if not keys:
            return set()
        parts = [keys[i : i + HOT_BANDS_PART] for i in range(0, len(keys), HOT_BANDS_PART)]
        bodies = [{
            "size": 0, "track_total_hits": False, "query": {"terms": {BANDS_FIELD: part}},
            "aggs": {"hot": {"terms": {"field": BANDS_FIELD, "include": part, "size": len(part),
                                       "min_doc_count": MAX_BAND_READ + 1, "execution_hint": "map"}}},
        } for part in parts]  # fmt: skip
        return {b["key"] for resp in self._msearch(bodies)
                for b in ((resp.get("aggregations") or {}).get("hot") or {}).get("buckets", [])}  # fmt: skip

    def candidates_query(self, fingerprints: Sequence[int], sketch: bytes = b"", hot: Collection[str] = ()
                         ) -> dict[str, Any]:  # fmt: skip
        """Documents sharing a block key with any of ``fingerprints`` (``terms`` per block field, the keys
        sorted), or a band key with ``sketch`` that is not ``hot`` (:meth:`hot_bands`)."""
        return cast(dict[str, Any], orjson.loads(self.candidates_json(fingerprints, sketch, hot)))

    def candidates_json(self, fingerprints: Sequence[int], sketch: bytes = b"", hot: Collection[str] = ()
                        ) -> bytes:  # fmt: skip
        """:meth:`candidates_query` as JSON text, the form a verified look-up sends
        (:func:`fingerprint_indexer.es.codec.candidates_json`: no Python object per key)."""
        return candidates_json(self.layout, fingerprints, [b for b in band_keys(sketch) if b not in hot])

    def _verified_members(self) -> bytes:
        """The members of a verified look-up's search after its query, the comma before them included
        and no closing brace: the doc values that verify the candidates, one page of them (JSON text)."""
        members = {"_source": False, "docvalue_fields": VERIFY_FIELDS, "size": self.page_size,
                   "track_total_hits": False}  # fmt: skip
        return b"," + orjson.dumps(members)[1:-1]

    @staticmethod
    def judge_hits(
        ev: Evidence, hits: Iterable[Mapping[str, Any]], k: int, exclude: str | None = None,
        rejected: bool = True, page: int = VERIFY_PAGE,
    ) -> Iterator[tuple[str, Verdict]]:
        """Each candidate with the verification rule's verdict on it
        (:func:`fingerprint_indexer.verification.check_many`: distances and sketches as matrices, facts for
        the survivors), in the order of ``hits``; the rejected ones only with ``rejected``. A candidate
        farther than ``k`` that shares no sketch band is left out: it only shares an index bucket, it is no
        look-alike (the embedded store never finds one). Hits are judged ``page`` at a time, so a scan of an
        oversized bucket holds one page of evidence, not the bucket."""
        it = iter(hits)
        while chunk := list(itertools.islice(it, page)):
            ids: list[str] = []
            cands: list[Evidence] = []
            for h in chunk:
                fields = h.get("fields") or {}
                doc_id = str(h["_id"])
                if doc_id == exclude or not (fields.get(FPS_FIELD) or fields.get(FP_FIELD)):
                    continue
                ids.append(doc_id)
                cands.append(hit_evidence(fields))
            for doc_id, v in zip(ids, check_many(ev, cands, k), strict=True):
                if v.accepted or (rejected and v.step != "distance"):
                    yield doc_id, v

    @staticmethod
    def verify_hits(
        ev: Evidence, hits: Iterable[Mapping[str, Any]], k: int, exclude: str | None = None,
        page: int = VERIFY_PAGE,
    ) -> list[Match]:
        """The candidates among ``hits`` the rule accepts (:meth:`judge_hits`), nearest first."""
        found = ElasticsearchIndex.judge_hits(ev, hits, k, exclude, rejected=False, page=page)
        return sorted((Match(i, v.distance) for i, v in found), key=lambda m: (m.distance, m.doc_id))

    def _finish_judged(
        self, ev: Evidence, hits: list[dict[str, Any]], k: int, exclude: str | None, hot: Collection[str],
        rejected: bool,
    ) -> list[tuple[str, Verdict]]:  # fmt: skip
        if not hits:  # most look-ups
            return []
        if len(hits) >= self.page_size:  # the first page may not hold every candidate
            query = self.candidates_query(ev.fingerprints, sketch=bytes(ev.sketch), hot=hot)
            found = self.judge_hits(ev, self._scan_candidates(query, VERIFY_FIELDS, self.pinned), k, exclude,
                                    rejected)  # fmt: skip
        else:
            found = self.judge_hits(ev, hits, k, exclude, rejected)
        return sorted(found, key=lambda x: (x[1].distance, x[0]))

    def query_verified(self, ev: Evidence, k: int = 3, exclude: str | None = None) -> list[Match]:
        """Verified near-duplicates of a document with this evidence (fingerprints document first, then
        chunks): the candidates sharing a block key that :func:`fingerprint_indexer.verification.check`
        accepts. Distance = smallest over all fingerprint pairs."""
        return self.query_verified_many([ev], k, [exclude])[0]

    def query_verified_many(
        self, queries: Sequence[Evidence], k: int = 3, exclude: Sequence[str | None] | None = None
    ) -> list[list[Match]]:
        """:meth:`query_verified` of each query: the accepted candidates of :meth:`query_judged_many`."""
        found = self.query_judged_many(queries, k, exclude, rejected=False)
        return [[Match(i, v.distance) for i, v in judged] for judged in found]

    def query_judged(self, ev: Evidence, k: int = 3, exclude: str | None = None) -> list[tuple[str, Verdict]]:
        """The candidates of :meth:`query_verified` with the rule's verdict on each, the rejected ones too
        (what ``es similar --explain`` lists), by (distance, id)."""
        return self.query_judged_many([ev], k, [exclude])[0]

    def query_judged_many(
        self, queries: Sequence[Evidence], k: int = 3, exclude: Sequence[str | None] | None = None,
        rejected: bool = True,
    ) -> list[list[tuple[str, Verdict]]]:
        """:meth:`query_judged` of each query (only the accepted candidates unless ``rejected``), one
        ``msearch`` per ``msearch_batch``; against the pinned snapshot while there is one (:meth:`pin`)."""
        self.layout.check_k(k)
        self._before_read()
        excl = list(exclude) if exclude is not None else [None] * len(queries)
        if not all(len(ev.fingerprints) for ev in queries):
            raise ValueError("a verified lookup needs at least one fingerprint")
        out: list[list[tuple[str, Verdict]]] = []
        # the stock phrases among every query's bands, in one round trip before the searches
        hot = self.hot_bands(itertools.chain.from_iterable(ev.band_keys for ev in queries))
        members = self._verified_members()
        for start in range(0, len(queries), self.msearch_batch):
            chunk = queries[start : start + self.msearch_batch]

            def write(header: bytes, end: bytes, chunk: Sequence[Evidence] = chunk) -> bytes:
                return searches_json(self.layout, chunk, hot, header, b'{"query":', members + end)

            responses = self._msearch_written(len(chunk), write)
            for n, (ev, resp) in enumerate(zip(chunk, responses, strict=True)):
                hits = (resp.get("hits") or {}).get("hits") or []  # filter_path drops empty parts
                out.append(self._finish_judged(ev, hits, k, excl[start + n], hot, rejected))
        return out

    def _msearch(self, bodies: Sequence[dict[str, Any] | bytes]) -> list[dict[str, Any]]:
        """Responses of one ``msearch`` of these search bodies (:meth:`_msearch_written`)."""
        texts = [body if isinstance(body, bytes) else orjson.dumps(body) for body in bodies]

        def write(header: bytes, end: bytes) -> bytes:
            parts: list[bytes | memoryview] = []
            for text in texts:  # each body's closing brace replaced by ``end``
                parts += (header, memoryview(text)[:-1], end, b"\n")
            return b"".join(parts)

        return self._msearch_written(len(texts), write)

    def _msearch_written(self, count: int, write: Callable[[bytes, bytes], bytes]) -> list[dict[str, Any]]:
        """Responses of one ``msearch`` of ``count`` searches (on the pinned snapshot when there is one),
        whose NDJSON text ``write`` gives from each search's header line and the end of each body (its
        closing brace, after the snapshot as its last member when pinned). A search that misses a shard
        is an error, never a partial answer (a node that died held part of the snapshot, or a shard has
        no copy yet): it is sent again, after a fresh snapshot is taken, waiting a little longer each
        time, up to ``READ_ATTEMPTS`` times."""
        errors: list[Any] = []
        for attempt in range(READ_ATTEMPTS):
            if attempt > 1:
                time.sleep(2.0 ** (attempt - 2))
            pit = self._pit
            if attempt and pit is not None:
                try:
                    with es_errors(""):
                        self.pin(self._pit_keep_alive)  # the snapshot expired, or lost a node
                except EsError as exc:
                    errors = [str(exc)]
                    continue
                pit = self._pit
            # the whole NDJSON body written once: the client's serializer passes bytes on as they are
            if pit is None:
                header, end = orjson.dumps({"index": self.index, **WHOLE}) + b"\n", b"}"
            else:
                snapshot = {"id": pit, "keep_alive": self._pit_keep_alive}
                header, end = orjson.dumps(WHOLE) + b"\n", b',"pit":' + orjson.dumps(snapshot) + b"}"
            resp = self.client.msearch(searches=cast(Any, write(header, end)), filter_path=MSEARCH_FILTER)
            responses: list[dict[str, Any]] = resp.get("responses") or []
            errors = [r["error"] for r in responses if "error" in r]
            if len(responses) != count:
                raise EsUnavailable(f"msearch on {self.index!r}: {len(responses)} responses to "
                                               f"{count} searches")  # fmt: skip
            if not errors:
                if pit is not None:
                    self._pit = next((r["pit_id"] for r in responses if r.get("pit_id")), pit)
                return responses
        raise EsUnavailable(f"msearch on {self.index!r} failed {READ_ATTEMPTS} times: {errors[0]}")

    # ---------------------------------------------------------------------------------- snapshots
    @property
    def pinned(self) -> bool:
        """Whether verified look-ups search a point-in-time snapshot (see :meth:`pin`)."""
        return self._pit is not None

    def pin(self, keep_alive: str = "10m") -> None:
        """Make verified look-ups search a point-in-time snapshot of the index as it is now, until
        :meth:`unpin` (or the next ``pin``). For a writer that keeps what it wrote since in memory (the
        ``index`` command's pending set), so its own unrefreshed writes are not fetched again and again."""
        self.unpin()
        self._pit = open_pit(self.client, self.index, keep_alive)
        self._pit_keep_alive = keep_alive

    def unpin(self) -> None:
        """Search the live index again (closing the snapshot; an already expired one is fine)."""
        pit, self._pit = self._pit, None
        if pit is not None:
            with contextlib.suppress(EsError), es_errors("closing a snapshot"):
                close_pit(self.client, pit)

    def close(self) -> None:
        self.unpin()
        if self._own_client:
            self.client.close()
            self._own_client = False
