"""Word lists with one number per word (an IDF table, a dictionary's proper-noun flags), kept in a compact
form that loads without parsing and is cached per user.

Reading jieba's IDF table (270k lines) or its dictionary (350k lines) into a dict costs a few tenths of a
second per process, which `distance` on two short texts and every `dedupe` start would pay. A
:class:`Lexicon` holds the words sorted by their 64-bit hash, their values and their UTF-8 bytes in four
flat arrays: loading one is reading a file, and a look-up is a binary search on the hash whose hit is
confirmed by comparing the word's bytes, so the answer is exactly the source's (no hash collision can
change a value). :func:`cached_lexicon` builds it once from the source file and keeps it in the user's
cache directory (``FPI_CACHE_DIR`` chooses another), keyed by the source's path, size, modification
time and inode; a cache that is missing, stale, corrupt or unwritable only means the source is read
again, into a plain dict, as it was before there was a cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

MAGIC = b"FPI-LEXICON-1\n"
_LEN = struct.Struct("<Q")
CACHE_ENV = "FPI_CACHE_DIR"


def word_hash(word: str) -> int:
    return xxhash.xxh3_64_intdigest(word.encode("utf-8"))


class Lexicon(Mapping[str, float]):
    """An immutable ``word -> float`` mapping in four arrays: hashes (sorted), values, byte offsets, bytes."""

    def __init__(self, keys: npt.NDArray[np.uint64], values: npt.NDArray[np.float64],
                 offsets: npt.NDArray[np.int64], blob: bytes) -> None:
        self._keys, self._values, self._offsets, self._blob = keys, values, offsets, blob

    @classmethod
    def from_mapping(cls, words: Mapping[str, float]) -> Lexicon:
        encoded = [w.encode("utf-8") for w in words]
        hashes = np.fromiter((xxhash.xxh3_64_intdigest(b) for b in encoded), dtype=np.uint64,
                             count=len(encoded))
        order = np.argsort(hashes, kind="stable")
        values = np.fromiter(words.values(), dtype=np.float64, count=len(encoded))
        ordered = [encoded[i] for i in order.tolist()]
        offsets = np.zeros(len(ordered) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in ordered], out=offsets[1:])
        return cls(hashes[order], values[order], offsets, b"".join(ordered))

    def _at(self, i: int) -> bytes:
        return self._blob[int(self._offsets[i]) : int(self._offsets[i + 1])]

    def _confirm(self, pos: int, h: int, word: bytes) -> int:
        """The index of ``word`` among the entries of hash ``h`` from ``pos`` on, or -1."""
        keys, n = self._keys, len(self._keys)
        while pos < n and int(keys[pos]) == h:
            if self._at(pos) == word:
                return pos
            pos += 1
        return -1

    def positions(self, words: Sequence[str]) -> npt.NDArray[np.intp]:
        """The entry of each word, -1 where the word is absent (one binary search for all)."""
        encoded = [w.encode("utf-8") for w in words]
        hashes = np.fromiter((xxhash.xxh3_64_intdigest(b) for b in encoded), dtype=np.uint64,
                             count=len(encoded))
        found = np.full(len(encoded), -1, dtype=np.intp)
        if not len(self._keys) or not len(encoded):
            return found
        pos = np.searchsorted(self._keys, hashes)
        hit = self._keys[np.minimum(pos, len(self._keys) - 1)] == hashes
        for j in np.flatnonzero(hit).tolist():
            found[j] = self._confirm(int(pos[j]), int(hashes[j]), encoded[j])
        return found

    def values_of(self, words: Sequence[str], default: float) -> npt.NDArray[np.float64]:
        """The value of each word, ``default`` for the absent ones."""
        at = self.positions(words)
        if not len(self._values):
            return np.full(len(at), default, dtype=np.float64)
        return np.where(at >= 0, self._values[at], default)

    def __getitem__(self, word: str) -> float:
        i = int(self.positions([word])[0])
        if i < 0:
            raise KeyError(word)
        return float(self._values[i])

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and int(self.positions([word])[0]) >= 0

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return (self._at(i).decode("utf-8") for i in range(len(self._keys)))

    def to_bytes(self, meta: Mapping[str, Any]) -> bytes:
        """The file form: magic, a JSON header (``meta``, sizes, checksum), then the four arrays."""
        body = b"".join((self._keys.tobytes(), self._values.tobytes(), self._offsets.tobytes(), self._blob))
        header = json.dumps({"meta": dict(meta), "n": len(self._keys), "blob": len(self._blob),
                             "checksum": xxhash.xxh3_64_hexdigest(body)}).encode("utf-8")
        header += b" " * (-(len(MAGIC) + _LEN.size + len(header)) % 8)  # the arrays 8-byte aligned
        return MAGIC + _LEN.pack(len(header)) + header + body

    @classmethod
    def from_bytes(cls, data: bytes) -> tuple[Lexicon, dict[str, Any]]:
        """The lexicon and its ``meta``; ValueError when ``data`` is not a whole, intact lexicon."""
        if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _LEN.size:
            raise ValueError("not a lexicon file")
        start = len(MAGIC) + _LEN.size
        (hlen,) = _LEN.unpack_from(data, len(MAGIC))
        header = json.loads(data[start : start + hlen])
        body = memoryview(data)[start + hlen :]
        n, blob = int(header["n"]), int(header["blob"])
        if len(body) != 8 * n + 8 * n + 8 * (n + 1) + blob:
            raise ValueError("lexicon file of the wrong size")
        if xxhash.xxh3_64_hexdigest(body) != header["checksum"]:
            raise ValueError("lexicon file fails its checksum")
        keys, values, offsets = (
            _aligned(np.frombuffer(body, dtype=dtype, count=count, offset=offset))
            for dtype, count, offset in ((np.uint64, n, 0), (np.float64, n, 8 * n), (np.int64, n + 1, 16 * n))
        )
        if (offsets[0] != 0 or offsets[-1] != blob or np.any(offsets[1:] < offsets[:-1])
                or np.any(keys[1:] < keys[:-1])):
            raise ValueError("lexicon file with inconsistent arrays")
        return cls(keys, values, offsets, bytes(body[24 * n + 8 :])), header["meta"]


def _aligned(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``a`` itself, or an aligned copy (NumPy copies a misaligned array at every binary search)."""
    return a if a.flags.aligned else a.copy()


