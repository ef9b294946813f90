"""The document-field codec: the fields a document's fingerprint, evidence and decision are written as,
and how they are read back from hits and ``_source``.

Each document carries its document fingerprint as a ``long`` (two's complement of the unsigned value) and
its hex form, all its fingerprints (document first, then content-defined chunks) in the multi-valued long
``fingerprints``, its MinHash sketch as ``binary`` with doc values, and one multi-valued ``keyword`` field
per key of the block layout (``block_<n>``, :func:`block_fields`) holding that key of every fingerprint.
"""

from __future__ import annotations

import base64
import functools
import json
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from elasticsearch import helpers

from fingerprint_indexer.es.servers import binary_doc_value
from fingerprint_indexer.fingerprint.blocks import BlockLayout, Distinct
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintResult
from fingerprint_indexer.fingerprint.hamming import MASK64, to_hex, to_signed, to_unsigned
from fingerprint_indexer.fingerprint.image import ImageFingerprint, image_keys
from fingerprint_indexer.fingerprint.sketch import BAND_ROWS, BANDS, band_keys
from fingerprint_indexer.fingerprint.winnow import Marks
from fingerprint_indexer.verification import DEFAULT_POLICY, Evidence

FP_FIELD = "fingerprint"
HEX_FIELD = "fingerprint_hex"  # the document fingerprint as 16 hex digits
FPS_FIELD = "fingerprints"
SKETCH_FIELD = "sketch"
FACTS_FIELD = "facts"
FRAMES_FIELD = "frames"
COPY_FIELD = "copy_marks"  # winnowed block hashes (hex): partial-copy search
BANDS_FIELD = "bands"
IMAGE_KEYS_FIELD = "image_keys"  # look-up keys of every picture of the document (keyword)
IMAGES_FIELD = "images"  # per picture: its name and fingerprint, or the error that kept it out (not indexed)
#: Doc values a verified lookup needs of each candidate.
VERIFY_FIELDS = [{"field": FP_FIELD}, {"field": FPS_FIELD}, {"field": SKETCH_FIELD}, {"field": FACTS_FIELD},
                 {"field": FRAMES_FIELD}]  # fmt: skip


@functools.lru_cache(maxsize=16)  # asked for by every document written: one tuple a layout
def block_fields(layout: BlockLayout) -> tuple[str, ...]:
    """The keyword field of each key of ``layout`` (``block_<n>``, in key order)."""
    return tuple(f"block_{i}" for i in range(layout.n_keys))


#: Per key of the layout, one stored key per fingerprint (see :func:`block_keys`).
BlockKeys = list[list[str]]


def block_keys(layout: BlockLayout, fingerprints: Sequence[int], distinct: Distinct = None) -> BlockKeys:
    """Per key of the layout, the stored key of each fingerprint, or its distinct keys
    (:meth:`BlockLayout.keys_many`)."""
    return layout.keys_many([f & MASK64 for f in fingerprints], distinct)


def key_fields(fps: list[int], layout: BlockLayout, with_blocks: bool = True) -> dict[str, Any]:
    """The fields a document is found by: its document fingerprint (``long`` and hex), every fingerprint
    (``fps``, unsigned, the document's first) and, with ``with_blocks``, each key's distinct block keys in
    first-seen order (one key as a string)."""
    out: dict[str, Any] = {FP_FIELD: to_signed(fps[0]), HEX_FIELD: to_hex(fps[0]),
                           FPS_FIELD: [to_signed(f) for f in fps]}  # fmt: skip
    if with_blocks:
        for name, keys in zip(block_fields(layout), layout.keys_many(fps, "first"), strict=True):
            out[name] = keys[0] if len(keys) == 1 else keys
    return out


