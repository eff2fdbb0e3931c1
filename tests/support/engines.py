"""Real OpenSearch and Elasticsearch nodes on 127.0.0.1 for the ``engine`` tests.

The session fixtures run ``scripts/opensearch-local start`` / ``scripts/elasticsearch-local start``
(idempotent: a running node is reused; the first run assembles the node from Maven Central,
which takes minutes) and yield the node URL from the script's last stdout line. The nodes are
left running for later sessions. ``LEXSEARCH_TEST_OPENSEARCH_URL`` / ``LEXSEARCH_TEST_ELASTICSEARCH_URL``
point the tests at an already running node instead.

The Elasticsearch node runs with x-pack security on (a file-realm superuser, plain HTTP on
loopback): every request needs :func:`elasticsearch_credentials` (``ELASTICSEARCH_USER`` /
``ELASTICSEARCH_PASSWORD``, the same variables and defaults as the script) or an API key
(:func:`elasticsearch_api_key`). The OpenSearch node has no security plugin.

Nothing is mocked: a node that cannot be started fails the tests that need it, with the
script's output. Also here: :func:`unique_index` (a fresh index name per test class) and
:class:`LocalCluster` (a 3-node cluster of either engine on free ports, for the node-loss tests).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 1800
"""The first start downloads and assembles the node (Maven Central), later ones take seconds."""


@dataclass(frozen=True)
class Credentials:
    """Basic-auth credentials for a node, in the two shapes the tests need."""

    username: str
    password: str

    @property
    def kwargs(self) -> dict[str, str]:
        """Keyword arguments for an :class:`~service.backends.engine.backend.EngineBackend`."""
        return {"username": self.username, "password": self.password}

    @property
    def cli(self) -> list[str]:
        """``lexsearch`` command-line options."""
        return ["--username", self.username, "--password", self.password]


ELASTICSEARCH_CREDENTIALS = Credentials(
    os.environ.get("ELASTICSEARCH_USER") or "lexsearch",
    os.environ.get("ELASTICSEARCH_PASSWORD") or "lexsearch-test-password",
)
"""The superuser ``scripts/elasticsearch-local`` creates (same variables, same defaults)."""


def start_node(script: str, env_override: str) -> str:
    """Start (or reuse) a local node with ``scripts/<script> start`` and return its URL.

    Raises:
        pytest.fail.Exception: when the script fails, with the end of its output.
    """
    override = os.environ.get(env_override, "").strip()
    if override:
        return override.rstrip("/")
    try:
        proc = subprocess.run([str(ROOT / "scripts" / script), "start"], capture_output=True, text=True,
                              timeout=START_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"scripts/{script} start did not finish within {START_TIMEOUT_S}s")
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or not lines[-1].startswith("http"):
        pytest.fail(f"scripts/{script} start failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return lines[-1].strip().rstrip("/")


@pytest.fixture(scope="session")
def opensearch_url() -> str:
    """URL of the real local OpenSearch 2.19 node (started through ``scripts/opensearch-local``)."""
    return start_node("opensearch-local", "LEXSEARCH_TEST_OPENSEARCH_URL")


@pytest.fixture(scope="session")
def elasticsearch_url() -> str:
    """URL of the real local Elasticsearch 8.19 node (started through ``scripts/elasticsearch-local``).

    The node is secured: pair the URL with :func:`elasticsearch_credentials` or :func:`elasticsearch_api_key`.
    """
    return start_node("elasticsearch-local", "LEXSEARCH_TEST_ELASTICSEARCH_URL")


@pytest.fixture(scope="session")
def elasticsearch_credentials() -> Credentials:
    """The superuser of the local Elasticsearch node (``ELASTICSEARCH_USER`` / ``ELASTICSEARCH_PASSWORD``)."""
    return ELASTICSEARCH_CREDENTIALS


@pytest.fixture(scope="session")
def elasticsearch_api_key(elasticsearch_url: str, elasticsearch_credentials: Credentials) -> Iterator[str]:
    """A real API key (the ``encoded`` form) created on the node with ``POST /_security/api_key``; invalidated after."""
    from elasticsearch import Elasticsearch

    client = Elasticsearch(elasticsearch_url, basic_auth=(elasticsearch_credentials.username,
                                                          elasticsearch_credentials.password), request_timeout=30)
    key = client.security.create_api_key(name=f"lexsearch-test-{uuid.uuid4().hex[:8]}", expiration="1h").body
    try:
        yield key["encoded"]
    finally:
        client.security.invalidate_api_key(ids=[key["id"]])
        client.close()


def unique_index(prefix: str) -> str:
    """A fresh lowercase index name, so test runs never see each other's indices."""
    return f"lexsearch-test-{prefix}-{uuid.uuid4().hex[:8]}"


