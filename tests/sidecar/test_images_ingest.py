"""/v1/ingest with pictures as base64 bytes, through a real service process and a real node."""

from __future__ import annotations

import base64
import io
from typing import Any

import httpx
import numpy as np
import pytest
from elasticsearch import Elasticsearch
from PIL import Image

from fingerprint_indexer.elastic.similar import similar_pictures
from fingerprint_indexer.fingerprint.image import fingerprint_bytes, fingerprint_image, image_keys

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]


def jpeg(seed: int, size: tuple[int, int] = (480, 360)) -> bytes:
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(small, "RGB").resize(size, Image.Resampling.BICUBIC).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def test_pictures_are_fingerprinted_written_and_never_decide(
    http: httpx.Client, es_client: Elasticsearch, zh_articles: list[dict[str, Any]], svc_index: str
) -> None:
    wire = jpeg(21)
    b64 = base64.b64encode(wire).decode()
    docs = [{"id": "a", "content": zh_articles[300]["content"], "images": [b64]},
            {"id": "b", "content": zh_articles[301]["content"],
             "images": [b64, "%%% not base64", base64.b64encode(wire[:400]).decode()]}]
    r = http.post("/v1/ingest", json={"documents": docs, "index": True, "index_name": svc_index})
    assert r.status_code == 200, r.text
    results = {res["id"]: res for res in r.json()["results"]}
    assert results["a"]["decision"] == results["b"]["decision"] == "new"  # a shared photo is evidence only
    keys = image_keys(fingerprint_bytes(wire, "wire"))
    assert results["a"]["fields"]["image_keys"] == results["b"]["fields"]["image_keys"] == keys
    listed = results["b"]["fields"]["images"]
    assert [p["name"] for p in listed] == ["image-0", "image-1", "image-2"]
    assert "fingerprint" in listed[0] and listed[1]["error"] == "image-1: not base64"
    assert listed[2]["error"].startswith("image-2: ") and "\n" not in listed[2]["error"]
    es_client.indices.refresh(index=svc_index)
    src = es_client.get(index=svc_index, id="b")["_source"]
    assert src["images"] == listed and src["image_keys"] == keys  # the fingerprints, not the bytes
    smaller = Image.open(io.BytesIO(wire)).resize((240, 180))
    found = similar_pictures(es_client, svc_index, fingerprint_image(smaller))
    assert sorted(f["id"] for f in found) == ["a", "b"]
