"""The explorer page in real headless Chromium with no Elasticsearch: ``explore`` on a store ``dedupe``
wrote (generated news, and zh_news as README's first command writes it), and ``serve`` without ``--es``
after documents came in through ``/v1/ingest``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.browser import wait_until
from support.corpus import ZH_NEWS
from support.service import ServiceProcess
from support.synthetic_news import REPOSTED, documents, make_store

PAGE = 20


def _rows(d: Any, table: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return [r for r in d.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr") if r.text.strip()]


def _no_sideways_scroll(d: Any) -> None:
    """Long titles and ids wrap: the page never gets wider than the window."""
    assert d.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_explore_a_store_in_a_browser(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    store, _, docs = make_store(tmp_path / "made")
    d = browser
    with ServiceProcess(None, store, command="explore") as svc:
        d.get(svc.url + "/ui/")
        assert d.title.startswith("Duplicates explorer")
        # the first view: counts, the largest clusters first (the long title wraps), the latest duplicates
        rows = wait_until(d, lambda: _rows(d, "clusters"))
        counts = d.find_element(By.ID, "counts").text
        assert f"{len(docs)} documents" in counts and f"{len(docs) - sum(REPOSTED)} new" in counts
        assert [r.find_element(By.CSS_SELECTOR, "td").text for r in rows] == [str(n + 1) for n in REPOSTED]
        assert docs[0]["title"] in rows[0].text and docs[0]["id"] in rows[0].text
        _no_sideways_scroll(d)
        recent = _rows(d, "recent")
        assert len(recent) == min(PAGE, sum(REPOSTED))
        assert any("bits apart" in r.text or "the same text" in r.text for r in recent)
        # every cluster, paged: single documents too, then the next page
        d.find_element(By.ID, "all-clusters").click()
        wait_until(d, lambda: "of 60" in d.find_element(By.CSS_SELECTOR, "#clusters-pager .where").text)
        d.find_element(By.CSS_SELECTOR, "#clusters-pager .next").click()
        wait_until(d, lambda: d.find_element(By.CSS_SELECTOR, "#clusters-pager .where").text
                   .startswith("21–40"))
        assert {r.find_element(By.CSS_SELECTOR, "td").text for r in _rows(d, "clusters")} == {"1"}
        # a cluster opened from the first view, a member side by side with its canonical
        d.find_element(By.ID, "home-link").click()
        first = wait_until(d, lambda: _rows(d, "clusters"))[0]
        first.find_element(By.CSS_SELECTOR, "button.open").click()
        members = wait_until(d, lambda: _rows(d, "cluster"))
        assert len(members) == REPOSTED[0] + 1
        assert members[0].find_element(By.CSS_SELECTOR, "td").text == docs[0]["id"]
        members[1].find_element(By.CSS_SELECTOR, "button.compare").click()
        marks = wait_until(d, lambda: d.find_elements(By.CSS_SELECTOR, "#side-b mark"))
        assert marks and d.find_element(By.CSS_SELECTOR, "#side-a h3").text == docs[0]["id"]
        assert "copied passage" in d.find_element(By.CSS_SELECTOR, "#compare .summary").text
        # search by an id holding "/" and spaces: the document, its near-duplicates, its cluster
        copy_id = "repost site/0/copy 1.html"
        q = d.find_element(By.ID, "q")
        q.clear()
        q.send_keys(copy_id)
        d.find_element(By.ID, "go").click()
        wait_until(d, lambda: d.find_element(By.ID, "doc").is_displayed()
              and copy_id in d.find_element(By.ID, "doc").text)
        assert "near_duplicate" in d.find_element(By.CSS_SELECTOR, "#doc .body").text
        dups = wait_until(d, lambda: _rows(d, "dups"))
        assert docs[0]["id"] in {r.find_element(By.CSS_SELECTOR, "td").text for r in dups}
        wait_until(d, lambda: d.find_element(By.ID, "cluster").is_displayed())
        # pasted text: the stored copies of it
        q.clear()
        q.send_keys(docs[1]["content"])
        d.find_element(By.ID, "go").click()
        wait_until(d, lambda: docs[1]["id"] in [r.find_element(By.CSS_SELECTOR, "td").text
                                           for r in _rows(d, "dups")])
        _no_sideways_scroll(d)


def test_serve_without_elasticsearch_in_a_browser(browser: Any, tmp_path: Path) -> None:
    """``serve`` with no --es: documents decided through /v1/ingest, then the page shows their clusters."""
    from selenium.webdriver.common.by import By

    docs = documents(n_stories=30)
    d = browser
    with ServiceProcess(None, tmp_path / "data") as svc:
        with httpx.Client(base_url=svc.url, timeout=120) as http:
            r = http.post("/v1/ingest", json={"documents": docs})
            assert r.status_code == 200, r.text
            kinds = [x["decision"] for x in r.json()["results"]]
            assert kinds.count("new") == 30 and len(kinds) - 30 == sum(REPOSTED)
            r = http.post("/_bulk", content=b'{"index":{"_index":"news"}}\n{"title":"x"}\n')
            assert r.status_code == 501 and "--es" in r.json()["error"]["reason"]
        d.get(svc.url + "/ui/")
        rows = wait_until(d, lambda: _rows(d, "clusters"))
        assert [r.find_element(By.CSS_SELECTOR, "td").text for r in rows] == [str(n + 1) for n in REPOSTED]
        assert docs[0]["id"] in rows[0].text
        # the service keeps no texts: the page says so rather than showing empty articles
        assert "Texts cannot be shown" in d.find_element(By.ID, "texts-note").text


@pytest.mark.corpus
def test_explore_zh_news_as_readme_writes_it(browser: Any, tmp_path: Path) -> None:
    """README's first command on zh_news, then ``explore``: the largest clusters of real Chinese news,
    paged, in a browser, with no Elasticsearch."""
    from selenium.webdriver.common.by import By

    if not ZH_NEWS.exists():
        pytest.skip(f"{ZH_NEWS} is not here")
    store = tmp_path / "out" / "store"
    subprocess.run([sys.executable, "-m", "fingerprint_indexer.cli.main", "dedupe", str(ZH_NEWS), "--store",
                    str(store), "--output", str(tmp_path / "out" / "dedupe.jsonl")],
                   check=True, capture_output=True, timeout=1800)
    d = browser
    with ServiceProcess(None, store, command="explore") as svc:
        d.get(svc.url + "/ui/")
        rows = wait_until(d, lambda: _rows(d, "clusters"), timeout=120)
        sizes = [int(r.find_element(By.CSS_SELECTOR, "td").text) for r in rows]
        assert len(rows) == PAGE and sizes == sorted(sizes, reverse=True) and sizes[-1] >= 2
        assert "12,461 documents" in d.find_element(By.ID, "counts").text
        assert any("\u4e00" <= ch <= "\u9fff" for ch in rows[1].text)  # Chinese titles, read from the input
        total = d.find_element(By.CSS_SELECTOR, "#clusters-pager .where").text
        d.find_element(By.CSS_SELECTOR, "#clusters-pager .next").click()
        wait_until(d, lambda: d.find_element(By.CSS_SELECTOR, "#clusters-pager .where").text
                   .startswith("21–40"))
        assert total.endswith(d.find_element(By.CSS_SELECTOR, "#clusters-pager .where").text.split(" of ")[1])
        assert _rows(d, "recent") and "bits apart" in " ".join(r.text for r in _rows(d, "recent"))
        _no_sideways_scroll(d)
        assert d.execute_script("return document.fonts.check('16px \"Noto Sans CJK SC\"', '新闻')")
