"""``lexsearch index|search|eval --backend opensearch|elasticsearch`` against real nodes, run as subprocesses.

Covers the happy path (index, alias-swap rebuild, search, eval, attached index) and the failures
the CLI must report clearly, with a non-zero exit, within 10 seconds: an engine that is down, a
wrong URL, wrong credentials and a missing index. Credentials are checked by the Elasticsearch
node's own x-pack security (file-realm user and a real API key); the OpenSearch node has none.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from service.backends.elasticsearch import ElasticsearchBackend
from service.backends.opensearch import OpenSearchBackend
from tests.backends.engine_acceptance import ATTACH_TOML, create_foreign_index
from tests.support.corpus import MINI
from tests.support.engines import unique_index
from tests.support.redis_server import free_port

pytestmark = pytest.mark.engine

FAIL_WITHIN_S = 10.0


@pytest.fixture(scope="module")
def env(tmp_path_factory, embedding_cache_dir) -> dict[str, str]:
    root = tmp_path_factory.mktemp("engine-cli")
    keep = {k: v for k, v in os.environ.items() if not k.startswith("LEXSEARCH_")}
    return {**keep, "LEXSEARCH_EMBEDDER_CACHE_DIR": str(embedding_cache_dir), "LEXSEARCH_PROGRESS": "0",
            "LEXSEARCH_INDEX_ROOT": str(root / "indices")}


def lexsearch(env: dict[str, str], *argv: str, extra_env: dict[str, str] | None = None,
              timeout: float = 300) -> tuple[int, str, str, float]:
    """Run the CLI in a fresh process; returns (exit code, stdout, stderr, seconds)."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "service.cli", *argv], capture_output=True, text=True,
                          env={**env, **(extra_env or {})}, timeout=timeout, check=False)
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start


@pytest.fixture(scope="module")
def es_index(env, elasticsearch_url, elasticsearch_credentials) -> str:
    """The mini corpus indexed on the secured Elasticsearch node through the CLI, with basic auth."""
    name = unique_index("cli-es")
    code, _, err, _ = lexsearch(env, "index", "--data", str(MINI), "--backend", "elasticsearch", "--url",
                                elasticsearch_url, *elasticsearch_credentials.cli, "--index", name)
    assert code == 0, err
    yield name
    ElasticsearchBackend(elasticsearch_url, **elasticsearch_credentials.kwargs).drop(name)


@pytest.fixture(scope="module")
def os_index(env, opensearch_url) -> str:
    """The mini corpus indexed on OpenSearch through the CLI (alias name)."""
    name = unique_index("cli")
    code, _, err, _ = lexsearch(env, "index", "--data", str(MINI), "--backend", "opensearch", "--url", opensearch_url,
                                "--index", name)
    assert code == 0, err
    yield name
    OpenSearchBackend(opensearch_url).drop(name)


def test_index_then_rebuild_swaps_the_alias(env, opensearch_url, os_index) -> None:
    backend = OpenSearchBackend(opensearch_url)
    assert backend.alias_targets(os_index) == [f"{os_index}-v1"]
    code, _, err, _ = lexsearch(env, "index", "--data", str(MINI), "--backend", "opensearch", "--url",
                                opensearch_url, "--index", os_index)
    assert code == 0, err
    assert "new version" in err
    assert backend.alias_targets(os_index) == [f"{os_index}-v2"] == backend.versions(os_index)
    assert backend.count(os_index) == 54


def test_search_json_on_opensearch(env, opensearch_url, os_index) -> None:
    code, out, err, _ = lexsearch(env, "search", "Testament unter Drohung errichtet", "--backend", "opensearch",
                                  "--url", opensearch_url, "--index", os_index, "--json", "--top", "3",
                                  "--filter", "law=ZGB")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    assert {"Art. 469 ZGB", "5A_666/2012"} <= {h["citation"] for h in hits}  # the statutes' and decisions' answers
    assert all(h["law"] == "ZGB" for h in hits)


