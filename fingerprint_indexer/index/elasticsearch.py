"""Elasticsearch backend of :class:`NearDupIndex`.

Each document carries its document fingerprint as a ``long`` (two's complement of the unsigned value) and
its hex form, all its fingerprints (document first, then content-defined chunks) in the multi-valued long
``fingerprints``, its MinHash sketch as ``binary`` with doc values, and one multi-valued ``keyword`` field
per key of the block layout (``block_<n>``, :func:`block_fields`) holding that key of every fingerprint:
a new index has the permuted layout (:data:`ES_LAYOUT`: 20 keys of three blocks), an index of before
the four 16-bit blocks.

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

import base64
import contextlib
import itertools
import json
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from importlib import resources
from typing import Any

import numpy as np
from elasticsearch import ApiError, Elasticsearch, NotFoundError, TransportError, helpers

from fingerprint_indexer.env import EsSettingsError, es_settings
from fingerprint_indexer.errors import FingerprintIndexerError
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintResult
from fingerprint_indexer.fingerprint.hamming import MASK64, to_hex, to_signed, to_unsigned
from fingerprint_indexer.fingerprint.sketch import MAX_BAND_READ, band_keys
from fingerprint_indexer.fingerprint.winnow import Marks
from fingerprint_indexer.index.base import Meta, NearDupIndex
from fingerprint_indexer.records.match import Match
from fingerprint_indexer.servers import (
    UnsupportedServer,
    binary_doc_value,
    client_for,
    close_pit,
    open_pit,
    server_of,
)
from fingerprint_indexer.verification import DEFAULT_POLICY, Evidence, check_many

MAPPING_FILE = "news.json"
META_KEY = "fingerprint_indexer"
FP_FIELD = "fingerprint"
FPS_FIELD = "fingerprints"
SKETCH_FIELD = "sketch"
FACTS_FIELD = "facts"
FRAMES_FIELD = "frames"
COPY_FIELD = "copy_marks"  # winnowed block hashes (hex): partial-copy search
BANDS_FIELD = "bands"
#: Fields the index writes itself; a caller's meta cannot override them.
RESERVED_FIELDS = frozenset({FP_FIELD, "fingerprint_hex", FPS_FIELD, SKETCH_FIELD, FACTS_FIELD, FRAMES_FIELD})
#: Doc values a verified lookup needs of each candidate.
VERIFY_PAGE = 1000  # candidates of an oversized bucket verified at a time
VERIFY_FIELDS = [{"field": FP_FIELD}, {"field": FPS_FIELD}, {"field": SKETCH_FIELD}, {"field": FACTS_FIELD},
                 {"field": FRAMES_FIELD}]  # fmt: skip
#: What a verified lookup reads of an ``msearch`` response (less JSON to send and parse than whole hits).
MSEARCH_FILTER = ["responses.hits.hits._id", "responses.hits.hits.fields", "responses.error",
                  "responses.pit_id", "responses.status", "responses.aggregations"]  # fmt: skip


class ElasticsearchUnavailable(FingerprintIndexerError, RuntimeError):
    """The cluster at a URL could not be reached or refused the request."""


class ElasticsearchWriteError(FingerprintIndexerError, RuntimeError):
    """Some documents of a bulk write failed; ``failures`` lists (doc id, reason) for each."""

    def __init__(self, failures: list[tuple[str, str]]) -> None:
        self.failures = failures
        shown = "; ".join(f"{i}: {r}" for i, r in failures[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        super().__init__(f"{len(failures)} document(s) failed to index: {shown}{more}")


# ------------------------------------------------------------------------------------ connection
#: How a client rides out a node that dies, restarts or is overloaded: a request that fails to connect or
#: times out, or is answered 429/502/503/504, is sent again (to the next node when ``ES_URL`` lists
#: several), waiting a little longer each time after a failed connection. The writes are safe to repeat:
#: bulk actions name their document ids, so a repeated write replaces the document rather than adding one.
RETRIES: dict[str, Any] = {"max_retries": 5, "retry_on_timeout": True,
                           "retry_on_status": (429, 502, 503, 504),
                           "retry_backoff_base": 0.5, "retry_backoff_cap": 8.0}  # fmt: skip
#: Bulk items refused with these statuses are sent again, up to ``WRITE_ATTEMPTS`` times in all: the
#: cluster is overloaded or a shard's primary is moving to another node; any other item error is final.
RETRY_ITEM_STATUSES = frozenset({429, 500, 502, 503, 504})
WRITE_ATTEMPTS = 5
#: Searches whose answer must be whole: a shard that cannot answer (its node died, taking part of a
#: point-in-time snapshot with it) fails the search rather than leaving its documents out, which would
#: turn a duplicate into ``new``. A failed multi-search is tried ``READ_ATTEMPTS`` times in all.
WHOLE: dict[str, Any] = {"allow_partial_search_results": False}
READ_ATTEMPTS = 4


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
    """A client for ``url`` (default ``ES_URL``; the URLs of several nodes of one cluster, comma-separated,
    are used together, see :data:`RETRIES`), speaking the wire format of the server found there
    (Elasticsearch 8/9 or OpenSearch 2/3, see :mod:`fingerprint_indexer.servers`); the URL, credentials
    and TLS settings are read and validated by :func:`fingerprint_indexer.env.es_settings`, as for the
    service (arguments given here take precedence).  With ``check`` the cluster is contacted
    once so that a wrong URL fails here, with one error naming it, rather than deep inside a command."""
    try:
        settings = es_settings(url)
    except EsSettingsError as exc:
        raise ElasticsearchUnavailable(str(exc)) from exc
    url = settings.url
    kwargs: dict[str, Any] = {"request_timeout": request_timeout, **RETRIES}
    api_key = api_key or settings.api_key
    username = username or settings.username
    if api_key:
        kwargs["api_key"] = api_key
    elif username:
        kwargs["basic_auth"] = (username, password or settings.password or "")
    ca_certs = ca_certs or settings.ca_certs
    if ca_certs:
        kwargs["ca_certs"] = ca_certs
    if not settings.verify_certs:
        kwargs.update(verify_certs=False, ssl_show_warn=False)
    try:
        client, _server = client_for(url, check=check, **kwargs)  # the server's kind picks the wire format
    except UnsupportedServer as exc:
        raise ElasticsearchUnavailable(f"{url}: {exc}") from exc
    except TransportError as exc:
        raise ElasticsearchUnavailable(f"cannot reach Elasticsearch at {url}: {exc}") from exc
    if check:
        try:
            client.cluster.health(timeout="10s")
        except (TransportError, ApiError) as exc:
            client.close()
            raise ElasticsearchUnavailable(f"cannot reach Elasticsearch at {url}: {exc}") from exc
    return client


# ----------------------------------------------------------------------------------------- mapping
#: The layout of a new index: permuted keys of about 32 bits (:meth:`BlockLayout.permuted`), so that a
#: key matches almost no random document however large the index grows. An existing index keeps the
#: layout recorded in its mapping (``_meta``), whatever a writer's default.
ES_LAYOUT = BlockLayout.permuted(3)

#: Where a mapping's ``_meta`` records the layout. ``key_layout`` since keys of several blocks: a writer
#: of before, which reads only ``block_layout``, finds no layout in a new index and refuses it instead
#: of writing keys of another layout; ``block_layout`` is still read from the indexes it created.
LAYOUT_META = "key_layout"
OLD_LAYOUT_META = "block_layout"


def block_fields(layout: BlockLayout) -> list[str]:
    """The keyword field of each key of ``layout`` (``block_<n>``, in key order)."""
    return [f"block_{i}" for i in range(layout.n_keys)]


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


#: Per key of the layout, one stored key per fingerprint (see :func:`block_keys`).
BlockKeys = list[list[str]]


def block_keys(layout: BlockLayout, fingerprints: Sequence[int]) -> BlockKeys:
    """Per key of the layout, the stored key of each fingerprint (:meth:`BlockLayout.keys_many`)."""
    fps = np.fromiter((f & MASK64 for f in fingerprints), dtype=np.uint64, count=len(fingerprints))
    return layout.keys_many(fps)


def fingerprint_fields(
    fingerprint: int,
    layout: BlockLayout,
    with_blocks: bool = True,
    chunks: Sequence[int] = (),
    sketch: bytes = b"",
    facts: Sequence[str] = (),
    frames: Sequence[int] = (),
) -> dict[str, Any]:
    """The fields that store a document's fingerprints: the document fingerprint, every fingerprint
    (document first, then ``chunks``), the block keys of all of them (omitted for degenerate documents),
    the base64 ``sketch`` when there is one with its band keys (not for degenerate documents either), and the
    facts and frames verification compares."""
    fp = fingerprint & MASK64
    fps = [fp, *(c & MASK64 for c in chunks)]
    out: dict[str, Any] = {FP_FIELD: to_signed(fp), "fingerprint_hex": to_hex(fp),
                           FPS_FIELD: [to_signed(f) for f in fps]}  # fmt: skip
    if with_blocks:
        per_field = [list(dict.fromkeys(col)) for col in block_keys(layout, fps)]  # first-seen order
        out.update((name, keys[0] if len(keys) == 1 else keys)
                   for name, keys in zip(block_fields(layout), per_field, strict=True))  # fmt: skip
    if sketch:
        out[SKETCH_FIELD] = base64.b64encode(sketch).decode("ascii")
        if with_blocks:
            out[BANDS_FIELD] = band_keys(sketch)
    out[FACTS_FIELD] = list(facts)
    out[FRAMES_FIELD] = [to_signed(f) for f in frames]
    return out


def result_fields(res: FingerprintResult, layout: BlockLayout) -> dict[str, Any]:
    """:func:`fingerprint_fields` of a fingerprinted document (chunks, sketch, facts and frames included),
    and its copy marks."""
    return {**fingerprint_fields(res.fingerprint, layout, with_blocks=not res.degenerate, chunks=res.chunks,
                                 sketch=res.sketch, facts=res.facts, frames=res.frames),
            **copy_fields(res)}  # fmt: skip


#: Terms kept in the ``terms`` field, highest weight first: every term of a news article (the real corpora's
#: run to a few hundred; with 256, long articles lost tail terms and more_like_this then failed to fold a
#: story's copies), bounded so that a huge document stays cheap to index.
MAX_TERMS = 1024


def terms_text(res: FingerprintResult, limit: int = MAX_TERMS) -> str:
    """The document's terms, highest weight first, as the whitespace-analysed ``terms`` field."""
    return " ".join(t for t, _ in res.top_terms[:limit])


