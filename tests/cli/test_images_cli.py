"""`fingerprint-indexer images`: real files made with Pillow, good and bad, in one run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from PIL import Image, ImageOps

from fingerprint_indexer.cli.main import cli
from fingerprint_indexer.fingerprint.image import fingerprint_file, image_keys


def photo(path: Path, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)
    Image.fromarray(small, "RGB").resize((320, 240), Image.Resampling.BICUBIC).save(path)
    return path


def test_one_line_per_picture_and_bad_files_do_not_stop_the_run(tmp_path: Path) -> None:
    folder = tmp_path / "pics"
    folder.mkdir()
    a = photo(folder / "a.png", 1)
    ImageOps.mirror(Image.open(a)).save(folder / "b.jpg", quality=80)
    (folder / "c.jpg").write_text("not a picture")
    good = photo(tmp_path / "d.webp", 2)
    data = (folder / "b.jpg").read_bytes()
    (folder / "e.jpg").write_bytes(data[: len(data) // 3])  # truncated
    (folder / "notes.txt").write_text("skipped: not a picture name")
    result = CliRunner().invoke(cli, ["images", str(folder), str(good)])
    assert result.exit_code == 1
    lines = [json.loads(x) for x in result.stdout.splitlines()]
    assert [Path(x["path"]).name for x in lines] == ["a.png", "b.jpg", "c.jpg", "e.jpg", "d.webp"]
    errors = {Path(x["path"]).name: x["error"] for x in lines if "error" in x}
    assert set(errors) == {"c.jpg", "e.jpg"}
    assert all(str(folder / n) in e and "\n" not in e for n, e in errors.items())
    assert result.stderr.count("error: ") == 2
    first = lines[0]
    fp = fingerprint_file(a)
    assert first["phash"] == f"{fp.phash:016x}" and first["grid"] == fp.grid
    assert first["digest"] == fp.digest and first["keys"] == image_keys(fp)


def test_all_good_exits_zero(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["images", str(photo(tmp_path / "x.gif", 3))])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 1
