"""The service's answer for a failed request of its own to Elasticsearch, from the one mapping of errors."""

from __future__ import annotations

import httpx
import pytest

from fingerprint_indexer.sidecar.errors import ApiError, es_answers


def _failing(status: int, body: object) -> httpx.HTTPStatusError:
    request = httpx.Request("GET", "http://es:9200/news/_search")
    response = httpx.Response(status, json=body, request=request)
    return httpx.HTTPStatusError("x", request=request, response=response)


@pytest.mark.parametrize(("cause", "answer"), [
    (httpx.ConnectError("refused"), (503, "unavailable", "Elasticsearch unavailable (ConnectError)", {})),
    (_failing(503, {}), (503, "unavailable", "Elasticsearch answered 503", {"Retry-After": "1"})),
    (_failing(401, {}), (503, "unavailable", "Elasticsearch refused the service's credentials answered 401",
                         {"Retry-After": "1"})),
    (_failing(404, {"error": {"type": "index_not_found_exception", "reason": "no such index [x]"}}),
     (404, "index_not_found_exception", "no such index [x]", {})),
    (_failing(400, {"error": "bad"}), (400, "elasticsearch_exception", "Elasticsearch answered 400", {})),
])  # fmt: skip
def test_each_failure_has_its_answer(cause: Exception, answer: tuple) -> None:
    with pytest.raises(ApiError) as info, es_answers("searching"):
        raise cause
    err = info.value
    assert (err.status, err.type, err.reason, err.headers) == answer
