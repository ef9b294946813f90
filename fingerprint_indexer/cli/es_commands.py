"""Commands against Elasticsearch: ``index``, ``reindex`` and the ``es`` group (setup, similar, related,
dedupe). Every command takes ``--es URL`` (default ``ES_URL``) and ``--index NAME`` (default
``FPI_ES_INDEX``, else ``news``); credentials come from ES_API_KEY or ES_USERNAME/ES_PASSWORD, and a
private CA from ES_CA_CERTS."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import click
import platformdirs
from elasticsearch import Elasticsearch
from tqdm import tqdm

from fingerprint_indexer.cli.common import (
    build_config,
    chosen_layout,
    config_options,
    copy_marks_option,
    decisions_output_option,
    emit,
    fail,
    k_option,
    keep_option,
    neighbour_rows,
    on_duplicate_option,
    processes_option,
    run_guarded,
    skip_errors_option,
    threads_option,
)
from fingerprint_indexer.collector import long_run
from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.es_batch_dedupe import batch_dedupe
from fingerprint_indexer.elastic.es_ingest import (
    DECIDE_BATCH,
    BatchResult,
    EsDecider,
    fingerprinted_batches,
    pipelined,
)
from fingerprint_indexer.elastic.es_setup import MappingConflict, index_config, setup_index
from fingerprint_indexer.elastic.reindex import reindex
from fingerprint_indexer.elastic.related import related
from fingerprint_indexer.elastic.similar import similar
from fingerprint_indexer.engine.rules import Keep
from fingerprint_indexer.env import es_url as read_es_url
from fingerprint_indexer.es.codec import source_evidence
from fingerprint_indexer.es.connection import connect
from fingerprint_indexer.es.errors import EsError, EsRequestError, EsUnavailable, es_errors
from fingerprint_indexer.es.mapping import force_merge
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex
from fingerprint_indexer.io.readers import InputError, read_documents, read_one

DEFAULT_INDEX = "news"
EXIT_ES_ERROR = 2
EXIT_PARTIAL = 3  # the job ran but some documents failed to be written


def default_index() -> str:
    return os.environ.get("FPI_ES_INDEX") or DEFAULT_INDEX


def es_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--es URL and --index NAME."""
    func = click.option("--index", "index_name", default=default_index,
                        show_default=f"$FPI_ES_INDEX or {DEFAULT_INDEX}",
                        help="Index or alias name.")(func)  # fmt: skip
    func = click.option("--es", "es_url", default=read_es_url, show_default="$ES_URL",
                        help="Elasticsearch URL, e.g. http://127.0.0.1:9200; several nodes of one "
                             "cluster comma-separated.")(func)  # fmt: skip
    return func


def es_guarded(url: str | None, body: Callable[[Elasticsearch], None]) -> None:
    """Connect, run, and turn Elasticsearch and input problems into one clear line and an exit code."""

    def wrapped() -> None:
        try:
            client = connect(url)
        except EsUnavailable as exc:
            fail(str(exc), EXIT_ES_ERROR)
            return
        try:
            with es_errors(f"Elasticsearch at {read_es_url(url)} failed"):
                body(client)
        except (EsUnavailable, EsRequestError, MappingConflict) as exc:  # others: one line, exit code 1
            fail(str(exc), EXIT_ES_ERROR)
        except LookupError as exc:
            fail(str(exc.args[0]) if exc.args else str(exc))
        except ValueError as exc:
            if isinstance(exc, InputError):
                raise
            fail(str(exc))
        finally:
            client.close()

    run_guarded(wrapped)


# --------------------------------------------------------------------------------------------- es setup
@click.command("setup")
@es_options
@click.option("--blocks", "n_blocks", type=click.IntRange(4, 64), default=None,
              help="Plain layout of this many blocks, one key each (k + 1 blocks serve distance k). "
                   "Default: permuted keys, 20 of three of 6 blocks, for any index size.")  # fmt: skip
@click.option("--update-mapping", is_flag=True,
              help="Add the missing fingerprint fields to an existing index.")  # fmt: skip
