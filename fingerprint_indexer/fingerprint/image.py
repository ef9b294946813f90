"""Image fingerprints: safe decoding, a 64-bit perceptual hash, the colour grid and an exact digest.

A news photo comes back resized, recompressed, cropped a little, with a logo, a watermark or a caption
bar, brighter or darker, or mirrored. Three things are kept of each picture:

- ``phash``: a DCT perceptual hash (the 8 x 8 lowest frequencies of a 32 x 32 grey image, each bit
  "above the median") of the picture's *centre* (:attr:`ImageThresholds.centre`) after a median filter:
  the border, where crops, caption bars and corner logos fall, does not vote, and the thin strokes of a
  watermark's letters are filtered out.
- ``probes``: the same hash of the windows where the centre of a cropped copy lies (:func:`windows`),
  of the picture and then of its mirror image: a crop lines some window of one copy up with some window
  of the other, whichever was cropped.
- look-up keys (:func:`key_values`): the bits of a window hash's lowest frequencies, which a small
  shift leaves alone. A picture is stored under the keys of its own windows and looked up with the keys
  of all its windows; the rule then judges what the keys bring (the index, embedded or Elasticsearch
  ``keyword`` fields, holds keys, never decisions).
- ``grid``: the colour grid of the original design: the picture cut into M x N blocks, each block's
  dominant colour among 8 (one bit per RGB channel), read as a string of digits ``0``-``7``.
- ``digest``: sha256 of the decoded pixels (RGB, after EXIF orientation, with the size): the same picture
  is an exact duplicate whatever its container, metadata or lossless re-encoding; file bytes would miss a
  re-saved PNG or a stripped EXIF block, and a picture's pixels are decoded anyway.

Decoding accepts JPEG, PNG, WebP and GIF (first frame), refuses pictures over a pixel limit before any
pixel is decoded (a decompression bomb), never completes a truncated file, and turns every failure into
one :class:`ImageError` naming the file.
"""

from __future__ import annotations

import base64
import hashlib
import io
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageFile, ImageFilter, ImageOps, UnidentifiedImageError
from PIL.Image import Image as PILImage

from fingerprint_indexer.errors import FingerprintIndexerError

#: Formats decoded (Pillow's names).
FORMATS = frozenset({"JPEG", "PNG", "WEBP", "GIF"})
#: Prefix of image block keys: an image key never equals a text key of the same index.
KEY_PREFIX = "i"


class ImageError(FingerprintIndexerError, ValueError):
    """A file that is not a picture this package decodes (one line, naming the file)."""


@dataclass(frozen=True)
class ImageThresholds:
    """Every limit and threshold of image fingerprints, in one place."""

    #: Largest picture decoded, in pixels (a decompression bomb is refused from its header).
    max_pixels: int = 50_000_000
    #: Largest file read, in bytes.
    max_bytes: int = 64 << 20
    #: Side of the square grey picture the hashes are taken from, and its median filter's size.
    grey_side: int = 128
    median: int = 5
    #: Fraction of the width and of the height, centred, that the base hash sees.
    centre: float = 0.7
    #: The crop (fraction of a side) that the other windows assume.
    crop_step: float = 0.1
    #: Grey standard deviation below which a picture is flat (its hash is noise: exact matches only).
    min_contrast: float = 8.0
    #: Blocks of the colour grid: columns x rows.
    grid_cols: int = 8
    grid_rows: int = 8
    #: Largest hash distance (nearest window) between copies of one photo.
    k: int = 8
    #: Largest colour-grid distance (fraction of blocks of another colour) between copies of one photo.
    grid_max: float = 1.0
    #: Long side of the small JPEG kept with a document's picture, so a page can show what matched.
    thumb_side: int = 96
    #: Look-up keys hold the hash bits of the frequencies ``(u, v)`` with ``1 <= u + v <= key_band``.
    key_band: int = 5
    #: Largest distance between the full hashes of two windows whose keys are equal, for their pictures
    #: to be judged by the rule: it drops chance meetings of keys before the rule's costlier pass.
    k_key: int = 16


THRESHOLDS = ImageThresholds()


