"""The wire format of Elasticsearch's write APIs, as the proxy reads and answers them (pure functions,
no I/O): the ``_bulk`` NDJSON body taken apart into :class:`BulkOp` operations, the query parameters and
action metadata a write may carry, and answers and errors in Elasticsearch's own shapes.

Requests are read as Elasticsearch reads them (see :func:`parse_bulk`): what cannot be read that way raises
:class:`BulkParseError`, and the proxy passes such a request through, so Elasticsearch answers it itself.
Answers honour ``filter_path`` (:func:`filter_path`), ``pretty`` and the versioned media type the client
asked for (:func:`es_json`), and carry ``X-Elastic-Product``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote_plus, unquote

import orjson
from fastapi import Request
from fastapi.responses import Response

from fingerprint_indexer.errors import FingerprintIndexerError
from fingerprint_indexer.es.codec import json_bytes
from fingerprint_indexer.sidecar.delivery import SOURCE_ACTIONS, BulkOp
from fingerprint_indexer.sidecar.errors import error_body

PRODUCT = {"X-Elastic-Product": "Elasticsearch"}
ACTIONS = frozenset({"index", "create", "update", "delete"})
#: Query parameters of a single-document write that are per-operation metadata in a bulk request.
OP_PARAMS = frozenset({"routing", "version", "version_type", "if_seq_no", "if_primary_term", "pipeline",
                       "require_alias", "retry_on_conflict"})
#: Query parameters about the shape of the answer, applied by the proxy (never sent on with a write).
ANSWER_PARAMS = frozenset({"filter_path", "pretty", "human", "error_trace"})
#: Response header giving the number of operations of the answer that were queued (spooled).
QUEUED_HEADER = "X-Fingerprint-Indexer-Queued"


#: Metadata keys Elasticsearch accepts on a bulk action line; a line with any other is passed through,
#: so Elasticsearch refuses it with its own error.
META_KEYS = frozenset({"_index", "_id", "routing", "op_type", "version", "version_type", "retry_on_conflict",
                       "pipeline", "_source", "if_seq_no", "if_primary_term", "require_alias",
                       "require_data_stream", "list_executed_pipelines", "dynamic_templates"})
BOM = b"\xef\xbb\xbf"
COMPATIBLE = re.compile(r"vnd\.elasticsearch\+[a-z-]+\s*;\s*compatible-with\s*=\s*(\d+)", re.IGNORECASE)
#: Request content types the proxy reads (with or without ``compatible-with``); any other body goes
#: through unchanged and Elasticsearch answers it (e.g. 406 for a missing Content-Type).
READABLE_TYPES = ("application/json", "application/x-ndjson", "application/vnd.elasticsearch+json",
                  "application/vnd.elasticsearch+x-ndjson")


def es_error(status: int, type_: str, reason: str, headers: dict[str, str] | None = None) -> Response:
    """An error answered by the proxy itself, in Elasticsearch's error shape."""
    raw = json.dumps(error_body(status, type_, reason)).encode()
    return Response(raw, status_code=status, media_type="application/json",
                    headers={**PRODUCT, **(headers or {})})


class BulkParseError(FingerprintIndexerError, ValueError):
    """The body is not a bulk request the proxy can take apart exactly as Elasticsearch would: it is
    passed through, so Elasticsearch answers with its own error (or, rarely, applies it unfingerprinted)."""


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # Elasticsearch refuses duplicate fields; re-encoding would hide them
        raise ValueError("duplicate field")
    return out


#: Made once: ``json.loads`` with a hook builds a decoder (and its scanner) at every call.
_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)


def read_json(raw: bytes) -> Any:
    """A JSON line as Elasticsearch reads it (a leading UTF-8 BOM is skipped, duplicate keys refused);
    raises ValueError. Read by orjson where the compiled core finds the text plain (one that orjson reads
    exactly as the reference does: no duplicate key, no integer beyond 64 bits, no escaped surrogate...)
    and orjson takes its bytes as UTF-8, else by the standard library (:func:`read_json_reference`)."""
    raw = _without_bom(raw)
    plain = _plain_json()
    if plain is not None and plain(raw):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:  # not UTF-8: the reference says so in its own words
            pass
    return _DECODER.decode(raw.decode("utf-8"))