def test_eval_builds_the_dataset_index_on_the_engine(env, opensearch_url, tmp_path) -> None:
    backend = OpenSearchBackend(opensearch_url)
    before = set(backend.list_indices())
    out_json = tmp_path / "eval.json"
    code, _, err, _ = lexsearch(env, "eval", "--data", str(MINI), "--split", "dev", "--backend", "opensearch",
                                  "--url", opensearch_url, "--pipeline", "bm25,hybrid", "--json", str(out_json))
    created = set(backend.list_indices()) - before
    try:
        assert code == 0, err
        results = json.loads(out_json.read_text())
        assert [r["pipeline"] for r in results] == ["bm25", "hybrid"]
        assert results[1]["recall@10"] > 0.5
        assert any(name.startswith("eval-mini-") for name in created | before)
    finally:
        for name in created:
            backend.drop(name)


def test_search_an_attached_index_through_the_settings(env, opensearch_url, use_embedder, mini_docs,
                                                       tmp_path) -> None:
    owner = OpenSearchBackend(opensearch_url)
    name = f"legacy-cli-{os.getpid()}"
    owner.drop(name)
    create_foreign_index(owner, name, [d for d in mini_docs if d.lang == "de"], use_embedder)
    try:
        config = tmp_path / "attach.toml"
        config.write_text(ATTACH_TOML.format(index=name), encoding="utf-8")
        code, out, err, _ = lexsearch(env, "search", "Mietkaution", "--backend", "opensearch", "--url",
                                      opensearch_url, "--index", name, "--json", "--top", "3",
                                      extra_env={"LEXSEARCH_ENGINE_FIELD_MAP": str(config)})
        assert code == 0, err
        hits = json.loads(out)["hits"]
        assert hits[0]["doc_id"] == "BGE_142_III_100" and hits[0]["citation"] == "BGE 142 III 100"
    finally:
        owner.drop(name)


# ----- failures: clear message, non-zero exit, within 10 s -----------------------------------------------


def assert_fails_fast(result: tuple[int, str, str, float], message: str) -> None:
    code, _, err, seconds = result
    assert code != 0
    assert seconds < FAIL_WITHIN_S, f"took {seconds:.1f}s"
    assert message in err, err
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) <= 3, err


@pytest.mark.parametrize("command", ["search", "index", "eval"])
def test_engine_down(env, command) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    argv = {"search": ["search", "Kaution"], "index": ["index", "--data", str(MINI)],
            "eval": ["eval", "--data", str(MINI), "--split", "dev"]}[command]
    result = lexsearch(env, *argv, "--backend", "opensearch", "--url", url, "--index", "lexsearch-down")
    assert_fails_fast(result, f"cannot reach OpenSearch at {url}")
    assert result[0] == 3  # EngineUnavailable


def test_engine_down_elasticsearch(env) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = lexsearch(env, "search", "Kaution", "--backend", "elasticsearch", "--url", url, "--index", "x")
    assert_fails_fast(result, f"cannot reach Elasticsearch at {url}")


def test_wrong_url_tls_on_a_plain_port(env, opensearch_url) -> None:
    url = opensearch_url.replace("http://", "https://")
    result = lexsearch(env, "search", "Kaution", "--backend", "opensearch", "--url", url, "--index", "x")
    assert_fails_fast(result, f"cannot reach OpenSearch at {url}")


def test_wrong_url_another_http_server(env) -> None:
    class NotAnEngine(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<html>welcome to the intranet</html>"
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), NotAnEngine)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        result = lexsearch(env, "search", "Kaution", "--backend", "opensearch", "--url", url, "--index", "x")
        assert_fails_fast(result, f"the server at {url} does not answer like OpenSearch")
    finally:
        httpd.shutdown()


