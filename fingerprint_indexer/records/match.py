"""One look-up result, as every near-duplicate index, store and the engine hand it around."""

from __future__ import annotations

from typing import NamedTuple


class Match(NamedTuple):
    """One query result."""

    doc_id: str
    distance: int
