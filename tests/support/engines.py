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
script's output. Also here: :func:`unique_index` (a fresh index name per test class).
"""

from __future__ import annotations

import os
import subprocess
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