CLUSTER_HOME = os.environ.get("LEXSEARCH_TEST_CLUSTER_HOME") or "/var/tmp/lexsearch-test-clusters"
"""``LEXSEARCH_ENGINE_HOME`` of the test clusters: their own installation, never the shared single nodes'."""
CLUSTER_HEAP = "512m"


@dataclass
class LocalCluster:
    """A cluster of real nodes on loopback, run by ``scripts/<script> start --nodes N`` on free ports.

    It lives in :data:`CLUSTER_HOME` (its own installation, assembled once from the Maven cache)
    under a port of its own, so several test sessions and the shared single nodes never meet.
    """

    script: str
    nodes: int
    env: dict[str, str]
    urls: list[str]

    @classmethod
    def start_new(cls, engine: str, nodes: int = 3) -> LocalCluster:
        """Start a cluster of ``engine`` (``opensearch`` or ``elasticsearch``) with ``nodes`` nodes.

        Raises:
            pytest.fail.Exception: when the script fails, with the end of its output.
        """
        prefix = engine.upper()
        port = free_port_block(nodes)
        env = {**os.environ, "LEXSEARCH_ENGINE_HOME": CLUSTER_HOME, f"{prefix}_PORT": str(port),
               f"{prefix}_TRANSPORT_PORT": str(port + 100), f"{prefix}_HEAP": CLUSTER_HEAP}
        cluster = cls(f"{engine}-local", nodes, env, [f"http://127.0.0.1:{port}"])
        cluster.urls = cluster.start()
        return cluster

    def _run(self, *args: str, timeout: float = START_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(ROOT / "scripts" / self.script), *args], capture_output=True, text=True,
                              timeout=timeout, check=False, env=self.env)

    def start(self) -> list[str]:
        """Start the nodes that are not running; returns the node URLs once all have joined."""
        proc = self._run("start", "--nodes", str(self.nodes))
        lines = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not lines or not lines[-1].startswith("http"):
            self.stop()
            pytest.fail(f"scripts/{self.script} start --nodes {self.nodes} failed (exit {proc.returncode}):\n"
                        f"{proc.stderr[-3000:]}")
        return lines[-1].strip().split(",")

    def pids(self) -> dict[int, int]:
        """node number -> pid of the running nodes."""
        out = self._run("status", timeout=60).stdout
        return {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"^node-(\d+) running \S+ pid=(\d+)$", out, re.M)}

    def kill(self, node: int) -> None:
        """``kill -9`` one node and wait until it is gone."""
        pid = self.pids()[node]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop every node and delete the cluster's folders (configuration, data, logs)."""
        self._run("stop", timeout=300)
        for folder in Path(CLUSTER_HOME).glob(f"*-cluster-{self.urls[0].rsplit(':', 1)[1]}"):
            shutil.rmtree(folder, ignore_errors=True)


def free_port_block(nodes: int) -> int:
    """A base port P with P..P+nodes-1 (HTTP) and P+100.. (transport) free on 127.0.0.1."""
    for _ in range(200):
        base = random.randrange(9400, 9800, 10)
        if all(_port_free(base + offset + i) for offset in (0, 100) for i in range(nodes)):
            return base
    raise RuntimeError("no free block of ports between 9400 and 9900")


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
