"""`serve`: run the HTTP sidecar (ingest hook, Elasticsearch proxy, similar/related) under uvicorn."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click
import platformdirs

from fingerprint_indexer.cli.common import (
    build_config,
    config_options,
    fail,
    k_option,
    keep_option,
    on_duplicate_option,
    processes_option,
    threads_option,
)
from fingerprint_indexer.env import URL_HINT, EsSettings, EsSettingsError, env_flag
from fingerprint_indexer.env import es_settings as read_es_settings
from fingerprint_indexer.env import es_url as read_es_url
from fingerprint_indexer.fingerprint.winnow import WinnowParams
from fingerprint_indexer.sidecar.auth import AuthConfigError, check_bind, load_api_key
from fingerprint_indexer.sidecar.settings import STATES, ServiceSettings
from fingerprint_indexer.sidecar.spool import SpoolLocked
from fingerprint_indexer.store.errors import StoreError


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("fingerprint-indexer")) / "service"


def es_settings(es_url: str, timeout_s: float) -> EsSettings:
    """The Elasticsearch settings from ``--es`` and the ``ES_*`` environment (the reader every command
    uses); an invalid one is a usage error (one line, exit code 2) rather than a traceback."""
    if "," in es_url:
        raise click.BadParameter("serve takes one URL (a node, or a load balancer in front of the cluster; "
                                 "its spool holds writes while that URL is down); a comma-separated list "
                                 "of nodes is for the `es` commands", param_hint="'--es' / ES_URL")
    try:
        return read_es_settings(es_url, timeout_s=timeout_s)
    except EsSettingsError as exc:
        if exc.setting == "--es / ES_URL":
            raise click.BadParameter(URL_HINT, param_hint="'--es' / ES_URL") from None
        raise click.UsageError(str(exc)) from None


def is_store(path: Path) -> bool:
    """Whether ``path`` is one embedded store (as ``dedupe --store`` writes it) rather than a data folder."""
    return (path / "leveldb").is_dir()


@click.command("serve")
@click.option("--es", "es_url", default=read_es_url,
              help="Elasticsearch URL, http:// or https:// (default: ES_URL). Credentials and TLS come from "
                   "the environment only (listed above). Without one the service runs on its embedded "
                   "store alone, and its Elasticsearch routes answer 501.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but loopback needs an API key.")
@click.option("--port", type=click.IntRange(0, 65535), default=9280, show_default=True)
@click.option("--store", "data_dir", type=click.Path(file_okay=False), default=None,
              help=f"Data directory: embedded stores (one per index) and the spool "
                   f"(default: {default_data_dir()}); or one store as 'dedupe --store' writes it, which "
                   f"is then the default index's (without --es).")
@click.option("--index", "default_index", default="news", show_default=True,
              help="Index used by /v1 requests that name none.")
@on_duplicate_option
@keep_option()
@click.option("--state", type=click.Choice(STATES), default="embedded", show_default=True,
              help="Where decisions are made: this service's embedded stores, or the Elasticsearch "
                   "cluster itself, so that several services in front of one cluster answer as one "
                   "(run `es reconcile` after near copies raced between them).")
@k_option
@processes_option(default=2)
@threads_option
@click.option("--api-key-file", type=click.Path(exists=True, dir_okay=False),
              help="File whose first line is the API key (default: FPI_API_KEY).")
@click.option("--max-body-mb", type=click.IntRange(1, 2048), default=50, show_default=True)
@click.option("--max-batch", type=click.IntRange(1, 100_000), default=1000, show_default=True,
              help="Most documents in one /v1/ingest request.")
@click.option("--spool-limit-mb", type=click.IntRange(1, 1 << 20), default=512, show_default=True,
              help="Undelivered spool size beyond which writes are answered 429.")
@click.option("--es-timeout", type=click.FloatRange(1, 600), default=30.0, show_default=True,
              help="Seconds to wait for Elasticsearch, writes included (a slower write is spooled).")
@click.option("--replay-tries", type=click.IntRange(1, 10_000), default=10, show_default=True,
              help="Replays of a spooled write Elasticsearch keeps refusing (429/5xx for that document) "
                   "before it is parked in rejected.ndjson and the writes behind it go on.")
@click.option("--header-timeout", type=click.FloatRange(0.1, 3600), default=10.0, show_default=True,
              help="Seconds a connection gets to send a request's headers; slower ones are closed.")
@click.option("--body-timeout", type=click.FloatRange(0.1, 3600), default=30.0, show_default=True,
              help="Seconds a request body may pause; it gets ten times as long in all.")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]),
              default="info", show_default=True)
@click.option("--no-access-log", is_flag=True, help="Do not log one line per request.")
@click.option("--copy-marks/--no-copy-marks", default=lambda: env_flag("FPI_COPY_MARKS", False),
              show_default="$FPI_COPY_MARKS or off",
              help="Add passage-level copy marks to every document written (partial-copy search, "
                   "/v1/copies/search); recorded in indexes and stores this service creates, which must "
                   "agree with it.")
@config_options
def serve_cmd(es_url: str | None, host: str, port: int, data_dir: str | None, default_index: str,
              on_duplicate: str, keep: str, state: str, k: int, processes: int, threads: int,
              api_key_file: str | None, max_body_mb: int, max_batch: int,
              spool_limit_mb: int, es_timeout: float, replay_tries: int, header_timeout: float,
              body_timeout: float, log_level: str, no_access_log: bool, copy_marks: bool,
              top_k: int, idf_path: str | None, synonyms: str | None, n_blocks: int | None) -> None:
    """Serve the HTTP API beside Elasticsearch: /v1/fingerprint, /v1/ingest, /v1/similar, /v1/related,
    an Elasticsearch-compatible /_bulk and /{index}/_doc proxy that adds fingerprints, /healthz, /readyz
    and /metrics. Writes that Elasticsearch cannot take now are spooled on disk and replayed. Without
    --es (and ES_URL) it runs on the embedded store alone, and the Elasticsearch routes answer 501.

    \b
    Environment (Elasticsearch credentials and TLS, never on the command line):
      ES_URL           default for --es
      ES_API_KEY       API key for Elasticsearch (used first), or
      ES_USERNAME      with ES_PASSWORD: basic authentication
      ES_CA_CERTS      PEM bundle of the CAs to trust for https:// (only these)
      ES_VERIFY_CERTS  true (default) or false; false: certificates unchecked,
                       for throw-away clusters only
      FPI_API_KEY      key callers of this service present (or --api-key-file)
      FPI_COPY_MARKS   default for --copy-marks (1/0)
    """
    es = es_settings(es_url, es_timeout) if es_url else None
    if es is None and state == "elasticsearch":
        raise click.UsageError("--state elasticsearch decides against the cluster: give --es URL (or ES_URL)")
    data = Path(data_dir or default_data_dir())
    store_path = data.resolve() if is_store(data) else None
    if store_path is not None and es is not None:
        raise click.UsageError(f"{data} is one embedded store; with --es, --store takes a data folder (a "
                               "store per index and the spool); serve the store without --es")
    api_key = _api_key(api_key_file, host)
    config = build_config(top_k, idf_path, synonyms, n_blocks)
    if copy_marks:
        config = replace(config, winnow=WinnowParams())
    settings = ServiceSettings(
        es=es, data_dir=data, store_path=store_path,
        host=host, port=port, api_key=api_key, default_index=default_index,
        on_duplicate=on_duplicate, keep=keep, state=state,  # type: ignore[arg-type]
        k=k, processes=processes, threads=threads, fingerprint=config, max_body_bytes=max_body_mb << 20,
        max_batch=max_batch,
        spool_limit_bytes=spool_limit_mb << 20, replay_max_tries=replay_tries,
        header_timeout_s=header_timeout, body_idle_timeout_s=body_timeout, body_timeout_s=10 * body_timeout,
    )
    run_service(settings, log_level, no_access_log)


def _api_key(api_key_file: str | None, host: str) -> str | None:
    try:
        api_key = load_api_key(api_key_file)
        check_bind(host, api_key)
    except (AuthConfigError, OSError) as exc:
        fail(str(exc))
    return api_key


def run_service(settings: ServiceSettings, log_level: str, no_access_log: bool, banner: str = "") -> None:
    """Open the service's stores (a locked or damaged one is one line and exit code 1, before a port is
    bound) and serve it under uvicorn."""
    import uvicorn

    from fingerprint_indexer.es.errors import EsUnavailable
    from fingerprint_indexer.sidecar.app import create_app
    from fingerprint_indexer.sidecar.protocol import GuardedH11Protocol
    from fingerprint_indexer.sidecar.state import ServiceState

    try:
        service = ServiceState.open(settings)
    except (StoreError, SpoolLocked, EsUnavailable, ValueError) as exc:
        fail(str(exc))
        return
    app = create_app(settings, service)
    if banner:
        click.echo(banner, err=True)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=log_level,
                access_log=not no_access_log, timeout_graceful_shutdown=30, server_header=False,
                http=GuardedH11Protocol.with_timeout(settings.header_timeout_s))


@click.command("explore")
@click.argument("store", type=click.Path(file_okay=False))
@click.option("--docs", "docs", multiple=True, type=click.Path(exists=True),
              help="Input files holding the stored documents' texts (default: the inputs 'dedupe' "
                   "recorded in the store); repeat for several.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but loopback needs an API key.")
@click.option("--port", type=click.IntRange(0, 65535), default=9280, show_default=True)
@click.option("--index", "default_index", default="news", show_default=True,
              help="The name the store answers to in /v1 requests.")
@click.option("--write", is_flag=True,
              help="Also decide and add documents sent to /v1/ingest (takes the store's lock; default: "
                   "read-only, beside a running dedupe).")
@k_option
@processes_option(default=1)
@threads_option
@click.option("--api-key-file", type=click.Path(exists=True, dir_okay=False),
              help="File whose first line is the API key (default: FPI_API_KEY).")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]),
              default="warning", show_default=True)
@config_options
def explore_cmd(store: str, docs: tuple[str, ...], host: str, port: int, default_index: str, write: bool,
                k: int, processes: int, threads: int, api_key_file: str | None, log_level: str, top_k: int,
                idf_path: str | None, synonyms: str | None, n_blocks: int | None) -> None:
    """Explore what dedupe wrote: serve the duplicates explorer page (/ui) and the HTTP API on one store,
    read-only, with no Elasticsearch: the largest clusters, the latest near-duplicates with their
    reason, counts by decision, search by id or pasted text, two articles side by side."""
    path = Path(store)
    if not is_store(path):
        fail(f"no store at {path} (create one with 'fingerprint-indexer dedupe INPUT --store {path}')")
    api_key = _api_key(api_key_file, host)
    config = build_config(top_k, idf_path, synonyms, n_blocks)
    settings = ServiceSettings(
        es=None, data_dir=path.resolve(), store_path=path.resolve(), readonly=not write,
        sources=tuple(str(Path(d).resolve()) for d in docs) if docs else None,
        host=host, port=port, api_key=api_key, default_index=default_index, k=k, processes=processes,
        threads=threads, fingerprint=config,
    )
    run_service(settings, log_level, no_access_log=True,
                banner=f"exploring {path}{'' if write else ' (read-only)'}: open http://{host}:{port}/ui/")


def register(cli: click.Group) -> None:
    cli.add_command(serve_cmd)
    cli.add_command(explore_cmd)
