"""Dependencies going down: the engine (unreachable, or an unreadable index) and Redis.

In every case ``/health`` stays 200, ``/ready`` turns false, and requests get a 503 JSON error
saying what is down, within a bounded time; nothing hangs and nothing answers 500.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from service.apikeys import ApiKeyStore
from service.redisconn import connect
from tests.support.redis_server import RedisServer, free_port
from tests.support.service import ApiServer, service_overrides, settings_for

pytestmark = pytest.mark.engine

QUERY = "Der Vermieter gibt die Kaution nicht zurück"
BOUND_S = 8.0
"""An answer within this many seconds counts as bounded (engine timeouts are 10 s; these must be faster)."""


def timed(call: Any) -> tuple[requests.Response, float]:
    start = time.monotonic()
    response = call()
    return response, time.monotonic() - start


def _settings(redis_url: str, root: Path, name: str, cache: Path, **sections: Any) -> Any:
    return settings_for(service_overrides(redis_url=redis_url, index_root=root, index_name=name, cache_dir=cache,
                                          **sections))


def test_an_unreadable_index_makes_ready_false_and_search_503(
        tmp_path: Path, redis_url: str, service_index: tuple[Path, str], embedding_cache_dir: Path) -> None:
    root, name = service_index
    shutil.copytree(root / name, tmp_path / name)
    settings = _settings(redis_url, tmp_path, name, embedding_cache_dir)
    _, key = ApiKeyStore(connect(redis_url)).create((name,), rate_per_min=1000)
    auth = {"Authorization": f"Bearer {key}"}
    with ApiServer(settings) as api:
        assert requests.get(api.url + "/ready", timeout=10).status_code == 200
        (tmp_path / name / "manifest.json").write_text("{ not json", encoding="utf-8")
        ready, took = timed(lambda: requests.get(api.url + "/ready", timeout=30))
        assert ready.status_code == 503 and took < BOUND_S
        body = ready.json()
        assert not body["ready"] and not body["checks"]["engine"]["ok"] and body["checks"]["redis"]["ok"]
        assert "index_corrupt" in body["checks"]["engine"]["message"]
        search, took = timed(lambda: requests.post(api.url + "/v1/search", json={"query": QUERY}, headers=auth,
                                                   timeout=30))
        assert search.status_code == 503 and took < BOUND_S
        assert search.json()["error"]["code"] == "index_unavailable"
        assert "unreadable" in search.json()["error"]["message"] and search.headers["Retry-After"]
        assert requests.get(api.url + "/health", timeout=10).status_code == 200


def test_an_unreachable_engine_makes_ready_false_and_search_503(
        tmp_path: Path, redis_url: str, embedding_cache_dir: Path) -> None:
    pytest.importorskip("service.backends.opensearch")
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens here
    settings = _settings(redis_url, tmp_path, "mini", embedding_cache_dir,
                         backend={"kind": "opensearch", "url": url, "timeout_s": 2.0})
    _, key = ApiKeyStore(connect(redis_url)).create(("mini",), rate_per_min=1000)
    with ApiServer(settings) as api:
        ready, took = timed(lambda: requests.get(api.url + "/ready", timeout=30))
        assert ready.status_code == 503 and took < BOUND_S
        assert not ready.json()["checks"]["engine"]["ok"]
        search, took = timed(lambda: requests.post(api.url + "/v1/search", json={"query": QUERY, "pipeline": "bm25"},
                                                   headers={"Authorization": f"Bearer {key}"}, timeout=30))
        assert search.status_code == 503 and took < BOUND_S, search.text
        error = search.json()["error"]
        assert error["code"].startswith("engine_") and url.split("//")[1] in error["message"]


def test_redis_down_is_503_and_recovers_without_a_restart(
        private_redis: RedisServer, service_index: tuple[Path, str], embedding_cache_dir: Path) -> None:
    root, name = service_index
    settings = _settings(private_redis.url, root, name, embedding_cache_dir)
    _, key = ApiKeyStore(connect(private_redis.url)).create((name,), rate_per_min=1000)
    auth = {"Authorization": f"Bearer {key}"}
    with ApiServer(settings) as api:
        assert requests.post(api.url + "/v1/search", json={"query": QUERY}, headers=auth, timeout=30).ok
        private_redis.stop()
        ready, took = timed(lambda: requests.get(api.url + "/ready", timeout=30))
        assert ready.status_code == 503 and not ready.json()["checks"]["redis"]["ok"] and took < BOUND_S
        assert ready.json()["checks"]["engine"]["ok"]
        search, took = timed(lambda: requests.post(api.url + "/v1/search", json={"query": QUERY}, headers=auth,
                                                   timeout=30))
        assert search.status_code == 503 and search.json()["error"]["code"] == "store_unavailable"
        assert took < BOUND_S
        assert requests.get(api.url + "/health", timeout=10).status_code == 200
        private_redis.start()  # same port, same append-only file: the key is still there
        assert requests.get(api.url + "/ready", timeout=10).status_code == 200
        assert requests.post(api.url + "/v1/search", json={"query": QUERY}, headers=auth, timeout=30).ok
