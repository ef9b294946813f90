"""Partial-copy search and copied passages on Elasticsearch (the index keeps each document's text).

:class:`EsCopySearch` holds the steps without I/O, so the command line (official client) and the
service (its async HTTP client) send the same requests: the bounded postings (documents and their
clusters) of each query mark (one ``_msearch``), from which stock marks and candidates follow as in
the embedded store; the candidates' texts (one ``_mget``), compared with the query's passage by passage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from elasticsearch import Elasticsearch

from fingerprint_indexer.copies import CopyFinder
from fingerprint_indexer.copies.search import (
    DEFAULT_MIN_CHARS,
    MAX_STORIES,
    CopyHit,
    candidates,
    copies_in,
    default_max_df,
    query_marks,
)
from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.es_setup import MappingConflict, require_index_marks
from fingerprint_indexer.es.codec import copy_postings_search
from fingerprint_indexer.fingerprint.winnow import document_text

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
                 exclude: str | None = None, max_stories: int = MAX_STORIES) -> None:
        self.looked, self.min_chars, self.max_df, self.exclude = list(looked), min_chars, max_df, exclude
        self.max_stories = max_stories
        self.stock: set[int] = set()
        #: per candidate, the query's marks that are evidence of it copying (see copies.search)
        self.seeds: dict[str, list[int]] = {}

    def cap(self, n_docs: int) -> int:
        """The stock-phrase cap (documents per mark): given, or learnt from the index's size."""
        return self.max_df if self.max_df is not None else default_max_df(n_docs)

    def postings_searches(self, cap: int) -> list[dict[str, Any]]:
        """One bounded postings list per query mark (``_msearch`` bodies)."""
        return [copy_postings_search(f"{m:016x}", cap + 2) for m in self.looked]

    def candidates(self, responses: Sequence[Mapping[str, Any]], cap: int) -> list[str]:
        """The candidate ids, given the ``_msearch`` answers (an error counts as a stock phrase)."""
        lists: dict[int, list[tuple[str, str]]] = {}
        for m, r in zip(self.looked, responses, strict=True):
            hits = (r.get("hits") or {}).get("hits")
            if hits is None:  # refused: treated as a stock phrase
                lists[m] = [(f"?{i}", f"?{i}") for i in range(cap + 2)]
                continue
            lists[m] = [(h["_id"], ((h.get("fields") or {}).get("cluster_id") or [h["_id"]])[0])
                        for h in hits]
        found = candidates(self.looked, lambda m, _limit: lists[m], cap, self.exclude, self.max_stories)
        self.stock = found.stock
        self.seeds = {d: sorted(found.evidence(d)) for d in found.ids}
        return found.ids

    @staticmethod
    def found(mget: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(id, text) of the candidates in an ``_mget`` answer."""
        return [(d["_id"], source_text(d["_id"], d.get("_source") or {})) for d in mget.get("docs", [])
                if d.get("found")]


def rank(finder: CopyFinder, text: str, found: Sequence[tuple[str, str]], seeds: Mapping[str, Sequence[int]],
         min_chars: int) -> list[CopyHit]:
    """The candidates that copy at least ``min_chars`` characters of ``text``, exact extents (``seeds``:
    per candidate, its evidence marks)."""
    others = ((doc_id, finder.blocks(t)) for doc_id, t in found)
    # the query's winnowed blocks flagged: the share of a passage's marks that are evidence counts them
    return copies_in(finder.marked(text), lambda d: set(seeds.get(d, ())), others, finder.params, min_chars,
                     finder.params.g)


def es_copy_search(client: Elasticsearch, index: str, finder: CopyFinder, text: str,
                   min_chars: int = DEFAULT_MIN_CHARS, max_df: int | None = None,
                   exclude: str | None = None, max_stories: int = MAX_STORIES) -> list[CopyHit]:
    """Indexed documents copying at least ``min_chars`` characters of ``text`` (official client); a
    :class:`MappingConflict` when the index keeps no copy marks."""
    indexed = require_index_marks(client, index)
    if indexed != finder.params:
        raise MappingConflict(f"index {index!r} keeps copy marks of {indexed.tag!r}; these settings make "
                              f"{finder.params.tag!r}")
    search = EsCopySearch(query_marks(finder.marks(text)), min_chars, max_df, exclude, max_stories)
    if not search.looked:
        return []
    cap = search.cap(int(client.count(index=index)["count"]))
    lines: list[dict[str, Any]] = []
    for body in search.postings_searches(cap):
        lines += [{}, body]
    answer = client.msearch(index=index, searches=lines)
    ids = search.candidates(answer["responses"], cap)
    if not ids:
        return []
    found = search.found(client.mget(index=index, ids=ids, source_includes=list(TEXT_FIELDS)).body)
    return rank(finder, text, found, search.seeds, min_chars)


def es_text(client: Elasticsearch, index: str, doc_id: str) -> str | None:
    """An indexed document's text (None when there is no such document)."""
    r = client.options(ignore_status=404).get(index=index, id=doc_id, source_includes=list(TEXT_FIELDS))
    return source_text(doc_id, r["_source"]) if r.get("found") else None