@functools.lru_cache(maxsize=16)
def _key_json(layout: BlockLayout) -> Any:
    """The compiled writer of ``layout``'s candidate searches, made once; None without the compiled core."""
    from fingerprint_indexer.fingerprint import native  # the compiled core's one switch; loaded on use

    if not native.enabled():
        return None
    return native.es_key_json(layout.key_blocks, layout.key_digits, block_fields(layout),
                              (FP_FIELD, HEX_FIELD, FPS_FIELD))  # fmt: skip


def block_clauses(layout: BlockLayout, fps: Sequence[int]) -> list[dict[str, Any]]:
    """A candidate search's ``terms`` clause per block field: the distinct keys of ``fps`` (unsigned),
    sorted."""
    return [{"terms": {f: keys}} for f, keys in zip(block_fields(layout), block_keys(layout, fps, "sorted"),
                                                     strict=True)]  # fmt: skip


def candidates_clause(layout: BlockLayout, fps: Sequence[int], bands: Sequence[str] = ()) -> dict[str, Any]:
    """A candidate search's query: documents with a block key of ``fps`` (:func:`block_clauses`) or, when
    ``bands`` is not empty, one of these sketch band keys."""
    should = block_clauses(layout, fps)
    if bands:
        should.append({"terms": {BANDS_FIELD: list(bands)}})
    return {"bool": {"filter": [{"bool": {"should": should, "minimum_should_match": 1}}]}}


def candidates_json(layout: BlockLayout, fps: Sequence[int], bands: Sequence[str] = (), head: bytes = b"",
                    tail: bytes = b"") -> bytes:  # fmt: skip
    """``head``, :func:`candidates_clause` as JSON text, then ``tail``: a whole search body in one buffer,
    with no Python object per key when the compiled core is built."""
    compiled = _key_json(layout)
    if compiled is None:
        return b"".join((head, orjson.dumps(candidates_clause(layout, fps, bands)), tail))
    return bytes(compiled.candidates([f & MASK64 for f in fps], BANDS_FIELD, list(bands), head, tail))


def searches_json(layout: BlockLayout, queries: Sequence[Evidence], hot: Collection[str], header: bytes,
                  head: bytes, tail: bytes) -> bytes:  # fmt: skip
    """A multi-search's NDJSON text of one candidate search a query: for each, ``header`` (its header
    line), then :func:`candidates_json` of its fingerprints and of its sketch's band keys less the
    ``hot`` ones, between ``head`` and ``tail``, and a newline. In one compiled call when the core is
    built (the band keys made from the sketches there: no Python object per key or search)."""
    compiled = _key_json(layout)
    if compiled is not None:
        try:
            return bytes(compiled.searches(header, [ev.fingerprints for ev in queries],
                                           [ev.sketch for ev in queries], BANDS_FIELD, set(hot), BANDS,
                                           BAND_ROWS, head, tail))  # fmt: skip
        except (TypeError, OverflowError):  # signed fingerprints, or a sketch not held as bytes: as below
            pass
    return b"".join(b"".join((header, candidates_json(layout, ev.fingerprints, [b for b in ev.band_keys
                                                                                if b not in hot],
                                                      head, tail), b"\n")) for ev in queries)  # fmt: skip


def evidence_fields(sketch: bytes = b"", with_blocks: bool = True, facts: Sequence[str] = (),
                    frames: Sequence[int] = ()) -> dict[str, Any]:  # fmt: skip
    """The fields verification compares besides the fingerprints: the base64 ``sketch`` when there is one
    with its band keys (not for degenerate documents, which have no block keys either), the facts and
    the frames."""
    out: dict[str, Any] = {}
    if sketch:
        out[SKETCH_FIELD] = base64.b64encode(sketch).decode("ascii")
        if with_blocks:
            out[BANDS_FIELD] = list(band_keys(sketch))
    out[FACTS_FIELD] = list(facts)
    out[FRAMES_FIELD] = [to_signed(f) for f in frames]
    return out


