"""Copy look-ups against the embedded store (which keeps winnowed marks with offsets, not texts)."""

from __future__ import annotations

from fingerprint_indexer.copies.passages import Passage, find_passages
from fingerprint_indexer.copies.search import (
    DEFAULT_MIN_CHARS,
    CopyHit,
    default_max_df,
    search,
    stored_marks,
)
from fingerprint_indexer.copies.winnow import Marks, WinnowParams
from fingerprint_indexer.store.errors import StoreMismatchError
from fingerprint_indexer.store.exact import ExactStore


def check_params(store: ExactStore, params: WinnowParams) -> None:
    """Refuse to compare marks made under other winnowing parameters."""
    tag = store.marks_tag
    if tag is not None and tag != params.tag:
        raise StoreMismatchError(f"store {store.directory} holds copy marks of {tag!r}; these settings make "
                                 f"{params.tag!r}")


def marks_of(store: ExactStore, doc_id: str) -> Marks | None:
    return stored_marks(store.marks(doc_id))


def search_store(
    store: ExactStore,
    query: Marks,
    params: WinnowParams,
    min_chars: int = DEFAULT_MIN_CHARS,
    max_df: int | None = None,
    exclude: str | None = None,
) -> tuple[list[CopyHit], int]:
    """Stored documents copying at least ``min_chars`` characters of the query (its blocks, winnowed ones
    flagged);
    ``max_df`` defaults to the cap learnt from the store's size."""
    check_params(store, params)
    cap = default_max_df(store.n_docs) if max_df is None else max_df
    return search(query, store.mark_postings, lambda d: marks_of(store, d), params, min_chars, cap, exclude)


def winnowed_passages(a: Marks, b: Marks, params: WinnowParams) -> list[Passage]:
    """Passages between two documents' stored marks (a store keeps no text, but every block with its
    offsets; only a text beyond ``MAX_STORED_BLOCKS`` blocks is kept as winnowed marks, whose passages
    start and end at kept marks)."""
    exact = a.kept is not None and b.kept is not None
    return find_passages(a, b, params, min_terms=None if exact else params.k)
