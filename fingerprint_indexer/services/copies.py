"""Partial-copy search and copied passages on Elasticsearch (the index keeps each document's text).

:class:`EsCopySearch` holds the steps without I/O, so the command line (official client) and the
service (its async HTTP client) send the same requests: count the documents holding each query mark,
counting no further than the stock-phrase cap (one ``_msearch``); fetch the documents sharing the
most non-stock marks (one ``_search``); compare their texts with the query's, passage by passage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from elasticsearch import Elasticsearch

from fingerprint_indexer.copies import CopyFinder, document_text
from fingerprint_indexer.copies.search import (
    DEFAULT_MIN_CHARS,
    MAX_CANDIDATES,
    CopyHit,
    copies_in,
    default_max_df,
    query_marks,
)
from fingerprint_indexer.documents import Document
from fingerprint_indexer.index.elasticsearch import copy_candidates_search, copy_df_search

TEXT_FIELDS = ("title", "content")


def source_text(doc_id: str, source: Mapping[str, Any]) -> str:
    """The text of an indexed document, as passage offsets refer to it."""
    content = source.get("content")
    return document_text(Document(id=doc_id, title=str(source.get("title") or ""),
                                  content=content if isinstance(content, str) else None))


class EsCopySearch:
    """One partial-copy search: the requests to send and what to make of the answers (no I/O, no text
    processing: the caller segments, so a service can do that in its worker processes)."""

    def __init__(self, looked: Sequence[int], min_chars: int = DEFAULT_MIN_CHARS, max_df: int | None = None,
                 exclude: str | None = None) -> None:
        self.looked, self.min_chars, self.max_df, self.exclude = list(looked), min_chars, max_df, exclude
        self.stock: set[int] = set()

    def cap(self, n_docs: int) -> int:
        """The stock-phrase cap: given, or learnt from the index's size."""
        return self.max_df if self.max_df is not None else default_max_df(n_docs)

    def df_searches(self, cap: int) -> list[dict[str, Any]]:
        """One bounded count per query mark (``_msearch`` bodies)."""
        return [copy_df_search(f"{m:016x}", cap) for m in self.looked]

    def candidates_search(self, totals: Sequence[int], cap: int) -> dict[str, Any] | None:
        """The candidates request, given each mark's counted document frequency (None: nothing to ask)."""
        self.stock = {m for m, n in zip(self.looked, totals, strict=True) if n > cap}
        marks = [f"{m:016x}" for m in self.looked if m not in self.stock]
        if not marks:
            return None
        return copy_candidates_search(marks, MAX_CANDIDATES + 1, TEXT_FIELDS)

    @property
    def seeds(self) -> list[int]:
        """The query's marks that are evidence (not stock phrases)."""
        return [m for m in self.looked if m not in self.stock]

    def found(self, response: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(id, text) of the candidates in a candidates response."""
        return [(h["_id"], source_text(h["_id"], h.get("_source") or {}))
                for h in response["hits"]["hits"] if h["_id"] != self.exclude][:MAX_CANDIDATES]


def rank(finder: CopyFinder, text: str, found: Sequence[tuple[str, str]], seeds: Sequence[int],
         min_chars: int) -> list[CopyHit]:
    """The candidates that copy at least ``min_chars`` characters of ``text``, exact extents."""
    others = ((doc_id, finder.blocks(t)) for doc_id, t in found)
    return copies_in(finder.blocks(text), seeds, others, finder.params, min_chars, finder.params.g)


def df_totals(responses: Sequence[Mapping[str, Any]]) -> list[int]:
    """Counted document frequencies of an ``_msearch`` answer (an error counts as a stock phrase)."""
    out = []
    for r in responses:
        total = (r.get("hits") or {}).get("total")
        out.append(int(total["value"]) if isinstance(total, Mapping) else 1 << 30)
    return out


def es_copy_search(client: Elasticsearch, index: str, finder: CopyFinder, text: str,
                   min_chars: int = DEFAULT_MIN_CHARS, max_df: int | None = None,
                   exclude: str | None = None) -> list[CopyHit]:
    """Indexed documents copying at least ``min_chars`` characters of ``text`` (official client)."""
    search = EsCopySearch(query_marks(finder.marks(text)), min_chars, max_df, exclude)
    if not search.looked:
        return []
    cap = search.cap(int(client.count(index=index)["count"]))
    lines: list[dict[str, Any]] = []
    for df_body in search.df_searches(cap):
        lines += [{}, df_body]
    answer = client.msearch(index=index, searches=lines)
    wanted = search.candidates_search(df_totals(answer["responses"]), cap)
    if wanted is None:
        return []
    found = search.found(client.search(index=index, body=wanted).body)
    return rank(finder, text, found, search.seeds, min_chars)


def es_text(client: Elasticsearch, index: str, doc_id: str) -> str | None:
    """An indexed document's text (None when there is no such document)."""
    r = client.options(ignore_status=404).get(index=index, id=doc_id, source_includes=list(TEXT_FIELDS))
    return source_text(doc_id, r["_source"]) if r.get("found") else None
