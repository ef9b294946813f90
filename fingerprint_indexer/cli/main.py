"""Entry point of the ``fingerprint-indexer`` command.

Each command's module is imported only when that command runs: the Elasticsearch client, the web
framework, LevelDB and the segmenters take most of a second to import, and ``--help`` or ``distance``
need none of them.
"""

from __future__ import annotations

import importlib
from typing import Any

import click
from click.formatting import HelpFormatter

from fingerprint_indexer import __version__
from fingerprint_indexer.errors import FingerprintIndexerError, one_line

#: command -> (module in fingerprint_indexer.cli, attribute, first paragraph of its help). The listing of
#: ``--help`` comes from here without importing anything; a test checks it against the commands.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "calibrate": ("calibrate_commands", "calibrate_cmd",
                  "Recommend thresholds for TARGET precision on labelled PAIRS of DOCS, and show what "
                  "distances mean."),
    "copies": ("copies_commands", "copies_cmd",
               "Copied passages of A in B, one JSON line per passage: a_start, a_end, b_start, b_end "
               "(character\noffsets into the texts as given, end exclusive), length (characters in A) "
               "and terms."),
    "dedupe": ("dedupe_commands", "dedupe_cmd",
               "Deduplicate documents into a persistent store: JSONL (.gz too), folders of .txt/.html, "
               "or '-'."),
    "distance": ("distance_commands", "distance_cmd",
                 "Hamming distance of two fingerprints (16 hex digits), files, or texts."),
    "es": ("es_commands", "es_group",
           "Elasticsearch: set up the index, near-duplicates, related articles, batch dedupe, reconcile."),
    "explore": ("serve_commands", "explore_cmd",
                "Explore what dedupe wrote: serve the duplicates explorer page (/ui) and the HTTP API on one "
                "store,\nread-only, with no Elasticsearch: the largest clusters, the latest near-duplicates "
                "with their\nreason, counts by decision, search by id or pasted text, two articles side by "
                "side."),
    "fingerprint": ("fingerprint_commands", "fingerprint_cmd",
                    "Fingerprint documents: JSONL files (.gz too), .txt/.html files, folders, or stdin."),
    "idf": ("fingerprint_commands", "idf_group", "IDF tables fitted on your own corpus."),
    "images": ("image_commands", "images_cmd",
               "Fingerprint pictures (JPEG, PNG, WebP, GIF): one JSON line per picture with its path, "
               "perceptual\nhash, colour grid, pixel digest and look-up keys; with --store, also its "
               "decision, duplicate_of (the\ngroup's first picture) and distance. A file that is not a "
               "readable picture gives an ``error`` line\n(and a line on stderr), the others go on, and "
               "the exit code is 1."),
    "index": ("es_commands", "index_cmd",
              "Fingerprint documents, decide new / exact / near duplicate against the index, and "
              "bulk-index them."),
    "policy": ("fingerprint_commands", "policy_cmd",
               "The verification policy: every threshold of the rule, its tag, and the fingerprint version."),
    "reindex": ("es_commands", "reindex_cmd",
                "Fingerprint an existing index in place: documents without a fingerprint of the current "
                "version."),
    "serve": ("serve_commands", "serve_cmd",
              "Serve the HTTP API beside Elasticsearch: /v1/fingerprint, /v1/ingest, /v1/similar, "
              "/v1/related,\nan Elasticsearch-compatible /_bulk and /{index}/_doc proxy that adds "
              "fingerprints, /healthz, /readyz\nand /metrics. Writes that Elasticsearch cannot take now "
              "are spooled on disk and replayed. Without\n--es (and ES_URL) it runs on the embedded store "
              "alone, and the Elasticsearch routes answer 501."),
    "similar": ("dedupe_commands", "similar_cmd",
                "List stored near-duplicates (id, distance, cluster_id, duplicate_of), nearest first."),
    "store": ("store_commands", "store_group",
              "Check or repair an embedded store directory (as given to dedupe --store)."),
}  # fmt: skip
#: group -> modules that add subcommands to it when imported (``es copies`` lives with ``copies``)
EXTENSIONS: dict[str, tuple[str, ...]] = {"es": ("copies_commands",)}


class LazyGroup(click.Group):
    """A group whose commands are imported when they are invoked (or asked for their own help)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands or cmd_name not in COMMANDS:
            return self.commands.get(cmd_name)
        module, attr, _ = COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(f"fingerprint_indexer.cli.{module}"), attr)
        for extension in EXTENSIONS.get(cmd_name, ()):
            importlib.import_module(f"fingerprint_indexer.cli.{extension}")
        return command

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; any error of the package that no command turned into its own exit code is
        one line on stderr and exit code 1, never a traceback."""
        try:
            return super().invoke(ctx)
        except FingerprintIndexerError as exc:
            click.echo(f"error: {one_line(exc)}", err=True)
            ctx.exit(1)

    def format_commands(self, ctx: click.Context, formatter: HelpFormatter) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            if name in COMMANDS:
                # the listing of the command, from its help paragraph here: nothing is imported
                rows.append((name, click.Command(name, help=COMMANDS[name][2]).get_short_help_str(limit)))
            else:
                rows.append((name, self.commands[name].get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fingerprint-indexer")
def cli() -> None:
    """Near-duplicate detection for news: fingerprints, embedded dedupe, Elasticsearch index."""


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
