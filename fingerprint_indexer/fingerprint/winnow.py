"""Winnowing (Schleimer, Wilkerson and Aiken, 2003): passage-level copy detection.

A text's terms (the fingerprint's own tokeniser: jieba words and Latin/digit words, stopwords dropped)
are hashed in overlapping blocks of ``k`` terms (the noise threshold: shared runs shorter than ``k``
terms are never seen); of every window of ``w = g - k + 1`` consecutive block hashes the minimum is kept
with its position (robust winnowing: on a tie the hash already kept stays kept). Any passage of at least
``g`` terms (the guarantee threshold) that two texts share therefore shares a kept hash, while only
about ``2 / (w + 1)`` of the blocks are kept.

Every block remembers the character span of its terms in the text as given (before NFKC and lower
casing), so passages map back to offsets in the original texts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.simhash import term_hashes
from fingerprint_indexer.text.clean import html_to_text, normalize_mapped
from fingerprint_indexer.text.tokenize import Tokenizer, slices

_BASE = np.uint64(0x100000001B3)  # Karp-Rabin base (odd), arithmetic mod 2^64
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_RECORD = np.dtype([("hash", "<u8"), ("pos", "<u4"), ("start", "<u4"), ("end", "<u4"), ("kept", "u1")])
MAX_STORED_BLOCKS = 1 << 16  # a longer text keeps its winnowed marks only


@dataclass(frozen=True)
class WinnowParams:
    """Noise threshold ``k`` and guarantee threshold ``g``, in terms (defaults: docs/quality.md)."""

    k: int = 5
    g: int = 12

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"noise threshold k must be >= 1, got {self.k}")
        if self.g < self.k:
            raise ValueError(f"guarantee threshold g must be >= k ({self.k}), got {self.g}")

    @property
    def w(self) -> int:
        """Window length in block hashes."""
        return self.g - self.k + 1

    @property
    def tag(self) -> str:
        """Names the parameters; stores and indexes of other parameters cannot be compared."""
        return f"winnow/1;k={self.k};g={self.g}"

    @classmethod
    def from_tag(cls, tag: str) -> WinnowParams:
        """The parameters a :attr:`tag` names (ValueError for anything else)."""
        fields = dict(part.split("=", 1) for part in tag.split(";")[1:] if "=" in part)
        if not tag.startswith("winnow/1;") or set(fields) != {"k", "g"}:
            raise ValueError(f"unknown copy-marks setting {tag!r}")
        return cls(k=int(fields["k"]), g=int(fields["g"]))


@dataclass(frozen=True)
class Marks:
    """Block hashes of a text with their term position and the ``[start, end)`` characters they cover;
    ``kept`` flags the blocks winnowing keeps (None: all of them).

    All blocks of a text (:func:`blocks`), the same with the winnowed ones flagged (:func:`marked`:
    what stores keep, so passages with a stored document have exact extents), or the winnowed
    selection only (:func:`marks`: what indexes look up).
    """

    hashes: npt.NDArray[np.uint64]
    pos: npt.NDArray[np.int64]
    start: npt.NDArray[np.int64]
    end: npt.NDArray[np.int64]
    kept: npt.NDArray[np.bool_] | None = None

    def __len__(self) -> int:
        return int(self.hashes.size)

    def take(self, idx: npt.NDArray[np.int64] | npt.NDArray[np.bool_]) -> Marks:
        kept = None if self.kept is None else self.kept[idx]
        return Marks(self.hashes[idx], self.pos[idx], self.start[idx], self.end[idx], kept)

    def winnowed(self) -> Marks:
        """The kept blocks only."""
        return self if self.kept is None else self.take(self.kept)

    def to_bytes(self) -> bytes:
        rec = np.empty(len(self), dtype=_RECORD)
        rec["hash"], rec["pos"], rec["start"], rec["end"] = self.hashes, self.pos, self.start, self.end
        rec["kept"] = 1 if self.kept is None else self.kept
        return rec.tobytes()

    @classmethod
    def from_bytes(cls, raw: bytes) -> Marks:
        rec = np.frombuffer(raw, dtype=_RECORD)
        kept = rec["kept"].astype(bool)
        return cls(rec["hash"].astype(np.uint64), rec["pos"].astype(np.int64),
                   rec["start"].astype(np.int64), rec["end"].astype(np.int64), None if kept.all() else kept)

    def hex_hashes(self) -> list[str]:
        """Distinct kept hashes as 16 hex digits: the form indexes store them in."""
        return [f"{int(h):016x}" for h in np.unique(self.winnowed().hashes)]


def document_text(doc: Document) -> str:
    """The text a document's passage offsets refer to: its content as given, else the visible text of
    its HTML, else its title."""
    if doc.content:
        return doc.content
    if doc.html:
        return html_to_text(doc.html)
    return doc.title


def empty_marks() -> Marks:
    z = np.zeros(0, dtype=np.int64)
    return Marks(np.zeros(0, dtype=np.uint64), z, z, z)


def _mix(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64's finaliser: block hashes whose minimum is an unbiased pick."""
    h = h ^ (h >> np.uint64(30))
    h = h * _M1
    h = h ^ (h >> np.uint64(27))
    h = h * _M2
    return h ^ (h >> np.uint64(31))


