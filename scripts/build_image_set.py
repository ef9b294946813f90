#!/usr/bin/env python3
"""Build the labelled image set used by ``scripts/eval_images.py`` from real photos that packages ship.

Sources (nothing is downloaded at run time; the test setup installs them): the sample photos shipped in
scikit-image's wheel (``skimage.data``'s folder) and the photos and wallpapers of Debian's wallpaper
packages (:data:`PACKAGES`, found through ``dpkg -L``). A package folder (a theme such as
``mate/nature`` or one photographer's set) is a *series*: distinct photos of one style, the hard
negatives. The palettes of one artwork (``mate-backgrounds/desktop``: one design in cold, warm and
other colours) are left out: neither distinct photos nor copies of one. Copies of one picture at
other sizes (``Elephants_3840x2160.jpg`` beside ``Elephants.jpg``)
and the right half of a stereo pair are left out: they are one photo, not two; so is a picture whose
grey thumbnail equals an earlier one's (:func:`same_picture`), and a flat picture (one colour or a faint
gradient, :attr:`ImageFingerprint.flat`): not a photo.

Each original is brought to at most :data:`LONG_SIDE` pixels on its long side (as a site publishes it)
and saved as JPEG quality 95; each then gets every transformation of :data:`TRANSFORMS` at
:data:`STRENGTHS` strengths drawn at random (seeded), the way news sites re-post a photo:

``resize``      scale 30-100 %                 ``jpeg``        re-encoded at quality 30-95
``crop``        up to 15 % of each side's span cut off, split at random between the two edges
``logo``        an opaque badge with a word in a corner, 8-20 % of the width
``watermark``   a semi-transparent word across the middle (opacity 25-50 %)
``caption``     a dark bar with white text along the bottom, 8-18 % of the height
``brightness``  +-10-20 %                      ``contrast``    +-10-20 %
``mirror``      flipped left to right (one strength)

Transformed pictures are saved as JPEG quality 90 (``jpeg``: its own quality). ``labels.json`` lists
every picture: ``file``, ``photo`` (the original's id), ``series``, ``transform`` (``original`` for the
originals) and ``strength``. Positive pairs are (original, transformed copy of it); negative pairs join
pictures of two distinct photos. Run: ``python scripts/build_image_set.py [--out out/images]``.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageEnhance, ImageFont, ImageOps

from fingerprint_indexer.fingerprint.image import fingerprint_image

SEED = 32
LONG_SIDE = 1024
STRENGTHS = 3
#: Debian packages of photos and wallpapers (``apt-get install`` them; the ones missing are skipped).
PACKAGES = ("ukui-wallpapers", "lomiri-wallpapers", "lomiri-wallpapers-16.04", "mate-backgrounds")
#: Package folders of one artwork in several palettes (not distinct photos, nor copies of one).
PALETTES = ("mate-backgrounds/desktop",)
#: scikit-image's shipped sample photos (synthetic test patterns and data files left out).
SKIMAGE = ("astronaut.png", "brick.png", "camera.png", "cell.png", "chelsea.png", "clock_motion.png",
           "coffee.png", "coins.png", "grass.png", "gravel.png", "horse.png", "hubble_deep_field.jpg",
           "ihc.png", "microaneurysms.png", "moon.png", "motorcycle_left.png", "page.png", "retina.jpg",
           "rocket.jpg", "text.png")
#: The same picture as another one of the sources (other sizes of one wallpaper).
SAME_AS_ANOTHER = ("Elephants_3840x2160.jpg", "Elephants_5640x3172.jpg")
SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
WORDS = ("NEWS", "DAILY", "WIRE", "PRESS", "TIMES", "HERALD", "POST")


def skimage_photos() -> list[tuple[str, str, Path]]:
    """(photo id, series, path) of scikit-image's shipped sample photos."""
    try:
        import skimage.data
    except ImportError:
        return []
    folder = Path(skimage.data.__file__).parent
    return [(f"skimage/{Path(n).stem}", "skimage", folder / n) for n in SKIMAGE if (folder / n).is_file()]


