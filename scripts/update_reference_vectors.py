#!/usr/bin/env python3
"""Regenerate tests/fingerprint/reference_vectors.json from its own inputs.

Run this only for a deliberate change of the fingerprint algorithm, and bump ``ALGORITHM`` in
fingerprint_indexer/fingerprint/fingerprinter.py with it: stored indexes are keyed by that version.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.fingerprint.hamming import to_hex

PATH = Path(__file__).resolve().parents[1] / "tests" / "fingerprint" / "reference_vectors.json"


def main() -> None:
    data = json.loads(PATH.read_text(encoding="utf-8"))
    fpr = Fingerprinter()
    for case in data["cases"]:
        r = fpr.fingerprint(text=case.get("text"), html=case.get("html"))
        case["fingerprint"] = r.hex
        case["content_digest"] = r.content_digest
        case["keyword_digest"] = r.keyword_digest
        case["degenerate"] = r.degenerate
        case["chunks"] = [to_hex(c) for c in r.chunks]
        case["sketch_sha256"] = hashlib.sha256(r.sketch).hexdigest()
        case["facts"] = list(r.facts)
        case["frames"] = [f"{f:016x}" for f in r.frames]
    data["version"] = fpr.version
    PATH.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {len(data['cases'])} vectors for {fpr.version}")


if __name__ == "__main__":
    main()