def block_hashes(terms: npt.NDArray[np.uint64], k: int) -> npt.NDArray[np.uint64]:
    """Karp-Rabin hash of every run of ``k`` consecutive term hashes (mod 2^64), mixed."""
    n = terms.size - k + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    h = np.zeros(n, dtype=np.uint64)
    for j in range(k):
        h = h * _BASE + terms[j : j + n]
    return _mix(h)


def _terms(text: str, tokenizer: Tokenizer) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64],
                                                       npt.NDArray[np.int64]]:
    """Term hashes and ``[start, end)`` offsets into ``text``, slice by slice (bounded memory)."""
    hashes, starts, ends = [], [], []
    base = 0
    for part in slices(text):
        norm, origin = normalize_mapped(part)
        spans = tokenizer.spans(norm)
        if spans:
            org = np.asarray(origin, dtype=np.int64)
            s = np.fromiter((x for _, x, _ in spans), dtype=np.int64, count=len(spans))
            e = np.fromiter((x for _, _, x in spans), dtype=np.int64, count=len(spans))
            hashes.append(term_hashes([t for t, _, _ in spans]))
            starts.append(org[s] + base)
            ends.append(org[e - 1] + 1 + base)
        base += len(part)
    if not hashes:
        z = np.zeros(0, dtype=np.int64)
        return np.zeros(0, dtype=np.uint64), z, z
    return np.concatenate(hashes), np.concatenate(starts), np.concatenate(ends)


def blocks(text: str, tokenizer: Tokenizer, k: int) -> Marks:
    """Every block of ``k`` terms of ``text``, with character offsets into ``text`` as given."""
    terms, starts, ends = _terms(text, tokenizer)
    hashes = block_hashes(terms, k)
    n = hashes.size
    if n == 0:
        return empty_marks()
    return Marks(hashes, np.arange(n, dtype=np.int64), starts[:n], ends[k - 1 : k - 1 + n])


def select(hashes: npt.NDArray[np.uint64], w: int) -> npt.NDArray[np.int64]:
    """Positions kept by robust winnowing with windows of ``w`` hashes, ascending."""
    n = hashes.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if n <= w:
        return np.array([n - 1 - int(np.argmin(hashes[::-1]))], dtype=np.int64)
    win = sliding_window_view(hashes, w)
    right = (w - 1 - np.argmin(win[:, ::-1], axis=1)).astype(np.int64)
    right += np.arange(win.shape[0], dtype=np.int64)  # each window's rightmost minimum
    if not any(np.any(hashes[:-d] == hashes[d:]) for d in range(1, w)):
        return np.unique(right)  # no equal hashes within a window: no ties to break
    # Robust winnowing: a kept minimum stays kept until it leaves the window or a smaller hash
    # enters; then the window's rightmost minimum is kept. One step per kept position.
    mins = hashes[right]
    change = np.flatnonzero(mins[1:] != mins[:-1]) + 1  # windows whose minimum differs from the last
    kept: list[int] = []
    i, nw = 0, right.size
    while i < nw:
        pos = int(right[i])
        kept.append(pos)
        c = int(np.searchsorted(change, i, side="right"))
        nxt = int(change[c]) if c < change.size else nw
        i = min(pos + 1, nxt)
    return np.unique(np.array(kept, dtype=np.int64))


def winnow(all_blocks: Marks, params: WinnowParams) -> Marks:
    """The winnowed selection of a text's blocks."""
    return all_blocks.take(select(all_blocks.hashes, params.w))


def marked(text: str, tokenizer: Tokenizer, params: WinnowParams) -> Marks:
    """All blocks of ``text`` with the winnowed ones flagged (the winnowed ones only beyond
    ``MAX_STORED_BLOCKS``): what a store keeps of a document."""
    every = blocks(text, tokenizer, params.k)
    sel = select(every.hashes, params.w)
    if len(every) > MAX_STORED_BLOCKS:
        return every.take(sel)
    kept = np.zeros(len(every), dtype=bool)
    kept[sel] = True
    return Marks(every.hashes, every.pos, every.start, every.end, kept)


def marks(text: str, tokenizer: Tokenizer, params: WinnowParams) -> Marks:
    """Winnowed marks of ``text``: what the copy indexes look up."""
    return winnow(blocks(text, tokenizer, params.k), params)
