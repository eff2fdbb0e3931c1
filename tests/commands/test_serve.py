"""``lexsearch serve`` (gunicorn) and ``lexsearch worker`` as the real commands, end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import requests

from service.apikeys import ApiKeyStore
from service.backends.embedded import EmbeddedBackend
from service.redisconn import connect
from tests.support.redis_server import RedisServer, free_port
from tests.support.service import REPO, WorkerProcess, env_for, service_overrides, wait_for

pytestmark = pytest.mark.engine


def test_serve_and_worker_answer_a_search_and_a_job(tmp_path: Path, private_redis: RedisServer,
                                                    mini_embedded: tuple[EmbeddedBackend, str],
                                                    embedding_cache_dir: Path) -> None:
    backend, name = mini_embedded
    port = free_port()
    env = env_for(service_overrides(redis_url=private_redis.url, index_root=backend.root, index_name=name,
                                    cache_dir=embedding_cache_dir, api={"bind": f"127.0.0.1:{port}"}))
    _, key = ApiKeyStore(connect(private_redis.url)).create((name,), rate_per_min=100)
    auth = {"Authorization": f"Bearer {key}"}
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115
    server = subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--workers", "1", "--threads", "2"],
                              cwd=REPO, env=env, stdout=log, stderr=log, start_new_session=True)
    try:
        with WorkerProcess(env, tmp_path / "worker.log", concurrency=1):
            def ready() -> bool:
                assert server.poll() is None, (tmp_path / "serve.log").read_text()
                try:
                    return requests.get(f"http://127.0.0.1:{port}/ready", timeout=2).status_code == 200
                except requests.RequestException:  # not listening yet, or still warming up
                    return False

            wait_for(ready, timeout_s=60, interval_s=0.2, what="lexsearch serve")
            search = requests.post(f"http://127.0.0.1:{port}/v1/search",
                                   json={"query": "Kaution Mietende", "pipeline": "bm25"}, headers=auth, timeout=30)
            assert search.status_code == 200 and search.json()["hits"]
            job = requests.post(f"http://127.0.0.1:{port}/v1/jobs", json={"query": "Kaution", "pipeline": "bm25"},
                                headers=auth, timeout=30).json()
            done = wait_for(lambda: requests.get(job["status_url"], headers=auth, timeout=5).json()["status"]
                            == "succeeded", timeout_s=60, what="the job")
            assert done
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    lines = (tmp_path / "serve.log").read_text().splitlines()
    logged = [line for line in lines if '"msg": "request"' in line and '"/v1/search"' in line]
    assert logged and '"status": 200' in logged[0] and '"request_id": "' in logged[0]
