"""Read documents from JSONL (optionally gzip), plain text/HTML files, folders, or stdin.

Errors name the file and line (``InputError``); with ``skip_errors`` they are reported through
``on_error`` and reading continues. A file read from a folder is identified by its path relative to
that folder; files of other kinds in a folder are counted in a note on stderr, never dropped unsaid.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from fingerprint_indexer.documents import Document, DocumentError
from fingerprint_indexer.errors import FingerprintIndexerError

TEXT_SUFFIXES = (".txt", ".text")
HTML_SUFFIXES = (".html", ".htm")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz", ".json")


class InputError(FingerprintIndexerError, ValueError):
    """Unreadable input, located by source and line."""

    def __init__(self, source: str, line: int | None, message: str) -> None:
        self.source, self.line, self.message = source, line, message
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")


ErrorHandler = Callable[[InputError], None]


def _raise(err: InputError) -> None:
    raise err


def _open_binary(path: Path) -> IO[bytes]:
    """The file's bytes, gunzipped for ``.gz``; the caller closes it."""
    if path.suffix.lower() == ".gz":
        return gzip.GzipFile(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def _lines(stream: IO[bytes], source: str, on_error: ErrorHandler) -> Iterator[tuple[int, str]]:
    """Decoded lines; a line that is not UTF-8 is reported by number and the rest still read."""
    lineno = 0
    while True:
        lineno += 1
        try:
            raw = stream.readline()
        except (OSError, EOFError) as exc:
            on_error(InputError(source, lineno, f"cannot read: {exc}"))
            return
        if not raw:
            return
        try:
            yield lineno, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            on_error(InputError(source, lineno, f"not valid UTF-8 ({exc.reason} at byte {exc.start})"))


def read_jsonl(stream: IO[bytes], source: str, on_error: ErrorHandler = _raise) -> Iterator[Document]:
    """Documents from a JSON-lines byte stream; blank lines are skipped."""
    for lineno, line in _lines(stream, source, on_error):
        if not line.strip():
            continue
        try:
            yield Document.from_mapping(json.loads(line))
        except json.JSONDecodeError as exc:
            on_error(InputError(source, lineno, f"malformed JSON: {exc.msg} (column {exc.colno})"))
        except DocumentError as exc:
            on_error(InputError(source, lineno, str(exc)))


def read_file_document(
    path: Path, on_error: ErrorHandler = _raise, doc_id: str | None = None
) -> Iterator[Document]:
    """One document from a .txt/.html file; its id is ``doc_id``, by default the file name."""
    try:
        data = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        on_error(InputError(str(path), None, f"not valid UTF-8 ({exc.reason} at byte {exc.start})"))
        return
    except OSError as exc:
        on_error(InputError(str(path), None, f"cannot read: {exc.strerror or exc}"))
        return
    if path.suffix.lower() in HTML_SUFFIXES:
        yield Document(id=doc_id or path.name, title=path.stem, html=data)
    else:
        yield Document(id=doc_id or path.name, title=path.stem, content=data)


def _is_jsonl(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(JSONL_SUFFIXES)


def _wanted(path: Path) -> bool:
    return _is_jsonl(path) or path.suffix.lower() in TEXT_SUFFIXES + HTML_SUFFIXES


def folder_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """The readable files under ``folder`` in name order, and the files passed over (other kinds)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return [p for p in files if _wanted(p)], [p for p in files if not _wanted(p)]


def file_id(folder: Path, path: Path) -> str:
    """A text/HTML file's id inside a folder input: its path relative to the folder, with ``/``.

    The bare file name would merge ``business/001.txt`` and ``sport/001.txt`` into one document.
    """
    return path.relative_to(folder).as_posix()


def read_documents(
    inputs: Iterable[str],
    skip_errors: bool = False,
    on_error: ErrorHandler | None = None,
    stdin: IO[bytes] | None = None,
) -> Iterator[Document]:
    """Documents from each input in turn: ``-`` is JSONL on stdin; a folder is walked in name order."""
    report = on_error or (lambda e: print(f"warning: {e}", file=sys.stderr))
    handler: ErrorHandler = report if skip_errors else _raise
    file_ids: dict[str, Path] = {}  # id -> the text/HTML file that has it, so no file replaces another

    def from_path(path: Path, doc_id: str | None = None) -> Iterator[Document]:
        if _is_jsonl(path):
            try:
                stream = _open_binary(path)
            except OSError as exc:
                handler(InputError(str(path), None, f"cannot open: {exc.strerror or exc}"))
                return
            with stream:
                yield from read_jsonl(stream, str(path), handler)
        else:
            doc_id = doc_id or path.name
            earlier = file_ids.setdefault(doc_id, path.resolve())
            if earlier != path.resolve():
                handler(InputError(str(path), None, f"id {doc_id!r} is already the id of {earlier}; give "
                                   "their common folder instead (ids are then paths relative to it)"))
                return
            yield from read_file_document(path, handler, doc_id)

    for name in inputs:
        if name == "-":
            yield from read_jsonl(stdin or sys.stdin.buffer, "<stdin>", handler)
            continue
        path = Path(name)
        if path.is_dir():
            files, passed_over = folder_files(path)
            if passed_over:
                print(f"note: {path}: {len(passed_over)} files are not JSONL, text or HTML and were not read "
                      f"(first: {file_id(path, passed_over[0])})", file=sys.stderr)
            for file in files:
                yield from from_path(file, file_id(path, file))
        elif path.exists():
            yield from from_path(path)
        else:
            handler(InputError(name, None, "no such file or directory"))


def read_one(path: str) -> Document:
    """The first document of a file (for look-ups by example); an input error when it holds none."""
    doc = next(read_documents([path]), None)
    if doc is None:
        raise InputError(path, None, "holds no document")
    return doc