def fingerprint_fields(
    fingerprint: int,
    layout: BlockLayout,
    with_blocks: bool = True,
    chunks: Sequence[int] = (),
    sketch: bytes = b"",
    facts: Sequence[str] = (),
    frames: Sequence[int] = (),
) -> dict[str, Any]:
    """The fields that store a document's fingerprints: :func:`key_fields` of the document fingerprint and
    ``chunks`` (no block keys for degenerate documents), then :func:`evidence_fields`."""
    fps = [f & MASK64 for f in (fingerprint, *chunks)]
    return {**key_fields(fps, layout, with_blocks), **evidence_fields(sketch, with_blocks, facts, frames)}


def result_fields(res: FingerprintResult, layout: BlockLayout) -> dict[str, Any]:
    """:func:`fingerprint_fields` of a fingerprinted document (chunks, sketch, facts and frames included),
    and its copy marks."""
    return {**key_fields(_unsigned(res), layout, not res.degenerate), **_evidence_and_marks(res)}


def _unsigned(res: FingerprintResult) -> list[int]:
    """A result's fingerprints (the document's first) as the unsigned values the key fields take."""
    return [f & MASK64 for f in res.fingerprints]


def _evidence_and_marks(res: FingerprintResult) -> dict[str, Any]:
    """What a result's fields hold after its key fields: :func:`evidence_fields`, then its copy marks."""
    return {**evidence_fields(res.sketch, not res.degenerate, res.facts, res.frames), **copy_fields(res)}


#: Terms kept in the ``terms`` field, highest weight first: every term of a news article (the real corpora's
#: run to a few hundred; with 256, long articles lost tail terms and more_like_this then failed to fold a
#: story's copies), bounded so that a huge document stays cheap to index.
MAX_TERMS = 1024


def terms_text(res: FingerprintResult, limit: int = MAX_TERMS) -> str:
    """The document's terms, highest weight first, as the whitespace-analysed ``terms`` field (the compiled
    pass's terms join themselves, without a Python pair made for each)."""
    joined = getattr(res.top_terms, "joined", None)
    if joined is not None:
        return str(joined(limit, " "))
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
    rest = _after_keys(res, terms_text(res), cluster_id=cluster_id, duplicate_of=duplicate_of,
                       distance=distance, decision=decision, text_length=text_length, replaces=replaces,
                       decided_at=decided_at)  # fmt: skip
    return {**key_fields(_unsigned(res), layout, not res.degenerate), **rest}


def _after_keys(
    res: FingerprintResult, terms: str, *, cluster_id: str, duplicate_of: str | None,
    distance: int | None, decision: str, text_length: int, replaces: str | None, decided_at: int | None,
) -> dict[str, Any]:  # fmt: skip
    """The fields of :func:`decision_fields` after its :func:`key_fields`, in order (those of
    :func:`result_fields`, then the decision's); ``terms`` is the ``terms`` field's text."""
    out = _evidence_and_marks(res)
    out.update(content_digest=res.content_digest, keyword_digest=res.keyword_digest, terms=terms,
               fp_version=res.version, verify_policy=DEFAULT_POLICY.tag, cluster_id=cluster_id,
               duplicate_of=duplicate_of, distance=distance, decision=decision, degenerate=res.degenerate,
               text_length=text_length, replaces=replaces)
    out[DECIDED_FIELD] = now_millis() if decided_at is None else decided_at
    return out


#: The fields :func:`_after_keys` writes, in its order, but the copy marks (the compiled writer's names).
TAIL_FIELDS = (SKETCH_FIELD, BANDS_FIELD, FACTS_FIELD, FRAMES_FIELD, "content_digest", "keyword_digest",
               "terms", "fp_version", "verify_policy", "cluster_id", "duplicate_of", "distance", "decision",
               "degenerate", "text_length", "replaces", DECIDED_FIELD)
#: Every field :func:`_after_keys` may write.
_TAIL_NAMES = frozenset({*TAIL_FIELDS, COPY_FIELD})


