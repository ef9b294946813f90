"""`images`: fingerprint picture files, one JSON line each; a bad file is one line and the run goes on."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

from fingerprint_indexer.cli.common import emit, run_guarded

#: File name endings read from a folder (a file named on the command line is read whatever its name).
SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif")


def picture_files(paths: tuple[str, ...]) -> Iterator[Path]:
    """The files named, and the pictures of the folders named (recursively, in name order)."""
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            yield from sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in SUFFIXES)
        else:
            yield p


@click.command("images")
@click.argument("paths", nargs=-1, required=True)
@click.option("--store", "store_dir", type=click.Path(file_okay=False), default=None,
              help="Decide each picture against this embedded store (new, exact_duplicate, "
                   "near_duplicate) and keep it there, under its path as given.")
def images_cmd(paths: tuple[str, ...], store_dir: str | None) -> None:
    """Fingerprint pictures (JPEG, PNG, WebP, GIF): one JSON line per picture with its path, perceptual
    hash, colour grid, pixel digest and look-up keys; with --store, also its decision, duplicate_of (the
    group's first picture) and distance. A file that is not a readable picture gives an ``error`` line
    (and a line on stderr), the others go on, and the exit code is 1."""
    from fingerprint_indexer.cli.common import store_guarded
    from fingerprint_indexer.fingerprint.image import ImageError, fingerprint_file, image_keys
    from fingerprint_indexer.store.embedded import EmbeddedStore
    from fingerprint_indexer.store.images import ImageStore

    failed = 0

    def body() -> None:
        nonlocal failed
        store = EmbeddedStore(store_dir) if store_dir else None
        try:
            pictures = ImageStore(store) if store else None
            for path in picture_files(paths):
                try:
                    fp = fingerprint_file(path)
                except ImageError as exc:
                    failed += 1
                    emit({"path": str(path), "error": str(exc)})
                    click.echo(f"error: {exc}", err=True)
                    continue
                line = {"path": str(path), **fp.to_json(), "keys": image_keys(fp)}
                if pictures is not None:
                    decision = pictures.decide(str(path), fp, source=str(path)).to_dict()
                    line |= {k: v for k, v in decision.items() if k != "id"}
                emit(line)
        finally:
            if store is not None:
                store.close()

    if store_dir:
        store_guarded(body, Path(store_dir))
    else:
        run_guarded(body)
    if failed:
        sys.exit(1)
