"""Test tiers: markers say what a test needs beyond Python, and the everyday tier (``-m fast``) is what
needs none of it.

Markers come from two places. A test that uses one of the fixtures in :data:`FIXTURE_MARKERS`, directly or
through other fixtures, gets that fixture's markers at collection (:func:`mark`, called from
tests/conftest.py), so it cannot forget them. A test that starts something without a fixture (a server
distribution, the Node.js or Java client, redis-server) carries the marker itself, and the helper that
starts it calls :func:`require`, which fails the test when the marker is missing. Every test without a
marker of :data:`HEAVY` gets ``fast``.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

#: fixture -> the markers of every test whose fixtures include it
FIXTURE_MARKERS: dict[str, tuple[str, ...]] = {
    "es_url": ("elasticsearch",),  # under es_client, es_index, es_env and the sidecar's service fixtures
    "es_cluster": ("elasticsearch", "cluster"),
    "browser": ("browser",),
}
#: markers of what the everyday tier leaves out
HEAVY = ("elasticsearch", "cluster", "compat", "browser", "runtimes", "slow")
#: the marker of the everyday tier, derived: no server, no browser, no other runtime, nothing slow
FAST = "fast"

_current: pytest.Item | None = None


def markers_of(item: pytest.Item) -> set[str]:
    return {m.name for m in item.iter_markers()}


def mark(items: Iterable[pytest.Item]) -> None:
    """Add the markers the items' fixtures imply, then ``fast`` to each item that has no heavy marker."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        for fixture, implied in FIXTURE_MARKERS.items():
            if fixture in fixtures:
                for name in implied:
                    item.add_marker(name)
        names = markers_of(item)
        heavy = names.intersection(HEAVY)
        if not heavy:
            item.add_marker(FAST)
        elif FAST in names:
            raise pytest.UsageError(f"{item.nodeid} is marked {FAST} but also {', '.join(sorted(heavy))}: "
                                    f"{FAST} is given to the tests that need none of {', '.join(HEAVY)}")


def set_current(item: pytest.Item | None) -> None:
    """The test being run (tests/conftest.py sets it around each test)."""
    global _current
    _current = item


def require(marker: str, what: str) -> None:
    """Fail the running test unless it carries ``marker`` (``what`` says what it was about to start).
    Outside a test, or in a pytest run without tests/conftest.py, this checks nothing."""
    item = _current
    if item is not None and marker not in markers_of(item):
        pytest.fail(f"{item.nodeid} {what} but is not marked {marker}: add @pytest.mark.{marker}, so that "
                    f"the everyday tier (-m {FAST}) leaves it out", pytrace=False)
