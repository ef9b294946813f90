"""The command table of ``fingerprint-indexer``: lazily imported commands, the same listing."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import click
from click.testing import CliRunner

from fingerprint_indexer.cli.main import COMMANDS, cli

HEAVY = ("numpy", "jieba", "rjieba", "elasticsearch", "fastapi", "plyvel", "uvicorn", "xxhash")


def test_table_matches_the_commands() -> None:
    for name, (module, attr, first) in COMMANDS.items():
        command = getattr(importlib.import_module(f"fingerprint_indexer.cli.{module}"), attr)
        assert isinstance(command, click.Command)
        assert command.name == name
        assert inspect.cleandoc(command.help or "").split("\n\n")[0] == first, name


def test_help_lists_every_command() -> None:
    out = CliRunner().invoke(cli, ["--help"]).output
    for name in COMMANDS:
        assert f"  {name} " in out


def _imported_after(argv: list[str]) -> set[str]:
    code = (
        "import sys\n"
        "from fingerprint_indexer.cli.main import cli\n"
        f"try:\n    cli({argv!r}, standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(res.stderr.split())


def test_help_imports_nothing_heavy() -> None:
    assert _imported_after(["--help"]) == set()


def test_distance_of_texts_needs_no_segmenter_or_service() -> None:
    # numpy folds the fingerprint; Latin text needs neither segmenter, nor Elasticsearch, nor the web stack
    assert _imported_after(["distance", "--text", "profits rose", "profits fell"]) <= {"numpy", "xxhash"}


def test_distance_of_hex_fingerprints_imports_no_pipeline() -> None:
    # two fingerprints are compared without NumPy, a segmenter or a table: the pipeline is never imported
    assert _imported_after(["distance", "26210e81000a6620", "2e292f8d108e67a4"]) == set()


def test_importing_the_entry_point_imports_nothing_heavy() -> None:
    code = ("import sys\nimport fingerprint_indexer.cli.main\n"
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.split() == []
