"""`fingerprint` and `idf fit`: the stateless commands (`distance` is in distance_commands)."""

from __future__ import annotations

import sys

import click

from fingerprint_indexer.cli.common import (
    build_config,
    config_options,
    emit,
    fail,
    processes_option,
    run_guarded,
    skip_errors_option,
    threads_option,
)
from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter, fingerprint_many
from fingerprint_indexer.io.readers import InputError, read_documents
from fingerprint_indexer.text.clean import clean
from fingerprint_indexer.text.weights import fit_idf


def _stdin_documents(fmt: str) -> list[str] | Document:
    """'-' for JSONL on stdin, or one document holding all of stdin as text."""
    if fmt == "jsonl":
        return ["-"]
    try:
        data = sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("<stdin>", None, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    return Document(id="-", content=data)


@click.command("fingerprint")
@click.argument("inputs", nargs=-1, type=click.Path(allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(["auto", "jsonl", "text"]), default="auto",
              show_default=True,
              help="How to read stdin: JSON lines, or all of it as one text (auto: sniff the first byte).")
@skip_errors_option
@processes_option()
@threads_option
@click.option("--no-terms", is_flag=True, help="Leave top terms out of the output.")
@config_options
def fingerprint_cmd(inputs: tuple[str, ...], fmt: str, skip_errors: bool, processes: int, threads: int,
                    no_terms: bool,
                    top_k: int, idf_path: str | None, synonyms: str | None, n_blocks: int | None) -> None:
    """Fingerprint documents: JSONL files (.gz too), .txt/.html files, folders, or stdin.

    Prints one JSON line per document: fingerprint (hex), block keys, digests, top terms, degenerate.
    """
    def body() -> None:
        config = build_config(top_k, idf_path, synonyms, n_blocks)
        names = list(inputs) or ["-"]
        errors: list[InputError] = []
        docs: list[Document] | None = None
        if names == ["-"]:
            mode = fmt
            if mode == "auto":
                head = sys.stdin.buffer.peek(1)[:1] if hasattr(sys.stdin.buffer, "peek") else b""
                mode = "jsonl" if head == b"{" else "text"
            got = _stdin_documents(mode)
            if isinstance(got, Document):
                docs = [got]
        source = docs if docs is not None else read_documents(names, skip_errors=skip_errors,
                                                                on_error=_collect(errors))
        for result in fingerprint_many(source, config, processes=processes, threads=threads):
            emit(result.to_dict(with_terms=not no_terms))
        if errors:
            click.echo(f"skipped {len(errors)} bad input record(s)", err=True)
    run_guarded(body)


def _collect(errors: list[InputError]):  # type: ignore[no-untyped-def]
    def handler(err: InputError) -> None:
        errors.append(err)
        click.echo(f"warning: skipped {err}", err=True)
    return handler


@click.group("idf")
def idf_group() -> None:
    """IDF tables fitted on your own corpus."""


@idf_group.command("fit")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False, writable=True),
              help="Where to write the table (jieba's 'term idf' format).")
@click.option("--min-df", type=click.IntRange(1), default=2, show_default=True,
              help="Drop terms seen in fewer documents (typos, ids).")
@skip_errors_option
def idf_fit_cmd(inputs: tuple[str, ...], output: str, min_df: int, skip_errors: bool) -> None:
    """Fit an IDF table on CORPUS (JSONL/.txt/.html files or folders); use it with --idf."""
    def body() -> None:
        tokenizer = Fingerprinter().tokenizer
        docs = read_documents(inputs, skip_errors=skip_errors)
        table, n_docs = fit_idf((tokenizer.tokens(clean(d.content, d.html) or clean(d.title)) for d in docs),
                                min_df=min_df)
        if n_docs == 0:
            fail("no documents read")
        if not table.idf:
            fail(f"no term occurs in {min_df} or more of the {n_docs} documents; lower --min-df")
        table.save(output, n_docs)
        click.echo(f"fitted IDF on {n_docs} documents: {len(table.idf)} terms -> {output}", err=True)
    run_guarded(body)


def register(cli: click.Group) -> None:
    from fingerprint_indexer.cli.distance_commands import distance_cmd

    cli.add_command(fingerprint_cmd)
    cli.add_command(distance_cmd)
    cli.add_command(idf_group)


@click.command("policy")
def policy_cmd() -> None:
    """The verification policy: every threshold of the rule, its tag, and the fingerprint version.

    Every decision, store and index names the policy that made it by this tag (``policy`` in decisions,
    ``verify_policy`` in Elasticsearch documents and index mappings); docs/quality.md says where each
    threshold was chosen and what it does on the corpora it was not chosen on."""
    from fingerprint_indexer.verification import DEFAULT_POLICY

    emit({**DEFAULT_POLICY.to_dict(), "fingerprint_version": Fingerprinter().version})
