"""Pictures through a real service process and a real node: /v1/ingest with base64 bytes, /v1/similar
with a picture, and the explorer page (/ui) showing the matched photos in real headless Chromium."""

from __future__ import annotations

import base64
import io
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from elasticsearch import Elasticsearch
from PIL import Image, ImageOps
from support.service import ServiceProcess

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


@pytest.fixture(scope="module")
def pictured(service: ServiceProcess, zh_articles: list[dict[str, Any]]) -> dict[str, bytes]:
    """Three stories in the service's default index: two sharing one photo, one with another photo."""
    wire, other = jpeg(31), jpeg(32)
    as_text = {"wire": base64.b64encode(wire).decode(), "other": base64.b64encode(other).decode()}
    docs = [{"id": "p-a", "content": zh_articles[310]["content"], "images": [as_text["wire"]]},
            {"id": "p-b", "content": zh_articles[311]["content"], "images": [as_text["wire"]]},
            {"id": "p-c", "content": zh_articles[312]["content"], "images": [as_text["other"]]}]
    with httpx.Client(base_url=service.url, headers=service.headers(), timeout=120) as http:
        r = http.post("/v1/ingest", json={"documents": docs, "index": True})
        assert r.status_code == 200 and not r.json()["errors"], r.text
    es = Elasticsearch(service.es_url)
    es.indices.refresh(index=service.default_index)  # type: ignore[attr-defined]
    es.close()
    return {"wire": wire, "other": other}


def test_similar_with_a_picture(http: httpx.Client, pictured: dict[str, bytes]) -> None:
    buf = io.BytesIO()
    ImageOps.mirror(Image.open(io.BytesIO(pictured["wire"]))).resize((300, 225)).save(buf, "PNG")
    r = http.post("/v1/similar", json={"image": base64.b64encode(buf.getvalue()).decode()})
    assert r.status_code == 200, r.text
    images = r.json()["images"]
    assert sorted(m["id"] for m in images) == ["p-a", "p-b"] and not any(m["exact"] for m in images)
    assert all(Image.open(io.BytesIO(base64.b64decode(m["thumbnail"]))).size[0] <= 96 for m in images)
    exact = http.post("/v1/similar", json={"image": base64.b64encode(pictured["other"]).decode()}).json()
    assert [(m["id"], m["exact"]) for m in exact["images"]] == [("p-c", True)] and exact["matches"] == []
    bad = http.post("/v1/similar", json={"image": base64.b64encode(b"GIF89a broken").decode()})
    assert bad.status_code == 400 and "image" in bad.text
    both = http.post("/v1/similar", json={"image": "AAAA", "text": "some text"})
    assert both.status_code in (400, 422)


def test_explorer_page_shows_the_matched_photos(service: ServiceProcess, pictured: dict[str, bytes],
                                                browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    photo = tmp_path / "query.jpg"
    Image.open(io.BytesIO(pictured["wire"])).crop((20, 10, 480, 350)).save(photo, quality=85)
    d = browser
    d.get(service.url + "/ui")
    d.find_element(By.ID, "key").send_keys(service.api_key or "")
    d.find_element(By.ID, "photo").send_keys(str(photo))
    d.find_element(By.ID, "go").click()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not d.find_element(By.ID, "photos").is_displayed():
        time.sleep(0.2)
    rows = d.find_elements(By.CSS_SELECTOR, "#photos tbody tr")
    assert sorted(r.find_element(By.CSS_SELECTOR, "td:nth-child(2)").text for r in rows) == ["p-a", "p-b"], \
        d.find_element(By.ID, "status").text
    shown = d.find_elements(By.CSS_SELECTOR, "#photos img.thumb")
    assert len(shown) == 3  # the query photo and the two matched ones
    assert all(d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", img)
               for img in shown)
    assert "windows" in rows[0].find_element(By.CSS_SELECTOR, "td:nth-child(4)").text
    assert "2 document picture(s)" in d.find_element(By.ID, "status").text
    shot = tmp_path / "photos.png"
    d.save_screenshot(str(shot))
    assert shot.stat().st_size > 5_000
