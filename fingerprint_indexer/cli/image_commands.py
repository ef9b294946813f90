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
def images_cmd(paths: tuple[str, ...]) -> None:
    """Fingerprint pictures (JPEG, PNG, WebP, GIF): one JSON line per picture with its path, perceptual
    hash, colour grid, pixel digest and look-up keys; a file that is not a readable picture gives an
    ``error`` line (and a line on stderr), the others go on, and the exit code is 1."""
    from fingerprint_indexer.fingerprint.image import ImageError, fingerprint_file, image_keys

    failed = 0

    def body() -> None:
        nonlocal failed
        for path in picture_files(paths):
            try:
                fp = fingerprint_file(path)
            except ImageError as exc:
                failed += 1
                emit({"path": str(path), "error": str(exc)})
                click.echo(f"error: {exc}", err=True)
                continue
            emit({"path": str(path), **fp.to_json(), "keys": image_keys(fp)})

    run_guarded(body)
    if failed:
        sys.exit(1)
