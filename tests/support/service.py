"""Real processes for service tests: the API on a real HTTP server, Celery workers as subprocesses.

* :func:`service_overrides` / :func:`settings_for` / :func:`env_for`: one set of settings, given
  both as a :class:`Settings` (for the in-process API) and as ``LEXSEARCH_*`` variables (for the
  worker subprocesses), pointing at the test Redis and the test index.
* :class:`ApiServer`: ``create_app(settings)`` served by werkzeug's threaded WSGI server on
  127.0.0.1 (real sockets, real HTTP) in a thread of the test process.
* :class:`WorkerProcess`: ``python -m service.cli worker`` in its own process group, so a test can
  ``kill -9`` the whole worker (:meth:`WorkerProcess.kill`) or only a pool child.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from werkzeug.serving import make_server

from service.config import Settings, load_settings

REPO = Path(__file__).resolve().parents[2]
TEST_MODULES = "tests.support.slow_pipeline"


def wait_for(predicate: Callable[[], Any], *, timeout_s: float, interval_s: float = 0.05, what: str = "") -> Any:
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what or predicate}")
        time.sleep(interval_s)


def service_overrides(*, redis_url: str, index_root: Path, index_name: str, cache_dir: Path,
                      **sections: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Settings for a test deployment; ``sections`` override or extend them (``jobs={...}``)."""
    base: dict[str, dict[str, Any]] = {
        "index": {"root": str(index_root), "name": index_name},
        "embedder": {"cache_dir": str(cache_dir), "threads": 1},
        "jobs": {"redis_url": redis_url, "webhook_secret": "test-secret", "webhook_allow_private": True,
                 "webhook_backoff_s": 0.2, "webhook_backoff_max_s": 1.0, "retry_backoff_s": 1,
                 "retry_backoff_max_s": 2, "restore_interval_s": 1},
        "api": {"pipeline_modules": (TEST_MODULES,), "workers": 1, "threads": 8},
    }
    for name, values in sections.items():
        base.setdefault(name, {}).update(values)
    return base


def settings_for(overrides: Mapping[str, Mapping[str, Any]]) -> Settings:
    """The :class:`Settings` of ``overrides`` alone (the developer's LEXSEARCH_* variables are ignored)."""
    return load_settings(environ={}, overrides=overrides)


def env_for(overrides: Mapping[str, Mapping[str, Any]], **extra: str) -> dict[str, str]:
    """The environment of a subprocess with the same settings (``LEXSEARCH_<SECTION>_<FIELD>``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEXSEARCH_")}
    for section, values in overrides.items():
        for name, value in values.items():
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, tuple | list):
                text = ",".join(map(str, value))
            else:
                text = str(value)
            env[f"LEXSEARCH_{section.upper()}_{name.upper()}"] = text
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


class ApiServer:
    """The app of ``settings`` on a real threaded HTTP server, in a background thread."""

    def __init__(self, settings: Settings) -> None:
        from service.api.app import create_app, warm_up

        self.app = create_app(settings)
        warm_up(self.app)
        self._server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ApiServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._thread.join(timeout=10)


class WorkerProcess:
    """One ``lexsearch worker`` subprocess (main process plus pool children, one process group)."""

    def __init__(self, env: dict[str, str], log_path: Path, *, concurrency: int = 2, pool: str = "prefork",
                 name: str = "w1") -> None:
        self.env = env
        self.log_path = log_path
        self.argv = [sys.executable, "-m", "service.cli", "worker", "--concurrency", str(concurrency),
                     "--pool", pool, "--hostname", f"{name}@%h", "--log-level", "INFO"]
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *, timeout_s: float = 60.0) -> WorkerProcess:
        """Start and wait for Celery's 'ready' line."""
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps it open
        offset = self.log_path.stat().st_size
        self.process = subprocess.Popen(self.argv, cwd=REPO, env=self.env, stdout=log, stderr=log,
                                        start_new_session=True)
        log.close()

        def ready() -> bool:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"worker exited with {self.process.returncode}:\n{self.log()[-3000:]}")
            with open(self.log_path, "rb") as fh:
                fh.seek(offset)
                return b" ready." in fh.read()

        wait_for(ready, timeout_s=timeout_s, interval_s=0.1, what="the worker to be ready")
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def children(self) -> list[int]:
        """Process ids of the pool children."""
        assert self.process is not None
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.process.pid)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def kill(self) -> None:
        """``kill -9`` the whole worker: main process and pool children at once."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        """Warm shutdown (finish running tasks), then kill after a grace period."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> WorkerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
