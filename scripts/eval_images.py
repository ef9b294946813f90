#!/usr/bin/env python3
"""Precision and recall of image near-duplicate methods per transformation, on the set of
``scripts/build_image_set.py``.

Methods: ours (:func:`fingerprint_indexer.fingerprint.image.same_photo` under the thresholds it is
fitted here, and the same through the block-key look-up: a copy's probes within ``k_lookup`` of the
original's base hash), ``imagehash``'s pHash, dHash and colorhash, and the colour grid of the original
design. The photos are split in two halves at random (seeded): each method's threshold is the largest
whose precision on the *fit* half, over all pairs of every transformation but ``mirror``, is at least
:data:`TARGET`; precision and recall are reported on the other half only.

Pairs, within one half: positive (original, transformed copy of it), negative (a transformed copy or an
original, the original of another photo). Precision of a transformation counts the pairs of its copies.

Run: ``python scripts/eval_images.py [--set out/images] [--write docs/quality.md]``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import imagehash
from PIL import Image

from fingerprint_indexer.fingerprint.image import (
    THRESHOLDS,
    ImageFingerprint,
    ImageThresholds,
    fingerprint_image,
    grid_distance,
    read_image,
    same_photo,
)

TARGET = 0.99
SEED = 7
START, END = "<!-- images:start -->", "<!-- images:end -->"
TRANSFORMS = ("jpeg", "resize", "crop", "logo", "watermark", "caption", "brightness", "contrast", "mirror")


def load(folder: Path) -> list[dict[str, Any]]:
    """Every picture of the set with what each method keeps of it."""
    manifest = json.loads((folder / "labels.json").read_text())
    out = []
    for row in manifest["labels"]:
        im = read_image(folder / row["file"])
        out.append({**row, "ours": fingerprint_image(im), "phash": imagehash.phash(im),
                    "dhash": imagehash.dhash(im), "colorhash": imagehash.colorhash(im)})
    return out


def pairs(rows: list[dict[str, Any]], photos: set[str]) -> list[tuple[dict[str, Any], dict[str, Any], bool]]:
    """(picture, original, same photo) of every picture of ``photos`` against every original of them."""
    mine = [r for r in rows if r["photo"] in photos]
    originals = [r for r in mine if r["transform"] == "original"]
    out = []
    for r in mine:
        for o in originals:
            if r is o or (r["transform"] == "original" and r["photo"] > o["photo"]):
                continue
            out.append((r, o, r["photo"] == o["photo"]))
    return out


Score = Callable[[dict[str, Any], dict[str, Any]], float]
SCORES: dict[str, Score] = {
    "imagehash pHash": lambda a, b: a["phash"] - b["phash"],
    "imagehash dHash": lambda a, b: a["dhash"] - b["dhash"],
    "imagehash colorhash": lambda a, b: a["colorhash"] - b["colorhash"],
    "colour grid": lambda a, b: grid_distance(a["ours"].grid, b["ours"].grid),
}


def found_by_lookup(copy: ImageFingerprint, original: ImageFingerprint, limits: ImageThresholds) -> bool:
    """Whether a look-up of ``copy`` reaches ``original`` through block keys (or its digest)."""
    return copy.digest == original.digest or min(
        (p ^ original.phash).bit_count() for p in copy.probes) <= limits.k_lookup


def table(decided: list[tuple[str, bool, bool]]) -> dict[str, tuple[float, float, int, int]]:
    """Per transformation: precision, recall, positives, negatives, from (transformation, label, said)."""
    out = {}
    for t in TRANSFORMS:
        mine = [(y, p) for tt, y, p in decided if tt == t]
        tp = sum(y and p for y, p in mine)
        fp = sum(p and not y for y, p in mine)
        pos = sum(y for y, _ in mine)
        out[t] = (tp / (tp + fp) if tp + fp else 1.0, tp / pos if pos else 0.0, pos, len(mine) - pos)
    return out


def precision(decided: list[tuple[str, bool, bool]]) -> float:
    tp = sum(y and p for t, y, p in decided if t != "mirror")
    fp = sum(p and not y for t, y, p in decided if t != "mirror")
    return tp / (tp + fp) if tp + fp else 1.0


def recall(decided: list[tuple[str, bool, bool]]) -> float:
    """The worst recall of a transformation other than ``mirror``."""
    return min(r for t, (_, r, _, _) in table(decided).items() if t != "mirror")


def fit_threshold(score: Score, fit: list[tuple[dict[str, Any], dict[str, Any], bool]]) -> float:
    """The largest threshold with precision >= TARGET on the fit pairs."""
    scored = [(r["transform"], y, score(r, o)) for r, o, y in fit]
    best = min(s for _, _, s in scored)
    for th in sorted({s for _, _, s in scored}):
        if precision([(t, y, s <= th) for t, y, s in scored]) >= TARGET:
            best = th
        else:
            break
    return best


def fit_ours(fit: list[tuple[dict[str, Any], dict[str, Any], bool]]) -> ImageThresholds:
    """The ``k`` and ``grid_max`` of the best worst-transformation recall at precision >= TARGET."""
    best: tuple[float, ImageThresholds] = (-1.0, THRESHOLDS)
    for k in range(4, 21):
        for g in (0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0):
            limits = replace(THRESHOLDS, k=k, grid_max=g)
            decided = [(r["transform"], y, same_photo(r["ours"], o["ours"], limits)) for r, o, y in fit]
            if precision(decided) >= TARGET and recall(decided) > best[0]:
                best = (recall(decided), limits)
    return best[1]


def evaluate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    photos = sorted({r["photo"] for r in rows})
    random.Random(SEED).shuffle(photos)
    fit_photos, test_photos = set(photos[: len(photos) // 2]), set(photos[len(photos) // 2 :])
    fit, test = pairs(rows, fit_photos), pairs(rows, test_photos)
    results: dict[str, dict[str, tuple[float, float, int, int]]] = {}
    thresholds: dict[str, str] = {}
    limits = fit_ours(fit)
    thresholds["ours"] = f"k = {limits.k}, grid <= {limits.grid_max}"
    results["ours"] = table([(r["transform"], y, same_photo(r["ours"], o["ours"], limits))
                             for r, o, y in test])
    thresholds["ours, through the look-up"] = f"as ours, look-up within {limits.k_lookup}"
    results["ours, through the look-up"] = table([
        (r["transform"], y, same_photo(r["ours"], o["ours"], limits)
         and found_by_lookup(r["ours"], o["ours"], limits)) for r, o, y in test])
    for name, score in SCORES.items():
        th = fit_threshold(score, fit)
        thresholds[name] = f"<= {th:g}"
        results[name] = table([(r["transform"], y, score(r, o) <= th) for r, o, y in test])
    return {"fit_photos": len(fit_photos), "test_photos": len(test_photos), "fit_pairs": len(fit),
            "test_pairs": len(test), "thresholds": thresholds, "results": results,
            "fitted": {"k": limits.k, "grid_max": limits.grid_max}}


def markdown(ev: dict[str, Any], manifest: dict[str, Any]) -> str:
    methods = list(ev["results"])
    lines = [START, "", "### Images: near-duplicate photos per transformation", "",
             f"Set: `scripts/build_image_set.py`, {manifest['photos']} photos ({len(manifest['series'])} "
             f"series: {', '.join(manifest['series'])}), {manifest['pictures']} pictures. Thresholds fitted "
             f"on {ev['fit_photos']} photos ({ev['fit_pairs']} pairs) for precision >= {TARGET} over every "
             f"transformation but mirror; reported on the other {ev['test_photos']} photos "
             f"({ev['test_pairs']} pairs). Each cell: precision / recall.", "",
             "| transformation | positives / negatives | " + " | ".join(methods) + " |",
             "|---|---|" + "---|" * len(methods)]
    for t in TRANSFORMS:
        first = ev["results"][methods[0]][t]
        cells = [f"{ev['results'][m][t][0]:.3f} / {ev['results'][m][t][1]:.3f}" for m in methods]
        lines.append(f"| {t} | {first[2]} / {first[3]} | " + " | ".join(cells) + " |")
    lines.append("| threshold | | " + " | ".join(ev["thresholds"][m] for m in methods) + " |")
    lines += ["", "Command: `python scripts/build_image_set.py && python scripts/eval_images.py "
              "--write docs/quality.md`.", "", END]
    return "\n".join(lines)


def write_section(doc: Path, section: str) -> None:
    text = doc.read_text() if doc.exists() else ""
    if START in text and END in text:
        text = text[: text.index(START)] + section + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    doc.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", type=Path, default=Path("out/images"))
    ap.add_argument("--write", type=Path, default=None, help="replace the images section of this file")
    args = ap.parse_args(argv)
    if not (args.set / "labels.json").exists():
        print(f"no image set in {args.set}: run scripts/build_image_set.py first", file=sys.stderr)
        return 2
    Image.MAX_IMAGE_PIXELS = THRESHOLDS.max_pixels
    manifest = json.loads((args.set / "labels.json").read_text())
    ev = evaluate(load(args.set))
    section = markdown(ev, manifest)
    print(section)
    shipped = {"k": THRESHOLDS.k, "grid_max": THRESHOLDS.grid_max}
    if ev["fitted"] != shipped:
        print(f"note: fitted {ev['fitted']}, ImageThresholds ships {shipped}", file=sys.stderr)
    if args.write:
        write_section(args.write, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
