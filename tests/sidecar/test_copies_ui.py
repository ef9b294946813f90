"""The copies API and the duplicates explorer page (/ui) of a real service over a real node, the page
driven in real headless Chromium."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from elasticsearch import Elasticsearch
from support.browser import wait_until
from support.corpus import EN_BBC, ZH_NEWS, load_records
from support.service import ServiceProcess

from fingerprint_indexer.es.mapping import load_index_body
from fingerprint_indexer.fingerprint.winnow import WinnowParams

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus]
API_KEY = "test-key-" + "y" * 24
# FPI_UPDATE_SCREENSHOT=1 rewrites the screenshot in docs/
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "explorer.png"


@pytest.fixture(scope="module")
def service(es_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """The service writing copy marks (partial-copy search needs them), default index unique to the
    module."""
    data = tmp_path_factory.mktemp("svc") / "data"
    index = f"fpi-test-svc-{uuid.uuid4().hex[:10]}"
    with ServiceProcess(es_url, data, "--index", index, "--copy-marks", api_key=API_KEY) as svc:
        svc.default_index = index  # type: ignore[attr-defined]
        yield svc
    client = Elasticsearch(es_url)
    client.indices.delete(index=index, ignore_unavailable=True)
    client.close()


@pytest.fixture(scope="module")
def corpus(service: ServiceProcess) -> Iterator[dict[str, Any]]:
    """Real articles ingested and indexed through the service, plus a near copy of one and an article
    quoting a passage of another."""
    en = load_records(EN_BBC, limit=41, min_chars=1500)
    zh = load_records(ZH_NEWS, limit=30, min_chars=1200)
    source, outside = en[5], en[40]
    planted = source["content"][400:1300]
    cut = outside["content"].find("\n", 300) + 1 or 300
    quoting = {"id": "quoting", "title": "Quoting article",
               "content": outside["content"][:cut] + planted + "\n" + outside["content"][cut:]}
    near = {"id": "near-copy", "title": en[0]["title"],
            "content": "Reposted from the BBC.\n" + en[0]["content"]}
    docs = [{"id": r["id"], "title": r["title"], "content": r["content"]} for r in en[:40] + zh]
    docs += [near, quoting]
    with httpx.Client(base_url=service.url, headers=service.headers(), timeout=120) as http:
        for i in range(0, len(docs), 25):
            r = http.post("/v1/ingest", json={"documents": docs[i : i + 25], "index": True})
            assert r.status_code == 200 and not r.json()["errors"], r.text
        http.post(f"/{service.default_index}/_refresh")  # type: ignore[attr-defined]
    yield {"source": source, "quoting": quoting, "planted": planted, "cut": cut, "first": en[0], "near": near}


def test_copies_between_ids_and_texts(http: httpx.Client, corpus: dict[str, Any]) -> None:
    q, s, planted = corpus["quoting"], corpus["source"], corpus["planted"]
    r = http.post("/v1/copies", json={"a": {"id": "quoting"}, "b": {"id": s["id"]}, "with_text": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["a_text"] == q["content"] and body["b_text"] == s["content"]
    [p] = body["passages"]
    assert corpus["cut"] <= p["a_start"] < p["a_end"] <= corpus["cut"] + len(planted)
    assert p["length"] > 0.95 * len(planted.strip())
    assert q["content"][p["a_start"] : p["a_end"]] == s["content"][p["b_start"] : p["b_end"]]
    r = http.post("/v1/copies", json={"a": {"text": q["content"]}, "b": {"id": s["id"]}})
    assert r.json()["passages"] == body["passages"]
    r = http.post("/v1/copies", json={"a": {"id": "no-such-doc"}, "b": {"text": "x"}})
    assert r.status_code == 404 and "no-such-doc" in r.json()["error"]["reason"]
    r = http.post("/v1/copies", json={"a": {"id": "quoting", "text": "x"}, "b": {"text": "x"}})
    assert r.status_code in (400, 422)


def test_copy_search_documents_and_clusters(http: httpx.Client, corpus: dict[str, Any],
                                           service: ServiceProcess, es_client: Elasticsearch,
                                           svc_index: str) -> None:
    s = corpus["source"]
    r = http.post("/v1/copies/search", json={"id": "quoting", "min_chars": 200})
    assert r.status_code == 200, r.text
    hits = r.json()["hits"]
    assert [h["id"] for h in hits] == [s["id"]] and hits[0]["title"] == s["title"]
    assert hits[0]["copied"] > 0.95 * len(corpus["planted"].strip())
    # the planted passage alone: two stored stories hold it (source and quoting), so by default its
    # marks are no evidence (a template shared by two stories looks the same); max_stories=2 finds both
    r = http.post("/v1/copies/search", json={"text": corpus["planted"], "min_chars": 200})
    assert r.json()["hits"] == [] and r.json()["stock_marks"] > 0
    r = http.post("/v1/copies/search", json={"text": corpus["planted"], "min_chars": 200, "max_stories": 2})
    assert {h["id"] for h in r.json()["hits"]} == {s["id"], "quoting"}
    meta = es_client.indices.get_mapping(index=service.default_index)  # type: ignore[attr-defined]
    assert {m["mappings"]["_meta"]["fingerprint_indexer"]["copy_marks"] for m in meta.values()} == \
        {WinnowParams().tag}
    # an index without copy marks: one clear error saying how to get them; passages between two
    # texts need none
    es_client.indices.create(index=svc_index, **load_index_body())
    r = http.post("/v1/copies/search", json={"text": corpus["planted"], "index_name": svc_index})
    assert r.status_code == 400 and "--copy-marks" in r.json()["error"]["reason"], r.text
    r = http.post("/v1/copies", json={"a": {"text": corpus["planted"]}, "b": {"text": s["content"]},
                                      "index_name": svc_index})
    assert r.status_code == 200 and len(r.json()["passages"]) == 1
    doc = http.get("/v1/documents/near-copy").json()
    assert doc["text"] == corpus["near"]["content"] and doc["decision"] == "near_duplicate"
    assert doc["duplicate_of"] == corpus["first"]["id"]
    cl = http.get(f"/v1/clusters/{doc['cluster_id']}").json()
    assert cl["size"] == 2 and [m["id"] for m in cl["members"]] == [corpus["first"]["id"], "near-copy"]
    assert http.get("/v1/documents/nothing-here").status_code == 404
    # ids are free text: a "/" (the BBC ids) or a line break is part of the id, never a route
    assert "/" in s["id"] and http.get(f"/v1/documents/{s['id']}").json()["title"] == s["title"]
    r = http.get("/v1/documents/a%0Ab")
    assert r.status_code == 404 and r.json()["error"]["type"] == "document_missing_exception"


def test_explorer_page_in_a_real_browser(service: ServiceProcess, corpus: dict[str, Any], browser: Any,
                                         tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    d = browser
    d.get(service.url + "/ui")
    assert d.title.startswith("Duplicates explorer")
    d.find_element(By.ID, "key").send_keys(service.api_key or "")
    # search by id: the near copy's document, near-duplicates with distance and reason, its cluster
    q = d.find_element(By.ID, "q")
    q.send_keys("near-copy")
    d.find_element(By.ID, "go").click()
    first = corpus["first"]["id"]
    rows = wait_until(d, lambda: d.find_elements(By.CSS_SELECTOR, "#dups tbody tr td:first-child"))
    assert [r.text for r in rows] == [first]
    reason = d.find_element(By.CSS_SELECTOR, "#dups tbody tr td:nth-child(3)").text
    assert "copies" in reason and "characters" in reason
    wait_until(d, lambda: d.find_element(By.ID, "cluster").is_displayed())
    members = [c.text for c in d.find_elements(By.CSS_SELECTOR, "#cluster tbody tr td:first-child")]
    assert members == [first, "near-copy"]
    assert "near_duplicate" in d.find_element(By.CSS_SELECTOR, "#doc .body").text
    # search by pasted text: the quoting article; then the two side by side, the copy highlighted
    q.clear()
    q.send_keys(corpus["quoting"]["content"][:3000])
    d.find_element(By.ID, "as-text").click()
    d.find_element(By.ID, "go").click()
    src = corpus["source"]["id"]
    [row] = wait_until(d, lambda: [r for r in d.find_elements(By.CSS_SELECTOR, "#copies tbody tr")
                              if r.find_element(By.CSS_SELECTOR, "td").text == src])
    ids = [c.text for c in d.find_elements(By.CSS_SELECTOR, "#copies tbody tr td:first-child")]
    assert sorted(ids) == sorted([src, "quoting"])  # the indexed quoting article holds the pasted text
    row.find_element(By.CSS_SELECTOR, "button.compare").click()
    marks_b = wait_until(d, lambda: d.find_elements(By.CSS_SELECTOR, "#side-b mark"))
    marks_a = d.find_elements(By.CSS_SELECTOR, "#side-a mark")
    planted = corpus["planted"]
    assert len(marks_a) == len(marks_b) == 1
    assert marks_a[0].text == marks_b[0].text and len(marks_a[0].text) > 0.95 * len(planted.strip())
    assert marks_a[0].text in planted
    assert "1 copied passage" in d.find_element(By.CSS_SELECTOR, "#compare .summary").text
    shot = SCREENSHOT if os.environ.get("FPI_UPDATE_SCREENSHOT") else tmp_path / SCREENSHOT.name
    d.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
