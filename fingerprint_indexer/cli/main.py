"""Entry point of the ``fingerprint-indexer`` command."""

from __future__ import annotations

import click

from fingerprint_indexer import __version__
from fingerprint_indexer.cli import (
    calibrate_commands,
    copies_commands,
    dedupe_commands,
    es_commands,
    fingerprint_commands,
    serve_commands,
    store_commands,
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fingerprint-indexer")
def cli() -> None:
    """Near-duplicate detection for news: fingerprints, embedded dedupe, Elasticsearch index."""


fingerprint_commands.register(cli)
dedupe_commands.register(cli)
es_commands.register(cli)
serve_commands.register(cli)
calibrate_commands.register(cli)
copies_commands.register(cli)
store_commands.register(cli)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
