"""Pictures of documents in Elasticsearch, against a real node: keys in a keyword field, fingerprints kept
with the article, ``es similar --image``, and a shared photo that never makes two stories duplicates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps
from support.corpus import ZH_NEWS, iter_records

from fingerprint_indexer.fingerprint.image import fingerprint_file, image_keys

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]
ES_CLI = "from fingerprint_indexer.cli.es_commands import es_group; es_group()"


def run(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ES_URL": url}
    return subprocess.run([sys.executable, "-c", ES_CLI, *args], capture_output=True, text=True, timeout=600,
                          env=env, stdin=subprocess.DEVNULL)  # fmt: skip


def photo(path: Path, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)
    Image.fromarray(small, "RGB").resize((480, 360), Image.Resampling.BICUBIC).save(path, quality=92)
    return path


def test_pictures_are_kept_found_and_never_decide(es_url, es_client, es_index, tmp_path):
    wire, other = photo(tmp_path / "wire.jpg", 11), photo(tmp_path / "other.jpg", 12)
    crop = tmp_path / "other-crop.jpg"
    Image.open(other).crop((30, 10, 480, 340)).save(crop, quality=80)
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(wire.read_bytes()[:500])  # truncated
    stories = [r for r in iter_records(ZH_NEWS) if len(r["content"]) > 500][:3]
    docs = [dict(stories[0], id="story-a", images=[str(wire)]),
            dict(stories[1], id="story-b", images=[str(wire), str(bad)]),  # another story, the same photo
            dict(stories[2], id="story-c", images=[str(crop)]),
            dict(stories[0], id="story-a-copy")]  # the same text, no picture
    news = tmp_path / "news.jsonl"
    news.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
    assert run("setup", "--index", es_index, url=es_url).returncode == 0
    indexed = run("index", str(news), "--index", es_index, url=es_url)
    assert indexed.returncode == 0, indexed.stderr
    decisions = {d["id"]: d for d in map(json.loads, indexed.stdout.splitlines())}
    # evidence, not a verdict: two stories sharing the wire photo stay apart
    assert decisions["story-a"]["decision"] == decisions["story-b"]["decision"] == "new"
    assert decisions["story-a-copy"]["decision"] == "exact_duplicate"
    es_client.indices.refresh(index=es_index)

    src = es_client.get(index=es_index, id="story-b")["_source"]
    assert src["image_keys"] == image_keys(fingerprint_file(wire))
    assert [sorted(p) for p in src["images"]] == [["fingerprint", "name", "thumbnail"], ["error", "name"]]
    assert str(bad) in src["images"][1]["error"] and "\n" not in src["images"][1]["error"]
    mapping = es_client.indices.get_mapping(index=es_index)
    props = next(iter(mapping.values()))["mappings"]["properties"]
    assert props.get("image_keys", {}).get("type") == "keyword", sorted(props)

    smaller = tmp_path / "wire-small.png"
    Image.open(wire).resize((240, 180)).save(smaller)
    found = run("similar", "--index", es_index, "--image", str(smaller), url=es_url)
    assert found.returncode == 0, found.stderr
    rows = [json.loads(x) for x in found.stdout.splitlines()]
    assert sorted(r["id"] for r in rows) == ["story-a", "story-b"] and not any(r["exact"] for r in rows)
    same = run("similar", "--index", es_index, "--image", str(wire), url=es_url)
    assert {(r["id"], r["exact"]) for r in map(json.loads, same.stdout.splitlines())} == {
        ("story-a", True), ("story-b", True)}
    mirrored = tmp_path / "other-mirror.jpg"
    ImageOps.mirror(Image.open(other)).save(mirrored)
    by_crop = run("similar", "--index", es_index, "--image", str(mirrored), url=es_url)
    assert [json.loads(x)["id"] for x in by_crop.stdout.splitlines()] == ["story-c"]
    none = run("similar", "--index", es_index, "--image", str(photo(tmp_path / "new.jpg", 13)), url=es_url)
    assert none.returncode == 0 and none.stdout == "" and "no document" in none.stderr
