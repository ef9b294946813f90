"""`dedupe` (the main job: deduplicate a corpus into the embedded store) and `similar` (look-ups)."""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from typing import IO, Any

import click
from tqdm import tqdm

from fingerprint_indexer.cli.common import (
    build_config,
    config_options,
    copy_marks_option,
    decisions_output_option,
    default_store,
    emit,
    fail,
    k_option,
    keep_option,
    neighbour_rows,
    processes_option,
    skip_errors_option,
    store_guarded,
    store_option,
    threads_option,
)
from fingerprint_indexer.collector import long_run
from fingerprint_indexer.copies.stored import ENABLE_HINT, marks_of, winnowed_passages
from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.fingerprint.winnow import Marks, WinnowParams, document_text, marked
from fingerprint_indexer.io.readers import InputError, read_documents, read_one
from fingerprint_indexer.pipeline import BATCH_SIZE, Pipeline
from fingerprint_indexer.records.record import founded_by
from fingerprint_indexer.store.embedded import EmbeddedStore
from fingerprint_indexer.store.errors import StoreReadOnlyError


def explain_passages(store: EmbeddedStore, mine: Marks | None, other: str) -> list[dict[str, Any]]:
    """Copied passages between the looked-up document (A) and a stored one (B), from their marks."""
    tag = store.marks_tag
    theirs = marks_of(store, other)
    if tag is None or mine is None or theirs is None:
        return []
    return [p.to_dict() for p in winnowed_passages(mine, theirs, WinnowParams.from_tag(tag))]


@click.command("dedupe")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(allow_dash=True))
@store_option
@k_option
@keep_option()
@decisions_output_option
@skip_errors_option
@processes_option()
@threads_option
@click.option("--batch-size", type=click.IntRange(1, 100_000), default=BATCH_SIZE, show_default=True,
              help="Documents per atomic store commit (a crash loses at most one batch of work).")
@copy_marks_option
@config_options
def dedupe_cmd(inputs: tuple[str, ...], store_dir: str | None, k: int, keep: str, output: str,
               skip_errors: bool, processes: int, threads: int, batch_size: int, copy_marks: bool | None,
               top_k: int, idf_path: str | None, synonyms: str | None, n_blocks: int | None) -> None:
    """Deduplicate documents into a persistent store: JSONL (.gz too), folders of .txt/.html, or '-'.

    One JSON line per document: id, fingerprint, decision (new | exact_duplicate | near_duplicate),
    duplicate_of (the group's canonical document), distance (Hamming distance to it), cluster_id;
    'replaces' when --keep makes this document the new canonical. A line is written only after the
    document is committed to the store. A summary goes to stderr at the end.
    """
    def body() -> None:
        config = build_config(top_k, idf_path, synonyms, n_blocks)
        store = Path(store_dir) if store_dir else default_store()
        errors: list[InputError] = []

        def on_error(err: InputError) -> None:
            errors.append(err)
            tqdm.write(f"warning: {err}", file=sys.stderr)

        started = time.perf_counter()
        counts: Counter[str] = Counter()
        founded = 0  # clusters this run founded (a set of every cluster id would grow with the input)
        with Pipeline(store, config, k=k, keep=keep, processes=processes,  # type: ignore[arg-type]
                      batch_size=batch_size, copy_marks=copy_marks, threads=threads) as pipe:
            # the store keeps no texts: `explore` reads them from the inputs recorded here
            pipe.store.note_sources(str(Path(i).resolve()) for i in inputs if i != "-")
            out: IO[str] = sys.stdout if output == "-" else open(output, "w", encoding="utf-8")  # noqa: SIM115
            try:
                docs = read_documents(inputs, skip_errors=skip_errors, on_error=on_error)
                bar = tqdm(pipe.process_many(docs), unit="doc", file=sys.stderr,
                           disable=not sys.stderr.isatty(), dynamic_ncols=True)
                with long_run():
                    for decision in bar:
                        emit(decision.to_dict(), out)
                        out.flush()
                        counts[decision.decision] += 1
                        founded += founded_by(decision.cluster_id, decision.id)
            finally:
                if out is not sys.stdout:
                    out.close()
            total = sum(counts.values())
            dups = counts["exact_duplicate"] + counts["near_duplicate"]
            elapsed = time.perf_counter() - started
            click.echo(
                f"{total} documents: {counts['new']} new, {counts['exact_duplicate']} exact duplicates, "
                f"{counts['near_duplicate']} near duplicates ({(dups / total if total else 0):.1%} duplicate "
                f"rate); {founded} new clusters; {len(errors)} input errors; {elapsed:.1f} s "
                f"({total / elapsed if elapsed else 0:.0f} docs/s); store {store}: "
                f"{pipe.store.n_docs} documents, {pipe.store.n_clusters} clusters with a centre (degenerate "
                f"documents without a copy stand alone)",
                err=True,
            )
        if pipe.store.side_file_error:
            click.echo(f"warning: {pipe.store.side_file_error}", err=True)
    store_guarded(body, Path(store_dir) if store_dir else default_store())


