"""Turn raw HTML or text into normalised plain text.

NFKC folds full-width forms to half-width (``ＡＢＣ１２３`` -> ``ABC123``, ``，`` -> ``,``), which makes
the same article typed on different sites compare equal. Line breaks survive (block elements become
newlines) because later stages look at lines; runs of horizontal whitespace fold to one space.
"""

from __future__ import annotations

import re
import unicodedata
from html.parser import HTMLParser

# Content of these elements is never article text.
_DROP_TAGS = frozenset(
    {"script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "iframe", "svg",
     "button", "select", "object", "head"}
)
_BLOCK_TAGS = frozenset(
    {"p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "table", "section",
     "article", "blockquote", "pre", "hr", "dd", "dt", "dl", "figure", "figcaption", "td", "th", "main"}
)
_VOID_TAGS = frozenset({"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed", "source",
                        "track", "wbr", "param"})

_HSPACE = re.compile(r"[^\S\n]+")
_MANY_NEWLINES = re.compile(r"\n\s*\n+")
_ALL_SPACE = re.compile(r"\s+")
_HTML_SNIFF = re.compile(r"<\s*(?:html|body|p|div|br|span|script|style|a|table|!doctype)\b", re.I)


class _TextExtractor(HTMLParser):
    """Collects text outside dropped elements; block elements become line breaks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._drop_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROP_TAGS and tag not in _VOID_TAGS:
            self._drop_depth += 1
        elif tag in _BLOCK_TAGS and not self._drop_depth:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK_TAGS and not self._drop_depth:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROP_TAGS and tag not in _VOID_TAGS:
            self._drop_depth = max(0, self._drop_depth - 1)
        elif tag in _BLOCK_TAGS and not self._drop_depth:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._drop_depth:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """Visible article text of an HTML page or fragment, entities decoded."""
    parser = _TextExtractor()
    step = 1 << 20
    for start in range(0, len(html), step):
        parser.feed(html[start : start + step])
    parser.close()
    return "".join(parser.parts)


def looks_like_html(text: str) -> bool:
    """Cheap sniff for markup in the first few KB."""
    return bool(_HTML_SNIFF.search(text[:4096]))


def normalize(text: str, lower: bool = True) -> str:
    """NFKC, lower-case Latin (unless ``lower`` is false), fold horizontal whitespace, keep single line
    breaks."""
    text = unicodedata.normalize("NFKC", text)
    text = text.lower() if lower else text
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _HSPACE.sub(" ", text)
    text = _MANY_NEWLINES.sub("\n", text)
    return "\n".join(line.strip() for line in text.split("\n")).strip()


def normalize_mapped(text: str) -> tuple[str, list[int]]:
    """NFKC and lower case as in :func:`normalize`, character by character, with each output character's
    offset in ``text``: terms found in the result map back to the text as given. Whitespace is kept as
    is (terms never contain it)."""
    if text.isascii():
        return text.lower(), list(range(len(text)))
    out: list[str] = []
    origin: list[int] = []
    nfkc = unicodedata.normalize
    for i, ch in enumerate(text):
        n = ch.lower() if ch.isascii() else nfkc("NFKC", ch).lower()
        out.append(n)
        origin += [i] * len(n)
    return "".join(out), origin


def compact(text: str) -> str:
    """Normalised text with all whitespace removed: the form content digests are taken of."""
    return _ALL_SPACE.sub("", text)


def clean(text: str | None = None, html: str | None = None) -> str:
    """Normalised plain text from either raw text or HTML (HTML wins when both are given)."""
    if html:
        return normalize(html_to_text(html))
    return normalize(text or "")
