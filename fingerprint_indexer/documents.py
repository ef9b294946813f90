"""The document model shared by readers, the pipeline and the sinks."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fingerprint_indexer.errors import FingerprintIndexerError


class DocumentError(FingerprintIndexerError, ValueError):
    """A record that is not a usable document (missing id, wrong field types)."""


#: The fields of a document that hold its text and metadata (every path reads these).
TEXT_FIELDS = ("title", "content", "html", "url", "published_at")
# JSON can escape half of a UTF-16 pair (\udc80); such a string is not text and cannot be encoded.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(value: str) -> re.Match[str] | None:
    """The first lone surrogate of ``value``, if any; encoding finds there is none faster than the
    pattern does, and text almost never holds one."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.search(value)
    return None


def _check_text(name: str, value: str) -> None:
    """Refuse a lone surrogate here, with the field named, rather than deep in hashing or storing."""
    found = _lone_surrogate(value)
    if found is not None:
        raise DocumentError(
            f"field {name!r} holds a lone surrogate escape (\\u{ord(found.group()):04x} at character "
            f"{found.start()}), which is not valid Unicode text"
        )


def date_alias(data: Mapping[str, Any]) -> str | None:
    """``date``, which wire archives use for the publication time, when ``published_at`` is absent. It is
    not a field of ours: a value that is not text (a number, an object) is someone else's and ignored."""
    value = data.get("date")
    if not isinstance(value, str):
        return None
    _check_text("date", value)
    return value


@dataclass(frozen=True)
class Document:
    """One news item. ``html`` is used in place of ``content`` when given."""

    id: str
    title: str = ""
    content: str | None = None
    html: str | None = None
    url: str | None = None
    published_at: str | None = None
    #: Pictures of the story: file paths (``es index``) or base64 bytes (the sidecar's ``/v1/ingest``).
    images: tuple[str, ...] = ()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Document:
        """Validate a JSON object; ids may be strings or integers, text fields must be strings."""
        if not isinstance(data, Mapping):
            raise DocumentError(f"expected a JSON object, got {type(data).__name__}")
        doc_id = data.get("id")
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or doc_id == "":
            raise DocumentError("field 'id' is missing or not a non-empty string/integer")
        _check_text("id", str(doc_id))
        values: dict[str, str | None] = {}
        for name in TEXT_FIELDS:
            value = data.get(name)
            if value is not None and not isinstance(value, str):
                raise DocumentError(f"field {name!r} must be a string, got {type(value).__name__}")
            if value is not None:
                _check_text(name, value)
            values[name] = value
        if values["content"] is None and values["html"] is None and values["title"] is None:
            raise DocumentError("document has none of 'content', 'html' or 'title'")
        images = data.get("images")
        if images is not None and not (isinstance(images, list) and all(isinstance(x, str) for x in images)):
            raise DocumentError("field 'images' must be a list of strings")
        return cls(
            id=str(doc_id),
            title=values["title"] or "",
            content=values["content"],
            html=values["html"],
            url=values["url"],
            published_at=values["published_at"] if values["published_at"] is not None else date_alias(data),
            images=tuple(images or ()),
        )

    @property
    def length(self) -> int:
        """Characters of body text (used by the keep-longest policy)."""
        return len(self.html or self.content or "")


def source_document(doc_id: str, source: Any) -> Document | str | None:
    """The document to fingerprint in an Elasticsearch ``_source`` (what the proxy is sent, what
    ``es reconcile`` reads back): None when it has no text to fingerprint or a text field that is not a
    string, or a reason why it cannot be used. Unlike :meth:`Document.from_mapping` it refuses nothing
    that Elasticsearch would index: such a document passes through without fingerprint fields."""
    if not isinstance(source, dict):
        return None
    text = {f: source.get(f) for f in TEXT_FIELDS}
    if not any(isinstance(text[f], str) for f in ("title", "content", "html")):
        return None
    if any(v is not None and not isinstance(v, str) for v in text.values()):
        return None
    if any(_lone_surrogate(v) for v in text.values() if isinstance(v, str)):
        return "document text is not valid Unicode (lone surrogate)"
    return Document(id=doc_id, title=text["title"] or "", content=text["content"], html=text["html"],
                    url=text["url"], published_at=text["published_at"])
