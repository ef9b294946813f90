"""The adapter's one error category: client errors mapped at one boundary (es/errors.py)."""

from __future__ import annotations

import importlib
import pkgutil

import httpx
import pytest
from elastic_transport import ApiResponseMeta, ConnectionError, ConnectionTimeout, HttpHeaders, NodeConfig
from elasticsearch import ApiError

import fingerprint_indexer
from fingerprint_indexer.errors import FingerprintIndexerError
from fingerprint_indexer.es.errors import (
    SERVICE_RETRY_STATUSES,
    ElasticsearchWriteError,
    EsError,
    EsRequestError,
    EsUnavailable,
    as_es_error,
    es_errors,
)
from fingerprint_indexer.es.servers import UnsupportedServer


def api_error(status: int) -> ApiError:
    meta = ApiResponseMeta(status=status, http_version="1.1", headers=HttpHeaders(), duration=0.0,
                           node=NodeConfig("http", "localhost", 9200))  # fmt: skip
    return ApiError(f"status {status}", meta=meta, body={"error": {"type": "x", "reason": "why"}})


@pytest.mark.parametrize("exc", [ConnectionError("refused"), ConnectionTimeout("slow"), api_error(429),
                                 api_error(500), api_error(503)])  # fmt: skip
def test_no_answer_or_overload_is_unavailable(exc: Exception) -> None:
    err = as_es_error(exc, "searching index 'news'")
    assert type(err) is EsUnavailable
    assert str(err) == f"searching index 'news': {exc}"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409])
def test_a_refusal_is_a_request_error(status: int) -> None:
    exc = api_error(status)
    err = as_es_error(exc, "creating 'news'")
    assert type(err) is EsRequestError
    assert str(err) == f"creating 'news': {exc}"


def test_a_caller_may_count_a_refusal_as_unavailable() -> None:
    refused = as_es_error(api_error(400), "x", refused=EsUnavailable)
    assert type(refused) is EsUnavailable
    cause = ConnectionError("refused")
    err = as_es_error(cause, "cannot reach Elasticsearch at http://es:9200")
    assert type(err) is EsUnavailable
    assert str(err) == f"cannot reach Elasticsearch at http://es:9200: {cause}"


def test_the_block_form_raises_from_the_client_error() -> None:
    cause = api_error(404)
    with pytest.raises(EsRequestError, match=r"^reading: ") as info, es_errors("reading"):
        raise cause
    assert info.value.__cause__ is cause


def test_one_tree() -> None:
    for cls in (EsUnavailable, EsRequestError, ElasticsearchWriteError, UnsupportedServer):
        assert issubclass(cls, EsError) and issubclass(cls, FingerprintIndexerError)
    # what callers caught before still catches them
    assert issubclass(UnsupportedServer, RuntimeError) and issubclass(ElasticsearchWriteError, RuntimeError)


def test_unavailable_is_one_class() -> None:
    """The jobs, the service's write path and its decisions all raise the adapter's own class."""
    for info in pkgutil.walk_packages(fingerprint_indexer.__path__, "fingerprint_indexer."):
        importlib.import_module(info.name)
    assert EsUnavailable.__subclasses__() == []


def _status_error(status: int, body: object) -> httpx.HTTPStatusError:
    request = httpx.Request("GET", "http://es:9200/news/_doc/a")
    response = httpx.Response(status, json=body, request=request)
    return httpx.HTTPStatusError(f"status {status}", request=request, response=response)


@pytest.mark.parametrize("exc", [httpx.ConnectError("refused"), httpx.ReadTimeout("slow")])
def test_the_service_clients_failures_map_as_the_official_clients_do(exc: Exception) -> None:
    err = as_es_error(exc, "reading 'a'")
    assert type(err) is EsUnavailable and err.status is None and err.client_error == type(exc).__name__
    assert str(err) == f"reading 'a': {exc}"


def test_an_answer_keeps_its_status_and_error_document() -> None:
    doc = {"type": "index_not_found_exception", "reason": "no such index [news]"}
    refused = as_es_error(_status_error(404, {"error": doc, "status": 404}), "x")
    assert type(refused) is EsRequestError and refused.status == 404 and refused.error == doc
    assert as_es_error(api_error(404), "x").error == {"type": "x", "reason": "why"}
    assert type(as_es_error(_status_error(503, {}), "x")) is EsUnavailable
    # the service waits out its own refused credentials; a job reports them
    assert type(as_es_error(_status_error(401, {}), "x", retry=SERVICE_RETRY_STATUSES)) is EsUnavailable
    assert type(as_es_error(_status_error(401, {}), "x")) is EsRequestError


def test_the_block_form_maps_both_clients() -> None:
    for cause in (api_error(400), _status_error(400, {"error": "bad"}), httpx.ConnectError("refused")):
        with pytest.raises(EsError) as info, es_errors("x"):
            raise cause
        assert info.value.__cause__ is cause
