"""`store check DIR` and `store repair DIR`: what of an embedded store is damaged, and its repair."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click
import plyvel

from fingerprint_indexer.cli.common import fail, run_guarded
from fingerprint_indexer.store.check import Report, check, repair
from fingerprint_indexer.store.db import describe
from fingerprint_indexer.store.errors import StoreError


@click.group("store")
def store_group() -> None:
    """Check or repair an embedded store directory (as given to dedupe --store)."""


def _print(report: Report, heading: str) -> None:
    click.echo(f"store {report.store}: {heading}")
    for line in report.facts:
        click.echo(f"  {line}")
    for line in report.problems:
        click.echo(f"  damaged: {line}")
    for line in report.lost:
        click.echo(f"  not recoverable: {line}")


def _run(op: Callable[[Path], Report], directory: str) -> Report:
    """``op`` on the store, its faults as one-line errors (a disk that fails under it, damage LevelDB
    cannot salvage)."""
    try:
        return op(Path(directory))
    except StoreError as exc:
        fail(str(exc))
    except plyvel.Error as exc:
        fail(str(describe(Path(directory) / "leveldb", exc, directory)))
    raise AssertionError("unreachable: fail exits")


@store_group.command("check")
@click.argument("directory", type=click.Path(file_okay=False))
def check_cmd(directory: str) -> None:
    """Say precisely what is damaged (exit code 1), or that the store is healthy; changes nothing."""
    def body() -> None:
        report = _run(check, directory)
        _print(report, "healthy" if report.ok else f"{len(report.problems)} problems "
               f"(repair: fingerprint-indexer store repair {directory})")
        if not report.ok:
            raise SystemExit(1)
    run_guarded(body)


@store_group.command("repair")
@click.argument("directory", type=click.Path(file_okay=False))
def repair_cmd(directory: str) -> None:
    """Rebuild what can be rebuilt from the stored records (manifest, Bloom filter, counters, digest keys,
    block indexes) and say what cannot be recovered."""
    def body() -> None:
        report = _run(repair, directory)
        _print(report, "repaired" + ("" if not report.lost else "; some data could not be recovered"))
    run_guarded(body)


def register(cli: click.Group) -> None:
    cli.add_command(store_group)