@click.option("--shards", type=click.IntRange(1, 1024), default=None, help="Primary shards of a new index.")
@click.option("--replicas", type=click.IntRange(0, 16), default=None,
              help="Replicas of a new index (default: 1 when the cluster has more than one data node, "
                   "else 0).")  # fmt: skip
@copy_marks_option
def setup_cmd(es_url: str | None, index_name: str, n_blocks: int | None, update_mapping: bool,
              shards: int | None, replicas: int | None, copy_marks: bool | None) -> None:  # fmt: skip
    """Create the index (NAME-000001 behind the alias NAME) from the shipped mapping, or check one.

    An existing index whose fields conflict with the mapping is refused with the list of conflicts;
    missing fields are added only with --update-mapping. Prints a JSON report.
    """

    def body(client: Elasticsearch) -> None:
        emit(setup_index(client, index_name, chosen_layout(n_blocks), update_mapping, shards, replicas,
                         copy_marks).to_dict())

    es_guarded(es_url, body)


# ------------------------------------------------------------------------------------------------ index
@click.command("index")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(allow_dash=True))
@es_options
@k_option
@on_duplicate_option
@keep_option()
@processes_option()
@threads_option
@click.option("--batch-size", type=click.IntRange(1, 10_000), default=DECIDE_BATCH, show_default=True,
              help="Documents per decision round trip and bulk request.")
@skip_errors_option
@decisions_output_option
@copy_marks_option
@config_options
def index_cmd(inputs: tuple[str, ...], es_url: str | None, index_name: str, k: int, on_duplicate: str,
              keep: Keep, processes: int, threads: int, batch_size: int, skip_errors: bool, output: str,
              copy_marks: bool | None, top_k: int, idf_path: str | None, synonyms: str | None,
              n_blocks: int | None) -> None:  # fmt: skip
    """Fingerprint documents, decide new / exact / near duplicate against the index, and bulk-index them.

    Inputs as for `dedupe` (JSONL, .gz, folders of .txt/.html, '-'). One JSON line per document (id,
    fingerprint, decision, duplicate_of, distance, cluster_id; "error" when its write failed). The index is
    created by `es setup` rules when missing (1 replica when the cluster has more than one data node, else
    0). Exit code 3 when some documents failed to be written.

    --es takes one URL or the URLs of several nodes of a cluster, comma-separated: requests go to any of
    them, and one that fails (a node that dies or restarts) is sent again to another.
    """

    def body(client: Elasticsearch) -> None:
        layout = chosen_layout(n_blocks)
        if not client.indices.exists(index=index_name):
            report = setup_index(client, index_name, layout, copy_marks=copy_marks)
            click.echo(f"created index {report.concrete_indices[0]} behind alias {index_name}", err=True)
        es_index = ElasticsearchIndex(client, index_name, layout)
        config = replace(build_config(top_k, idf_path, synonyms, n_blocks), layout=es_index.layout)
        config = index_config(client, index_name, config, copy_marks)
        decider = EsDecider(es_index, k=k, on_duplicate=on_duplicate, keep=keep)  # type: ignore[arg-type]
        counts: Counter[str] = Counter()
        failures: list[tuple[str, str]] = []
        input_errors: list[InputError] = []

        def on_error(err: InputError) -> None:
            input_errors.append(err)
            tqdm.write(f"warning: {err}", file=sys.stderr)

        started = time.perf_counter()
        out: IO[str] = sys.stdout if output == "-" else open(output, "w", encoding="utf-8")  # noqa: SIM115
        bar = tqdm(unit="doc", file=sys.stderr, disable=not sys.stderr.isatty(), dynamic_ncols=True)
        try:
            docs = read_documents(inputs, skip_errors=skip_errors, on_error=on_error)
            batches = fingerprinted_batches(docs, Fingerprinter(config), batch_size, processes, threads)
            with long_run():
                for result in pipelined(decider, batches, "index"):
                    _emit_batch(result, out, counts, failures)
                    bar.update(len(result.decisions))
        finally:
            bar.close()
            if out is not sys.stdout:
                out.close()
        total = sum(counts.values())
        elapsed = time.perf_counter() - started
        click.echo(
            f"{total} documents: {counts['new']} new, {counts['exact_duplicate']} exact duplicates, "
            f"{counts['near_duplicate']} near duplicates; {len(failures)} failed to index; "
            f"{len(input_errors)} input errors; {elapsed:.1f} s "
            f"({total / elapsed if elapsed else 0:.0f} docs/s)",
            err=True,
        )
        for doc_id, reason in failures[:20]:
            click.echo(f"failed: {doc_id}: {reason}", err=True)
        if failures:
            sys.exit(EXIT_PARTIAL)

    es_guarded(es_url, body)