def read_json_reference(raw: bytes) -> Any:
    """:func:`read_json` by the standard library's reader alone: the reference its orjson path equals."""
    return _DECODER.decode(_without_bom(raw).decode("utf-8"))


def _without_bom(raw: bytes) -> bytes:
    return raw[len(BOM):] if raw.startswith(BOM) else raw


@functools.cache
def _plain_json() -> Callable[[bytes], bool] | None:
    """The compiled core's test of a plain JSON text, None without it."""
    from fingerprint_indexer.fingerprint import native  # the compiled core's one switch

    core = native.core()
    return None if core is None else core.plain_json


def parse_bulk(body: bytes, default_index: str | None) -> list[BulkOp]:
    """The operations of an NDJSON bulk body (each with ``_index`` filled in from the path).

    Follows Elasticsearch's own reading: the body must end with a newline; a last action without its
    source line is ignored; a source line that is not valid UTF-8 JSON fails only its own item (it is
    sent on as received, see :attr:`BulkOp.raw`). Anything else unusual raises :class:`BulkParseError`.
    """
    if not body or not body.endswith(b"\n"):
        raise BulkParseError("the bulk request must be terminated by a newline")
    lines = body.split(b"\n")[:-1]
    ops: list[BulkOp] = []
    i = 0
    while i < len(lines):
        try:
            head = read_json(lines[i])
        except ValueError:
            raise BulkParseError(f"action line [{i + 1}] is not valid JSON") from None
        if not isinstance(head, dict) or len(head) != 1 or next(iter(head)) not in ACTIONS:
            raise BulkParseError(f"malformed action/metadata line [{i + 1}]")
        action, meta = next(iter(head.items()))
        if not isinstance(meta, dict) or not meta.keys() <= META_KEYS or meta.get("_id") == "":
            raise BulkParseError(f"malformed action/metadata line [{i + 1}]")
        if "_index" not in meta:
            if default_index is None:
                raise BulkParseError(f"action on line [{i + 1}] has no _index and the path names no index")
            meta["_index"] = default_index
        if action not in SOURCE_ACTIONS:
            ops.append(BulkOp(action, meta))
            i += 1
            continue
        if i + 1 >= len(lines):  # a dangling last action: Elasticsearch ignores it
            break
        raw = lines[i + 1]
        if not raw.strip():
            raise BulkParseError(f"source line [{i + 2}] is empty")
        try:
            source = read_json(raw)
        except ValueError:
            source = None  # its item fails alone, with Elasticsearch's own error
        ops.append(BulkOp(action, meta, source, raw=raw))
        i += 2
    if not ops:
        raise BulkParseError("request body is required")
    return ops


