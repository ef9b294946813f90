"""Any change of tokenisation, weighting or hashing must be deliberate: it changes these vectors.

To change the algorithm on purpose: bump ALGORITHM in fingerprinter.py, then run
scripts/update_reference_vectors.py and commit both.
"""

import hashlib
import json
from pathlib import Path

import pytest

from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.fingerprint.hamming import to_hex

DATA = json.loads((Path(__file__).parent / "reference_vectors.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def fpr() -> Fingerprinter:
    return Fingerprinter()


def test_version_matches(fpr: Fingerprinter) -> None:
    assert fpr.version == DATA["version"], "algorithm version changed: regenerate vectors deliberately"


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_reference_vector(fpr: Fingerprinter, case: dict) -> None:
    r = fpr.fingerprint(text=case.get("text"), html=case.get("html"))
    assert r.hex == case["fingerprint"]
    assert r.content_digest == case["content_digest"]
    assert r.keyword_digest == case["keyword_digest"]
    assert r.degenerate == case["degenerate"]
    assert [to_hex(c) for c in r.chunks] == case["chunks"]
    assert hashlib.sha256(r.sketch).hexdigest() == case["sketch_sha256"]
    assert list(r.facts) == case["facts"]
    assert [f"{f:016x}" for f in r.frames] == case["frames"]
