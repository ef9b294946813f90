"""ImageIndex: real pictures made with Pillow; the index answers what the rule says, through the table and
through the append buffer alike."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageOps
from support import pictures

from fingerprint_indexer.fingerprint.image import ImageFingerprint, fingerprint_image, same_photo
from fingerprint_indexer.index import images
from fingerprint_indexer.index.images import ImageIndex


def scene(seed: int, size: tuple[int, int] = (480, 360)) -> Image.Image:
    return pictures.scene(seed, size)


def copies(im: Image.Image) -> dict[str, Image.Image]:
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=35)
    w, h = im.size
    return {"jpeg": Image.open(io.BytesIO(buf.getvalue())).convert("RGB"),
            "resize": im.resize((w // 2, h // 2), Image.Resampling.LANCZOS),
            "crop": im.crop((int(w * 0.08), int(h * 0.02), w, int(h * 0.95))),
            "mirror": ImageOps.mirror(im)}


def build(fps: dict[str, ImageFingerprint], flush: bool) -> ImageIndex:
    index = ImageIndex()
    for name, fp in fps.items():
        index.add(name, fp)
    if flush:
        index.flush()
    return index


def test_copies_find_their_original_and_nothing_else() -> None:
    originals = {f"s{i}": fingerprint_image(scene(i)) for i in range(8)}
    for flush in (False, True):
        index = build(originals, flush)
        assert len(index) == 8 and index.entries > 8
        for i in range(8):
            for name, copy in copies(scene(i)).items():
                hits = index.query(fingerprint_image(copy))
                assert [m.image_id for m in hits] == [f"s{i}"], (i, name, flush)
                assert hits[0].mirrored == (name == "mirror") and not hits[0].exact


@pytest.mark.parametrize("levels", ["main", "all three"])
def test_answers_equal_the_rule_on_every_pair(levels: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the main table alone, or with entries left in the recent table and in the buffer."""
    if levels != "main":
        monkeypatch.setattr(images, "BUFFER_MAX", 40)
        monkeypatch.setattr(images, "RECENT_MIN", 200)
    pictures = {f"s{i}": fingerprint_image(scene(i)) for i in range(5)}
    pictures |= {f"s{i}-{n}": fingerprint_image(c) for i in range(5) for n, c in copies(scene(i)).items()}
    index = build(pictures, flush=levels == "main")
    if levels != "main":
        assert len(index._main[0]) and len(index._recent[0]) and index._buf
    for name, fp in pictures.items():
        found = {m.image_id for m in index.query(fp)}
        assert found == {other for other, g in pictures.items() if same_photo(fp, g)}, name


def test_same_pixels_are_exact_and_flat_pictures_match_only_exactly() -> None:
    flat = fingerprint_image(Image.new("RGB", (64, 64), (90, 90, 90)))
    other_flat = fingerprint_image(Image.new("RGB", (64, 64), (30, 30, 30)))
    photo = fingerprint_image(scene(3))
    index = build({"flat": flat, "photo": photo}, flush=False)
    assert [(m.image_id, m.exact) for m in index.query(flat)] == [("flat", True)]
    assert index.query(other_flat) == []
    assert index.query(photo)[0].exact


def test_removed_and_replaced_pictures() -> None:
    a, b = fingerprint_image(scene(1)), fingerprint_image(scene(2))
    index = build({"a": a, "b": b}, flush=True)
    assert index.remove("a") and not index.remove("a")
    assert index.query(a) == [] and "a" not in index
    index.add("b", a)  # the id now names another picture
    index.flush()
    assert [m.image_id for m in index.query(a)] == ["b"]
    assert index.query(b) == []