def _emit_batch(
    result: BatchResult, out: IO[str], counts: Counter[str], failures: list[tuple[str, str]]
) -> None:
    failed = dict(result.failures)
    failures += result.failures
    for d in result.decisions:
        line = d.to_dict()
        if d.id in failed:
            line["error"] = failed[d.id]
        else:
            counts[d.decision] += 1
        emit(line, out)
    out.flush()


def default_checkpoint(url: str | None, index: str) -> Path:
    tag = hashlib.sha1(f"{url}|{index}".encode()).hexdigest()[:12]
    return Path(platformdirs.user_cache_dir("fingerprint-indexer")) / f"reindex-{index}-{tag}.json"


@click.command("reindex")
@es_options
@k_option
@click.option("--source-field", default="content", show_default=True, help="Field holding the article text.")
@click.option("--title-field", default="title", show_default=True, help="Field holding the title.")
@processes_option()
@threads_option
@click.option("--batch-size", type=click.IntRange(1, 10_000), default=DECIDE_BATCH, show_default=True,
              help="Documents per scan page and bulk request.")
@click.option("--checkpoint", type=click.Path(dir_okay=False), default=None,
              help="Checkpoint file (default: in the user cache directory, per URL and index).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--force-merge", "merge_to", type=click.IntRange(1, None), default=None,
              help="When every document is done, force-merge the index to at most this many segments per "
                   "shard: a bulk-loaded index then serves look-ups as fast as a fresh one.")
@copy_marks_option
@config_options
def reindex_cmd(es_url: str | None, index_name: str, k: int, source_field: str, title_field: str,
                processes: int, threads: int, batch_size: int, checkpoint: str | None, no_progress: bool,
                merge_to: int | None, copy_marks: bool | None, top_k: int,
                idf_path: str | None, synonyms: str | None, n_blocks: int | None) -> None:  # fmt: skip
    """Fingerprint an existing index in place: documents without a fingerprint of the current version.

    Needs the fingerprint fields in the mapping (`es setup --update-mapping`). Resumable: after a crash, run
    the same command again. Prints the final report as JSON (documents, duplicates, clusters, documents
    without the source field, failures with ids; with --force-merge, the merge's seconds and segments left).
    Exit code 3 when some documents failed (the index is then not merged: run the command again); 2 when
    the merge failed (the report is printed first, with the merge's error).
    """

    def body(client: Elasticsearch) -> None:
        config = build_config(top_k, idf_path, synonyms, n_blocks)
        config = index_config(client, index_name, config, copy_marks)
        url = read_es_url(es_url)
        path = Path(checkpoint) if checkpoint else default_checkpoint(url, index_name)
        path.parent.mkdir(parents=True, exist_ok=True)
        report = reindex(client, index_name, source_field=source_field, title_field=title_field, k=k,
                         config=config, processes=processes, threads=threads, batch_size=batch_size,
                         checkpoint=path,
                         progress=not no_progress and sys.stderr.isatty(),
                         layout=chosen_layout(n_blocks))  # fmt: skip
        out = report.to_dict()
        merge_error: Exception | None = None
        if merge_to is not None and not report.failed:
            try:
                with es_errors(""):
                    out["force_merged"] = force_merge(client, index_name, merge_to)
            except EsError as exc:  # the documents are done: their report is kept
                out["force_merged"], merge_error = {"error": str(exc)}, exc
        emit(out)
        if merge_error is not None:
            fail(f"the force-merge of {index_name!r} failed ({merge_error}); every document is done: "
                 "the same command again merges it", EXIT_ES_ERROR)
        if report.failed:
            sys.exit(EXIT_PARTIAL)

    es_guarded(es_url, body)