def readable(request: Request) -> bool:
    """Whether the request's Content-Type is one the proxy reads (else it is passed through)."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return ctype in READABLE_TYPES


def path_segments(request: Request) -> list[str]:
    """The request path's segments, each percent-decoded on its own: ``/i/_doc/a%2Fb`` gives
    ``["i", "_doc", "a/b"]`` (the routes match the decoded path, where that ``/`` splits the id)."""
    raw = request.scope.get("raw_path") or request.url.path.encode()
    path = raw.decode("latin-1").partition("?")[0]
    return [unquote(seg, errors="strict") for seg in path.split("/")[1:]]


def filter_path(body: Any, spec: str) -> Any:
    """Elasticsearch's ``filter_path`` response filtering: comma-separated dotted paths, ``*`` inside a
    name, ``**`` for any depth, a leading ``-`` to exclude; arrays are transparent and objects or arrays
    left empty by an inclusive filter are dropped."""
    paths = [p.strip() for p in spec.split(",") if p.strip()]
    includes = [tuple(p.split(".")) for p in paths if not p.startswith("-")]
    excludes = [tuple(p[1:].split(".")) for p in paths if p.startswith("-")]
    out = body
    if includes:
        out = _filter(body, includes, True)
        if out is _DROP:
            out = {}
    if excludes:
        out = _filter(out, excludes, False)
        if out is _DROP:
            out = {}
    return out


_DROP = object()


def _name_matches(pattern: str, name: str) -> bool:
    if "*" not in pattern:
        return pattern == name
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), name) is not None


def _advance(paths: list[tuple[str, ...]], key: str) -> tuple[bool, list[tuple[str, ...]]]:
    """Whether ``key`` completes one of ``paths``, and the paths that continue below it."""
    done, rest = False, []
    for p in paths:
        if p[0] == "**":
            rest.append(p)
            if len(p) == 1:
                done = True
            elif _name_matches(p[1], key):
                if len(p) == 2:
                    done = True
                else:
                    rest.append(p[2:])
        elif _name_matches(p[0], key):
            if len(p) == 1:
                done = True
            else:
                rest.append(p[1:])
    return done, rest


def _filter(value: Any, paths: list[tuple[str, ...]], include: bool) -> Any:
    if isinstance(value, list):
        kept = [v for v in (_filter(v, paths, include) for v in value) if v is not _DROP]
        return _DROP if include and not kept else kept
    if not isinstance(value, dict):
        return _DROP if include else value
    out: dict[str, Any] = {}
    for key, v in value.items():
        done, rest = _advance(paths, key)
        if done:
            if include:
                out[key] = v
            continue
        if rest and isinstance(v, dict | list):
            sub = _filter(v, rest, include)
            if sub is not _DROP:
                out[key] = sub
        elif not include:
            out[key] = v
    return _DROP if include and not out else out


def es_json(body: Any, request: Request, status: int = 200, headers: dict[str, str] | None = None
            ) -> Response:
    """An answer in Elasticsearch's manner: ``filter_path`` applied to successful answers (Elasticsearch
    never filters its error answers), ``pretty`` honoured, ``X-Elastic-Product`` set."""
    spec = request.query_params.get("filter_path")
    if spec and status < 300:
        body = filter_path(body, spec)
    pretty = request.query_params.get("pretty") not in (None, "false")
    raw = json.dumps(body, ensure_ascii=False, indent=2).encode() if pretty else json_bytes(body)
    return Response(raw + (b"\n" if pretty else b""), status_code=status, media_type=answer_type(request),
                    headers={**PRODUCT, **(headers or {})})


def answer_type(request: Request) -> str:
    """The Content-Type Elasticsearch answers with: its versioned media type when the request asked for
    one (``compatible-with=N`` in Accept, else in Content-Type), plain JSON otherwise."""
    for name in ("accept", "content-type"):
        found = COMPATIBLE.search(request.headers.get(name, ""))
        if found:
            return f"application/vnd.elasticsearch+json;compatible-with={found.group(1)}"
    return "application/json"


def bulk_item(op: BulkOp, status: int, **fields: Any) -> dict[str, Any]:
    """One item of a bulk answer, for an operation the proxy answers itself."""
    return {op.action: {"_index": op.index, "_id": op.id, "status": status, **fields}}


def has_error(item: dict[str, Any]) -> bool:
    """Whether a bulk item says its operation failed."""
    return "error" in next(iter(item.values()))


def single_error(error: dict[str, Any]) -> dict[str, Any]:
    """A bulk item's ``error`` as Elasticsearch's single-document APIs answer it: with a ``root_cause`` (the
    error itself, without its ``caused_by``, unless the item gave one), placed first."""
    err = dict(error)
    err.setdefault("root_cause", [{k: v for k, v in err.items() if k != "caused_by"}])
    # Elasticsearch puts root_cause first
    return {"root_cause": err.pop("root_cause"), **err}


def doc_location(index: str, doc_id: Any) -> str:
    """The ``Location`` header of a created document."""
    # as Elasticsearch writes it (Java's URLEncoder: form encoding, a space as '+')
    encoded = quote_plus(str(doc_id), safe="*").replace("~", "%7E")
    return f"/{index}/_doc/{encoded}"
