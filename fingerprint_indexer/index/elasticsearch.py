"""Elasticsearch backend of :class:`NearDupIndex`.

Each document carries its fingerprint as a ``long`` (two's complement of the unsigned value), its hex form
and one ``keyword`` field per block (``block_0`` = most significant bits).  A query asks for documents that
share at least one block key (a ``bool`` of ``term`` filters, ``minimum_should_match: 1``), fetches only the
fingerprint doc values, and verifies the Hamming distance exactly on the client (scripting is absent on
minimal clusters).  The block layout is stored in the mapping's ``_meta`` so an index is always queried with
the layout it was written with.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from importlib import resources
from typing import Any

import numpy as np
from elasticsearch import ApiError, Elasticsearch, NotFoundError, TransportError, helpers

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import MASK64, to_hex, to_signed, to_unsigned
from fingerprint_indexer.index.base import Match, Meta, NearDupIndex

MAPPING_FILE = "news.json"
META_KEY = "fingerprint_indexer"
FP_FIELD = "fingerprint"
#: Fields the index writes itself; a caller's meta cannot override them.
RESERVED_FIELDS = frozenset({FP_FIELD, "fingerprint_hex"})


class ElasticsearchUnavailable(RuntimeError):
    """The cluster at a URL could not be reached or refused the request."""


class ElasticsearchWriteError(RuntimeError):
    """Some documents of a bulk write failed; ``failures`` lists (doc id, reason) for each."""

    def __init__(self, failures: list[tuple[str, str]]) -> None:
        self.failures = failures
        shown = "; ".join(f"{i}: {r}" for i, r in failures[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        super().__init__(f"{len(failures)} document(s) failed to index: {shown}{more}")


# ------------------------------------------------------------------------------------ connection
def connect(
    url: str | None = None,
    *,
    api_key: str | None = None,
    username: str | None = None,
    password: str | None = None,
    ca_certs: str | None = None,
    request_timeout: float = 60.0,
    check: bool = True,
) -> Elasticsearch:
    """A client for ``url`` (default ``ES_URL``); credentials default to ES_API_KEY, ES_USERNAME/ES_PASSWORD
    and ES_CA_CERTS.  With ``check`` the cluster is contacted once so that a wrong URL fails here, with one
    error naming it, rather than deep inside a command."""
    url = url or os.environ.get("ES_URL")
    if not url:
        raise ElasticsearchUnavailable("no Elasticsearch URL given (pass --es URL or set ES_URL)")
    kwargs: dict[str, Any] = {"request_timeout": request_timeout, "retry_on_timeout": True, "max_retries": 3}
    api_key = api_key or os.environ.get("ES_API_KEY")
    username = username or os.environ.get("ES_USERNAME")
    if api_key:
        kwargs["api_key"] = api_key
    elif username:
        kwargs["basic_auth"] = (username, password or os.environ.get("ES_PASSWORD", ""))
    ca_certs = ca_certs or os.environ.get("ES_CA_CERTS")
    if ca_certs:
        kwargs["ca_certs"] = ca_certs
    client = Elasticsearch(url, **kwargs)
    if check:
        try:
            client.cluster.health(timeout="10s")
        except (TransportError, ApiError) as exc:
            client.close()
            raise ElasticsearchUnavailable(f"cannot reach Elasticsearch at {url}: {exc}") from exc
    return client


# ----------------------------------------------------------------------------------------- mapping
def block_fields(layout: BlockLayout) -> list[str]:
    return [f"block_{i}" for i in range(layout.n_blocks)]


def load_index_body(layout: BlockLayout | None = None, name: str = MAPPING_FILE) -> dict[str, Any]:
    """Settings and mappings shipped in the package, with block fields and ``_meta`` for ``layout``."""
    text = (resources.files("fingerprint_indexer") / "mappings" / name).read_text(encoding="utf-8")
    body: dict[str, Any] = json.loads(text)
    if layout is not None:
        props = body["mappings"]["properties"]
        for field in [f for f in props if f.startswith("block_")]:
            del props[field]
        props.update({f: {"type": "keyword"} for f in block_fields(layout)})
        body["mappings"]["_meta"][META_KEY]["block_layout"] = layout.to_dict()
    return body


def stored_layout(client: Elasticsearch, index: str) -> BlockLayout | None:
    """The block layout recorded in the mapping of ``index`` (or of every index behind the alias)."""
    layouts = set()
    for mapping in client.indices.get_mapping(index=index).body.values():
        meta = (mapping.get("mappings") or {}).get("_meta") or {}
        raw = (meta.get(META_KEY) or {}).get("block_layout")
        layouts.add(BlockLayout.from_dict(raw) if raw else None)
    if len(layouts) > 1:
        names = sorted(map(str, layouts))
        raise ValueError(f"indices behind {index!r} disagree on the block layout: {names}")
    return layouts.pop() if layouts else None


def fingerprint_fields(fingerprint: int, layout: BlockLayout, with_blocks: bool = True) -> dict[str, Any]:
    """The fields that store one fingerprint (block keys omitted for degenerate documents)."""
    fp = fingerprint & MASK64
    out: dict[str, Any] = {FP_FIELD: to_signed(fp), "fingerprint_hex": to_hex(fp)}
    if with_blocks:
        out.update(zip(block_fields(layout), layout.keys(fp), strict=True))
    return out


def bulk_failures(errors: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(doc id, reason) of each failed item of a bulk response."""
    out = []
    for item in errors:
        op = next(iter(item.values()))
        err = op.get("error")
        reason = f"{err.get('type')}: {err.get('reason')}" if isinstance(err, dict) else str(err or op)
        out.append((str(op.get("_id")), reason))
    return out


