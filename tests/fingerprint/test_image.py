"""Image fingerprints: safe decoding of real files made here with Pillow, the hashes, the colour grid and
the rule, and their invariants (hypothesis)."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw, ImageOps
from support.pictures import scene

from fingerprint_indexer.errors import FingerprintIndexerError
from fingerprint_indexer.fingerprint.image import (
    KEY_PREFIX,
    KEY_WIDTH,
    THRESHOLDS,
    ImageError,
    ImageFingerprint,
    colour_grid,
    decode,
    distance,
    fingerprint_bytes,
    fingerprint_file,
    fingerprint_image,
    grid_distance,
    image_keys,
    key_text,
    key_values,
    mirror_grid,
    phash_of,
    query_keys,
    same_photo,
    stored_keys,
    windows,
)


def encoded(im: Image.Image, fmt: str, **kw: object) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


# ------------------------------------------------------------------ decoding


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP", "GIF"])
def test_each_format_decodes_to_rgb(fmt: str) -> None:
    im = decode(encoded(scene(1), fmt), f"x.{fmt.lower()}")
    assert im.mode == "RGB" and im.size == (320, 240)


def test_gif_first_frame_is_taken() -> None:
    frames = [Image.new("RGB", (64, 64), c) for c in ((255, 0, 0), (0, 0, 255))]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:])
    im = decode(buf.getvalue(), "anim.gif")
    assert im.getpixel((10, 10)) == (255, 0, 0)


def test_exif_orientation_is_applied() -> None:
    im = scene(2, (200, 100))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated 90 degrees clockwise for display
    upright = decode(encoded(im, "JPEG", exif=exif, quality=95), "rotated.jpg")
    assert upright.size == (100, 200)


def test_transparency_is_laid_on_white() -> None:
    im = decode(encoded(Image.new("RGBA", (8, 8), (0, 0, 0, 0)), "PNG"), "clear.png")
    assert im.getpixel((0, 0)) == (255, 255, 255)


def test_truncated_jpeg_is_one_error(tmp_path: Path) -> None:
    data = encoded(scene(3), "JPEG", quality=90)
    bad = tmp_path / "cut.jpg"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(ImageError) as err:
        fingerprint_file(bad)
    assert str(bad) in str(err.value) and "\n" not in str(err.value)
    assert isinstance(err.value, FingerprintIndexerError)


def png_header(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` pixels and holds a few bytes of data."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
            + chunk(b"IEND", b""))


@pytest.mark.parametrize("side", [20_000, 100_000])
def test_decompression_bomb_is_refused_from_its_header(side: int) -> None:
    with pytest.raises(ImageError, match="bomb"):
        decode(png_header(side, side), "bomb.png")


def test_text_named_jpg_is_not_a_picture(tmp_path: Path) -> None:
    p = tmp_path / "story.jpg"
    p.write_text("this is an article, not a photo\n")
    with pytest.raises(ImageError, match="not a picture"):
        fingerprint_file(p)


def test_other_formats_and_missing_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ImageError, match="format BMP"):
        decode(encoded(scene(4), "BMP"), "x.bmp")
    with pytest.raises(ImageError, match="cannot read"):
        fingerprint_file(tmp_path / "absent.png")


# ------------------------------------------------------------------ hashes and the rule


def test_phash_matches_the_dct_definition() -> None:
    grey = np.random.default_rng(5).uniform(0, 255, (32, 32))
    n = np.arange(32)
    c = np.cos(np.pi * (2 * n[None, :] + 1) * n[:, None] / 64)
    low = (c @ grey @ c.T)[:8, :8].ravel()
    bits = "".join("1" if v > np.median(low) else "0" for v in low)
    assert phash_of(grey) == int(bits, 2)


def test_colour_grid_reads_dominant_colours_row_by_row() -> None:
    im = Image.new("RGB", (80, 40), (250, 10, 10))  # red: 4
    ImageDraw.Draw(im).rectangle((40, 0, 79, 19), fill=(10, 10, 240))  # top right quarter blue: 1
    assert colour_grid(im, cols=2, rows=2) == "4144"
    assert grid_distance("4144", "4444") == 0.25
    assert grid_distance("41", "4144") == 1.0
    assert mirror_grid("4144", 2) == "1444"


def test_copies_are_the_same_photo_and_other_pictures_are_not() -> None:
    original = scene(6, (640, 480))
    fp = fingerprint_image(original)
    copies = {
        "jpeg": Image.open(io.BytesIO(encoded(original, "JPEG", quality=40))).convert("RGB"),
        "resize": original.resize((320, 240), Image.Resampling.LANCZOS),
        "crop": original.crop((30, 20, 620, 470)),
        "mirror": ImageOps.mirror(original),
    }
    for name, copy in copies.items():
        assert same_photo(fp, fingerprint_image(copy)), name
    for seed in range(7, 12):
        assert not same_photo(fp, fingerprint_image(scene(seed, (640, 480)))), seed


def test_flat_pictures_match_only_exactly() -> None:
    a, b = (fingerprint_image(Image.new("RGB", (100, 100), c)) for c in ((200, 200, 200), (40, 40, 40)))
    assert a.flat and b.flat
    assert not same_photo(a, b)
    assert same_photo(a, fingerprint_image(Image.new("RGB", (100, 100), (200, 200, 200))))


def test_windows_start_with_the_base_window() -> None:
    wins = windows(THRESHOLDS)
    c = (1 - THRESHOLDS.centre) / 2
    assert wins[0] == ((c, 1 - c), (c, 1 - c))
    assert len(set(wins)) == len(wins)
    assert all(0 <= lo < hi <= 1 for w in wins for lo, hi in w)


def test_keys_are_the_low_frequency_bits_of_each_own_window() -> None:
    fp = fingerprint_image(scene(13))
    own = fp.probes[: len(fp.probes) // 2]

    def key(h: int) -> int:  # bits of (u, v) with 1 <= u + v <= key_band, lowest frequency first
        band = sorted((u + v, u, v) for u in range(8) for v in range(8) if 1 <= u + v <= THRESHOLDS.key_band)
        return int("".join(str(h >> (63 - (u * 8 + v)) & 1) for _, u, v in band), 2)

    assert stored_keys(fp) == sorted({key(h) for h in own})
    assert query_keys(fp) == sorted({key(h) for h in fp.probes})
    assert key_values(np.array(own, dtype=np.uint64)).tolist() == [key(h) for h in own]
    keys = image_keys(fp)
    assert keys == [key_text(k) for k in stored_keys(fp)]
    assert all(k.startswith(KEY_PREFIX) and len(k) == 1 + (KEY_WIDTH + 3) // 4 for k in keys)


def test_a_shifted_window_keeps_its_key_but_not_its_full_hash() -> None:
    """What the look-up relies on: a small crop moves high-frequency bits, rarely the lowest ones."""
    original = scene(21, (640, 480))
    crop = original.crop((40, 24, 640, 480))
    a, b = fingerprint_image(original), fingerprint_image(crop)
    assert set(stored_keys(a)) & set(query_keys(b))
    assert same_photo(a, b) and same_photo(b, a)


def test_json_round_trip() -> None:
    fp = fingerprint_image(scene(14))
    assert ImageFingerprint.from_json(fp.to_json()) == fp


# ------------------------------------------------------------------ invariants

seeds = st.integers(min_value=0, max_value=10_000)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seeds)
def test_lossless_png_round_trip_keeps_the_fingerprint(seed: int) -> None:
    im = scene(seed, (160, 120))
    assert fingerprint_bytes(encoded(im, "PNG"), "a.png") == fingerprint_image(im)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seeds, seeds)
def test_distance_is_symmetric_and_zero_on_itself(a: int, b: int) -> None:
    fa, fb = fingerprint_image(scene(a, (160, 120))), fingerprint_image(scene(b, (160, 120)))
    assert distance(fa, fb) == distance(fb, fa)
    assert distance(fa, fa) == 0
    assert same_photo(fa, fb) == same_photo(fb, fa)