@functools.lru_cache(maxsize=16)
def _source_json(layout: BlockLayout) -> Any:
    """The compiled writer of whole documents under ``layout`` (:func:`decision_source`), made once; None
    without the compiled core."""
    from fingerprint_indexer.fingerprint import native  # the compiled core's one switch; loaded on use

    if not native.enabled():
        return None
    return native.es_source_json(layout.key_blocks, layout.key_digits, block_fields(layout),
                                 (FP_FIELD, HEX_FIELD, FPS_FIELD), TAIL_FIELDS, BANDS, BAND_ROWS)  # fmt: skip


def decision_source(
    doc: Mapping[str, Any], res: FingerprintResult, layout: BlockLayout, *, cluster_id: str,
    duplicate_of: str | None, distance: int | None, decision: str, text_length: int,
    replaces: str | None = None, decided_at: int | None = None, raw: bytes | None = None,
    prefix: bytes = b"", suffix: bytes = b"",
) -> bytes:  # fmt: skip
    """A whole document as the JSON text a bulk request carries: the fields of ``doc`` (its text, url,
    date), then :func:`decision_fields`; the same bytes as ``orjson.dumps({**doc, **decision_fields(...)})``,
    the reference, between ``prefix`` and ``suffix`` (:func:`index_lines`). ``raw``, the JSON object ``doc``
    was read from, is kept as it was sent, the fields appended inside it (as a proxy must pass a caller's
    source on). Written by one compiled call when the core is built, for a document without copy marks
    whose terms the compiled pass made (no Python object per block key, band key or term). A field of
    ours given in ``doc`` too is written once, ours winning, as in the dict merge; a value orjson cannot
    write (an integer beyond 64 bits) is written by the standard library."""
    compiled = _source_json(layout)
    ours_given = not _names_of_ours(layout).isdisjoint(doc)
    at = now_millis() if decided_at is None else decided_at
    if compiled is None or not _compiled_writes(res, ours_given):
        rest = _after_keys(res, terms_text(res), cluster_id=cluster_id, duplicate_of=duplicate_of,
                           distance=distance, decision=decision, text_length=text_length, replaces=replaces,
                           decided_at=at)  # fmt: skip
        fields = {**key_fields(_unsigned(res), layout, not res.degenerate), **rest}
        if raw is None or ours_given:
            return b"".join((prefix, json_bytes({**doc, **fields}), suffix))
        text, end = _object_text(doc, raw)
        return b"".join((prefix, memoryview(text)[:end], b"," if end > 1 else b"", json_bytes(fields)[1:],
                         suffix))  # fmt: skip
    text, end = _object_text(doc, raw)
    return _compiled_source(compiled.source, text, end, res, cluster_id, duplicate_of, distance, decision,
                            text_length, replaces, at, prefix, suffix)  # fmt: skip


def _compiled_source(
    source: Any, text: bytes, end: int, res: FingerprintResult, cluster_id: str, duplicate_of: str | None,
    distance: int | None, decision: str, text_length: int, replaces: str | None, decided_at: int,
    prefix: bytes, suffix: bytes,
) -> bytes:  # fmt: skip
    """One call of the compiled writer (``EsSourceJson.source``): ``text`` up to ``end``, then the
    decision fields, between ``prefix`` and ``suffix``; the one place its arguments are spelled out."""
    return bytes(source(
        text, end, res.fingerprints, res.sketch, orjson.dumps(res.facts), res.frames, res.content_digest,
        res.keyword_digest, res.top_terms, MAX_TERMS, " ", res.version, DEFAULT_POLICY.tag, cluster_id,
        duplicate_of, distance, decision, res.degenerate, text_length, replaces, decided_at, prefix, suffix))


def _action_parts(index: str) -> tuple[bytes, bytes]:
    """The action line that indexes a document into ``index`` (as the bulk helper writes it), before and
    after the document's id as JSON."""
    return b'{"index":{"_id":', b',"_index":' + orjson.dumps(index) + b"}}\n"


