"""The hybrid pipeline's probe of long questions: key-term BM25 and the combined passage vector."""

from __future__ import annotations

import math

import pytest

from service.config import load_settings
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime
from service.retrieval.long_query import read_long_query

pytestmark = pytest.mark.unit

CASE = ("M wohnt seit 2015 in einer Mietwohnung in Bern. "
        + "Die Wohnung liegt im dritten Stock und hat einen Balkon. " * 12
        + "Beim Einzug hat M eine Sicherheit von drei Monatszinsen geleistet. Nach der Kündigung gibt der Vermieter "
        "die Kaution nicht zurück. Kann M die Kaution zurückverlangen?")


def _runtime(mini_embedded, use_embedder, long_query_chars: int) -> Runtime:
    backend, _ = mini_embedded
    settings = load_settings(environ={}, overrides={"retrieval": {"long_query_chars": long_query_chars}})
    return Runtime(settings, backend=backend, embedder=use_embedder)


def test_long_questions_are_read_as_passages_and_question(mini_embedded, use_embedder) -> None:
    runtime = _runtime(mini_embedded, use_embedder, 500)
    request = SearchRequest(query=CASE, index="mini", k=5, lang="de")
    response = runtime.pipeline("hybrid").run(request)
    assert response.trace["long_query"]["chars"] == len(CASE)
    assert response.trace["long_query"]["passages"] >= 1
    assert "SR220_Art257e_de" in [h.doc_id for h in response.hits[:3]]
    bm25 = runtime.pipeline("bm25").run(request)
    assert "long_query" in bm25.trace and "SR220_Art257e_de" in [h.doc_id for h in bm25.hits[:3]]


def test_short_questions_and_a_zero_limit_keep_the_plain_probe(mini_embedded, use_embedder) -> None:
    short = SearchRequest(query="Mein Vermieter gibt die Kaution nicht zurück", index="mini", k=5)
    assert "long_query" not in _runtime(mini_embedded, use_embedder, 500).pipeline("hybrid").run(short).trace
    off = SearchRequest(query=CASE, index="mini", k=5)
    assert "long_query" not in _runtime(mini_embedded, use_embedder, 0).pipeline("hybrid").run(off).trace


def test_embedded_document_frequencies_cap_the_terms(mini_embedded, use_embedder) -> None:
    backend, index = mini_embedded
    freqs = backend.doc_freqs(index, ["kaution", "miet", "nichtda"])
    assert freqs["nichtda"] == 0 and freqs["miet"] >= freqs["kaution"] >= 1
    pipe = _runtime(mini_embedded, use_embedder, 500).pipeline("hybrid")
    weights = pipe.long_weights(read_long_query(CASE), index, "de")
    assert weights["kaution"] == pytest.approx(2 * (1 + math.log(2)))  # twice in the text, again in the question
