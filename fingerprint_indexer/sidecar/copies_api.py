"""Copied passages, partial-copy search, documents and clusters for the API and the explorer page (/ui).

Texts come from Elasticsearch (the index keeps them); without Elasticsearch, from the inputs the embedded
store recorded (:mod:`fingerprint_indexer.sidecar.browse`), and partial-copy search reads the store's
copy marks. Segmenting runs on the fingerprint pool's workers, so the event loop never waits on it.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any
from urllib.parse import quote

import httpx
from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, RedirectResponse
from pydantic import BaseModel, Field, model_validator
from starlette.convertors import Convertor, register_url_convertor

from fingerprint_indexer.copies import CopyFinder
from fingerprint_indexer.copies.search import DEFAULT_MIN_CHARS, MAX_STORIES, query_marks
from fingerprint_indexer.copies.stored import require_marks, search_store
from fingerprint_indexer.elastic.copies import TEXT_FIELDS, EsCopySearch, rank, source_text
from fingerprint_indexer.elastic.es_setup import ES_ENABLE_HINT
from fingerprint_indexer.es.mapping import META_KEY
from fingerprint_indexer.fingerprint.winnow import Marks, WinnowParams, marked
from fingerprint_indexer.sidecar import worker
from fingerprint_indexer.sidecar.browse import embedded, store_cluster, store_document, store_text
from fingerprint_indexer.sidecar.context import ERRORS, index_name, svc
from fingerprint_indexer.sidecar.errors import ApiError, es_answers
from fingerprint_indexer.sidecar.models import DocId, IndexName, Text
from fingerprint_indexer.sidecar.state import ServiceState
from fingerprint_indexer.store.errors import StoreMismatchError
from fingerprint_indexer.text.clean import html_to_text


class _AnyPath(Convertor[str]):
    """A path parameter that may hold ``/`` and line breaks (document and cluster ids are free text)."""

    regex = r"[\s\S]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("anypath", _AnyPath())
router = APIRouter()
UI_DIR = resources.files("fingerprint_indexer") / "ui"
DOC_FIELDS = [*TEXT_FIELDS, "cluster_id", "decision", "duplicate_of", "distance", "published_at", "url"]
MAX_CLUSTER_MEMBERS = 200


# ------------------------------------------------------------------- work done on the pool's workers
def _finder() -> CopyFinder:
    fpr = worker.current()
    return CopyFinder(fpr.tokenizer, fpr.config.winnow or WinnowParams())


def _passages(a: str, b: str) -> list[dict[str, Any]]:
    return [p.to_dict() for p in _finder().passages(a, b)]


def _looked(text: str) -> list[int]:
    return query_marks(_finder().marks(text))


def _store_marks(text: str, tag: str) -> bytes:
    fpr = worker.current()
    return marked(text, fpr.tokenizer, WinnowParams.from_tag(tag)).to_bytes()


def _rank(text: str, found: list[tuple[str, str]], seeds: dict[str, list[int]],
          min_chars: int) -> list[dict[str, Any]]:
    return [h.to_dict() for h in rank(_finder(), text, found, seeds, min_chars)]


# ----------------------------------------------------------------------------------------- models
class TextRef(BaseModel):
    """A document in the index (``id``) or a text (``text`` or ``html``)."""

    id: DocId | None = None
    text: Text | None = None
    html: Text | None = None

    @model_validator(mode="after")
    def _one(self) -> TextRef:
        if sum(x is not None for x in (self.id, self.text, self.html)) != 1:
            raise ValueError("give exactly one of 'id', 'text' or 'html'")
        return self


class CopiesRequest(BaseModel):
    model_config = {"json_schema_extra": {"example": {"a": {"id": "n1"}, "b": {"text": "Body of another"}}}}

    a: TextRef
    b: TextRef
    index_name: IndexName | None = Field(None, description="Elasticsearch index (default: the service's).")
    with_text: bool = Field(False, description="Also return both texts (what the offsets refer to).")


class CopySearchRequest(TextRef):
    index_name: IndexName | None = Field(None, description="Elasticsearch index (default: the service's).")
    min_chars: int = Field(DEFAULT_MIN_CHARS, ge=1, description="Least copied characters of the query.")
    max_df: int | None = Field(None, ge=1, le=10_000, description="Stock-phrase cap: documents per mark "
                               "(default: learnt from the index's size).")
    max_stories: int = Field(MAX_STORIES, ge=1, le=100, description="Stories (clusters) a mark may be held "
                             "by and still be evidence: raise it to find a passage quoted by several stored "
                             "stories (templates shared by that many count as copies then).")


# ----------------------------------------------------------------------------------------- helpers
async def _es(request: Request) -> httpx.AsyncClient:
    state = svc(request)
    assert state.es is not None
    return state.es.http


async def _doc(request: Request, index: str, doc_id: str, fields: list[str]) -> dict[str, Any]:
    http = await _es(request)
    with es_answers(f"reading {doc_id!r} of {index!r}"):
        r = await http.get(f"/{index}/_doc/{quote(doc_id, safe='')}",
                           params={"_source_includes": ",".join(fields)})
        if r.status_code in (400, 404):  # 400: an id or index name Elasticsearch cannot take
            raise ApiError(404, "document_missing_exception", f"no document {doc_id!r} in index {index!r}")
        r.raise_for_status()  # any other refusal: mapped to the service's answer like a failed request
    return dict(r.json().get("_source") or {})


async def _text(request: Request, index: str, ref: TextRef) -> str:
    if ref.id is not None and svc(request).es is None:
        return await store_text(svc(request), index, str(ref.id))
    if ref.id is not None:
        return source_text(str(ref.id), await _doc(request, index, str(ref.id), list(TEXT_FIELDS)))
    return html_to_text(ref.html) if ref.html is not None else ref.text or ""


async def _post(request: Request, path: str, **kwargs: Any) -> dict[str, Any]:
    http = await _es(request)
    with es_answers(path):
        r = await http.post(path, **kwargs)
        if r.status_code == 404:
            raise ApiError(404, "index_not_found_exception", f"no index for {path}")
        if r.status_code == 400:
            raise ApiError(400, "illegal_argument_exception", f"Elasticsearch refused the request for {path}")
        r.raise_for_status()  # any other refusal: mapped to the service's answer like a failed request
    out: dict[str, Any] = r.json()
    return out


# ------------------------------------------------------------------------------------------ routes
@router.post("/v1/copies", responses={**ERRORS, 404: {"description": "No such document"}}, tags=["v1"])
async def copies(body: CopiesRequest, request: Request) -> dict[str, Any]:
    """Passages of A copied in B, one object per passage: ``a_start``, ``a_end``, ``b_start``, ``b_end``
    (character offsets into the texts as given, or as indexed for ids; end exclusive), ``length``
    (characters in A) and ``terms``."""
    state = svc(request)
    assert state.pool is not None
    index = index_name(state, body.index_name)
    a, b = await _text(request, index, body.a), await _text(request, index, body.b)
    passages = await state.pool.run(_passages, a, b)
    out: dict[str, Any] = {"index": index, "passages": passages}
    if body.with_text:
        out.update(a_text=a, b_text=b)
    return out


@router.post("/v1/copies/search", responses={**ERRORS, 404: {"description": "No such document"}},
             tags=["v1"])
async def copy_search(body: CopySearchRequest, request: Request) -> dict[str, Any]:
    """Indexed documents that copy at least ``min_chars`` characters of a document or text, most first:
    ``id``, ``title``, ``copied`` (characters of the query) and the passages (A = the query). Marks held
    by more than the stock-phrase cap of documents are not evidence (``stock_marks`` counts them)."""
    state = svc(request)
    assert state.pool is not None
    index = index_name(state, body.index_name)
    if state.es is None:
        return await _store_copy_search(state, index, body, await _text(request, index, body))
    await _require_marks(request, index)
    text = await _text(request, index, body)
    search = EsCopySearch(await state.pool.run(_looked, text), body.min_chars, body.max_df,
                          exclude=str(body.id) if body.id is not None else None, max_stories=body.max_stories)
    hits: list[dict[str, Any]] = []
    if search.looked:
        count = await _post(request, f"/{index}/_count", json={"query": {"match_all": {}}})
        cap = search.cap(int(count["count"]))
        lines = "".join(f"{{}}\n{json.dumps(b)}\n" for b in search.postings_searches(cap))
        answer = await _post(request, f"/{index}/_msearch", content=lines.encode(),
                             headers={"Content-Type": "application/x-ndjson"})
        ids = search.candidates(answer["responses"], cap)
        if ids:
            mget = await _post(request, f"/{index}/_mget", json={"ids": ids},
                               params={"_source_includes": ",".join(TEXT_FIELDS)})
            hits = await state.pool.run(_rank, text, search.found(mget), search.seeds, body.min_chars)
            titles = {doc_id: t for doc_id, t in await _titles(request, index, [h["id"] for h in hits])}
            for h in hits:
                h["title"] = titles.get(h["id"], "")
    return {"index": index, "stock_marks": len(search.stock), "hits": hits}


async def _store_copy_search(state: ServiceState, index: str, body: CopySearchRequest,
                             text: str) -> dict[str, Any]:
    """Partial-copy search on the embedded store (its copy marks), titles from its inputs."""
    assert state.pool is not None
    stores = embedded(state)
    store = await stores.call(stores.store, index)
    if store is None:
        raise ApiError(404, "index_not_found_exception", f"no store for index {index!r}")
    try:
        params = await stores.call(require_marks, store)
    except StoreMismatchError as exc:
        raise ApiError(400, "copy_marks_missing", str(exc)) from None
    query = Marks.from_bytes(await state.pool.run(_store_marks, text, params.tag))
    exclude = str(body.id) if body.id is not None else None
    found, stock = await stores.call(lambda: search_store(store, query, params, body.min_chars, body.max_df,
                                                          exclude, body.max_stories))
    hits = [h.to_dict() for h in found]
    titles = await stores.call(stores.titles, index, [h["id"] for h in hits])
    for h in hits:
        h["title"] = titles.get(h["id"], "")
    return {"index": index, "stock_marks": stock, "hits": hits}


async def _require_marks(request: Request, index: str) -> None:
    """A clear 400 when the index's writers add no copy marks (partial-copy search needs them)."""
    http = await _es(request)
    with es_answers(f"the mapping of {index!r}"):
        r = await http.get(f"/{quote(index, safe=',*')}/_mapping")
    if r.status_code == 404:
        raise ApiError(404, "index_not_found_exception", f"no index {index!r}")
    r.raise_for_status()
    tags = {((m.get("mappings") or {}).get("_meta") or {}).get(META_KEY, {}).get("copy_marks")
            for m in r.json().values()}
    if None in tags:
        raise ApiError(400, "copy_marks_missing", f"index {index!r} keeps no copy marks, which partial-copy "
                       f"search needs; {ES_ENABLE_HINT} (the service writes them with --copy-marks)")