def package_photos(packages: tuple[str, ...] = PACKAGES) -> list[tuple[str, str, Path]]:
    """(photo id, series, path) of the pictures the installed wallpaper packages hold."""
    out = []
    for pkg in packages:
        listing = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True, check=False)
        if listing.returncode != 0:
            print(f"package {pkg} is not installed: skipped", file=sys.stderr)
            continue
        for line in sorted(listing.stdout.splitlines()):
            p = Path(line)
            series = f"{pkg}/{p.parent.name}"
            if p.suffix.lower() in SUFFIXES and p.is_file() and p.name not in SAME_AS_ANOTHER \
                    and series not in PALETTES:
                out.append((f"{pkg}/{p.parent.name}/{p.stem}", series, p))
    return out


def load_original(path: Path) -> Image.Image:
    """The photo upright, in RGB on white, at most LONG_SIDE pixels on its long side."""
    with Image.open(path) as src:
        src.seek(0)
        im = ImageOps.exif_transpose(src)
        if im.mode in ("RGBA", "LA", "PA", "P"):
            rgba = im.convert("RGBA")
            flat = Image.new("RGB", rgba.size, (255, 255, 255))
            flat.paste(rgba, mask=rgba.getchannel("A"))
            im = flat
        im = im.convert("RGB")
    scale = LONG_SIDE / max(im.size)
    if scale < 1:
        im = im.resize((max(1, round(im.width * scale)), max(1, round(im.height * scale))),
                       Image.Resampling.LANCZOS)
    return im


def same_picture(a: Image.Image, b: Image.Image) -> bool:
    """Whether two pictures are one (mean grey difference of 64 x 64 thumbnails under 3 of 255)."""
    ta, tb = (np.asarray(x.convert("L").resize((64, 64), Image.Resampling.BOX), dtype=np.float64)
              for x in (a, b))
    return float(np.abs(ta - tb).mean()) < 3


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=max(8, size))


def resize(im: Image.Image, rng: random.Random) -> tuple[Image.Image, str]:
    s = rng.uniform(0.3, 1.0)
    size = (max(8, round(im.width * s)), max(8, round(im.height * s)))
    return im.resize(size, Image.Resampling.LANCZOS), f"{s:.2f}"


def crop(im: Image.Image, rng: random.Random) -> tuple[Image.Image, str]:
    fx, fy = rng.uniform(0.03, 0.15), rng.uniform(0.03, 0.15)
    lx, ty = rng.uniform(0, fx), rng.uniform(0, fy)
    box = (round(im.width * lx), round(im.height * ty),
           round(im.width * (1 - (fx - lx))), round(im.height * (1 - (fy - ty))))
    return im.crop(box), f"{fx:.2f}x{fy:.2f}"


