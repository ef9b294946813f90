"""Options and helpers shared by the CLI commands."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from fingerprint_indexer.errors import FingerprintIndexerError, one_line

if TYPE_CHECKING:  # the fingerprint pipeline (NumPy and more) is imported by the commands that use it
    from fingerprint_indexer.fingerprint.blocks import BlockLayout
    from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig

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


def emit(obj: dict[str, Any], out: Any = None) -> None:
    """One JSON line, UTF-8 text kept readable."""
    (out or sys.stdout).write(json.dumps(obj, ensure_ascii=False) + "\n")


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
