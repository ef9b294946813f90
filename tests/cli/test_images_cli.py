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


def test_store_decides_new_exact_and_near_and_keeps_them(tmp_path: Path) -> None:
    """Decisions against the embedded store, kept across runs; a folder's pictures are read in name order."""
    from fingerprint_indexer.store.embedded import EmbeddedStore
    from fingerprint_indexer.store.images import ImageStore

    folder = tmp_path / "pics"
    folder.mkdir()
    a = photo(folder / "a.png", 1)
    photo(folder / "b.png", 2)
    im = Image.open(a).convert("RGB")
    im.save(folder / "c.webp", lossless=True)  # the same pixels in another container
    im.crop((16, 0, 320, 230)).save(folder / "d.jpg", quality=70)  # cropped and recompressed
    ImageOps.mirror(im).save(folder / "e.jpg", quality=85)
    store = tmp_path / "store"
    result = CliRunner().invoke(cli, ["images", "--store", str(store), str(folder)])
    assert result.exit_code == 0, result.output
    lines = {Path(x["path"]).name: x for x in map(json.loads, result.stdout.splitlines())}
    decided = {n: (x["decision"], x["duplicate_of"] and Path(x["duplicate_of"]).name)
               for n, x in lines.items()}
    assert decided == {"a.png": ("new", None), "b.png": ("new", None), "c.webp": ("exact_duplicate", "a.png"),
                       "d.jpg": ("near_duplicate", "a.png"), "e.jpg": ("near_duplicate", "a.png")}
    assert lines["c.webp"]["distance"] == 0 and lines["e.jpg"]["mirrored"]
    assert 0 <= lines["d.jpg"]["distance"] <= 8 and lines["a.png"]["distance"] is None

    again = tmp_path / "again.png"
    ImageOps.mirror(Image.open(folder / "b.png")).save(again)
    result = CliRunner().invoke(cli, ["images", "--store", str(store), str(again)])
    line = json.loads(result.stdout)
    assert (line["decision"], Path(line["duplicate_of"]).name) == ("near_duplicate", "b.png")
    with EmbeddedStore(store) as s:
        pictures = ImageStore(s)
        assert len(pictures) == 6
        assert s.n_docs == 0  # pictures are not documents
        rec = pictures.record(str(folder / "d.jpg"))
        assert rec is not None and rec["decision"] == "near_duplicate"


def test_a_store_without_pictures_opens_unchanged(tmp_path: Path) -> None:
    """A store made by documents alone gains picture records under their own prefix; its format stays."""
    from fingerprint_indexer.store.embedded import FORMAT, EmbeddedStore

    store = tmp_path / "store"
    docs = tmp_path / "docs.jsonl"
    story = {"id": "n1", "title": "Harbour", "content": "A short news story about a harbour and its boats."}
    docs.write_text(json.dumps(story) + "\n")
    assert CliRunner().invoke(cli, ["dedupe", "--store", str(store), str(docs)]).exit_code == 0
    result = CliRunner().invoke(cli, ["images", "--store", str(store), str(photo(tmp_path / "x.png", 4))])
    assert json.loads(result.stdout)["decision"] == "new"
    with EmbeddedStore(store) as s:
        assert s.db.get(b"s/meta/format") == FORMAT and s.n_docs == 1 and s.record("n1") is not None


def test_similar_image_lists_the_stored_pictures_of_the_same_photo(tmp_path: Path) -> None:
    a, b = photo(tmp_path / "a.png", 5), photo(tmp_path / "b.png", 6)
    store = tmp_path / "store"
    assert CliRunner().invoke(cli, ["images", "--store", str(store), str(a), str(b)]).exit_code == 0
    query = tmp_path / "q.jpg"
    Image.open(a).convert("RGB").resize((200, 150)).save(query, quality=60)
    result = CliRunner().invoke(cli, ["similar", "--store", str(store), "--image", str(query)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in result.stdout.splitlines()]
    assert [(r["id"], r["exact"]) for r in rows] == [(str(a), False)]
    exact = CliRunner().invoke(cli, ["similar", "--store", str(store), "--image", str(b)])
    assert [json.loads(x)["exact"] for x in exact.stdout.splitlines()] == [True]
    c = photo(tmp_path / "c.png", 7)
    other = CliRunner().invoke(cli, ["similar", "--store", str(store), "--image", str(c)])
    assert other.exit_code == 0 and other.stdout == "" and "no stored picture" in other.stderr
    bad = tmp_path / "bad.jpg"
    bad.write_text("not a picture")
    failed = CliRunner().invoke(cli, ["similar", "--store", str(store), "--image", str(bad)])
    assert failed.exit_code != 0 and "not a picture" in failed.output