async def _titles(request: Request, index: str, ids: list[str]) -> list[tuple[str, str]]:
    if not ids:
        return []
    r = await _post(request, f"/{index}/_mget", json={"ids": ids}, params={"_source_includes": "title"})
    return [(d["_id"], str((d.get("_source") or {}).get("title") or "")) for d in r.get("docs", [])]


@router.get("/v1/documents/{doc_id:anypath}", responses={**ERRORS, 404: {"description": "No such document"}},
            tags=["v1"])
async def document(doc_id: str, request: Request, index: str | None = None) -> dict[str, Any]:
    """An indexed document's text and its decision fields (``cluster_id``, ``decision``,
    ``duplicate_of``, ``distance``)."""
    state = svc(request)
    name = index_name(state, index)
    if state.es is None:
        return await store_document(state, name, doc_id)
    src = await _doc(request, name, doc_id, DOC_FIELDS)
    return {"index": name, "id": doc_id, "text": source_text(doc_id, src),
            **{k: src.get(k) for k in DOC_FIELDS if k != "content"}}


@router.get("/v1/clusters/{cluster_id:anypath}", responses=ERRORS, tags=["v1"])
async def cluster(cluster_id: str, request: Request, index: str | None = None,
                  size: int = Query(50, ge=1, le=MAX_CLUSTER_MEMBERS)) -> dict[str, Any]:
    """The members of a cluster (from the index; without Elasticsearch, from the embedded store), its
    canonical documents first."""
    state = svc(request)
    name = index_name(state, index)
    if state.es is None:
        return await store_cluster(state, name, cluster_id, size)
    body = {"size": size, "track_total_hits": True, "query": {"term": {"cluster_id": cluster_id}},
            "_source": ["title", "decision", "duplicate_of", "distance", "published_at"]}
    r = await _post(request, f"/{name}/_search", json=body)
    members = [{"id": h["_id"], **(h.get("_source") or {})} for h in r["hits"]["hits"]]
    members.sort(key=lambda m: (m.get("duplicate_of") is not None, m.get("distance") or 0, m["id"]))
    return {"index": name, "cluster_id": cluster_id, "size": r["hits"]["total"]["value"], "members": members}


# ---------------------------------------------------------------------------------- explorer page
@router.get("/ui", include_in_schema=False)
async def ui_root() -> RedirectResponse:
    return RedirectResponse("/ui/")


@router.get("/ui/{name:path}", include_in_schema=False)
async def ui_file(name: str) -> FileResponse:
    """The duplicates explorer: static files shipped in the package (no CDN, works offline)."""
    name = name or "index.html"
    if name not in {"index.html", "app.js", "style.css"}:
        raise ApiError(404, "not_found", f"no file {name!r}")
    with resources.as_file(UI_DIR / name) as path:
        return FileResponse(path)


__all__ = ["router"]
