"""Texts and titles of stored documents, read back from the inputs they were decided from.

An embedded store keeps fingerprints and decisions, not texts. A reader that shows texts (the explorer
page on a store, side by side) reads them from the input files the store recorded: the first time one is
asked for, every input is read once (in place, ``.jsonl.gz`` too) and the documents are kept in memory.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from fingerprint_indexer.documents import Document
from fingerprint_indexer.io.readers import InputError, read_documents


class SourceTexts:
    """The documents of some input files by id (the last one of an id wins, as in a store)."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = [p for p in paths if p != "-"]
        self.missing = [p for p in self.paths if not Path(p).exists()]
        self.errors: list[str] = []
        self._docs: dict[str, Document] | None = None
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        """Whether any input can be read."""
        return len(self.missing) < len(self.paths)

    def _load(self) -> dict[str, Document]:
        with self._lock:
            if self._docs is None:
                docs: dict[str, Document] = {}

                def note(err: InputError) -> None:
                    if len(self.errors) < 10:
                        self.errors.append(str(err))

                readable = [p for p in self.paths if p not in self.missing]
                for doc in read_documents(readable, skip_errors=True, on_error=note):
                    docs[doc.id] = doc
                self._docs = docs
            return self._docs

    def get(self, doc_id: str) -> Document | None:
        return self._load().get(doc_id) if self.available else None

    def titles(self, ids: Sequence[str]) -> dict[str, str]:
        """The titles of those of ``ids`` found (an empty title is left out)."""
        if not self.available:
            return {}
        docs = self._load()
        return {i: docs[i].title for i in ids if i in docs and docs[i].title}

    def why_missing(self) -> str:
        """One line saying why texts cannot be shown."""
        if not self.paths:
            return "the store records no input files (it keeps no texts; give them with --docs)"
        return f"its input files are gone ({', '.join(self.missing[:3])}); give them with --docs"
