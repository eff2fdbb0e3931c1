"""A private, real ``redis-server`` (Debian's package) on 127.0.0.1, for tests.

Each server gets a free port and its own temporary folder, with ``appendonly yes`` so queued
jobs and job records survive :meth:`RedisServer.restart`, exactly as in production. Nothing is
mocked: the Celery workers, the API and the job store talk to this server over TCP.

Fixtures:

- ``redis_server``: one server for the whole session (started on first use);
- ``redis_url``: that server, emptied (``FLUSHALL``) before the test; its URL;
- ``private_redis``: a server of the test's own, for tests that stop or restart it.

Example::

    def test_roundtrip(redis_url):
        client = redis.Redis.from_url(redis_url)
        client.set("a", "1")
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One ``redis-server`` process; :meth:`restart` keeps its port and its data."""

    def __init__(self, workdir: Path, *, port: int | None = None) -> None:
        self.workdir = workdir
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, decode_responses=True, socket_timeout=5)

    def start(self, timeout_s: float = 10.0) -> RedisServer:
        """Start the server and wait until it answers PING (and has loaded its append-only file)."""
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not installed: apt-get install -y redis-server")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir),
             "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--daemonize", "no",
             "--logfile", str(self.workdir / "redis.log"), "--maxmemory-policy", "noeviction"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = (self.workdir / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server exited with {self.process.returncode}:\n{log}")
            try:
                if self.client().ping():
                    return self
            except (redis.ConnectionError, redis.BusyLoadingError, redis.TimeoutError):
                time.sleep(0.05)
        raise RuntimeError(f"redis-server on port {self.port} did not answer within {timeout_s} s")

    def stop(self) -> None:
        """Shut down cleanly (the append-only file is flushed)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self) -> None:
        """Stop and start again on the same port with the same data."""
        self.stop()
        self.start()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One real Redis for the session."""
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session Redis, emptied before the test."""
    redis_server.client().flushall()
    return redis_server.url


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of the test's own, which the test may stop, kill or restart."""
    with RedisServer(tmp_path / "redis") as server:
        yield server
