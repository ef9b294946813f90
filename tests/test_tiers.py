"""The everyday tier (``-m fast``) starts no server and no browser: the markers that keep those tests out
are given by their fixtures, and the helpers that start anything else check theirs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import tiers

TESTS = Path(__file__).resolve().parent
#: the fixtures under everything that starts a server or a browser (es_client, es_index, es_env and the
#: sidecar's service fixtures are built on es_url), named here apart from support.tiers
SERVER_FIXTURES = {"es_url", "es_cluster", "browser"}


def collect(tmp_path: Path, expression: str) -> dict[str, list[dict[str, Any]]]:
    """The tests ``pytest -m expression`` selects and those it leaves out, each with its fixtures (all,
    through other fixtures too) and markers, as a separate pytest process collects them."""
    report = tmp_path / "tier.json"
    env = {**os.environ, "FPI_TIER_REPORT": str(report),
           "PYTHONPATH": os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)}
    res = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-p", "support.tier_report", "-m", expression],
                         cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return dict(json.loads(report.read_text(encoding="utf-8")))


def test_fast_tier_uses_no_server_or_browser_fixture(tmp_path: Path) -> None:
    tier = collect(tmp_path, tiers.FAST)
    fast, rest = tier["selected"], tier["deselected"]
    assert len(fast) > 300, "the everyday tier lost most of its tests"
    for test in fast:
        needs = set(test["fixtures"]) & SERVER_FIXTURES
        assert not needs, f"{test['id']} is in the everyday tier but uses {sorted(needs)}"
        heavy = set(test["markers"]) & set(tiers.HEAVY)
        assert not heavy, f"{test['id']} is in the everyday tier but marked {sorted(heavy)}"
    for test in rest:
        assert set(test["markers"]) & set(tiers.HEAVY), f"{test['id']} is left out for no reason"
    # the check is not empty: each fixture's users and each marker's tests are there, left out
    for fixture in SERVER_FIXTURES:
        assert any(fixture in test["fixtures"] for test in rest), fixture
    for marker in tiers.HEAVY:
        assert any(marker in test["markers"] for test in rest), marker


class FakeItem:
    """What tiers.mark and tiers.require read of a pytest item."""

    def __init__(self, fixtures: list[str], *markers: str) -> None:
        self.nodeid = "tests/test_x.py::test_x"
        self.fixturenames = fixtures
        self.markers = [getattr(pytest.mark, m) for m in markers]

    def iter_markers(self) -> list[Any]:
        return [m.mark for m in self.markers]

    def add_marker(self, name: str) -> None:
        self.markers.append(getattr(pytest.mark, name))

    def names(self) -> set[str]:
        return {m.name for m in self.iter_markers()}


def test_fixtures_mark_their_tests_and_the_rest_is_fast() -> None:
    es, cluster, browser, plain, slow = (FakeItem(["tmp_path", "es_index", "es_client", "es_url"]),
                                         FakeItem(["cluster_index", "es_cluster"]), FakeItem(["browser"]),
                                         FakeItem(["tmp_path"], "corpus"), FakeItem([], "slow"))  # fmt: skip
    tiers.mark([es, cluster, browser, plain, slow])  # type: ignore[list-item]
    assert es.names() == {"elasticsearch"}
    assert cluster.names() == {"elasticsearch", "cluster"}
    assert browser.names() == {"browser"}
    assert plain.names() == {"corpus", "fast"}
    assert slow.names() == {"slow"}
    with pytest.raises(pytest.UsageError, match="marked fast but also elasticsearch"):
        tiers.mark([FakeItem(["es_url"], "fast")])  # type: ignore[list-item]


def test_a_helper_that_starts_a_server_fails_an_unmarked_test(request: pytest.FixtureRequest) -> None:
    try:
        tiers.set_current(FakeItem(["tmp_path"], "corpus", "fast"))  # type: ignore[arg-type]
        missing = r"is not marked runtimes: add @pytest\.mark\.runtimes"
        with pytest.raises(pytest.fail.Exception, match=missing):
            tiers.require("runtimes", "starts redis-server")
        tiers.set_current(FakeItem([], "elasticsearch", "runtimes"))  # type: ignore[arg-type]
        tiers.require("runtimes", "starts redis-server")
        tiers.set_current(None)  # outside a test: nothing to check
        tiers.require("browser", "starts a browser")
    finally:
        tiers.set_current(request.node)
    with pytest.raises(pytest.fail.Exception, match=request.node.name):
        tiers.require("elasticsearch", "uses Elasticsearch")  # this very test is in the everyday tier