def index_lines(index: str, doc_id: str, doc: Mapping[str, Any], res: FingerprintResult, layout: BlockLayout,
                **decided: Any) -> bytes:  # fmt: skip
    """The two lines of a bulk request that index ``doc`` with its decision fields under ``doc_id``, in
    one buffer: the action line (as the bulk helper writes it) and :func:`decision_source`."""
    head, tail = _action_parts(index)
    return decision_source(doc, res, layout, prefix=head + orjson.dumps(doc_id) + tail, suffix=b"\n",
                           **decided)  # fmt: skip


#: One document of :func:`index_lines_many`: its id, its fields (text, url, date), its result and its
#: decision's ``cluster_id``, ``duplicate_of``, ``distance``, ``decision``, ``text_length`` and ``replaces``.
Indexed = tuple[str, Mapping[str, Any], FingerprintResult, str, str | None, int | None, str, int, str | None]


def index_lines_many(index: str, layout: BlockLayout, docs: Iterable[Indexed]) -> list[tuple[str, bytes]]:
    """Each document's id and :func:`index_lines` (decided now), for a batch: the compiled writer and the
    names it must not meet looked up once, not once a document; a document the writer does not take goes
    through :func:`index_lines`, the reference."""
    compiled = _source_json(layout)
    ours = _names_of_ours(layout)
    head, tail = _action_parts(index)
    source = None if compiled is None else compiled.source
    out: list[tuple[str, bytes]] = []
    for doc_id, doc, res, cluster_id, duplicate_of, distance, decision, text_length, replaces in docs:
        if source is None or not _compiled_writes(res, not ours.isdisjoint(doc)):
            out.append((doc_id, index_lines(index, doc_id, doc, res, layout, cluster_id=cluster_id,
                                            duplicate_of=duplicate_of, distance=distance, decision=decision,
                                            text_length=text_length, replaces=replaces)))  # fmt: skip
            continue
        text, end = _object_text(doc, None)
        out.append((doc_id, _compiled_source(source, text, end, res, cluster_id, duplicate_of, distance,
                                             decision, text_length, replaces, now_millis(),
                                             head + orjson.dumps(doc_id) + tail, b"\n")))  # fmt: skip
    return out


def _object_text(doc: Mapping[str, Any], raw: bytes | None) -> tuple[bytes, int]:
    """The JSON text of ``doc`` (or ``raw``, its text as sent), and where its members end: before its
    closing brace (``b"{"`` and 1 for an empty ``doc``)."""
    if not doc:
        return b"{", 1
    if raw is not None:
        text = raw.strip()
        text = text[3:] if text.startswith(b"\xef\xbb\xbf") else text  # no BOM inside a new source
        if text.startswith(b"{") and text.endswith(b"}"):
            return text, len(text) - 1
    text = json_bytes(doc)
    return text, len(text) - 1


