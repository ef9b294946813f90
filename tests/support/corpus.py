"""Access to the real corpora in ../shared/data (never copied into the repository).

Tests that use them carry the ``corpus`` marker. Where the folder is absent they skip with the
reason, except in CI (``CI`` set), where missing data is a failure.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = Path(os.environ.get("FPI_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
ZH_NEWS = DATA_DIR / "zh_news.jsonl.gz"
EN_BBC = DATA_DIR / "en_bbc.jsonl.gz"


def require(path: Path) -> Path:
    """The corpus file, or skip (fail in CI) with a clear reason."""
    if path.is_file():
        return path
    reason = f"corpus file {path} not found (the real corpora live beside the repository in shared/data)"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def iter_records(path: Path) -> Iterator[dict[str, Any]]:
    with gzip.open(require(path), "rt", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def load_records(path: Path, limit: int | None = None, min_chars: int = 0) -> list[dict[str, Any]]:
    out = []
    for rec in iter_records(path):
        if len(rec.get("content") or "") >= min_chars:
            out.append(rec)
            if limit is not None and len(out) >= limit:
                break
    return out