# ------------------------------------------------------------------ decoding


def decode(data: bytes, name: str, limits: ImageThresholds = THRESHOLDS) -> PILImage:
    """The picture in ``data`` as an RGB image, upright (EXIF orientation applied), the first frame of an
    animation, transparency laid on white; :class:`ImageError` for anything else."""
    if len(data) > limits.max_bytes:
        raise ImageError(f"{name}: {len(data)} bytes, more than the limit of {limits.max_bytes}")
    if ImageFile.LOAD_TRUNCATED_IMAGES:
        raise ImageError(f"{name}: Pillow is set to complete truncated files; refusing to decode")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            src = Image.open(io.BytesIO(data))
            if src.format not in FORMATS:
                raise ImageError(f"{name}: format {src.format} is not one of {', '.join(sorted(FORMATS))}")
            w, h = src.size
            if w * h > limits.max_pixels:
                raise ImageError(f"{name}: {w} x {h} pixels, more than the limit of {limits.max_pixels} "
                                 "(a decompression bomb?)")
            if w < 1 or h < 1:
                raise ImageError(f"{name}: empty picture ({w} x {h})")
            src.seek(0)
            src.load()
            im = ImageOps.exif_transpose(src)
            if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
                rgba = im.convert("RGBA")
                out = Image.new("RGB", rgba.size, (255, 255, 255))
                out.paste(rgba, mask=rgba.getchannel("A"))
                return out
            return im.convert("RGB")
    except ImageError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError(f"{name}: decompression bomb refused ({_first_line(exc)})") from None
    except UnidentifiedImageError:
        raise ImageError(f"{name}: not a picture (no decoder recognises it)") from None
    except (OSError, SyntaxError, ValueError, EOFError, MemoryError) as exc:
        raise ImageError(f"{name}: cannot decode ({_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def read_image(path: str | Path, limits: ImageThresholds = THRESHOLDS) -> PILImage:
    """:func:`decode` of a file; a file that cannot be read is an :class:`ImageError` too."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > limits.max_bytes:
            raise ImageError(f"{p}: {size} bytes, more than the limit of {limits.max_bytes}")
        data = p.read_bytes()
    except OSError as exc:
        raise ImageError(f"{p}: cannot read ({exc.strerror or _first_line(exc)})") from None
    return decode(data, str(p), limits)


# ------------------------------------------------------------------ hashes


def _dct_matrix(n: int) -> npt.NDArray[np.float64]:
    k = np.arange(n)[:, None]
    return np.cos(np.pi * (2 * np.arange(n)[None, :] + 1) * k / (2 * n))


_DCT32 = _dct_matrix(32)


def phash_of(grey: npt.NDArray[np.float64]) -> int:
    """The 64-bit DCT perceptual hash of a 32 x 32 grey image: bit i (most significant first, row by
    row) says whether the i-th of the 8 x 8 lowest frequencies is above their median."""
    coeffs = (_DCT32 @ grey @ _DCT32.T)[:8, :8].ravel()
    bits = coeffs > np.median(coeffs)
    return int.from_bytes(np.packbits(bits).tobytes(), "big")


Window = tuple[tuple[float, float], tuple[float, float]]


def windows(limits: ImageThresholds) -> tuple[Window, ...]:
    """The windows (x span, y span, as fractions of the picture) hashed for a look-up, the base window
    first. The base window is the centre :attr:`~ImageThresholds.centre`; the others are where the base
    window of a copy cropped by :attr:`~ImageThresholds.crop_step` lies, seen from either picture: in a
    crop of the original (the query is the crop), or in the original (the query is the uncropped one)."""
    c = (1 - limits.centre) / 2
    base = (c, 1 - c)
    f = limits.crop_step
    as_crop = [base] + [((c - f * o) / (1 - f), (1 - c - f * o) / (1 - f)) for o in (0.0, 0.5, 1.0)]
    as_original = [base] + [(f * o + c * (1 - f), f * o + (1 - c) * (1 - f)) for o in (0.0, 0.5, 1.0)]
    out = dict.fromkeys([(base, base)])
    for family in (as_crop, as_original):
        for wx in family:
            for wy in family:
                out[(wx, wy)] = None
    return tuple(out)


def _probe_hashes(grey: PILImage, wins: tuple[Window, ...]) -> list[int]:
    n = grey.size[0]
    out = []
    for (x0, x1), (y0, y1) in wins:
        small = grey.resize((32, 32), Image.Resampling.LANCZOS, box=(x0 * n, y0 * n, x1 * n, y1 * n))
        out.append(phash_of(np.asarray(small, dtype=np.float64)))
    return out


def colour_grid(im: PILImage, cols: int = 8, rows: int = 8) -> str:
    """The colour grid: per block (row by row), the most frequent of the 8 colours its pixels reduce to
    (one bit per channel: >= 128), as a digit ``4*R + 2*G + B``; ties go to the lower digit."""
    small = im.resize((cols * 8, rows * 8), Image.Resampling.BOX)  # 64 samples a block
    px = np.asarray(small, dtype=np.uint8)
    code = ((px[..., 0] >> 7) << 2) | ((px[..., 1] >> 7) << 1) | (px[..., 2] >> 7)
    blocks = code.reshape(rows, 8, cols, 8).transpose(0, 2, 1, 3).reshape(rows * cols, 64)
    counts = np.stack([(blocks == c).sum(axis=1) for c in range(8)], axis=1)
    return "".join(str(int(c)) for c in counts.argmax(axis=1))


def grid_distance(a: str, b: str) -> float:
    """Fraction of blocks of another colour (1.0 for grids of different shapes)."""
    if len(a) != len(b) or not a:
        return 1.0
    return sum(x != y for x, y in zip(a, b, strict=True)) / len(a)


def mirror_grid(grid: str, cols: int) -> str:
    """The colour grid of the mirrored picture."""
    return "".join(grid[i : i + cols][::-1] for i in range(0, len(grid), cols))


def pixel_digest(im: PILImage) -> str:
    """sha256 of the RGB pixels and the size."""
    h = hashlib.sha256(f"{im.size[0]}x{im.size[1]}:".encode())
    h.update(im.tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class ImageFingerprint:
    """What is kept of one picture: the hash of its base window (``phash``, the one with block keys),
    the hashes of every window of the picture and of its mirror image (``probes``, base first), the
    colour grid, the pixel digest, the size, and whether it is too flat for a perceptual hash."""

    phash: int
    probes: tuple[int, ...]
    grid: str
    digest: str
    width: int
    height: int
    flat: bool

    def to_json(self) -> dict[str, Any]:
        return {"phash": f"{self.phash:016x}", "grid": self.grid, "digest": self.digest,
                "width": self.width, "height": self.height, "flat": self.flat,
                "probes": [f"{p:016x}" for p in self.probes]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ImageFingerprint:
        return cls(int(data["phash"], 16), tuple(int(p, 16) for p in data["probes"]), str(data["grid"]),
                   str(data["digest"]), int(data["width"]), int(data["height"]), bool(data["flat"]))


def fingerprint_image(im: PILImage, limits: ImageThresholds = THRESHOLDS) -> ImageFingerprint:
    """The fingerprint of a decoded RGB picture. The grey picture is brought to a square of
    :attr:`~ImageThresholds.grey_side` pixels and median-filtered (thin strokes of a watermark or a
    caption's letters vanish; shapes stay) before its windows are hashed."""
    side = limits.grey_side
    grey = im.convert("L").resize((side, side), Image.Resampling.BOX)
    grey = grey.filter(ImageFilter.MedianFilter(limits.median))
    wins = windows(limits)
    probes = _probe_hashes(grey, wins) + _probe_hashes(ImageOps.mirror(grey), wins)
    flat = float(np.asarray(grey, dtype=np.float64).std()) < limits.min_contrast
    return ImageFingerprint(phash=probes[0], probes=tuple(probes),
                            grid=colour_grid(im, limits.grid_cols, limits.grid_rows),
                            digest=pixel_digest(im), width=im.size[0], height=im.size[1], flat=flat)


def fingerprint_bytes(data: bytes, name: str, limits: ImageThresholds = THRESHOLDS) -> ImageFingerprint:
    """Decode and fingerprint a picture's bytes."""
    return fingerprint_image(decode(data, name, limits), limits)


def fingerprint_file(path: str | Path, limits: ImageThresholds = THRESHOLDS) -> ImageFingerprint:
    """Decode and fingerprint a picture file."""
    return fingerprint_image(read_image(path, limits), limits)


def thumbnail(im: PILImage, limits: ImageThresholds = THRESHOLDS) -> str:
    """A small JPEG of the picture (long side :attr:`~ImageThresholds.thumb_side`), base64: what a page
    shows of a matched picture, kept with the document instead of the picture itself."""
    small = im.copy()
    small.thumbnail((limits.thumb_side, limits.thumb_side), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    small.save(buf, "JPEG", quality=80)
    return base64.b64encode(buf.getvalue()).decode("ascii")


# ------------------------------------------------------------------ comparing and keys


def _key_bits() -> tuple[int, ...]:
    """Bit positions (0 = most significant) of the hash's frequencies ``(u, v)`` with
    ``1 <= u + v <=`` :attr:`ImageThresholds.key_band`, lowest first."""
    band = THRESHOLDS.key_band
    order = sorted((u + v, u, v) for u in range(8) for v in range(8) if 1 <= u + v <= band)
    return tuple(u * 8 + v for _, u, v in order)


_KEY_BITS = _key_bits()
#: Bits of a look-up key.
KEY_WIDTH = len(_KEY_BITS)
_KEY_SHIFTS = np.array([63 - b for b in _KEY_BITS], dtype=np.uint64)
_KEY_PLACES = np.array([KEY_WIDTH - 1 - i for i in range(KEY_WIDTH)], dtype=np.uint64)


def key_values(hashes: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint32]:
    """The look-up key of each window hash: its bits of the lowest frequencies (the DC term left out),
    side by side. Low frequencies barely move when a crop shifts the window a little, so the keys of
    aligned windows of two copies are equal while their full hashes may differ by a few bits."""
    h = np.asarray(hashes, dtype=np.uint64)
    bits = (h[..., None] >> _KEY_SHIFTS) & np.uint64(1)
    return np.bitwise_or.reduce(bits << _KEY_PLACES, axis=-1).astype(np.uint32)


def probe_array(fp: ImageFingerprint) -> npt.NDArray[np.uint64]:
    """The window hashes of a fingerprint (the picture's, then its mirror image's)."""
    return np.array(fp.probes, dtype=np.uint64)


def grid_array(grid: str) -> npt.NDArray[np.uint8]:
    """A colour grid as one digit per block."""
    return np.frombuffer(grid.encode(), dtype=np.uint8) - np.uint8(48)


def nearest_many(query: npt.NDArray[np.uint64],
                 stored: npt.NDArray[np.uint64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """(distance, mirrored) of one picture's window hashes against each row of ``stored`` (pictures x
    windows): the nearest pair of a window of one picture, mirror image included, and a window of the
    other as it is, tried both ways (a crop lines some window of one up with some window of the other,
    whichever was cropped); on a tie the match is mirrored only if it is both ways, so the answer is the
    same whichever picture is the query."""
    q = np.asarray(query, dtype=np.uint64)
    s = np.asarray(stored, dtype=np.uint64).reshape(-1, len(q))
    half = len(q) // 2

    def nearest(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
        return np.bitwise_count(a[..., :, None] ^ b[..., None, :]).min(axis=(-2, -1)).astype(np.int64)

    # the pairs of own windows are met both ways round: computed once
    own = nearest(np.broadcast_to(q[:half], (len(s), half)), s[:, :half])
    mir1 = nearest(np.broadcast_to(q[half:], (len(s), half)), s[:, :half])  # query's mirror image
    mir2 = nearest(s[:, half:], np.broadcast_to(q[:half], (len(s), half)))  # stored one's mirror image
    v1, v2 = np.minimum(own, mir1), np.minimum(own, mir2)
    # the nearest pair is a mirrored one when the mirror half holds a strictly smaller distance
    m1, m2 = mir1 < own, mir2 < own
    mirrored = np.where(v1 < v2, m1, np.where(v2 < v1, m2, m1 & m2))
    return np.minimum(v1, v2), mirrored


def keys_meet_many(query: npt.NDArray[np.uint64], stored: npt.NDArray[np.uint64],
                   k_key: int) -> npt.NDArray[np.bool_]:
    """Per row of ``stored``: whether a window of one picture (mirror image included) and a window of
    the other have equal look-up keys and full hashes within ``k_key``, either way round: the two
    pictures agree on the low-frequency layout of some lined-up window, which is how the index finds a
    picture, and what the rule asks of a match besides its nearest windows."""
    q = np.asarray(query, dtype=np.uint64)
    s = np.asarray(stored, dtype=np.uint64).reshape(-1, len(q))
    half = len(q) // 2
    qk, sk = key_values(q), key_values(s)
    one = (qk[None, :, None] == sk[:, None, :half]) & (
        np.bitwise_count(q[None, :, None] ^ s[:, None, :half]) <= k_key)
    other = (sk[:, :, None] == qk[None, None, :half]) & (
        np.bitwise_count(s[:, :, None] ^ q[None, None, :half]) <= k_key)
    return np.asarray(one.any(axis=(1, 2)) | other.any(axis=(1, 2)))


def grid_distance_many(grid: npt.NDArray[np.uint8], stored: npt.NDArray[np.uint8],
                       mirrored: npt.NDArray[np.bool_], cols: int) -> npt.NDArray[np.float64]:
    """:func:`grid_distance` of one grid against each row of ``stored``, a row mirrored where told."""
    s = np.asarray(stored, dtype=np.uint8).reshape(len(mirrored), -1)
    flipped = s.reshape(len(s), -1, cols)[:, :, ::-1].reshape(len(s), -1)
    other = np.where(np.asarray(mirrored)[:, None], flipped, s)
    return np.asarray((other != grid[None, :]).mean(axis=1), dtype=np.float64)


def _nearest(a: ImageFingerprint, b: ImageFingerprint) -> tuple[int, bool]:
    d, m = nearest_many(probe_array(a), probe_array(b)[None, :])
    return int(d[0]), bool(m[0])


def distance(a: ImageFingerprint, b: ImageFingerprint) -> int:
    """Distance of two pictures: the nearest pair of their windows (mirror images included); symmetric."""
    return _nearest(a, b)[0]


def same_photo(a: ImageFingerprint, b: ImageFingerprint, limits: ImageThresholds = THRESHOLDS) -> bool:
    """The one rule: the same pixels, or two pictures neither flat that have lined-up windows of equal
    look-up keys (:func:`keys_meet_many`), whose nearest windows are within ``k`` and whose colour grids
    (the mirrored grid for a mirrored match) are within ``grid_max``."""
    if a.digest == b.digest:
        return True
    if a.flat or b.flat:
        return False
    d, mirrored = _nearest(a, b)
    if d > limits.k or not keys_meet_many(probe_array(a), probe_array(b)[None, :], limits.k_key)[0]:
        return False
    grid_b = mirror_grid(b.grid, limits.grid_cols) if mirrored else b.grid
    return grid_distance(a.grid, grid_b) <= limits.grid_max


def stored_keys(fp: ImageFingerprint) -> list[int]:
    """Look-up keys a picture is stored under: those of its own windows (not its mirror image's: a
    query brings both of its own), each once."""
    probes = probe_array(fp)
    return sorted(set(key_values(probes[: len(probes) // 2]).tolist()))


def query_keys(fp: ImageFingerprint) -> list[int]:
    """Look-up keys a picture is searched with: those of every window, mirror image included."""
    return sorted(set(key_values(probe_array(fp)).tolist()))


def key_text(key: int) -> str:
    """A key in the keyword form stored in indexes: prefixed so it never equals a text fingerprint's key."""
    return f"{KEY_PREFIX}{key:0{(KEY_WIDTH + 3) // 4}x}"


def image_keys(fp: ImageFingerprint) -> list[str]:
    """:func:`stored_keys` in keyword form (``i<hex>``)."""
    return [key_text(k) for k in stored_keys(fp)]