def json_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON, by orjson, or by the standard library for what orjson refuses (an integer
    beyond 64 bits that a caller's document held)."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass(frozen=True)
class DecisionWrite:
    """The fields a writer adds to one document (:func:`decision_fields`), kept as what they are made of,
    so that they are written as JSON text into the document's own (:meth:`source`) and built as Python
    objects only where a caller needs them (:meth:`fields`). ``decided_at`` is fixed when it is made."""

    res: FingerprintResult
    layout: BlockLayout
    cluster_id: str
    duplicate_of: str | None
    distance: int | None
    decision: str
    text_length: int
    replaces: str | None = None
    decided_at: int = field(default_factory=now_millis)

    def _decided(self) -> dict[str, Any]:
        return {"cluster_id": self.cluster_id, "duplicate_of": self.duplicate_of, "distance": self.distance,
                "decision": self.decision, "text_length": self.text_length, "replaces": self.replaces,
                "decided_at": self.decided_at}

    def fields(self) -> dict[str, Any]:
        """:func:`decision_fields`."""
        return decision_fields(self.res, self.layout, **self._decided())

    def source(self, doc: Mapping[str, Any], raw: bytes | None = None) -> bytes:
        """:func:`decision_source` of ``doc`` (``raw``: its JSON text as sent)."""
        return decision_source(doc, self.res, self.layout, raw=raw, **self._decided())


@functools.lru_cache(maxsize=16)  # asked for by every document written
def _names_of_ours(layout: BlockLayout) -> frozenset[str]:
    """Every name a writer adds to a document under ``layout``: those :func:`key_fields` may write, then
    the rest of :func:`decision_fields` (copy marks included)."""
    return frozenset({FP_FIELD, HEX_FIELD, FPS_FIELD, *block_fields(layout), *_TAIL_NAMES})


def _compiled_writes(res: FingerprintResult, ours_given: bool) -> bool:
    """Whether the compiled writer writes a document (a body holding none of our fields, no copy marks,
    terms the compiled pass made); the reference writes the others."""
    return not (res.marks or ours_given or not hasattr(res.top_terms, "joined"))


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


def bulk_lines(action: dict[str, Any] | bytes | str) -> bytes:
    """One action of a bulk request as the NDJSON lines Elasticsearch reads, in one piece: the action
    line and, but for a delete, the source (JSON text passes as it is), the partial document or the
    script, as :func:`elasticsearch.helpers.expand_action` splits an action (:func:`index_lines` writes
    an index action's lines at once)."""
    header, data = helpers.expand_action(action)
    head = orjson.dumps(header)
    if data is None:
        return head + b"\n"
    body = data if isinstance(data, bytes) else data.encode() if isinstance(data, str) else json_bytes(data)
    return b"".join((head, b"\n", body, b"" if body.endswith(b"\n") else b"\n"))


def bulk_failures(errors: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(doc id, reason) of each failed item of a bulk response."""
    out = []
    for item in errors:
        op = next(iter(item.values()))
        err = op.get("error")
        reason = f"{err.get('type')}: {err.get('reason')}" if isinstance(err, dict) else str(err or op)
        out.append((str(op.get("_id")), reason))
    return out


#: A document's picture: its name (a path, or what the sender called it), its fingerprint or the
#: one-line error that kept it out, and its thumbnail (base64 JPEG) if any.
Picture = tuple[str, ImageFingerprint | str, str | None]


def image_fields(pictures: Sequence[Picture]) -> dict[str, Any]:
    """The fields of a document's pictures: every picture's look-up keys in one keyword field, and each
    picture's name with its fingerprint (or its error) in a field kept but not indexed. Pictures are
    evidence beside the text: no decision reads them."""
    keys: dict[str, None] = {}
    listed: list[dict[str, Any]] = []
    for name, fp, thumb in pictures:
        if isinstance(fp, str):
            listed.append({"name": name, "error": fp})
            continue
        keys.update(dict.fromkeys(image_keys(fp)))
        listed.append({"name": name, "fingerprint": fp.to_json(), **({"thumbnail": thumb} if thumb else {})})
    return {IMAGE_KEYS_FIELD: list(keys), IMAGES_FIELD: listed} if listed else {}


def source_pictures(src: Mapping[str, Any]) -> list[tuple[str, ImageFingerprint, str | None]]:
    """The fingerprinted pictures of a document's ``_source`` with their thumbnails (those kept out by an
    error left out)."""
    out = []
    for item in _listed(src.get(IMAGES_FIELD)):
        if isinstance(item, Mapping) and isinstance(item.get("fingerprint"), Mapping):
            thumb = item.get("thumbnail")
            out.append((str(item.get("name", "")), ImageFingerprint.from_json(item["fingerprint"]),
                        thumb if isinstance(thumb, str) else None))
    return out