# ------------------------------------------------------------------------------------------- index
class ElasticsearchIndex(NearDupIndex):
    """Near-duplicate lookups on an Elasticsearch index (or alias) that holds the news documents.

    ``read_your_writes`` refreshes the index before the first read that follows a write, so a query sees
    every earlier ``add``; turn it off for ingest paths that do not read back immediately.
    """

    def __init__(
        self,
        client: Elasticsearch,
        index: str,
        layout: BlockLayout | None = None,
        *,
        create: bool = True,
        read_your_writes: bool = True,
        page_size: int = 10_000,
        msearch_batch: int = 250,
        chunk_size: int = 1000,
        own_client: bool = False,
    ) -> None:
        self.client, self.index = client, index
        self.read_your_writes, self.page_size = read_your_writes, page_size
        self.msearch_batch, self.chunk_size = msearch_batch, chunk_size
        self._own_client, self._dirty = own_client, False
        if client.indices.exists(index=index):
            stored = stored_layout(client, index)
            if stored is None:
                raise ValueError(
                    f"index {index!r} has no fingerprint mapping; run `fingerprint-indexer es setup "
                    f"--index {index} --update-mapping` first"
                )
            if layout is not None and layout != stored:
                raise ValueError(f"index {index!r} was built with block layout {stored}, not {layout}")
            self.layout = stored
        elif create:
            self.layout = layout or BlockLayout()
            client.indices.create(index=index, **load_index_body(self.layout))
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

    def write_actions(self, actions: Iterable[dict[str, Any]]) -> int:
        """Send bulk actions (retrying 429s with backoff); returns how many succeeded."""
        failures: list[tuple[str, str]] = []
        ok = 0
        self._dirty = True
        for success, item in helpers.streaming_bulk(
            self.client, actions, chunk_size=self.chunk_size, raise_on_error=False, max_retries=5,
            initial_backoff=1, max_backoff=30,
        ):  # fmt: skip
            if success:
                ok += 1
            else:
                failures.extend(bulk_failures([item]))
        if failures:
            raise ElasticsearchWriteError(failures)
        return ok

    def remove(self, doc_id: str) -> bool:
        self._dirty = True
        try:
            return bool(self.client.delete(index=self.index, id=doc_id)["result"] == "deleted")
        except NotFoundError:
            return False

    def refresh(self) -> None:
        self.client.indices.refresh(index=self.index)
        self._dirty = False

    def _before_read(self) -> None:
        if self._dirty and self.read_your_writes:
            self.refresh()

    # -------------------------------------------------------------------------------------- reads
    def get(self, doc_id: str) -> int | None:
        try:
            doc = self.client.get(index=self.index, id=doc_id, source_includes=[FP_FIELD])
        except NotFoundError:
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

    def _scan_candidates(self, fingerprint: int) -> Iterator[dict[str, Any]]:
        """Every candidate of an oversized bucket: point-in-time + search_after on ``_shard_doc``."""
        pit = self.client.open_point_in_time(index=self.index, keep_alive="1m")["id"]
        try:
            after: list[Any] | None = None
            while True:
                kw: dict[str, Any] = {"search_after": after} if after is not None else {}
                resp = self.client.search(
                    query=self.candidate_query(fingerprint), source=False,
                    docvalue_fields=[{"field": FP_FIELD}], size=self.page_size,
                    pit={"id": pit, "keep_alive": "1m"}, sort=["_shard_doc"],
                    track_total_hits=False, **kw,
                )  # fmt: skip
                hits = resp["hits"]["hits"]
                yield from hits
                if len(hits) < self.page_size:
                    return
                pit, after = resp.get("pit_id", pit), hits[-1]["sort"]
        finally:
            self.client.close_point_in_time(id=pit)

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
            return self._verify(fingerprint, self._scan_candidates(fingerprint), k)
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
                    raise ElasticsearchUnavailable(f"msearch on {self.index!r} failed: {resp['error']}")
                out.append(self._finish(fp, resp["hits"]["hits"], k))
        return out

    def close(self) -> None:
        if self._own_client:
            self.client.close()
            self._own_client = False