# ---------------------------------------------------------------------------------------------- similar
@click.command("similar")
@es_options
@click.option("--id", "doc_id", help="A document in the index.")
@click.option("--text", help="Raw text to fingerprint and look up.")
@click.option("--file", "file_path", type=click.Path(exists=True, dir_okay=False),
              help="A .txt/.html/.jsonl file: its first document is looked up.")  # fmt: skip
@click.option("--image", "image_path", type=click.Path(exists=True, dir_okay=False),
              help="A picture: list the documents with a picture of the same photo (id, image, distance, "
                   "exact). A shared photo is evidence, not a duplicate: one wire photo illustrates many "
                   "stories.")
@k_option
@config_options
@click.option("--explain", is_flag=True,
              help="Add why each document matched (distance, matched document/chunk, sketch similarity, "
                   "facts) and list the look-alike candidates the check rejected, with the reason.")
def similar_cmd(es_url: str | None, index_name: str, doc_id: str | None, text: str | None,
                file_path: str | None, image_path: str | None, k: int, top_k: int, idf_path: str | None,
                synonyms: str | None, n_blocks: int | None, explain: bool) -> None:  # fmt: skip
    """Near-duplicates in the index as JSON lines (id, distance, cluster_id, duplicate_of), nearest first.

    A near-duplicate has a document or chunk fingerprint within k of one of ours (or a shared sketch
    band) and passes the verification rule (sketch, facts); distance is the smallest over all fingerprint
    pairs. Exact copies (same content digest) are listed too, also those too short to be in the block
    index. With --explain the rejected look-alikes follow, as in `similar --explain`.
    """
    if sum(x is not None for x in (doc_id, text, file_path, image_path)) != 1:
        fail("give exactly one of --id, --text, --file or --image")

    def body(client: Elasticsearch) -> None:
        if image_path is not None:
            from fingerprint_indexer.elastic.similar import similar_pictures
            from fingerprint_indexer.fingerprint.image import ImageError, fingerprint_file

            try:
                fp = fingerprint_file(image_path)
            except ImageError as exc:
                raise LookupError(str(exc)) from None
            rows = similar_pictures(client, index_name, fp)
            if not rows:
                click.echo("no document with a picture of the same photo", err=True)
            for row in rows:
                emit({k: v for k, v in row.items() if k != "thumbnail"})
            return
        index = ElasticsearchIndex(client, index_name, create=False)
        if doc_id is not None:
            wanted = ["fingerprint", "fingerprints", "sketch", "facts", "frames", "content_digest"]
            got = client.options(ignore_status=404).get(index=index_name, id=doc_id, source_includes=wanted)
            if got.meta.status == 404:
                raise LookupError(f"no document {doc_id!r} in index {index_name!r}")
            stored = got.get("_source") or {}
            if stored.get("fingerprint") is None:
                raise LookupError(f"document {doc_id!r} has no fingerprint yet (run `reindex`)")
            ev, digest = source_evidence(stored), stored.get("content_digest")
        else:
            config = replace(build_config(top_k, idf_path, synonyms, None), layout=index.layout)
            doc = read_one(file_path) if file_path else Document(id="-", content=text)
            res = Fingerprinter(config).fingerprint_document(doc)
            ev, digest = res.evidence, res.content_digest
        found = similar(client, index, ev, digest, k, exclude=doc_id)
        if not found.matches:
            click.echo(f"no documents within distance {k}", err=True)
        for _, row in neighbour_rows(found, explain):
            emit(row)

    es_guarded(es_url, body)


