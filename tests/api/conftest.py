"""Fixtures of the API tests: the mini index, a real Redis, and the app on a real HTTP server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.apikeys import ApiKeyStore
from service.backends.embedded import EmbeddedBackend
from service.redisconn import connect
from tests.support.redis_server import RedisServer
from tests.support.service import ApiServer, service_overrides, settings_for


@pytest.fixture(scope="session")
def service_index(mini_embedded: tuple[EmbeddedBackend, str]) -> tuple[Path, str]:
    """Root folder and name of the embedded mini index (built once per session)."""
    backend, name = mini_embedded
    return backend.root, name


@pytest.fixture(scope="module")
def api_overrides(redis_server: RedisServer, service_index: tuple[Path, str],
                  embedding_cache_dir: Path) -> dict[str, dict[str, Any]]:
    root, name = service_index
    return service_overrides(redis_url=redis_server.url, index_root=root, index_name=name,
                             cache_dir=embedding_cache_dir, api={"sync_budget_s": 1.5})


@pytest.fixture(scope="module")
def api(api_overrides: dict[str, dict[str, Any]]) -> Iterator[ApiServer]:
    """The API of the module, served over real HTTP; no workers (jobs stay queued)."""
    with ApiServer(settings_for(api_overrides)) as server:
        yield server


@pytest.fixture
def keys(redis_server: RedisServer) -> ApiKeyStore:
    return ApiKeyStore(connect(redis_server.url))


@pytest.fixture
def mini_key(keys: ApiKeyStore) -> str:
    """A key for the mini index, generous rate."""
    return keys.create(("mini",), rate_per_min=10_000)[1]
