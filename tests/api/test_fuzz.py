"""Property-based fuzzing of the whole API from its own /openapi.json (schemathesis): no 5xx, ever.

For every operation, schemathesis generates valid and invalid requests from the published
schemas; each response is checked: never a server error, a documented status, the documented
content type, and a body matching its documented schema. The app runs on a real HTTP server with
a real Redis and the embedded mini index; no workers, so submitted jobs simply stay queued.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from service.apikeys import ApiKeyStore
from service.redisconn import connect
from tests.support.redis_server import RedisServer
from tests.support.service import ApiServer

pytestmark = pytest.mark.engine

OPERATIONS = [("POST", "/v1/search"), ("POST", "/v1/jobs"), ("GET", "/v1/jobs/{job_id}"),
              ("DELETE", "/v1/jobs/{job_id}"), ("GET", "/v1/indices"), ("GET", "/v1/indices/{name}/laws"),
              ("POST", "/v1/indices/{name}/documents"), ("GET", "/health"), ("GET", "/ready")]
EXAMPLES = 40


@pytest.fixture(scope="module")
def target(api: ApiServer, redis_server: RedisServer) -> tuple[Any, str, str]:
    _, key = ApiKeyStore(connect(redis_server.url)).create(("*",), rate_per_min=1_000_000, ingest=True)
    return schemathesis.openapi.from_url(f"{api.url}/openapi.json"), api.url, key


def test_every_operation_is_fuzzed(target: tuple[Any, str, str]) -> None:
    spec, _, _ = target
    published = {(method.upper(), path) for path, ops in spec.raw_schema["paths"].items() for method in ops}
    assert published == set(OPERATIONS)


CASES = [pytest.param(method, path, mode, id=f"{method} {path} {mode.value}")
         for method, path in OPERATIONS for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
         if mode == GenerationMode.POSITIVE or path not in ("/health", "/ready")]  # nothing there to make invalid


@pytest.mark.parametrize(("method", "path", "mode"), CASES)
def test_the_api_never_answers_5xx(target: tuple[Any, str, str], method: str, path: str,
                                   mode: GenerationMode) -> None:
    spec, base_url, key = target
    operation = spec[path][method]

    # Valid-looking requests may still be refused for good reasons (an index that does not exist,
    # a job id never issued), so "valid data must be accepted" does not apply.
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def check(case: Any) -> None:
        case.call_and_validate(base_url=base_url, headers={"Authorization": f"Bearer {key}"},
                               excluded_checks=[positive_data_acceptance])

    check()