# ---------------------------------------------------------------------------------------------- related
@click.command("related")
@es_options
@click.option("--id", "doc_id", required=True, help="The article to find related articles for.")
@click.option("--size", type=click.IntRange(1, 100), default=10, show_default=True, help="Related stories.")
@k_option
def related_cmd(es_url: str | None, index_name: str, doc_id: str, size: int, k: int) -> None:
    """Related articles (more_like_this, one entry per story with its count of similar reports) and the
    article's own near-duplicates, as one JSON object."""

    def body(client: Elasticsearch) -> None:
        emit(related(client, index_name, doc_id, size=size, k=k).to_dict())

    es_guarded(es_url, body)


# ---------------------------------------------------------------------------------------------- dedupe
@click.command("dedupe")
@es_options
@k_option
@click.option("--dry-run", is_flag=True, help="Find the groups but write nothing back.")
def dedupe_cmd(es_url: str | None, index_name: str, k: int, dry_run: bool) -> None:
    """Deduplicate the whole index inside Elasticsearch: composite aggregations over the block fields find
    shared buckets, pairs are verified, and cluster_id / duplicate_of are written back. JSON report."""

    def body(client: Elasticsearch) -> None:
        report = batch_dedupe(client, index_name, k=k, write=not dry_run)
        emit(report.to_dict())
        if report.failures:
            sys.exit(EXIT_PARTIAL)

    es_guarded(es_url, body)


# ------------------------------------------------------------------------------------------- reconcile
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_time(text: str, now_ms: int) -> int:
    """Epoch milliseconds of ``text``: a duration before now (``90s``, ``10m``, ``2h``, ``1d``), an ISO 8601
    time (``2026-11-23T20:00:00Z``; without a zone it is UTC), or epoch milliseconds."""
    from datetime import UTC, datetime

    t = text.strip()
    if t[:-1].isdigit() and t[-1:] in _UNITS:
        return now_ms - int(t[:-1]) * _UNITS[t[-1]] * 1000
    if t.isdigit():
        return int(t)
    try:
        when = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a duration (10m, 2h, 1d), an ISO time or epoch "
                                 "milliseconds") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


@click.command("reconcile")
@es_options
@k_option
@click.option("--since", required=True,
              help="Decide again the documents decided since then: a duration before now (10m, 2h, 1d), "
                   "an ISO time or epoch milliseconds.")
@click.option("--until", default=None, help="...and before then (default: now); same forms as --since.")
@keep_option("Give the one the writers of the index use.")
@processes_option()
@click.option("--batch-size", type=click.IntRange(1, 10_000), default=DECIDE_BATCH, show_default=True)
def reconcile_cmd(es_url: str | None, index_name: str, k: int, since: str, until: str | None, keep: str,
                  processes: int, batch_size: int) -> None:
    """Decide the recently decided documents again, one after the other in the order they were decided,
    against the index as it was before them, and rewrite their decisions: what several stateless sidecars
    (serve --state elasticsearch) decided side by side becomes what one writer would have. JSON report."""
    from fingerprint_indexer.elastic.reconcile import reconcile

    now = int(time.time() * 1000)
    since_ms = parse_time(since, now)
    until_ms = parse_time(until, now) if until else now
    if until_ms <= since_ms:
        raise click.BadParameter("--until must be later than --since", param_hint="'--until'")

    def body(client: Elasticsearch) -> None:
        report = reconcile(client, index_name, since_ms, until_ms, k=k, keep=keep,  # type: ignore[arg-type]
                           processes=processes, batch_size=batch_size)  # fmt: skip
        emit(report.to_dict())
        if report.failures:
            sys.exit(EXIT_PARTIAL)

    es_guarded(es_url, body)


@click.group("es")
def es_group() -> None:
    """Elasticsearch: set up the index, near-duplicates, related articles, batch dedupe, reconcile."""


for _cmd in (setup_cmd, similar_cmd, related_cmd, dedupe_cmd, reconcile_cmd, index_cmd, reindex_cmd):
    es_group.add_command(_cmd)


def register(cli: click.Group) -> None:
    """``index`` and ``reindex`` at top level, everything (those too) under ``es``."""
    cli.add_command(es_group)
    for cmd in (index_cmd, reindex_cmd):
        if cmd.name not in cli.commands:
            cli.add_command(cmd)


__all__ = ["es_group", "register"]
