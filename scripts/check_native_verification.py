#!/usr/bin/env python3
"""The verification rule's compiled comparisons against the Python reference, on real decisions.

Every document of every corpus given (by default all of ``../shared/data``) is decided by the embedded
pipeline into a scratch store, and every (document, candidates) pair the decisions verify is kept. Each
is then judged twice, by ``check_many`` with the compiled comparisons and with ``FPI_NATIVE=0``; every
field of every verdict must agree (distance, where, similarity, band, step, reason, facts). The compiled
fact steps are also asked of every candidate pair, not only those the text step lets through, and their
step and comparison of facts must be the reference's. Prints one line per corpus with how many pairs the
compiled fact steps left to the reference, and each difference (at most ``--show``); exits 1 on any.

    python3 scripts/check_native_verification.py                  # every shared corpus
    python3 scripts/check_native_verification.py ../shared/data/zh_news.jsonl.gz --limit 2000
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.io.readers import read_documents
from fingerprint_indexer.pipeline import Pipeline
from fingerprint_indexer.store import near
from fingerprint_indexer.verification import compare, rule
from fingerprint_indexer.verification.compare import FactDiff
from fingerprint_indexer.verification.policy import DEFAULT_POLICY

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

Verified = tuple[Evidence, list[Evidence], int]


def decided_candidates(path: Path, limit: int = 0) -> list[Verified]:
    """(document, candidates, k) of every verification the embedded pipeline makes deciding the corpus
    (its first ``limit`` documents when given)."""
    seen: list[Verified] = []
    check_many = near.check_many

    def capture(query: Evidence, candidates: Any, k: int, *args: Any) -> Any:
        if candidates:
            seen.append((query, list(candidates), k))
        return check_many(query, candidates, k, *args)

    docs = read_documents([str(path)], skip_errors=True, on_error=lambda e: None)
    near.check_many = capture  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as d, Pipeline(Path(d) / "store") as p:
            for _ in p.process_many(itertools.islice(docs, limit or None)):
                pass
    finally:
        near.check_many = check_many
    return seen


@contextlib.contextmanager
def reference_only() -> Iterator[None]:
    """The compiled core switched off (``FPI_NATIVE=0``) inside, as it was after."""
    before = os.environ.get("FPI_NATIVE")
    os.environ["FPI_NATIVE"] = "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("FPI_NATIVE", None)
        else:
            os.environ["FPI_NATIVE"] = before


def fact_steps_both(a: Evidence, b: Evidence) -> tuple[tuple[str, FactDiff] | None, tuple[str, FactDiff]]:
    """The compiled fact steps' (step, comparison) of a pair (None: left to the reference) and the
    reference's, under the default policy."""
    apart = compare.days_apart_reference(a.facts, b.facts)
    step, _reason, diff = rule.fact_steps_reference(a, b, DEFAULT_POLICY, apart[0] if apart else None)
    return rule.fact_steps_compiled(a, b, DEFAULT_POLICY, apart), (step, diff)


def differences(seen: list[Verified]) -> tuple[list[str], int, int]:
    """What differs between the compiled and the reference judgement of each verification, with the
    number of pairs judged and of pairs the compiled fact steps left to the reference."""
    compiled = [rule.check_many(q, cands, k) for q, cands, k in seen]
    with reference_only():
        reference = [rule.check_many(q, cands, k) for q, cands, k in seen]
    out, pairs, left = [], 0, 0
    for (q, cands, _k), got, want in zip(seen, compiled, reference, strict=True):
        for c, g, w in zip(cands, got, want, strict=True):
            pairs += 1
            if g != w:
                out.append(f"verdict differs: compiled {g} vs reference {w}")
            steps, ref_steps = fact_steps_both(q, c)
            if steps is None:
                left += 1
            elif steps != ref_steps:
                out.append(f"fact steps differ: compiled {steps} vs reference {ref_steps}")
    return out, pairs, left


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="*", type=Path)
    ap.add_argument("--limit", type=int, default=0, help="documents per corpus (0 = all)")
    ap.add_argument("--show", type=int, default=5, help="differences printed per corpus")
    args = ap.parse_args()
    if native.core() is None:
        print("the compiled core is not built (or FPI_NATIVE=0): nothing to compare", file=sys.stderr)
        return 2
    inputs = args.inputs or (sorted(DATA.glob("*.jsonl.gz")) if DATA.is_dir() else [])
    if not inputs:
        print("no inputs", file=sys.stderr)
        return 2
    bad_total = 0
    for path in inputs:
        t0 = time.perf_counter()
        seen = decided_candidates(path, args.limit)
        bad, pairs, left = differences(seen)
        bad_total += len(bad)
        print(f"{path.name}: {len(seen)} verifications, {pairs} candidate pairs, {len(bad)} differences; "
              f"the compiled fact steps left {left} to the reference ({time.perf_counter() - t0:.0f} s)")
        for line in bad[: args.show]:
            print("  " + line)
    return 1 if bad_total else 0


if __name__ == "__main__":
    sys.exit(main())
