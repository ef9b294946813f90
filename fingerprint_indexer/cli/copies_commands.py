"""`copies`: copied passages between two documents, or the stored documents that copy one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from elasticsearch import Elasticsearch

from fingerprint_indexer.cli.common import (
    build_config,
    config_options,
    default_store,
    emit,
    fail,
    store_guarded,
    store_option,
)
from fingerprint_indexer.cli.es_commands import es_group, es_guarded, es_options
from fingerprint_indexer.copies import CopyFinder
from fingerprint_indexer.copies.search import DEFAULT_MIN_CHARS, MAX_STORIES
from fingerprint_indexer.copies.stored import (
    ENABLE_HINT,
    check_params,
    marks_of,
    require_marks,
    search_store,
    winnowed_passages,
)
from fingerprint_indexer.elastic.copies import es_copy_search, es_text
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.fingerprint.winnow import Marks, WinnowParams, document_text
from fingerprint_indexer.io.readers import read_documents
from fingerprint_indexer.store.embedded import EmbeddedStore


def winnow_options(func: Any) -> Any:
    """--noise / --guarantee: the winnowing thresholds, in terms."""
    d = WinnowParams()
    func = click.option("--guarantee", "g", type=click.IntRange(1, 1000), default=d.g, show_default=True,
                        help="Guarantee threshold g: every shared passage of g terms or more is found.")(func)
    func = click.option("--noise", "k", type=click.IntRange(1, 1000), default=d.k, show_default=True,
                        help="Noise threshold k: shared runs shorter than k terms are never reported.")(func)
    return func


def search_options(where: str) -> Any:
    """--text, --min-chars, --max-df and --max-stories of a partial-copy search in ``where`` ("store" or
    "index"): one definition for the embedded and the Elasticsearch command."""
    held = "stored" if where == "store" else "indexed"

    def wrap(func: Any) -> Any:
        func = click.option(
            "--max-stories", type=click.IntRange(1, 100), default=MAX_STORIES, show_default=True,
            help="Without B: a passage counts as copied only where its marks are held by at most this many "
                 "stored stories (clusters); raise it to find a text quoted by several stored stories, at "
                 "the price of templates shared by that many.")(func)
        func = click.option("--max-df", type=click.IntRange(1), default=None,
                            help=f"Without B: marks in more {held} documents are stock phrases (default: "
                                 f"learnt from the {where}'s size).")(func)
        func = click.option("--min-chars", type=click.IntRange(1), default=DEFAULT_MIN_CHARS,
                            show_default=True,
                            help=f"Without B: list {held} documents copying at least this many characters "
                                 "of A.")(func)
        return click.option("--text", "as_text", is_flag=True,
                            help="Treat A and B as literal text, never as ids or paths.")(func)

    return wrap


def _emit_all(rows: list[dict[str, Any]], none: str) -> None:
    """One JSON line per row; ``none`` on stderr when there is no row (stdout stays pure JSON lines)."""
    for row in rows:
        emit(row)
    if not rows:
        click.echo(none, err=True)


def _params(k: int, g: int) -> WinnowParams:
    try:
        return WinnowParams(k=k, g=g)
    except ValueError as exc:
        fail(str(exc))
        raise


def _text_of(value: str, as_text: bool) -> str:
    """A file's text (.txt, .html, or a JSON lines file of one document), or ``value`` itself."""
    try:
        is_file = not as_text and Path(value).is_file()
    except OSError:  # e.g. a text too long to be a file name
        is_file = False
    if not is_file:
        return value
    docs = list(read_documents([value]))
    if len(docs) != 1:
        fail(f"{value} holds {len(docs)} documents; give a file with one document")
    return document_text(docs[0])


