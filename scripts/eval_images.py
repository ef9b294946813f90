#!/usr/bin/env python3
"""Precision and recall of image near-duplicate methods per transformation, on the set of
``scripts/build_image_set.py``.

Methods: ours (:func:`fingerprint_indexer.fingerprint.image.same_photo` under the thresholds fitted
here), ours through the look-up (an :class:`~fingerprint_indexer.index.images.ImageIndex` of the
originals, asked with each picture: the path a store takes), ``imagehash``'s pHash, dHash and colorhash,
and the colour grid of the original design. The photos are split in two halves at random (seeded): each
method's threshold is the largest whose precision on the *fit* half, over all pairs of every
transformation but ``mirror``, is at least :data:`TARGET`; precision and recall are reported on the other
half only.

Pairs, within one half: positive (original, transformed copy of it), negative (a transformed copy or an
original, the original of another photo). Precision of a transformation counts the pairs of its copies.
Distances are computed for all pairs at once with NumPy, so fitting a threshold is a few array passes.

Run: ``python scripts/eval_images.py [--set out/images] [--write docs/quality.md]``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import imagehash
import numpy as np
import numpy.typing as npt
from PIL import Image

from fingerprint_indexer.fingerprint.image import (
    THRESHOLDS,
    ImageThresholds,
    fingerprint_image,
    grid_array,
    grid_distance_many,
    keys_meet_many,
    nearest_many,
    read_image,
)
from fingerprint_indexer.index.images import ImageIndex

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
        out.append({**row, "ours": fingerprint_image(im), "phash": imagehash.phash(im).hash.ravel(),
                    "dhash": imagehash.dhash(im).hash.ravel(),
                    "colorhash": imagehash.colorhash(im).hash.ravel()})
    return out


@dataclass
class Pairs:
    """Pairs as arrays: picture row, original row, same photo, transformation number."""

    r: npt.NDArray[np.int64]
    o: npt.NDArray[np.int64]
    y: npt.NDArray[np.bool_]
    t: npt.NDArray[np.int64]


def pairs(rows: list[dict[str, Any]], photos: set[str]) -> Pairs:
    """(picture, original, same photo) of every picture of ``photos`` against every original of them."""
    mine = [i for i, r in enumerate(rows) if r["photo"] in photos]
    originals = [i for i in mine if rows[i]["transform"] == "original"]
    out = []
    for i in mine:
        for o in originals:
            if i == o or (rows[i]["transform"] == "original" and rows[i]["photo"] > rows[o]["photo"]):
                continue
            out.append((i, o, rows[i]["photo"] == rows[o]["photo"],
                        TRANSFORMS.index(rows[i]["transform"]) if rows[i]["transform"] in TRANSFORMS else -1))
    a = np.array(out, dtype=np.int64).reshape(-1, 4)
    return Pairs(a[:, 0], a[:, 1], a[:, 2].astype(bool), a[:, 3])


def hamming_score(name: str) -> Callable[[list[dict[str, Any]], Pairs], npt.NDArray[np.float64]]:
    def score(rows: list[dict[str, Any]], p: Pairs) -> npt.NDArray[np.float64]:
        bits = np.array([r[name] for r in rows], dtype=bool)
        return np.asarray((bits[p.r] != bits[p.o]).sum(axis=1), dtype=np.float64)
    return score


def grid_score(rows: list[dict[str, Any]], p: Pairs) -> npt.NDArray[np.float64]:
    grids = np.array([grid_array(r["ours"].grid) for r in rows])
    return np.asarray((grids[p.r] != grids[p.o]).mean(axis=1), dtype=np.float64)


SCORES = {"imagehash pHash": hamming_score("phash"), "imagehash dHash": hamming_score("dhash"),
          "imagehash colorhash": hamming_score("colorhash"), "colour grid": grid_score}


@dataclass
class Ours:
    """The rule's inputs for every pair: window distance, colour-grid distance (mirror-aware), keys
    met (at the shipped ``k_key``), same pixels, either flat."""

    d: npt.NDArray[np.int64]
    grid: npt.NDArray[np.float64]
    met: npt.NDArray[np.bool_]
    same: npt.NDArray[np.bool_]
    flat: npt.NDArray[np.bool_]

    def decide(self, limits: ImageThresholds) -> npt.NDArray[np.bool_]:
        near = (self.d <= limits.k) & (self.grid <= limits.grid_max) & self.met
        return self.same | (~self.flat & near)


def ours(rows: list[dict[str, Any]], p: Pairs) -> Ours:
    """The rule's inputs for all pairs, one vectorised pass per original."""
    probes = np.array([r["ours"].probes for r in rows], dtype=np.uint64)
    grids = np.array([grid_array(r["ours"].grid) for r in rows])
    d = np.zeros(len(p.r), dtype=np.int64)
    g = np.zeros(len(p.r), dtype=np.float64)
    met = np.zeros(len(p.r), dtype=bool)
    for o in np.unique(p.o):
        at = np.flatnonzero(p.o == o)
        d[at], mirrored = nearest_many(probes[o], probes[p.r[at]])
        g[at] = grid_distance_many(grids[o], grids[p.r[at]], mirrored, THRESHOLDS.grid_cols)
        met[at] = keys_meet_many(probes[o], probes[p.r[at]], THRESHOLDS.k_key)
    digests = np.array([r["ours"].digest for r in rows])
    flat = np.array([r["ours"].flat for r in rows])
    return Ours(d, g, met, digests[p.r] == digests[p.o], flat[p.r] | flat[p.o])


