"""`serve` refuses invalid settings with one clear line before it starts anything, and documents them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SERVE = [sys.executable, "-m", "fingerprint_indexer.cli.main", "serve"]
ENV_SETTINGS = ("ES_URL", "ES_API_KEY", "ES_USERNAME", "ES_PASSWORD", "ES_CA_CERTS", "ES_VERIFY_CERTS",
                "FPI_API_KEY")


def run_serve(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``serve`` in a subprocess (a timeout, not a hang, if it were to start serving)."""
    clean = {k: v for k, v in os.environ.items() if k not in ENV_SETTINGS}
    return subprocess.run([*SERVE, "--store", str(tmp_path / "data"), "--port", "0", *args],
                          capture_output=True, text=True, timeout=60, env={**clean, **env},
                          stdin=subprocess.DEVNULL)  # fmt: skip


@pytest.mark.parametrize(("args", "env", "names"), [
    (["--es", "http://127.0.0.1:9200"], {"ES_VERIFY_CERTS": "maybe"}, ["ES_VERIFY_CERTS", "'maybe'"]),
    (["--es", "http://127.0.0.1:9200"], {"ES_VERIFY_CERTS": "2"}, ["ES_VERIFY_CERTS"]),
    ([], {"ES_URL": "localhost:9200"}, ["ES_URL", "http://"]),
    ([], {"ES_URL": "http://127.0.0.1:9200,http://127.0.0.1:9201"}, ["ES_URL", "one URL", "`es` commands"]),
    (["--es", "https://es.example:port"], {}, ["--es"]),
    (["--es", "https://127.0.0.1:9200"], {"ES_PASSWORD": "secret-password"}, ["ES_USERNAME"]),
    (["--es", "http://127.0.0.1:9200", "--keep", "biggest"], {}, ["--keep", "'biggest'", "longest"]),
])
def test_invalid_setting_is_one_clean_line(
    tmp_path: Path, args: list[str], env: dict[str, str], names: list[str]
) -> None:
    res = run_serve(tmp_path, *args, **env)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and not res.stdout
    errors = [line for line in res.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, res.stderr
    for name in names:
        assert name in errors[0]
    assert "secret-password" not in res.stderr
    assert not (tmp_path / "data").exists()  # refused before any store or spool was made


def test_help_names_the_tls_and_credential_variables(tmp_path: Path) -> None:
    res = subprocess.run([*SERVE, "--help"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0
    for name in ("ES_URL", "ES_API_KEY", "ES_USERNAME", "ES_PASSWORD", "ES_CA_CERTS", "ES_VERIFY_CERTS",
                 "--keep [first|longest|newest]"):
        assert name in res.stdout, name
