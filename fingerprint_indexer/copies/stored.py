"""Copy look-ups against the embedded store (which keeps winnowed marks with offsets, not texts)."""

from __future__ import annotations

from fingerprint_indexer.copies.passages import Passage, find_passages
from fingerprint_indexer.copies.search import (
    DEFAULT_MIN_CHARS,
    MAX_STORIES,
    CopyHit,
    default_max_df,
    search,
    stored_marks,
)
from fingerprint_indexer.fingerprint.winnow import Marks, WinnowParams
from fingerprint_indexer.store.embedded import EmbeddedStore
from fingerprint_indexer.store.errors import StoreMismatchError

ENABLE_HINT = "rebuild it with copy marks ('fingerprint-indexer dedupe --copy-marks --store NEW ...')"


def settle_marks(
    store: EmbeddedStore, params: WinnowParams | None, copy_marks: bool | None
) -> WinnowParams | None:
    """The copy-marks setting a writer of ``store`` follows (None: no marks).

    ``copy_marks`` None follows the store (a new store takes ``params``); True or False must match what
    the store records, so a store keeps marks of every document or of none. A new store records it; a
    store made before the setting existed keeps none.
    """
    if not store.marks_recorded:
        if store.n_docs:
            tag = None
        elif copy_marks is None:
            tag = params.tag if params is not None else None
        else:
            tag = (params or WinnowParams()).tag if copy_marks else None
        store.record_marks(tag)
    held = store.marks_tag
    if copy_marks is not None and copy_marks != (held is not None):
        raise StoreMismatchError(
            f"store {store.directory} was built {'with' if held else 'without'} copy marks; a store keeps "
            f"them for every document or none: use another store, or rebuild this one "
            f"{'with' if copy_marks else 'without'} --copy-marks")
    if held is not None and copy_marks and params is not None and params.tag != held:
        raise StoreMismatchError(f"store {store.directory} keeps copy marks of {held!r}, not {params.tag!r}; "
                                 "rebuild it to change the winnowing parameters")
    return None if held is None else WinnowParams.from_tag(held)


def require_marks(store: EmbeddedStore) -> WinnowParams:
    """The store's winnowing parameters; a clear error when it keeps no copy marks."""
    tag = store.marks_tag
    if tag is None:
        raise StoreMismatchError(f"store {store.directory} keeps no copy marks, which partial-copy search "
                                 f"needs; {ENABLE_HINT}")
    return WinnowParams.from_tag(tag)


def check_params(store: EmbeddedStore, params: WinnowParams) -> None:
    """Refuse to compare marks made under other winnowing parameters."""
    tag = store.marks_tag
    if tag is not None and tag != params.tag:
        raise StoreMismatchError(f"store {store.directory} holds copy marks of {tag!r}; these settings make "
                                 f"{params.tag!r}")


def marks_of(store: EmbeddedStore, doc_id: str) -> Marks | None:
    return stored_marks(store.marks(doc_id))


def search_store(
    store: EmbeddedStore,
    query: Marks,
    params: WinnowParams,
    min_chars: int = DEFAULT_MIN_CHARS,
    max_df: int | None = None,
    exclude: str | None = None,
    max_stories: int = MAX_STORIES,
) -> tuple[list[CopyHit], int]:
    """Stored documents copying at least ``min_chars`` characters of the query (its blocks, winnowed ones
    flagged);
    ``max_df`` defaults to the cap learnt from the store's size."""
    require_marks(store)
    check_params(store, params)
    cap = default_max_df(store.n_docs) if max_df is None else max_df
    return search(query, store.mark_postings, lambda d: marks_of(store, d), params, min_chars, cap, exclude,
                  max_stories)


def winnowed_passages(a: Marks, b: Marks, params: WinnowParams) -> list[Passage]:
    """Passages between two documents' stored marks (a store keeps no text, but every block with its
    offsets; only a text beyond ``MAX_STORED_BLOCKS`` blocks is kept as winnowed marks, whose passages
    start and end at kept marks)."""
    exact = a.kept is not None and b.kept is not None
    return find_passages(a, b, params, min_terms=None if exact else params.k)
