"""A pytest plugin (``-p support.tier_report``) that writes the tests a run selected and those it left out,
each with its fixtures and markers, as JSON to the file ``FPI_TIER_REPORT`` names (tests/test_tiers.py
collects a tier with it)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

_deselected: list[pytest.Item] = []


def _describe(items: list[pytest.Item]) -> list[dict[str, Any]]:
    return [{"id": item.nodeid, "fixtures": sorted(getattr(item, "fixturenames", ())),
             "markers": sorted({m.name for m in item.iter_markers()})} for item in items]


def pytest_deselected(items: list[pytest.Item]) -> None:
    _deselected.extend(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    path = os.environ.get("FPI_TIER_REPORT")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"selected": _describe(session.items), "deselected": _describe(_deselected)}, f)
