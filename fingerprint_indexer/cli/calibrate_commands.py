"""``fingerprint-indexer calibrate PAIRS DOCS``: thresholds for a target precision on the user's own pairs.

PAIRS is JSONL with ``a``, ``b`` (document ids) and ``label`` (1 duplicate, 0 not); DOCS is the documents
(JSONL with ``id``, ``title``, ``content`` or ``html``). The command prints, for the fingerprint settings
given (the same options as ``fingerprint``), how many labelled duplicates and non-duplicates lie at each
Hamming distance, the precision and recall of each threshold, and a recommendation; and the same for
all of a document's fingerprints (document and chunks) with second-stage sketch verification, which is
what ``dedupe`` decides by.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from fingerprint_indexer.calibration import Point, histogram, recommend, sweep
from fingerprint_indexer.cli.common import build_config, config_options, emit, fail, run_guarded
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, FingerprintResult
from fingerprint_indexer.fingerprint.hamming import hamming
from fingerprint_indexer.fingerprint.sketch import from_bytes, similarity
from fingerprint_indexer.io.readers import read_documents
from fingerprint_indexer.verification import closest

SIMILARITIES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)


def _read_pairs(path: Path) -> list[tuple[str, str, bool]]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                out.append((str(rec["a"]), str(rec["b"]), bool(int(rec["label"]))))
            except (ValueError, KeyError, TypeError) as exc:
                fail(f"{path}:{lineno}: expected a JSON object with 'a', 'b', 'label' ({exc})")
    return out


def _row(p: Point) -> dict[str, Any]:
    return {
        "threshold": p.threshold,
        "precision": round(p.precision, 4),
        "recall": round(p.recall, 4),
        "f1": round(p.f1, 4),
        "tp": p.tp,
        "fp": p.fp,
        "fn": p.fn,
    }


@click.command("calibrate")
@click.argument("pairs", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("docs", type=click.Path(exists=True, path_type=Path))
@click.option("--target-precision", type=click.FloatRange(0, 1), default=0.99, show_default=True)
@click.option(
    "--max-k",
    type=click.IntRange(0, 32),
    default=16,
    show_default=True,
    help="Largest Hamming distance examined.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@config_options
def calibrate_cmd(
    pairs: Path,
    docs: Path,
    target_precision: float,
    max_k: int,
    as_json: bool,
    top_k: int,
    idf_path: str | None,
    synonyms: str | None,
    n_blocks: int | None,
) -> None:
    """Recommend thresholds for TARGET precision on labelled PAIRS of DOCS, and show what distances mean."""

    def body() -> None:
        labelled = _read_pairs(pairs)
        wanted = {x for a, b, _ in labelled for x in (a, b)}
        config = build_config(top_k, idf_path, synonyms, n_blocks)
        plain = Fingerprinter(config)
        prints: dict[str, FingerprintResult] = {}
        for doc in read_documents([str(docs)]):
            if doc.id in wanted:
                prints[doc.id] = plain.fingerprint_document(doc)
        missing = sorted(wanted - prints.keys())
        if missing:
            fail(f"{len(missing)} ids of {pairs} are not in {docs}, e.g. {missing[:3]}")
        labels = [y for _, _, y in labelled]
        d_plain = [hamming(prints[a].fingerprint, prints[b].fingerprint) for a, b, _ in labelled]
        d_robust = [closest(prints[a].fingerprints, prints[b].fingerprints)[0] for a, b, _ in labelled]
        sketches = {k: from_bytes(r.sketch) for k, r in prints.items()}
        sims = [similarity(sketches[a], sketches[b]) for a, b, _ in labelled]
        ks = list(range(max_k + 1))
        plain_points = sweep(d_plain, labels, ks)
        plain_best = recommend(plain_points, target_precision)
        combos: list[tuple[float, Point]] = []
        for j in SIMILARITIES:
            gated = [d if s >= j else 99 for d, s in zip(d_robust, sims, strict=True)]
            combos += [(j, p) for p in sweep(gated, labels, ks)]
        robust_best = _best(combos, target_precision, max_k=3)
        robust_any = _best(combos, target_precision, max_k=max_k)
        result = {
            "pairs": len(labelled),
            "duplicates": sum(labels),
            "target_precision": target_precision,
            "fingerprint_version": plain.version,
            "distance_histogram": [
                {"distance": d, "duplicates": p, "non_duplicates": n}
                for d, p, n in histogram(d_plain, labels, max_k)
            ],
            "plain": [_row(p) for p in plain_points],
            "plain_recommendation": _row(plain_best) if plain_best else None,
            "robust_any_k": _combo(robust_any),
            "robust_recommendation": _combo(robust_best),
        }
        if as_json:
            emit(result)
            return
        _print_tables(result, plain_points, target_precision)

    run_guarded(body)


def _best(combos: list[tuple[float, Point]], target: float, max_k: int) -> tuple[float, Point] | None:
    """Highest recall at precision >= target and k <= max_k; ties: smaller k, then stricter similarity."""
    ok = [(j, p) for j, p in combos if p.precision >= target and p.tp > 0 and p.threshold <= max_k]
    return max(ok, key=lambda c: (c[1].recall, -c[1].threshold, c[0])) if ok else None


def _combo(c: tuple[float, Point] | None) -> dict[str, Any] | None:
    return {"k": c[1].threshold, "min_similarity": c[0], **_row(c[1])} if c else None


def _print_tables(result: dict[str, Any], points: list[Point], target: float) -> None:
    echo = click.echo
    echo(
        f"{result['pairs']} labelled pairs, {result['duplicates']} duplicates; "
        f"fingerprint {result['fingerprint_version']}"
    )
    echo("")
    echo("What a Hamming distance means on these pairs (document fingerprint, these settings):")
    echo(
        f"{'distance':>8} {'dups':>6} {'non-dups':>8} | threshold = distance: {'precision':>9} {'recall':>7}"
    )
    last = result["distance_histogram"][-1]["distance"]
    for h, p in zip(result["distance_histogram"], points, strict=True):
        label = f">={last}" if h["distance"] == last else str(h["distance"])
        echo(
            f"{label:>8} {h['duplicates']:>6} {h['non_duplicates']:>8} | "
            f"{'':>21}{p.precision:>9.3f} {p.recall:>7.3f}"
        )
    echo("")
    rec = result["plain_recommendation"]
    if rec:
        k = int(rec["threshold"])
        blocks = f" (needs --blocks {k + 1})" if k > 3 else ""
        echo(
            f"Document fingerprint: k={k}{blocks} gives precision {rec['precision']:.3f}, "
            f"recall {rec['recall']:.3f} (target precision {target})."
        )
    else:
        echo(f"Document fingerprint: no threshold reaches precision {target}.")
    rob = result["robust_recommendation"]
    if rob:
        echo(
            "Repost-robust fingerprints + sketch check (default 4x16-bit index): "
            f"k={int(rob['k'])}, min similarity "
            f"{rob['min_similarity']} gives precision {rob['precision']:.3f}, recall {rob['recall']:.3f}."
        )
    else:
        echo(f"Repost-robust fingerprints + sketch check: no setting with k <= 3 reaches precision {target}.")
    anyk = result["robust_any_k"]
    if anyk and (not rob or anyk["recall"] > rob["recall"]):
        echo(
            f"  wider radius: k={int(anyk['k'])} (needs --blocks {int(anyk['k']) + 1}), min similarity "
            f"{anyk['min_similarity']} gives precision {anyk['precision']:.3f}, recall {anyk['recall']:.3f}."
        )


def register(cli: click.Group) -> None:
    cli.add_command(calibrate_cmd)