def through_lookup(rows: list[dict[str, Any]], p: Pairs, limits: ImageThresholds) -> npt.NDArray[np.bool_]:
    """Whether an index of the originals, asked with the picture, answers the original."""
    index = ImageIndex(limits)
    for o in np.unique(p.o).tolist():
        index.add(str(o), rows[o]["ours"])
    index.flush()
    found = {r: {int(m.image_id) for m in index.query(rows[r]["ours"])} for r in np.unique(p.r).tolist()}
    return np.array([o in found[r] for r, o in zip(p.r.tolist(), p.o.tolist(), strict=True)], dtype=bool)


def table(p: Pairs, said: npt.NDArray[np.bool_]) -> dict[str, tuple[float, float, int, int]]:
    """Per transformation: precision, recall, positives, negatives."""
    out = {}
    for i, t in enumerate(TRANSFORMS):
        m = p.t == i
        y, s = p.y[m], said[m]
        tp, fp, pos = int((y & s).sum()), int((s & ~y).sum()), int(y.sum())
        out[t] = (tp / (tp + fp) if tp + fp else 1.0, tp / pos if pos else 0.0, pos, int(m.sum()) - pos)
    return out


def precision(p: Pairs, said: npt.NDArray[np.bool_]) -> float:
    """Precision over every transformation but mirror."""
    m = p.t != TRANSFORMS.index("mirror")
    tp, fp = int((p.y & said & m).sum()), int((~p.y & said & m).sum())
    return tp / (tp + fp) if tp + fp else 1.0


def recall(p: Pairs, said: npt.NDArray[np.bool_]) -> float:
    """The worst recall of a transformation other than ``mirror``."""
    return min(r for t, (_, r, _, _) in table(p, said).items() if t != "mirror")


def fit_threshold(score: npt.NDArray[np.float64], fit: Pairs) -> float:
    """The largest threshold with precision >= TARGET on the fit pairs."""
    best = float(score.min())
    for th in np.unique(score).tolist():
        if precision(fit, score <= th) >= TARGET:
            best = th
        else:
            break
    return best


def fit_ours(inputs: Ours, fit: Pairs) -> ImageThresholds:
    """The ``k`` and ``grid_max`` of the best worst-transformation recall at precision >= TARGET; on a
    tie the smallest ``k``, then the largest ``grid_max``: the window distance is what tells photos
    apart (the colour grid alone is weak, see its column), so it is kept tight and the grid loose."""
    best: tuple[tuple[float, int, float], ImageThresholds] = ((-1.0, 0, 0.0), THRESHOLDS)
    for k in range(2, 21):
        for g in (0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0):
            limits = replace(THRESHOLDS, k=k, grid_max=g)
            said = inputs.decide(limits)
            if precision(fit, said) < TARGET:
                continue
            score = (recall(fit, said), -k, g)
            if score > best[0]:
                best = (score, limits)
    return best[1]


def evaluate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    photos = sorted({r["photo"] for r in rows})
    random.Random(SEED).shuffle(photos)
    fit_photos, test_photos = set(photos[: len(photos) // 2]), set(photos[len(photos) // 2 :])
    fit, test = pairs(rows, fit_photos), pairs(rows, test_photos)
    results: dict[str, dict[str, tuple[float, float, int, int]]] = {}
    thresholds: dict[str, str] = {}
    limits = fit_ours(ours(rows, fit), fit)
    thresholds["ours"] = f"k = {limits.k}, grid <= {limits.grid_max}"
    results["ours"] = table(test, ours(rows, test).decide(limits))
    thresholds["ours, through the look-up"] = "as ours"
    results["ours, through the look-up"] = table(test, through_lookup(rows, test, limits))
    for name, score in SCORES.items():
        th = fit_threshold(score(rows, fit), fit)
        thresholds[name] = f"<= {th:g}"
        results[name] = table(test, score(rows, test) <= th)
    return {"fit_photos": len(fit_photos), "test_photos": len(test_photos), "fit_pairs": len(fit.r),
            "test_pairs": len(test.r), "thresholds": thresholds, "results": results,
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
