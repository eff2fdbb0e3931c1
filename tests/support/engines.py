"""Real OpenSearch and Elasticsearch nodes on 127.0.0.1 for the ``engine`` tests.

The session fixtures run ``scripts/opensearch-local start`` / ``scripts/elasticsearch-local start``
(idempotent: a running node is reused; the first run assembles the node from Maven Central,
which takes minutes) and yield the node URL from the script's last stdout line. The nodes are
left running for later sessions. ``LEXSEARCH_TEST_OPENSEARCH_URL`` / ``LEXSEARCH_TEST_ELASTICSEARCH_URL``
point the tests at an already running node instead.

Nothing is mocked: a node that cannot be started fails the tests that need it, with the
script's output.

Also here: :func:`unique_index` (a fresh index name per test class) and :class:`AuthGate`, a
basic-auth reverse proxy in front of a real node, used to check how lexsearch reports refused
credentials (the local nodes run without a security plugin, so they never answer 401 themselves).
"""

from __future__ import annotations

import base64
import http.client
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 1800
"""The first start downloads and assembles the node (Maven Central), later ones take seconds."""


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
    """URL of the real local Elasticsearch 8.19 node (started through ``scripts/elasticsearch-local``)."""
    return start_node("elasticsearch-local", "LEXSEARCH_TEST_ELASTICSEARCH_URL")


def unique_index(prefix: str) -> str:
    """A fresh lowercase index name, so test runs never see each other's indices."""
    return f"lexsearch-test-{prefix}-{uuid.uuid4().hex[:8]}"


class AuthGate:
    """A reverse proxy on 127.0.0.1 that forwards to ``upstream`` only with the right basic-auth header.

    Wrong or missing credentials get ``401`` with an Elasticsearch-style error body, as a node
    with its security plugin enabled answers.
    """

    def __init__(self, upstream: str, *, username: str, password: str) -> None:
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 9200
        token = base64.b64encode(f"{username}:{password}".encode()).decode()
        self.expected = f"Basic {token}"
        self._httpd: ThreadingHTTPServer | None = None
        self.url = ""

    def start(self) -> AuthGate:
        gate = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.headers.get("Authorization") != gate.expected:
                    payload = (b'{"error":{"type":"security_exception","reason":"unable to authenticate user"},'
                               b'"status":401}')
                    self.send_response(401)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("WWW-Authenticate", 'Basic realm="security"')
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                conn = http.client.HTTPConnection(gate.upstream_host, gate.upstream_port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "authorization")}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for key, value in resp.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


@pytest.fixture
def auth_gate(opensearch_url: str) -> Iterator[AuthGate]:
    """An :class:`AuthGate` (user ``lex``, password ``right``) in front of the real OpenSearch node."""
    gate = AuthGate(opensearch_url, username="lex", password="right").start()
    try:
        yield gate
    finally:
        gate.stop()
