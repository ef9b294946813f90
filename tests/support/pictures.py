"""Small real pictures for the image tests, drawn with Pillow (no photo is committed)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw


def scene(seed: int, size: tuple[int, int] = (320, 240)) -> Image.Image:
    """A picture of random shapes over a gradient (one per seed)."""
    rng = np.random.default_rng(seed)
    w, h = size
    base = np.linspace(0, 255, w)[None, :, None] * np.ones((h, 1, 3)) * rng.uniform(0.2, 1, 3)
    im = Image.fromarray(base.astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(im)
    for _ in range(12):
        x0, y0 = int(rng.integers(0, w - 20)), int(rng.integers(0, h - 20))
        x1, y1 = x0 + int(rng.integers(20, w // 2)), y0 + int(rng.integers(20, h // 2))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)((x0, y0, x1, y1), fill=colour)
    return im
