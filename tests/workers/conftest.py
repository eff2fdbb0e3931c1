"""Fixtures of the worker tests: a deployment of real processes (Redis, API over HTTP, Celery workers)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from service.apikeys import ApiKeyStore
from service.backends.embedded import EmbeddedBackend
from service.config import JobsSettings
from service.jobs import JobStore
from service.redisconn import connect
from tests.support.redis_server import RedisServer
from tests.support.service import ApiServer, WorkerProcess, env_for, service_overrides, settings_for, wait_for

FINAL = {"succeeded", "failed", "cancelled", "expired"}


@dataclass
class Deployment:
    """Redis, the API and its workers, plus a key with scope ``*`` and ingest rights."""

    redis: RedisServer
    api: ApiServer
    overrides: dict[str, dict[str, Any]]
    env: dict[str, str]
    logs: Path
    key: str
    workers: list[WorkerProcess] = field(default_factory=list)

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    @property
    def store(self) -> JobStore:
        return JobStore(connect(self.redis.url), JobsSettings(**self.overrides["jobs"]))

    def worker(self, name: str, *, concurrency: int = 2) -> WorkerProcess:
        """Start one more worker (stopped at teardown)."""
        worker = WorkerProcess(self.env, self.logs / f"{name}.log", concurrency=concurrency, name=name).start()
        self.workers.append(worker)
        return worker

    def submit(self, body: dict[str, Any]) -> str:
        response = requests.post(self.api.url + "/v1/jobs", json=body, headers=self.auth, timeout=30)
        assert response.status_code == 202, response.text
        return response.json()["job_id"]

    def job(self, job_id: str) -> dict[str, Any]:
        response = requests.get(f"{self.api.url}/v1/jobs/{job_id}", headers=self.auth, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def wait(self, job_id: str, *, timeout_s: float = 60, until: Callable[[dict[str, Any]], bool] | None = None
             ) -> dict[str, Any]:
        """Poll the job until it is final (or ``until`` holds)."""
        until = until or (lambda job: job["status"] in FINAL)
        holder: dict[str, Any] = {}

        def done() -> bool:
            holder["job"] = self.job(job_id)
            return until(holder["job"])

        wait_for(done, timeout_s=timeout_s, interval_s=0.1, what=f"job {job_id}")
        return holder["job"]


@pytest.fixture(scope="module")
def deploy(tmp_path_factory: pytest.TempPathFactory, mini_embedded: tuple[EmbeddedBackend, str],
           embedding_cache_dir: Path) -> Iterator[Callable[..., Deployment]]:
    """A factory: ``deploy(jobs={...}, env={...})`` starts a private Redis and the in-process API.

    Workers are started by the test module (``deployment.worker(name)``); everything stops at the
    end of the module.
    """
    started: list[Deployment] = []

    def make(*, env: dict[str, str] | None = None, **sections: dict[str, Any]) -> Deployment:
        logs = tmp_path_factory.mktemp("deploy")
        redis_server = RedisServer(logs / "redis").start()
        backend, name = mini_embedded
        overrides = service_overrides(redis_url=redis_server.url, index_root=backend.root, index_name=name,
                                      cache_dir=embedding_cache_dir, **sections)
        api = ApiServer(settings_for(overrides)).__enter__()
        _, key = ApiKeyStore(connect(redis_server.url)).create(("*",), rate_per_min=100_000, ingest=True)
        deployment = Deployment(redis_server, api, overrides, env_for(overrides, **(env or {})), logs, key)
        started.append(deployment)
        return deployment

    yield make
    for deployment in started:
        for worker in deployment.workers:
            worker.kill()
        deployment.api.__exit__(None, None, None)
        deployment.redis.stop()