@click.command("copies")
@click.argument("a")
@click.argument("b", required=False)
@store_option
@search_options("store")
@click.option("--show", is_flag=True, help="Add the passage's text in A (when A is a text or file).")
@winnow_options
@config_options
def copies_cmd(a: str, b: str | None, store_dir: str | None, as_text: bool, min_chars: int,
               max_df: int | None, max_stories: int, show: bool, k: int, g: int, top_k: int,
               idf_path: str | None, synonyms: str | None, n_blocks: int | None) -> None:
    """Copied passages of A in B, one JSON line per passage: a_start, a_end, b_start, b_end (character
    offsets into the texts as given, end exclusive), length (characters in A) and terms.

    A and B are ids of documents in the store (--store; without B the default store too), files
    (.txt, .html, one-document .jsonl) or texts. Passages have at least --guarantee terms; offsets of
    a stored document refer to the text it was stored with.
    Without B: the stored documents that copy at least --min-chars characters of A, one JSON line
    each (id, copied, passages), most copied first.
    """
    params = _params(k, g)

    def body() -> None:
        config = build_config(top_k, idf_path, synonyms, n_blocks)
        fpr = Fingerprinter(config)
        finder = CopyFinder(fpr.tokenizer, params)
        store_path = Path(store_dir) if store_dir else default_store()
        have_store = (store_dir is not None or b is None) and (store_path / "leveldb").is_dir()
        if b is None and not have_store:
            fail(f"no store at {store_path} (create one with 'fingerprint-indexer dedupe --store DIR ...')")
        store = EmbeddedStore(store_path, config.layout, fpr.version) if have_store else None
        try:
            if store is not None and store.marks_tag is not None:
                check_params(store, params)

            def resolve(value: str) -> tuple[str | None, Marks | None]:
                """(text, None) for a text or file; (None, marks) for a stored id."""
                if store is not None and not as_text and store.record(value) is not None:
                    if store.marks_tag is None:
                        fail(f"store {store_path} keeps neither texts nor copy marks, so stored document "
                             f"{value!r} cannot be compared: give its text or file, or {ENABLE_HINT}")
                    m = marks_of(store, value)
                    if m is None:
                        fail(f"document {value!r} in store {store_path} has no copy marks")
                    return None, m
                return _text_of(value, as_text), None

            text_a, marks_a = resolve(a)
            if b is None:
                assert store is not None
                require_marks(store)
                query = marks_a if marks_a is not None else finder.marked(text_a or "")
                hits, _ = search_store(store, query, params, min_chars, max_df, exclude=a,
                                       max_stories=max_stories)
                _emit_all([h.to_dict() for h in hits],
                          f"no stored document copies {min_chars} characters or more")
                return
            text_b, marks_b = resolve(b)
            if text_a is not None and text_b is not None:
                passages = finder.passages(text_a, text_b)
            else:
                ma = marks_a if marks_a is not None else finder.marked(text_a or "")
                mb = marks_b if marks_b is not None else finder.marked(text_b or "")
                passages = winnowed_passages(ma, mb, params)
            rows = [p.to_dict() for p in passages]
            if show and text_a is not None:
                for p, row in zip(passages, rows, strict=True):
                    row["text"] = text_a[p.a_start : p.a_end]
            _emit_all(rows, f"no copied passage of {params.g} terms or more")
        finally:
            if store is not None:
                store.close()
    store_guarded(body)


@click.command("copies")
@click.argument("a")
@click.argument("b", required=False)
@es_options
@search_options("index")
@winnow_options
def es_copies_cmd(a: str, b: str | None, es_url: str | None, index_name: str, as_text: bool, min_chars: int,
                  max_df: int | None, max_stories: int, k: int, g: int) -> None:
    """Copied passages of A in B (ids of indexed documents, files or texts), one JSON line per passage;
    without B, the indexed documents that copy at least --min-chars characters of A (id, copied,
    passages). Offsets refer to the indexed text (its content field, else its title)."""
    params = _params(k, g)

    def body(client: Elasticsearch) -> None:
        finder = CopyFinder(Fingerprinter().tokenizer, params)

        def resolve(value: str) -> str:
            if not as_text:
                text = es_text(client, index_name, value)
                if text is not None:
                    return text
            return _text_of(value, as_text)

        text_a = resolve(a)
        if b is None:
            hits = es_copy_search(client, index_name, finder, text_a, min_chars, max_df, exclude=a,
                                  max_stories=max_stories)
            _emit_all([h.to_dict() for h in hits],
                      f"no indexed document copies {min_chars} characters or more")
            return
        passages = finder.passages(text_a, resolve(b))
        _emit_all([p.to_dict() for p in passages], f"no copied passage of {params.g} terms or more")

    es_guarded(es_url, body)


# ``es copies`` joins the es group when this module is imported (cli.main.EXTENSIONS)
es_group.add_command(es_copies_cmd)
