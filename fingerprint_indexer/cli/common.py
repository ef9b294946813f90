"""Options and helpers shared by the CLI commands.

An option that several commands take is declared here once, as a decorator, with one help text and one
default: ``--k`` (:func:`k_option`), ``--keep`` (:func:`keep_option`), ``--on-duplicate``
(:func:`on_duplicate_option`), ``--processes`` (:func:`processes_option`), ``--skip-errors``
(:func:`skip_errors_option`), ``--output`` of the decisions (:func:`decisions_output_option`), ``--store``
of the embedded store (:func:`store_option`), the fingerprint's own options (:func:`config_options`) and
``--copy-marks`` (:func:`copy_marks_option`). What they need beyond click is imported when a command that
uses them is loaded, so ``--help`` and ``distance`` stay light.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from fingerprint_indexer.errors import FingerprintIndexerError, one_line

if TYPE_CHECKING:  # the fingerprint pipeline (NumPy and more) is imported by the commands that use it
    from fingerprint_indexer.fingerprint.blocks import BlockLayout
    from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig
    from fingerprint_indexer.records.neighbour import Neighbour, Neighbours

F = TypeVar("F", bound=Callable[..., Any])

EXIT_INPUT_ERROR = 1


def config_options(func: F) -> F:
    """--top-k, --idf, --synonyms, --blocks: the options that define a fingerprint."""
    from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig

    defaults = FingerprintConfig()
    func = click.option("--blocks", "n_blocks", type=click.IntRange(4, 64), default=None,
                        help="Number of blocks in the candidate index (k + 1 blocks serve distance k). "
                             "Default: 4 for a store; an Elasticsearch index keeps the layout it was "
                             "created with (a new one gets permuted keys).")(func)
    func = click.option("--synonyms", type=click.Path(exists=True, dir_okay=False),
                        help="Synonym map file: 'variant<TAB>canonical' per line.")(func)
    func = click.option("--idf", "idf_path", type=click.Path(exists=True, dir_okay=False),
                        help="IDF table from 'fingerprint-indexer idf fit' (default: jieba's table).")(func)
    func = click.option("--top-k", type=click.IntRange(0, 100_000), default=defaults.top_k, show_default=True,
                        help="Number of top-weighted terms folded into the fingerprint (0 = all).")(func)
    return func


def copy_marks_option(func: F) -> F:
    """--copy-marks/--no-copy-marks: keep passage-level copy marks of every document written (opt-in)."""
    return click.option(
        "--copy-marks/--no-copy-marks", "copy_marks", default=None,
        help="Keep passage-level copy marks of every document, for partial-copy search and passages "
             "between stored documents (about twice the fingerprinting work and a store several times "
             "larger). Recorded when the store or index is created; later writes follow it (default: "
             "what the store or index records, off for a new one).")(func)


def default_store() -> Path:
    """The store used when --store is not given: under the user's data directory."""
    import platformdirs

    return Path(platformdirs.user_data_dir("fingerprint-indexer")) / "store"


def store_option(func: F) -> F:
    """--store DIR: the embedded store a command reads or writes."""
    return click.option("--store", "store_dir", type=click.Path(file_okay=False), default=None,
                        help=f"Store directory (default: {default_store()}).")(func)


def k_option(func: F) -> F:
    """--k: the near-duplicate distance."""
    return click.option("--k", "k", type=click.IntRange(0, 63), default=3, show_default=True,
                        help="Largest Hamming distance counted as near-duplicate; the block layout must "
                             "serve it (k + 1 plain blocks serve distance k).")(func)


def keep_option(note: str = "") -> Callable[[F], F]:
    """--keep: which copy of a duplicate group is its canonical (``note``: what it means to this command)."""
    from fingerprint_indexer.engine.rules import KEEP_POLICIES

    def wrap(func: F) -> F:
        return click.option(
            "--keep", type=click.Choice(KEEP_POLICIES), default="first", show_default=True,
            help="Which copy of a duplicate group is its canonical: first (the first seen), longest or "
                 "newest (a longer or newer copy takes over: it is reported with replaces, and the previous "
                 "canonical is re-pointed at it)." + (f" {note}" if note else ""))(func)

    return wrap


def on_duplicate_option(func: F) -> F:
    """--on-duplicate: what is written of a document decided a duplicate."""
    from fingerprint_indexer.sidecar.settings import ON_DUPLICATE

    return click.option("--on-duplicate", type=click.Choice(ON_DUPLICATE), default="tag", show_default=True,
                        help="tag: index duplicates with duplicate_of set; skip: leave them out of the "
                             "index.")(func)