def cache_dir() -> Path:
    """Where built lexicons are kept: ``FPI_CACHE_DIR``, else the user's cache directory."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen:
        return Path(chosen)
    import platformdirs

    return Path(platformdirs.user_cache_dir("fingerprint-indexer")) / "lexicons"


def _identity(source: Path, st: os.stat_result) -> dict[str, Any]:
    return {"source": str(source), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}


def cache_path(kind: str, source: Path) -> Path:
    """The cache file of lexicon ``kind`` built from ``source`` (one per source file)."""
    tag = hashlib.blake2b(str(source.resolve()).encode("utf-8"), digest_size=8).hexdigest()
    return cache_dir() / f"{kind}-{tag}.lex"


def cached_lexicon(
    kind: str, source: str | Path, build: Callable[[bytes], tuple[dict[str, float], dict[str, Any]]]
) -> tuple[Mapping[str, float], dict[str, Any]]:
    """The words ``build`` makes of the bytes of ``source`` (with ``meta`` it wants kept beside them):
    a :class:`Lexicon` from the cache when the cache was built from this very file, else ``build``'s own
    dict, cached for the next process when the cache directory can be written.

    ``build``'s errors (a malformed source) propagate; the cache's never do.
    """
    source = Path(source)
    st = source.stat()
    identity = _identity(source.resolve(), st)
    path = cache_path(kind, source)
    try:
        lexicon, stored = Lexicon.from_bytes(path.read_bytes())
        if stored.get("identity") == identity:
            return lexicon, stored["meta"]
    except (OSError, ValueError, KeyError, TypeError):
        pass  # missing, stale or damaged: rebuilt below
    raw = source.read_bytes()
    words, meta = build(raw)
    if _identity(source.resolve(), source.stat()) == identity:  # unchanged while it was read
        _store(path, lambda: Lexicon.from_mapping(words).to_bytes({"identity": identity, "meta": meta}))
    return words, meta


def values_of(table: Mapping[str, float], words: Sequence[str], default: float) -> npt.NDArray[np.float64]:
    """The value of each word in ``table`` (a :class:`Lexicon` or any mapping), ``default`` if absent."""
    if isinstance(table, Lexicon):
        return table.values_of(words, default)
    get = table.get
    return np.array([get(w, default) for w in words], dtype=np.float64)


def _store(path: Path, data: Callable[[], bytes]) -> None:
    """Write a cache file atomically; a cache that cannot be written is simply not kept (and its bytes
    not even made: the fallback costs no more than reading the source)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(path.parent, os.W_OK):
            return
        tmp.write_bytes(data())
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
