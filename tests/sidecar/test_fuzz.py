"""A bounded schemathesis run against the service's own OpenAPI document: no input may cause a 5xx.

Only the ``/v1`` API and the probes are fuzzed; the proxy routes relay to Elasticsearch, where random
index names would litter the shared cluster (they are covered by test_proxy.py).
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from support.service import ServiceProcess

pytestmark = [pytest.mark.elasticsearch, pytest.mark.timeout(600)]
EXAMPLES_PER_OPERATION = 40


def test_no_server_errors(service: ServiceProcess) -> None:
    schema = schemathesis.openapi.from_url(f"{service.url}/openapi.json")
    operations = [r.ok() for r in schema.include(path_regex=r"^/(v1/|healthz|readyz)").get_all_operations()]
    assert len(operations) == 13, [op.label for op in operations]  # with /v1/overview and /v1/clusters
    tried: dict[str, int] = {}

    def check(case: schemathesis.Case) -> None:
        label = case.operation.label
        tried[label] = tried.get(label, 0) + 1
        response = case.call(headers=service.headers(), timeout=60)
        case.validate_response(response, checks=[not_a_server_error])
        if response.status_code >= 400:  # every error is JSON that says what is wrong
            body = response.json()
            assert body["error"]["type"] and body["error"]["reason"], (label, body)

    for op in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):  # valid and invalid input
            strategy = op.as_strategy(generation_mode=mode)
            run = settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
                           suppress_health_check=list(HealthCheck))(given(case=strategy)(check))
            try:
                run()
            except Unsatisfiable:  # nothing to make invalid (an operation without inputs)
                assert mode is GenerationMode.NEGATIVE and not op.body and not op.path_parameters, op.label
    assert len(tried) == len(operations) and sum(tried.values()) >= 150, tried
