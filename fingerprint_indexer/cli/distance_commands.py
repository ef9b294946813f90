"""`distance`: the Hamming distance of two fingerprints, files or texts.

Apart from the other commands so that two hex fingerprints are compared without importing the
fingerprint pipeline (NumPy, the segmenter, the IDF table): those are imported only when a file or a
text has to be fingerprinted.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from fingerprint_indexer.cli.common import emit, run_guarded
from fingerprint_indexer.fingerprint.hamming import from_hex, hamming, to_hex

if TYPE_CHECKING:
    from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter


def _resolve(value: str, fpr: Fingerprinter | None, as_text: bool) -> tuple[int, Fingerprinter | None]:
    """A 16-hex-digit fingerprint, a file path, or literal text."""
    if not as_text:
        try:
            return from_hex(value), fpr
        except ValueError:
            pass
    from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
    from fingerprint_indexer.io.readers import InputError
    from fingerprint_indexer.text.clean import clean

    fpr = fpr or Fingerprinter()
    path = Path(value)
    if not as_text and path.is_file():
        try:
            data = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(value, None, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
        html = data if path.suffix.lower() in (".html", ".htm") else None
        return fpr.fingerprint_text(clean(None if html else data, html)).fingerprint, fpr
    return fpr.fingerprint(value).fingerprint, fpr


@click.command("distance")
@click.argument("a")
@click.argument("b")
@click.option("--text", "as_text", is_flag=True, help="Treat A and B as literal text, never as hex or paths.")
def distance_cmd(a: str, b: str, as_text: bool) -> None:
    """Hamming distance of two fingerprints (16 hex digits), files, or texts."""
    def body() -> None:
        fa, fpr = _resolve(a, None, as_text)
        fb, _ = _resolve(b, fpr, as_text)
        emit({"a": to_hex(fa), "b": to_hex(fb), "distance": hamming(fa, fb)})
    run_guarded(body)
