"""The one reader of the Elasticsearch connection settings: the same validation for every command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fingerprint_indexer.env import EsSettingsError, es_settings

ES_VARS = ("ES_URL", "ES_API_KEY", "ES_USERNAME", "ES_PASSWORD", "ES_CA_CERTS", "ES_VERIFY_CERTS")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ES_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_settings_come_from_the_url_and_the_environment(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("ES_URL", "https://es.example:9200/")
    clean_env.setenv("ES_USERNAME", "ingest")
    clean_env.setenv("ES_PASSWORD", "secret-password")
    clean_env.setenv("ES_VERIFY_CERTS", "no")
    s = es_settings()
    assert (s.url, s.username, s.password, s.verify_certs, s.api_key) == (
        "https://es.example:9200", "ingest", "secret-password", False, None)
    assert es_settings("http://127.0.0.1:9201").url == "http://127.0.0.1:9201"  # --es wins over ES_URL
    assert "secret-password" not in repr(s)


@pytest.mark.parametrize(("url", "env", "setting", "words"), [
    (None, {}, "--es / ES_URL", "no Elasticsearch URL"),
    ("localhost:9200", {}, "--es / ES_URL", "http://"),
    ("https://es.example:port", {}, "--es / ES_URL", "http://"),
    ("https://es.example:9200", {"ES_PASSWORD": "secret-password"}, "ES_USERNAME", "ES_USERNAME is not"),
    ("https://es.example:9200", {"ES_VERIFY_CERTS": "maybe"}, "ES_VERIFY_CERTS", "'maybe'"),
])
def test_an_unusable_setting_is_named_in_one_line(
    clean_env: pytest.MonkeyPatch, url: str | None, env: dict[str, str], setting: str, words: str
) -> None:
    for name, value in env.items():
        clean_env.setenv(name, value)
    with pytest.raises(EsSettingsError) as err:
        es_settings(url)
    assert err.value.setting == setting and words in str(err.value)
    assert "\n" not in str(err.value) and "secret-password" not in str(err.value)


@pytest.mark.parametrize("argv", [["es", "similar", "--text", "x"], ["index", "-"], ["es", "dedupe"]])
def test_es_commands_refuse_an_invalid_setting_as_serve_does(
    clean_env: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """Before anything is sent: one line, exit code 2, as ``serve`` answers it."""
    clean_env.setenv("ES_URL", "https://127.0.0.1:9")
    clean_env.setenv("ES_PASSWORD", "secret-password")
    res = subprocess.run([sys.executable, "-m", "fingerprint_indexer.cli.main", *argv], capture_output=True,
                         text=True, timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip() == "error: ES_PASSWORD is set but ES_USERNAME is not"