def processes_option(default: int | None = 1) -> Callable[[F], F]:
    """--processes: fingerprinting worker processes (``default`` None: the CPU count)."""
    def wrap(func: F) -> F:
        return click.option("--processes", type=click.IntRange(1, 256),
                            default=default if default is not None else max(1, os.cpu_count() or 1),
                            show_default="CPU count" if default is None else True,
                            help="Worker processes for fingerprinting; 1: this process fingerprints "
                                 "(on --threads threads, where the command takes them).")(func)

    return wrap


def threads_option(func: F) -> F:
    """--threads: fingerprinting threads within one process (used with --processes 1)."""
    from fingerprint_indexer.fingerprint.native import default_threads

    return click.option("--threads", type=click.IntRange(1, 256), default=default_threads(),
                        show_default="the CPU count (at most 4) with the compiled pass, else 1",
                        help="Fingerprinting threads within one process, used with --processes 1: "
                             "the compiled pass runs them in parallel.")(func)


def skip_errors_option(func: F) -> F:
    """--skip-errors: go on past unreadable input."""
    return click.option("--skip-errors", is_flag=True,
                        help="Report bad input lines/files on stderr and go on.")(func)


def decisions_output_option(func: F) -> F:
    """--output/-o: where a deduplicating command writes its JSONL decisions."""
    return click.option("--output", "-o", type=click.Path(dir_okay=False, allow_dash=True), default="-",
                        help="Write the JSONL decisions here instead of stdout.")(func)


def build_config(top_k: int, idf_path: str | None, synonyms: str | None,
                 n_blocks: int | None) -> FingerprintConfig:  # fmt: skip
    from fingerprint_indexer.fingerprint.blocks import BlockLayout
    from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig

    return FingerprintConfig(top_k=top_k, idf_path=idf_path, synonyms_path=synonyms,
                             layout=chosen_layout(n_blocks) or BlockLayout())


def chosen_layout(n_blocks: int | None) -> BlockLayout | None:
    """The layout ``--blocks`` asks for (None: not given, so the store's or index's own)."""
    from fingerprint_indexer.fingerprint.blocks import BlockLayout

    return BlockLayout.even(n_blocks) if n_blocks else None


#: What :func:`emit` writes with: ``json.dumps(obj, ensure_ascii=False)`` makes an encoder each call.
_LINE = json.JSONEncoder(ensure_ascii=False)


def emit(obj: dict[str, Any], out: Any = None) -> None:
    """One JSON line, UTF-8 text kept readable (what ``json.dumps(obj, ensure_ascii=False)`` gives)."""
    (out or sys.stdout).write(_LINE.encode(obj) + "\n")


def neighbour_rows(found: Neighbours, explain: bool) -> Iterator[tuple[Neighbour, dict[str, Any]]]:
    """The lines of a look-up's answer (``similar``, ``es similar``), each with its neighbour: id,
    distance, cluster_id and duplicate_of of each near-duplicate; with ``explain`` the rejected candidates
    too, and under ``why`` the rule's verdict on each (``rejected_at``, ``rejected_because`` when
    rejected)."""
    for other in found.all() if explain else found.matches:
        row: dict[str, Any] = {"id": other.id, "distance": other.distance, "cluster_id": other.cluster_id,
                               "duplicate_of": other.duplicate_of}  # fmt: skip
        if explain:
            assert other.verdict is not None  # every reader judges every candidate
            row["why"] = other.verdict.to_dict()
        yield other, row


def fail(message: str, code: int = EXIT_INPUT_ERROR) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def run_guarded(body: Callable[[], None]) -> None:
    """Run a command body, turning the package's errors (unreadable input, IDF or synonym files, stores,
    Elasticsearch) into one clear line and a non-zero exit."""
    try:
        body()
    except FingerprintIndexerError as exc:
        fail(one_line(exc))
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(0)
    except OSError as exc:  # an output file that cannot be written, a full disk
        where = f"{exc.filename}: " if exc.filename else ""
        fail(f"{where}{exc.strerror or exc}")


def store_guarded(body: Any, store: Path | None = None) -> None:
    """Run a command body on an embedded store; store problems (locked, read-only, damaged, disk full)
    become one line."""
    import plyvel

    from fingerprint_indexer.io.readers import InputError
    from fingerprint_indexer.store.db import describe
    from fingerprint_indexer.store.errors import StoreError

    def wrapped() -> None:
        try:
            body()
        except StoreError as exc:
            fail(str(exc))
        except plyvel.Error as exc:  # met while reading or writing: a damaged table file, a failing disk
            fail(str(describe(store / "leveldb" if store else "", exc, store)))
        except ValueError as exc:  # e.g. k larger than the block layout serves
            if isinstance(exc, InputError):
                raise
            fail(str(exc))
    run_guarded(wrapped)