#: When the decision was made, epoch milliseconds: the only field two writers of the same decision write
#: differently, and what an incremental reconciliation selects recent decisions by.
DECIDED_FIELD = "decided_at"
#: Fields of a written document that differ by the time it was written, not by what was decided (left
#: out when the documents of two writers or two runs are compared).
TIME_FIELDS = frozenset({DECIDED_FIELD})


def now_millis() -> int:
    """The current time in epoch milliseconds (the ``decided_at`` of a decision made now)."""
    return time.time_ns() // 1_000_000


def decision_fields(
    res: FingerprintResult, layout: BlockLayout, *, cluster_id: str, duplicate_of: str | None,
    distance: int | None, decision: str, text_length: int, replaces: str | None = None,
    decided_at: int | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The one set of fields every writer adds to an Elasticsearch document (``es index``, ``es reindex``,
    the sidecar's ``/v1/ingest`` and proxy): :func:`result_fields`, the digests, the ``terms`` (at most
    :data:`MAX_TERMS`), the algorithm version, the verification policy's tag and the decision
    (``text_length`` and ``replaces`` are what the keep policy compares and reports; ``replaces`` is
    written as null when unset, so a rewrite leaves no stale value), and ``decided_at`` (epoch
    milliseconds, default now)."""
    out = result_fields(res, layout)
    out.update(content_digest=res.content_digest, keyword_digest=res.keyword_digest, terms=terms_text(res),
               fp_version=res.version, verify_policy=DEFAULT_POLICY.tag, cluster_id=cluster_id,
               duplicate_of=duplicate_of, distance=distance, decision=decision, degenerate=res.degenerate,
               text_length=text_length, replaces=replaces)
    out[DECIDED_FIELD] = now_millis() if decided_at is None else decided_at
    return out


def copy_fields(res: FingerprintResult) -> dict[str, Any]:
    """The copy-marks field of a fingerprinted document (absent when it has none)."""
    return {COPY_FIELD: Marks.from_bytes(res.marks).hex_hashes()} if res.marks else {}


def copy_postings_search(mark: str, limit: int) -> dict[str, Any]:
    """At most ``limit`` documents holding copy mark ``mark``, with their cluster."""
    return {"size": limit, "_source": False, "docvalue_fields": ["cluster_id"], "track_total_hits": False,
            "query": {"term": {COPY_FIELD: mark}}}


def hit_fingerprints(fields: Mapping[str, Any]) -> list[int]:
    """Unsigned fingerprints of a hit's doc values (``fingerprints``, else the document ``fingerprint``)."""
    values = fields.get(FPS_FIELD) or fields.get(FP_FIELD) or []
    return [to_unsigned(int(v)) for v in values]


def hit_sketch(fields: Mapping[str, Any]) -> bytes:
    """The sketch bytes of a hit's doc values (empty when the document has none)."""
    values = fields.get(SKETCH_FIELD)
    return binary_doc_value(values[0]) if values else b""


def _listed(value: Any) -> list[Any]:
    return [] if value is None else value if isinstance(value, list) else [value]


def hit_evidence(fields: Mapping[str, Any]) -> Evidence:
    """What verification compares, from a hit's doc values (fingerprints in doc-value order: the closest
    pair does not depend on it). A document written by an older version has no facts or frames: the
    fact check then has nothing to compare and the other checks decide."""
    facts = [str(f) for f in _listed(fields.get(FACTS_FIELD))]
    frames = [to_unsigned(int(f)) for f in _listed(fields.get(FRAMES_FIELD))]
    return Evidence(hit_fingerprints(fields), hit_sketch(fields), facts, frames)


def source_evidence(src: Mapping[str, Any]) -> Evidence:
    """:func:`hit_evidence` of a document's ``_source``: the document fingerprint first, then its chunks
    (``_source`` keeps the written order); a document indexed before chunks and sketches were stored has
    its document fingerprint only, and no sketch. No fingerprint at all: empty evidence."""
    if src.get(FP_FIELD) is None:
        return Evidence([])
    fp = to_unsigned(int(src[FP_FIELD]))
    fps = hit_fingerprints({FPS_FIELD: _listed(src.get(FPS_FIELD))})
    sketch = hit_sketch({SKETCH_FIELD: [src[SKETCH_FIELD]]}) if src.get(SKETCH_FIELD) else b""
    rest = hit_evidence({FACTS_FIELD: src.get(FACTS_FIELD), FRAMES_FIELD: src.get(FRAMES_FIELD)})
    return Evidence([fp, *fps[1:]] if fps and fps[0] == fp else [fp], sketch, rest.facts, rest.frames)


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
def pit_scan(
    client: Elasticsearch,
    index: str,
    query: dict[str, Any],
    page: int,
    keep_alive: str = "2m",
    pit_id: str | None = None,
    **request: Any,
) -> Iterator[dict[str, Any]]:
    """Every hit of ``query`` once, from a point-in-time snapshot paged by ``search_after`` on
    ``_shard_doc`` (or what the server has instead); ``request`` adds search options (``source``,
    ``docvalue_fields``, ...). With ``pit_id`` that snapshot is searched (and left open), else one is opened
    on ``index`` and closed."""
    own = pit_id is None
    pit = open_pit(client, index, keep_alive) if own else pit_id
    sort = server_of(client).pit_sort
    try:
        after: list[Any] | None = None
        while True:
            kw: dict[str, Any] = {"search_after": after} if after is not None else {}
            resp = client.search(
                query=query, size=page, pit={"id": pit, "keep_alive": keep_alive}, sort=sort,
                track_total_hits=False, **WHOLE, **request, **kw,
            )  # fmt: skip
            hits = resp["hits"]["hits"]
            yield from hits
            if len(hits) < page:
                return
            pit, after = resp.get("pit_id", pit), hits[-1]["sort"]
    finally:
        if own:
            close_pit(client, str(pit))


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
        msearch_batch: int = 250,
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

    def write_actions(self, actions: Iterable[dict[str, Any]]) -> int:
        """Send bulk actions; returns how many succeeded. Items refused for a passing reason (429, or a
        5xx while a node dies and its shards move) are sent again with backoff, each as the last action
        given for its id (a repeat replaces the document); :class:`ElasticsearchWriteError` names the
        documents that still failed or were refused for good (a bad document)."""
        todo = list(actions)
        failures: list[tuple[str, str]] = []
        ok = 0
        self._dirty = True
        for attempt in range(WRITE_ATTEMPTS):
            final = attempt == WRITE_ATTEMPTS - 1
            last = {str(a["_id"]): a for a in todo if "_id" in a}
            again: dict[str, dict[str, Any]] = {}
            for success, item in helpers.streaming_bulk(
                self.client, todo, chunk_size=self.chunk_size, raise_on_error=False, max_retries=5,
                initial_backoff=1, max_backoff=30,
            ):  # fmt: skip
                op = next(iter(item.values()))
                doc_id = str(op.get("_id"))
                if success:
                    ok += 1
                elif op.get("status") in RETRY_ITEM_STATUSES and doc_id in last and not final:
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
                    raise ElasticsearchUnavailable(f"msearch on {self.index!r} failed: {resp['error']}")
                out.append(self._finish(fp, resp["hits"]["hits"], k))
        return out

    # ---------------------------------------------------------------------------- verified lookups
    def hot_bands(self, bands: Iterable[str]) -> set[str]:
        """The band keys among ``bands`` that more than :data:`MAX_BAND_READ` documents hold: a stock
        phrase, not a copy, passed over as the embedded store passes it over (one aggregation, on the
        pinned snapshot while there is one).

        The aggregation counts the values of the matching documents (``execution_hint: map``). By default
        a ``terms`` aggregation first maps every distinct value of the field in the shard to a global
        ordinal, and rebuilds that map after each refresh: for the band field, nearly one value per band
        of every document, a cost that grows with the index while the answer only needs a few keys."""
        keys = sorted(set(bands))
        if not keys:
            return set()
        body = {
            "size": 0, "track_total_hits": False, "query": {"terms": {BANDS_FIELD: keys}},
            "aggs": {"hot": {"terms": {"field": BANDS_FIELD, "include": keys, "size": len(keys),
                                       "min_doc_count": MAX_BAND_READ + 1, "execution_hint": "map"}}},
        }  # fmt: skip
        resp = self._msearch([body])[0]
        return {b["key"] for b in ((resp.get("aggregations") or {}).get("hot") or {}).get("buckets", [])}

    def candidates_query(
        self, fingerprints: Sequence[int], keys: BlockKeys | None = None, sketch: bytes = b"",
        hot: Collection[str] = (),
    ) -> dict[str, Any]:
        """Documents sharing a block key with any of ``fingerprints`` (``terms`` per block field), or a
        band key with ``sketch`` that is not ``hot`` (:meth:`hot_bands`); ``keys`` may give their
        :func:`block_keys` already."""
        per_field = block_keys(self.layout, fingerprints) if keys is None else keys
        should = [{"terms": {f: sorted(set(keys))}} for f, keys in zip(self._fields, per_field, strict=True)]
        bands = [b for b in band_keys(sketch) if b not in hot]
        if bands:
            should.append({"terms": {BANDS_FIELD: bands}})
        return {"bool": {"filter": [{"bool": {"should": should, "minimum_should_match": 1}}]}}

    def _verified_body(
        self, fingerprints: Sequence[int], keys: BlockKeys | None = None, sketch: bytes = b"",
        hot: Collection[str] = (),
    ) -> dict[str, Any]:
        return {
            "query": self.candidates_query(fingerprints, keys, sketch, hot),
            "_source": False,
            "docvalue_fields": VERIFY_FIELDS,
            "size": self.page_size,
            "track_total_hits": False,
        }

    @staticmethod
    def verify_hits(
        ev: Evidence, hits: Iterable[Mapping[str, Any]], k: int, exclude: str | None = None,
        page: int = VERIFY_PAGE,
    ) -> list[Match]:
        """The candidates the verification rule accepts (:func:`fingerprint_indexer.verification.check_many`:
        distances and sketches as matrices, facts for the survivors), nearest first. Hits are verified
        ``page`` at a time, so a scan of an oversized bucket holds one page of evidence, not the bucket."""
        out: list[Match] = []
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
            verdicts = check_many(ev, cands, k)
            out += [Match(i, v.distance) for i, v in zip(ids, verdicts, strict=True) if v.accepted]
        out.sort(key=lambda m: (m.distance, m.doc_id))
        return out

    def _finish_verified(
        self, ev: Evidence, hits: list[dict[str, Any]], k: int, exclude: str | None, hot: Collection[str] = ()
    ) -> list[Match]:
        if len(hits) >= self.page_size:  # the first page may not hold every candidate
            query = self.candidates_query(ev.fingerprints, sketch=bytes(ev.sketch), hot=hot)
            scan = self._scan_candidates(query, VERIFY_FIELDS, self.pinned)
            return self.verify_hits(ev, scan, k, exclude)
        return self.verify_hits(ev, hits, k, exclude)

    def query_verified(self, ev: Evidence, k: int = 3, exclude: str | None = None) -> list[Match]:
        """Verified near-duplicates of a document with this evidence (fingerprints document first, then
        chunks): the candidates sharing a block key that :func:`fingerprint_indexer.verification.check`
        accepts. Distance = smallest over all fingerprint pairs."""
        return self.query_verified_many([ev], k, [exclude])[0]

    def query_verified_many(
        self, queries: Sequence[Evidence], k: int = 3, exclude: Sequence[str | None] | None = None
    ) -> list[list[Match]]:
        """:meth:`query_verified` of each query, one ``msearch`` per ``msearch_batch``; against the pinned
        snapshot while there is one (:meth:`pin`)."""
        self.layout.check_k(k)
        self._before_read()
        excl = list(exclude) if exclude is not None else [None] * len(queries)
        out: list[list[Match]] = []
        for start in range(0, len(queries), self.msearch_batch):
            chunk = queries[start : start + self.msearch_batch]
            if not all(len(ev.fingerprints) for ev in chunk):
                raise ValueError("a verified lookup needs at least one fingerprint")
            cols = block_keys(self.layout, [f for ev in chunk for f in ev.fingerprints])  # one pass
            hot = self.hot_bands(b for ev in chunk for b in band_keys(bytes(ev.sketch)))
            bodies = []
            at = 0
            for ev in chunk:
                n = len(ev.fingerprints)
                bodies.append(self._verified_body(ev.fingerprints, [col[at : at + n] for col in cols],
                                                  bytes(ev.sketch), hot))
                at += n
            responses = self._msearch(bodies)
            for n, (ev, resp) in enumerate(zip(chunk, responses, strict=True)):
                hits = (resp.get("hits") or {}).get("hits") or []  # filter_path drops empty parts
                out.append(self._finish_verified(ev, hits, k, excl[start + n], hot))
        return out

    def _msearch(self, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Responses of one ``msearch`` (on the pinned snapshot when there is one). A search that misses a
        shard is an error, never a partial answer (a node that died held part of the snapshot, or a shard
        has no copy yet): it is sent again, after a fresh snapshot is taken, waiting a little longer each
        time, up to ``READ_ATTEMPTS`` times."""
        errors: list[Any] = []
        for attempt in range(READ_ATTEMPTS):
            if attempt > 1:
                time.sleep(2.0 ** (attempt - 2))
            pit = self._pit
            if attempt and pit is not None:
                try:
                    self.pin(self._pit_keep_alive)  # the snapshot expired, or lost a node
                except (ApiError, TransportError) as exc:
                    errors = [str(exc)]
                    continue
                pit = self._pit
            searches: list[dict[str, Any]] = []
            snapshot = {"id": pit, "keep_alive": self._pit_keep_alive}
            for body in bodies:
                if pit is None:
                    searches += [{"index": self.index, **WHOLE}, body]
                else:
                    searches += [dict(WHOLE), {**body, "pit": snapshot}]
            resp = self.client.msearch(searches=searches, filter_path=MSEARCH_FILTER)
            responses: list[dict[str, Any]] = resp.get("responses") or []
            errors = [r["error"] for r in responses if "error" in r]
            if len(responses) != len(bodies):
                raise ElasticsearchUnavailable(f"msearch on {self.index!r}: {len(responses)} responses to "
                                               f"{len(bodies)} searches")  # fmt: skip
            if not errors:
                if pit is not None:
                    self._pit = next((r["pit_id"] for r in responses if r.get("pit_id")), pit)
                return responses
        raise ElasticsearchUnavailable(f"msearch on {self.index!r} failed {READ_ATTEMPTS} times: {errors[0]}")

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
            with contextlib.suppress(ApiError, TransportError):
                close_pit(self.client, pit)

    def close(self) -> None:
        self.unpin()
        if self._own_client:
            self.client.close()
            self._own_client = False