def test_wrong_url_the_other_product(env, opensearch_url, elasticsearch_url, elasticsearch_credentials) -> None:
    result = lexsearch(env, "search", "Kaution", "--backend", "opensearch", "--url", elasticsearch_url,
                       *elasticsearch_credentials.cli, "--index", "x")
    assert_fails_fast(result, "is not OpenSearch")
    result = lexsearch(env, "search", "Kaution", "--backend", "elasticsearch", "--url", opensearch_url,
                       "--index", "x")
    assert_fails_fast(result, "is not Elasticsearch")


def test_search_json_on_elasticsearch_with_basic_auth(env, elasticsearch_url, elasticsearch_credentials,
                                                      es_index) -> None:
    code, out, err, _ = lexsearch(env, "search", "Testament unter Drohung errichtet", "--backend", "elasticsearch",
                                  "--url", elasticsearch_url, *elasticsearch_credentials.cli, "--index", es_index,
                                  "--json", "--top", "3", "--filter", "law=ZGB")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    assert {"Art. 469 ZGB", "5A_666/2012"} <= {h["citation"] for h in hits}  # the statutes' and decisions' answers
    assert all(h["law"] == "ZGB" for h in hits)


@pytest.mark.parametrize("command", ["search", "index"])
def test_wrong_credentials(env, elasticsearch_url, elasticsearch_credentials, es_index, command) -> None:
    argv = {"search": ["search", "Kaution"], "index": ["index", "--update", "--data", str(MINI)]}[command]
    refused = f"Elasticsearch at {elasticsearch_url} refused the credentials (HTTP 401)"
    result = lexsearch(env, *argv, "--backend", "elasticsearch", "--url", elasticsearch_url, "--username",
                       elasticsearch_credentials.username, "--password", "not-the-password", "--index", es_index)
    assert_fails_fast(result, refused)
    assert result[0] == 3  # EngineUnavailable
    assert "check --username/--password or --api-key" in result[2]
    # no credentials at all: the secured node refuses too
    result = lexsearch(env, *argv, "--backend", "elasticsearch", "--url", elasticsearch_url, "--index", es_index)
    assert_fails_fast(result, refused)
    assert result[0] == 3


def test_right_credentials_and_api_key(env, elasticsearch_url, elasticsearch_credentials, elasticsearch_api_key,
                                       es_index) -> None:
    code, out, err, _ = lexsearch(env, "search", "Kaution", "--backend", "elasticsearch", "--url",
                                  elasticsearch_url, *elasticsearch_credentials.cli, "--index", es_index, "--top", "2")
    assert code == 0, err
    assert out.strip()
    # a real API key, made on the node with POST /_security/api_key
    code, out, err, _ = lexsearch(env, "search", "Kaution", "--backend", "elasticsearch", "--url",
                                  elasticsearch_url, "--api-key", elasticsearch_api_key, "--index", es_index,
                                  "--json", "--top", "2")
    assert code == 0, err
    assert json.loads(out)["hits"]
    result = lexsearch(env, "search", "Kaution", "--backend", "elasticsearch", "--url", elasticsearch_url,
                       "--api-key", "bm9wZTpub3Bl", "--index", es_index)
    assert_fails_fast(result, f"Elasticsearch at {elasticsearch_url} refused the credentials (HTTP 401)")


@pytest.mark.parametrize("backend", ["opensearch", "elasticsearch"])
def test_missing_index(env, backend, request, elasticsearch_credentials) -> None:
    url = request.getfixturevalue(f"{backend}_url")
    auth = elasticsearch_credentials.cli if backend == "elasticsearch" else []
    result = lexsearch(env, "search", "Kaution", "--backend", backend, "--url", url, *auth, "--index",
                       "lexsearch-no-such-index")
    assert_fails_fast(result, "no index or alias named 'lexsearch-no-such-index'")
    assert result[0] == 2


def test_missing_index_elasticsearch_backend_class(elasticsearch_url, elasticsearch_credentials) -> None:
    assert not ElasticsearchBackend(elasticsearch_url, **elasticsearch_credentials.kwargs).exists(
        "lexsearch-no-such-index")
    assert Path(MINI).is_dir()