def similar_pictures(store_path: Path, image_path: str) -> None:
    """``similar --image``: one line per stored picture of the same photo (id, distance, exact, mirrored,
    duplicate_of), the same pixels first, then nearest first."""
    from fingerprint_indexer.fingerprint.image import ImageError, fingerprint_file
    from fingerprint_indexer.store.images import ImageStore

    if not (store_path / "leveldb").is_dir():
        fail(f"no store at {store_path} "
             "(keep pictures in one with 'fingerprint-indexer images --store DIR ...')")
    try:
        fp = fingerprint_file(image_path)
    except ImageError as exc:
        fail(str(exc))
        return
    try:
        store = EmbeddedStore(store_path)
    except StoreReadOnlyError:  # look-ups need no writes: read it through a private copy
        store = EmbeddedStore(store_path, readonly=True)
    with store:
        pictures = ImageStore(store)
        found = pictures.similar(fp)
        for m in found:
            rec = pictures.record(m.image_id) or {}
            emit({"id": m.image_id, "distance": m.distance, "exact": m.exact, "mirrored": m.mirrored,
                  "duplicate_of": rec.get("duplicate_of")})
        if not found:
            click.echo("no stored picture of the same photo", err=True)


@click.command("similar")
@store_option
@click.option("--id", "doc_id", help="A document already in the store.")
@click.option("--text", help="Raw text to fingerprint and look up.")
@click.option("--file", "file_path", type=click.Path(exists=True, dir_okay=False),
              help="A UTF-8 .txt/.html file to fingerprint and look up.")
@click.option("--image", "image_path", type=click.Path(exists=True, dir_okay=False),
              help="A picture (JPEG, PNG, WebP, GIF): list the stored pictures of the same photo "
                   "(those 'images --store' kept).")
@k_option
@config_options
@click.option("--explain", is_flag=True,
              help="Add why each document matched (distance, matched document/chunk, sketch similarity, "
                   "facts, the copied passages with character offsets in both texts) and list the "
                   "look-alike candidates the check rejected, with the reason.")
def similar_cmd(store_dir: str | None, doc_id: str | None, text: str | None, file_path: str | None,
                image_path: str | None, k: int, top_k: int, idf_path: str | None, synonyms: str | None,
                n_blocks: int | None, explain: bool) -> None:
    """List stored near-duplicates (id, distance, cluster_id, duplicate_of), nearest first."""
    if sum(x is not None for x in (doc_id, text, file_path, image_path)) != 1:
        fail("give exactly one of --id, --text, --file or --image")
    if image_path is not None:
        store_guarded(lambda: similar_pictures(Path(store_dir) if store_dir else default_store(), image_path),
                     Path(store_dir) if store_dir else default_store())
        return

    def body() -> None:
        config = build_config(top_k, idf_path, synonyms, n_blocks)
        store_path = Path(store_dir) if store_dir else default_store()
        if not (store_path / "leveldb").is_dir():
            fail(f"no store at {store_path} (create one with 'fingerprint-indexer dedupe --store DIR ...')")
        fpr = Fingerprinter(config)
        try:
            store = EmbeddedStore(store_path, config.layout, fpr.version)
        except StoreReadOnlyError:  # look-ups need no writes: read it through a private copy
            store = EmbeddedStore(store_path, config.layout, fpr.version, readonly=True)
        with store:
            config.layout.check_k(k)
            if doc_id is not None:
                rec = store.record(doc_id)
                if rec is None:
                    fail(f"no document {doc_id!r} in store {store_path}")
                    return
                ev, digest = rec.evidence, rec.content_digest
                my_marks = marks_of(store, doc_id)
            else:
                doc = (read_one(file_path) if file_path is not None
                       else Document(id="-", content=text))
                res = fpr.fingerprint_document(doc)
                ev, digest = res.evidence, res.content_digest
                tag = store.marks_tag if explain else None
                my_marks = (marked(document_text(doc), fpr.tokenizer, WinnowParams.from_tag(tag))
                            if tag is not None else None)
            if explain and store.marks_tag is None:
                click.echo(f"note: no copied passages: store {store_path} keeps no copy marks (nor texts); "
                           f"{ENABLE_HINT}", err=True)
            found = store.neighbours(ev, digest, k, exclude=doc_id)
            for other, row in neighbour_rows(found, explain):
                if explain and store.marks_tag is not None:
                    row["why"]["passages"] = explain_passages(store, my_marks, other.id)
                emit(row)
            if not found.matches:
                click.echo(f"no near-duplicates within distance {k}", err=True)
    store_guarded(body, Path(store_dir) if store_dir else default_store())


def register(cli: click.Group) -> None:
    cli.add_command(dedupe_cmd)
    cli.add_command(similar_cmd)