def logo(im: Image.Image, rng: random.Random) -> tuple[Image.Image, str]:
    out = im.copy()
    w = max(12, round(im.width * rng.uniform(0.08, 0.2)))
    h = max(8, round(w * rng.uniform(0.3, 0.6)))
    corner = rng.choice(("tl", "tr", "bl", "br"))
    margin = round(im.width * 0.02)
    x = margin if corner[1] == "l" else im.width - w - margin
    y = margin if corner[0] == "t" else im.height - h - margin
    colour = tuple(rng.randrange(256) for _ in range(3))
    draw = ImageDraw.Draw(out)
    draw.rounded_rectangle((x, y, x + w, y + h), radius=h // 4, fill=colour)
    draw.text((x + w // 10, y + h // 5), rng.choice(WORDS), fill=(255, 255, 255), font=_font(h // 2))
    return out, f"{w / im.width:.2f}:{corner}"


def watermark(im: Image.Image, rng: random.Random) -> tuple[Image.Image, str]:
    alpha = rng.uniform(0.25, 0.5)
    layer = Image.new("RGBA", im.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    size = max(10, im.width // 8)
    text = "© " + rng.choice(WORDS)
    draw.text((im.width // 2, im.height // 2), text, fill=(255, 255, 255, round(255 * alpha)),
              font=_font(size), anchor="mm")
    out = Image.alpha_composite(im.convert("RGBA"), layer).convert("RGB")
    return out, f"{alpha:.2f}"


def caption(im: Image.Image, rng: random.Random) -> tuple[Image.Image, str]:
    out = im.copy()
    frac = rng.uniform(0.08, 0.18)
    h = max(6, round(im.height * frac))
    draw = ImageDraw.Draw(out)
    draw.rectangle((0, im.height - h, im.width, im.height), fill=(20, 20, 24))
    words = " ".join(rng.choice(WORDS).title() for _ in range(6))
    draw.text((im.width // 40, im.height - h + h // 4), words, fill=(255, 255, 255), font=_font(h // 2))
    return out, f"{frac:.2f}"


def _signed(rng: random.Random) -> float:
    return rng.choice((-1, 1)) * rng.uniform(0.1, 0.2)


def brightness(im: Image.Image, rng: random.Random) -> tuple[Image.Image, str]:
    d = _signed(rng)
    return ImageEnhance.Brightness(im).enhance(1 + d), f"{d:+.2f}"


def contrast(im: Image.Image, rng: random.Random) -> tuple[Image.Image, str]:
    d = _signed(rng)
    return ImageEnhance.Contrast(im).enhance(1 + d), f"{d:+.2f}"


def mirror(im: Image.Image, rng: random.Random) -> tuple[Image.Image, str]:
    return ImageOps.mirror(im), "flip"


TRANSFORMS: dict[str, Callable[[Image.Image, random.Random], tuple[Image.Image, str]]] = {
    "resize": resize, "crop": crop, "logo": logo, "watermark": watermark, "caption": caption,
    "brightness": brightness, "contrast": contrast, "mirror": mirror,
}


def build(out: Path) -> dict[str, Any]:
    """Write the set to ``out``; returns its manifest."""
    photos = skimage_photos() + package_photos()
    if not photos:
        raise SystemExit("no photos found: pip install scikit-image; apt-get install " + " ".join(PACKAGES))
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    labels: list[dict[str, Any]] = []
    kept: list[Image.Image] = []
    left_out: list[str] = []
    for photo, series, path in photos:
        im = load_original(path)
        if fingerprint_image(im).flat or any(same_picture(im, k) for k in kept):
            left_out.append(photo)
            continue
        kept.append(im)
        n = len(kept) - 1
        stem = f"{n:03d}"
        name = f"{stem}_original.jpg"
        im.save(out / name, quality=95)
        labels.append({"file": name, "photo": photo, "series": series, "transform": "original",
                       "strength": "", "source": str(path)})
        for t, fn in [("jpeg", None), *TRANSFORMS.items()]:
            for s in range(1 if t == "mirror" else STRENGTHS):
                name = f"{stem}_{t}{s}.jpg"
                if fn is None:
                    q = rng.randint(30, 95)
                    im.save(out / name, quality=q)
                    strength = str(q)
                else:
                    copy, strength = fn(im, rng)
                    copy.save(out / name, quality=90)
                labels.append({"file": name, "photo": photo, "series": series, "transform": t,
                               "strength": strength, "source": str(path)})
    manifest = {"seed": SEED, "photos": len(kept), "left_out": left_out,
                "series": sorted({x["series"] for x in labels}), "pictures": len(labels), "labels": labels}
    (out / "labels.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/images"))
    args = ap.parse_args(argv)
    manifest = build(args.out)
    print(f"{manifest['photos']} photos ({len(manifest['left_out'])} left out: flat or a copy), "
          f"{manifest['pictures']} pictures, {len(manifest['series'])} series -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
