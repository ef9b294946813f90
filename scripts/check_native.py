#!/usr/bin/env python3
"""The compiled fingerprint pass against the Python reference: byte-identical on every document.

Every document of every corpus given (by default all of ``../shared/data`` and the generated labelled
sets in ``out/labelled`` when built) is fingerprinted twice, by the compiled pass and by the reference
(:class:`Fingerprinter` with ``reference=True``), and every field of the two results is compared:
fingerprint, chunks, blocks, digests, weighted terms (exact floats), sketch, facts, frames and copy
marks (``winnow.marked`` of the text as given; on by default, they cost the reference about a fifth more
time). Prints one line per corpus, with how many documents' marks the compiled pass left to the
reference, and each difference (at most ``--show``); exits 1 on any.

    python3 scripts/check_native.py                         # every shared corpus
    python3 scripts/check_native.py ../shared/data/zh_news.jsonl.gz --limit 2000
    python3 scripts/check_native.py --no-copy-marks                # the fingerprints only
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import fields
from pathlib import Path

from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig, Fingerprinter
from fingerprint_indexer.fingerprint.winnow import WinnowParams, document_text
from fingerprint_indexer.io.readers import read_documents

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def default_inputs() -> list[Path]:
    found = sorted(DATA.glob("*.jsonl.gz")) if DATA.is_dir() else []
    labelled = ROOT / "out" / "labelled"
    return found + (sorted(labelled.glob("*.docs.jsonl")) if labelled.is_dir() else [])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="*", type=Path)
    ap.add_argument("--limit", type=int, default=0, help="documents per corpus (0 = all)")
    ap.add_argument("--no-copy-marks", action="store_true", help="with copy marks off (winnowing)")
    ap.add_argument("--show", type=int, default=5, help="differences printed per corpus")
    args = ap.parse_args()
    if not native.enabled():
        print("the compiled pass is not built (or FPI_NATIVE=0): nothing to compare", file=sys.stderr)
        return 2
    params = None if args.no_copy_marks else WinnowParams()
    config = FingerprintConfig(winnow=params)
    compiled, reference = Fingerprinter(config), Fingerprinter(config, reference=True)
    marks_pass = compiled._native_pass()
    inputs = args.inputs or default_inputs()
    if not inputs:
        print("no inputs", file=sys.stderr)
        return 2
    bad_total = 0
    for path in inputs:
        n = bad = marks_left = 0
        t_native = t_ref = 0.0
        for doc in read_documents([str(path)]):
            if args.limit and n >= args.limit:
                break
            n += 1
            t0 = time.perf_counter()
            a = compiled.fingerprint_document(doc)
            t1 = time.perf_counter()
            b = reference.fingerprint_document(doc)
            t_native += t1 - t0
            t_ref += time.perf_counter() - t1
            if params is not None and marks_pass is not None:
                marks_left += marks_pass.marked(document_text(doc), params) is None
            if a != b:
                bad += 1
                if bad <= args.show:
                    diff = [f.name for f in fields(a) if getattr(a, f.name) != getattr(b, f.name)]
                    print(f"  {path.name} {doc.id}: differs in {', '.join(diff)}")
        bad_total += bad
        ratio = t_ref / t_native if t_native else 0.0
        marks = f", copy marks of {marks_left} left to the reference" if params is not None else ""
        print(f"{path.name}: {n} documents, {bad} differ{marks}; reference {t_ref:.1f}s, "
              f"compiled {t_native:.1f}s ({ratio:.1f}x)")
    return 1 if bad_total else 0


if __name__ == "__main__":
    sys.exit(main())
