"""OpenAIEmbedder against the OpenAI-compatible test server, through the real ``openai`` client."""

from __future__ import annotations

import numpy as np
import pytest

from service.embeddings.base import Embedder
from service.embeddings.openai_embedder import OpenAIEmbedder
from service.errors import ConfigError, EngineUnavailable
from service.vectors import l2_normalize
from tests.support.openai_server import Delay, OpenAITestServer, Reply, Status, pseudo_embedding

pytestmark = pytest.mark.unit

TEXTS = ["Art. 41 OR", "§ 823 BGB", "民法典第一千一百六十五条", "Art. 8 ZGB", "Art. 1 CC"]


def make(server: OpenAITestServer, **kwargs: object) -> OpenAIEmbedder:
    options: dict[str, object] = {"api_key": "k", "batch_size": 2, "timeout_s": 2.0, "max_retries": 0,
                                  **kwargs}
    return OpenAIEmbedder(server.base_url, "test-embed", **options)  # type: ignore[arg-type]


def test_batches_normalises_and_keeps_order(openai_server: OpenAITestServer) -> None:
    embedder = make(openai_server, dim=16)

    vectors = embedder.embed_documents(TEXTS)

    assert vectors.shape == (5, 16) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    expected = l2_normalize(np.vstack([pseudo_embedding(t, 16) for t in TEXTS]))
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)
    requests = openai_server.embedding_requests
    assert [r.json["input"] for r in requests] == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:5]]
    assert all(r.json["model"] == "test-embed" and r.json["encoding_format"] == "float" for r in requests)
    assert requests[0].headers["authorization"] == "Bearer k"
    np.testing.assert_allclose(embedder.embed_queries(TEXTS[:1]), vectors[:1], rtol=1e-6)


def test_dimension_is_discovered_from_the_first_call(openai_server: OpenAITestServer) -> None:
    openai_server.embedding_dim = 24
    embedder = make(openai_server)
    assert embedder.name == "openai:test-embed"
    assert embedder.embed_queries(["Kündigung Mietvertrag"]).shape == (1, 24)
    assert embedder.dim == 24
    assert len(openai_server.embedding_requests) == 1  # no probe: the first call told us


def test_reading_dim_first_probes_once(openai_server: OpenAITestServer) -> None:
    embedder = make(openai_server)
    assert isinstance(embedder, Embedder)
    assert embedder.dim == 16 and embedder.dim == 16
    assert len(openai_server.embedding_requests) == 1


def test_empty_input_and_blank_texts(openai_server: OpenAITestServer) -> None:
    embedder = make(openai_server, dim=16)
    assert embedder.embed_documents([]).shape == (0, 16)
    assert openai_server.embedding_requests == []
    vectors = embedder.embed_documents(["", "text"])
    assert vectors.shape == (2, 16)
    assert openai_server.embedding_requests[0].json["input"] == [" ", "text"]


def test_server_error_is_a_clear_engine_unavailable(openai_server: OpenAITestServer) -> None:
    openai_server.script_embeddings(Status(500))
    with pytest.raises(EngineUnavailable, match=r"embedding endpoint .*test-embed.*HTTP 500"):
        make(openai_server).embed_documents(TEXTS)


def test_transient_errors_are_retried_by_the_client(openai_server: OpenAITestServer) -> None:
    openai_server.script_embeddings(Status(503, headers={"retry-after-ms": "10"}))
    vectors = make(openai_server, max_retries=1).embed_documents(TEXTS[:2])
    assert vectors.shape == (2, 16) and len(openai_server.embedding_requests) == 2


def test_timeout_and_unreachable_endpoint(openai_server: OpenAITestServer) -> None:
    openai_server.script_embeddings(Delay(3.0, Reply()))
    with pytest.raises(EngineUnavailable, match=r"did not answer within 0\.3 s"):
        make(openai_server, timeout_s=0.3).embed_documents(TEXTS[:1])
    openai_server.stop()
    with pytest.raises(EngineUnavailable, match="cannot reach"):
        make(openai_server, dim=16).embed_documents(TEXTS[:1])


def test_unusable_responses(openai_server: OpenAITestServer) -> None:
    one = {"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}
    openai_server.script_embeddings(Reply(body={"object": "list", "data": [one], "model": "m"}))
    with pytest.raises(EngineUnavailable, match="1 embeddings for 2 texts"):
        make(openai_server).embed_documents(TEXTS[:2])


def test_dimension_mismatch_is_a_config_error(openai_server: OpenAITestServer) -> None:
    with pytest.raises(ConfigError, match="16-dimensional vectors, but 384"):
        make(openai_server, dim=384).embed_documents(TEXTS[:1])
