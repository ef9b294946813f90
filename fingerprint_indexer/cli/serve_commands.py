"""`serve`: run the HTTP sidecar (ingest hook, Elasticsearch proxy, similar/related) under uvicorn."""

from __future__ import annotations

import os
from pathlib import Path

import click
import platformdirs

from fingerprint_indexer.cli.common import build_config, config_options, fail
from fingerprint_indexer.service.auth import AuthConfigError, check_bind, load_api_key
from fingerprint_indexer.service.settings import ON_DUPLICATE, EsSettings, ServiceSettings
from fingerprint_indexer.service.spool import SpoolLocked
from fingerprint_indexer.store.errors import StoreError


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("fingerprint-indexer")) / "service"


@click.command("serve")
@click.option("--es", "es_url", default=lambda: os.environ.get("ES_URL"), required=True,
              help="Elasticsearch URL (default: ES_URL). Credentials: ES_API_KEY or ES_USERNAME/ES_PASSWORD; "
                   "CA bundle: ES_CA_CERTS.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but loopback needs an API key.")
@click.option("--port", type=click.IntRange(0, 65535), default=9280, show_default=True)
@click.option("--store", "data_dir", type=click.Path(file_okay=False), default=None,
              help=f"Data directory: embedded stores (one per index) and the spool "
                   f"(default: {default_data_dir()}).")
@click.option("--index", "default_index", default="news", show_default=True,
              help="Index used by /v1 requests that name none.")
@click.option("--on-duplicate", type=click.Choice(ON_DUPLICATE), default="tag", show_default=True,
              help="tag: index duplicates with duplicate_of; skip: do not index them.")
@click.option("--k", type=click.IntRange(0, 63), default=3, show_default=True,
              help="Largest Hamming distance counted as near-duplicate.")
@click.option("--processes", type=click.IntRange(1, 256), default=2, show_default=True,
              help="Fingerprinting worker processes.")
@click.option("--api-key-file", type=click.Path(exists=True, dir_okay=False),
              help="File whose first line is the API key (default: FPI_API_KEY).")
@click.option("--max-body-mb", type=click.IntRange(1, 2048), default=50, show_default=True)
@click.option("--max-batch", type=click.IntRange(1, 100_000), default=1000, show_default=True,
              help="Most documents in one /v1/ingest request.")
@click.option("--spool-limit-mb", type=click.IntRange(1, 1 << 20), default=512, show_default=True,
              help="Undelivered spool size beyond which writes are answered 429.")
@click.option("--es-timeout", type=click.FloatRange(1, 600), default=30.0, show_default=True)
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]),
              default="info", show_default=True)
@click.option("--no-access-log", is_flag=True, help="Do not log one line per request.")
@config_options
def serve_cmd(es_url: str, host: str, port: int, data_dir: str | None, default_index: str, on_duplicate: str,
              k: int, processes: int, api_key_file: str | None, max_body_mb: int, max_batch: int,
              spool_limit_mb: int, es_timeout: float, log_level: str, no_access_log: bool,
              top_k: int, idf_path: str | None, synonyms: str | None, n_blocks: int) -> None:
    """Serve the HTTP API beside Elasticsearch: /v1/fingerprint, /v1/ingest, /v1/similar, /v1/related,
    an Elasticsearch-compatible /_bulk and /{index}/_doc proxy that adds fingerprints, /healthz, /readyz
    and /metrics. Writes that Elasticsearch cannot take now are spooled on disk and replayed."""
    import uvicorn

    from fingerprint_indexer.service.app import create_app
    from fingerprint_indexer.service.state import ServiceState

    try:
        api_key = load_api_key(api_key_file)
        check_bind(host, api_key)
    except (AuthConfigError, OSError) as exc:
        fail(str(exc))
        return
    config = build_config(top_k, idf_path, synonyms, n_blocks)
    settings = ServiceSettings(
        es=EsSettings.from_env(es_url, timeout_s=es_timeout), data_dir=Path(data_dir or default_data_dir()),
        host=host, port=port, api_key=api_key, default_index=default_index,
        on_duplicate=on_duplicate,  # type: ignore[arg-type]
        k=k, processes=processes, fingerprint=config, max_body_bytes=max_body_mb << 20, max_batch=max_batch,
        spool_limit_bytes=spool_limit_mb << 20,
    )
    try:
        state = ServiceState.open(settings)
    except (StoreError, SpoolLocked, ValueError) as exc:
        fail(str(exc))
        return
    app = create_app(settings, state)
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=not no_access_log,
                timeout_graceful_shutdown=30, server_header=False)


def register(cli: click.Group) -> None:
    cli.add_command(serve_cmd)
