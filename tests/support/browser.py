"""Headless Chromium from Debian's packages, driven by selenium with the Debian chromedriver given
explicitly (nothing is downloaded at run time), and a CJK font (Noto Sans CJK, the page's first CJK face)
so Chinese pages render as a reader sees them. Installed once when missing and running as root.

Tests get it through the ``browser`` fixture, which marks them ``browser`` (support.tiers)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from support.tiers import require

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def has_cjk_font() -> bool:
    """Whether fontconfig knows a font covering Chinese."""
    if shutil.which("fc-list") is None:
        return False
    out = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=60)
    return bool(out.stdout.strip())


#: What the browser tests install with apt-get when missing.
PACKAGES = ("chromium", "chromium-driver", "fonts-noto-cjk")


def ensure_chromium() -> None:
    """Install chromium, chromium-driver and a CJK font with apt-get when missing (idempotent). Without
    root, a browser with no CJK font still runs the tests (Chinese then shows as boxes on screenshots)."""
    have_browser = os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)
    if have_browser and has_cjk_font():
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        if have_browser:
            return
        reason = f"headless Chromium is missing (apt-get install {' '.join(PACKAGES)})"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, capture_output=True, timeout=900)
    subprocess.run(["apt-get", "install", "-y", "-q", *PACKAGES], check=True, env=env, capture_output=True,
                   timeout=1800)


def chromium_session() -> Iterator[object]:
    """A headless Chromium session (selenium WebDriver), quit at the end (use it in a fixture)."""
    require("browser", "starts a browser")
    ensure_chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000", "--lang=en-US", "--no-first-run"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """A headless Chromium session shared by a module's tests (selenium WebDriver)."""
    yield from chromium_session()


def wait_until(driver: Any, cond: Callable[[], Any], timeout: float = 60.0) -> Any:
    """``cond()`` once it holds; a table re-rendered while ``cond`` reads it (a stale or vanished element)
    is a page not ready yet, not a failure. On time-out the page's status line says what it was doing."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            got = cond()
        except (StaleElementReferenceException, NoSuchElementException):
            got = None
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"page did not show it in {timeout} s; status: "
                         f"{driver.find_element('id', 'status').text!r}")
