"""Image fingerprints: safe decoding, a 64-bit perceptual hash, the colour grid and an exact digest.

A news photo comes back resized, recompressed, cropped a little, with a logo, a watermark or a caption
bar, brighter or darker, or mirrored. Three things are kept of each picture:

- ``phash``: a DCT perceptual hash (the 8 x 8 lowest frequencies of a 32 x 32 grey image, each bit
  "above the median") of the picture's *centre* (:attr:`ImageThresholds.centre`) after a median filter:
  the border, where crops, caption bars and corner logos fall, does not vote, and the thin strokes of a
  watermark's letters are filtered out. It takes block keys through the text fingerprints'
  :class:`~fingerprint_indexer.fingerprint.blocks.BlockLayout` (the same pigeonhole look-up), under
  its own key prefix.
- ``probes``: the same hash of the windows where the centre of a cropped copy lies (:func:`windows`),
  of the picture and of its mirror image: a look-up tries them all, so a crop or a flipped copy finds
  the original and the original finds its crops.
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
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import hamming

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
    k: int = 12
    #: Largest colour-grid distance (fraction of blocks of another colour) between copies of one photo.
    grid_max: float = 0.75
    #: Hash distance a block-key look-up finds for sure (pigeonhole over :attr:`layout`); the rule then
    #: judges each candidate at :attr:`k`.
    k_lookup: int = 3

    @property
    def layout(self) -> BlockLayout:
        """The block layout of image keys: every base hash within :attr:`k_lookup` of a window shares
        a key with it."""
        return BlockLayout.for_k(self.k_lookup)


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


# ------------------------------------------------------------------ comparing and keys


def _nearest(query: ImageFingerprint, stored: ImageFingerprint) -> tuple[int, bool]:
    """(distance, mirrored): the nearest of ``query``'s probes to ``stored``'s base hash."""
    best, at = 65, 0
    for i, p in enumerate(query.probes):
        d = hamming(p, stored.phash)
        if d < best:
            best, at = d, i
    return best, at >= len(query.probes) // 2


def distance(a: ImageFingerprint, b: ImageFingerprint) -> int:
    """Distance of two pictures: the nearest of either's windows (mirror images included) to the
    other's base hash; symmetric."""
    return min(_nearest(a, b)[0], _nearest(b, a)[0])


def same_photo(a: ImageFingerprint, b: ImageFingerprint, limits: ImageThresholds = THRESHOLDS) -> bool:
    """The one rule: the same pixels, or two pictures neither flat whose hashes are within ``k`` and
    whose colour grids (the mirrored grid for a mirrored match) are within ``grid_max``."""
    if a.digest == b.digest:
        return True
    if a.flat or b.flat:
        return False
    (d1, m1), (d2, m2) = _nearest(a, b), _nearest(b, a)
    d = min(d1, d2)
    mirrored = m1 if d1 < d2 else m2 if d2 < d1 else m1 and m2  # the same whichever picture is first
    if d > limits.k:
        return False
    grid_b = mirror_grid(b.grid, limits.grid_cols) if mirrored else b.grid
    return grid_distance(a.grid, grid_b) <= limits.grid_max


def image_keys(fp: ImageFingerprint, layout: BlockLayout) -> list[str]:
    """Block keys of a picture's base hash, prefixed so they never equal a text fingerprint's key
    (``i<key number>_<hex>``)."""
    return [f"{KEY_PREFIX}{n}_{key}" for n, key in enumerate(layout.keys(fp.phash))]
