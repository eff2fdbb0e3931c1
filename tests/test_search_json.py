"""The JSON form of searches: requests in, responses out."""

from __future__ import annotations

import pytest

from service.backends.embedded import EmbeddedBackend
from service.corpus.model import Filters, Hit
from service.errors import InvalidInput
from service.pipelines.base import SearchRequest, SearchResponse
from service.search_json import filters_from_json, render_response, request_from_json, request_to_json, tier_of


@pytest.mark.unit
def test_requests_roundtrip_through_json() -> None:
    request = SearchRequest("Kaution", index="swiss", k=7, filters=Filters.of(law=["OR"], date_from="2020-01-01"),
                            lang="de", explain=True, options={"reranker": "none", "agents": ["repair"]})
    assert request_from_json(request_to_json(request), default_index="other") == request


@pytest.mark.unit
def test_defaults_and_filters() -> None:
    request = request_from_json({"query": "q"}, default_index="swiss")
    assert (request.index, request.k, request.filters, request.explain) == ("swiss", 10, None, False)
    assert filters_from_json({}) is None
    assert filters_from_json({"law": ["ZGB"], "date_to": "2024-12-31"}) == Filters.of(law=["ZGB"],
                                                                                      date_to="2024-12-31")
    with pytest.raises(InvalidInput, match="unknown filter field"):
        filters_from_json({"body": ["x"]})
    with pytest.raises(InvalidInput):
        filters_from_json({"law": []})


@pytest.mark.unit
def test_the_tier_comes_from_the_routing_trace() -> None:
    assert tier_of({"routing": {"tier": 3}}) == 3
    assert tier_of({"pipeline": "hybrid"}) is None
    assert tier_of({"routing": {"tier": "2"}}) is None


@pytest.mark.unit
def test_a_response_carries_citations_snippets_and_the_cut(mini_embedded: tuple[EmbeddedBackend, str]) -> None:
    backend, name = mini_embedded
    ids = [d.id for d in backend.scan(name)][:3]
    response = SearchResponse(hits=[Hit(doc_id=i, score=1.0 - n / 10, scores={"bm25": 3.0}) for n, i in
                                    enumerate(ids)] + [Hit(doc_id="gone", score=0.1)],
                              trace={"routing": {"tier": 1}}, returned=2)
    request = SearchRequest("Mieter Vermieter", index=name, k=4, explain=False)
    body = render_response(backend, request, response, pipeline="routed", took_ms=12.345)
    assert (body["tier"], body["returned"], body["took_ms"], body["k"]) == (1, 2, 12.35, 4)
    assert [h["rank"] for h in body["hits"]] == [1, 2, 3, 4] and "trace" not in body
    assert body["hits"][3] == {**body["hits"][3], "citation": "gone", "snippet": None}
    assert all(h["snippet"]["text"] for h in body["hits"][:3])


@pytest.mark.unit
def test_a_work_is_shown_in_the_questions_language_with_every_version(trilingual_embedded, use_embedder) -> None:
    backend, name = trilingual_embedded
    response = SearchResponse(hits=[Hit(doc_id="OR-art257e-de", score=1.0), Hit(doc_id="OR-art41-de", score=0.5)])

    def shown(query: str, filters: Filters | None = None, lang: str = "") -> list[dict]:
        request = SearchRequest(query, index=name, k=2, filters=filters, lang=lang)
        return render_response(backend, request, response, pipeline="hybrid", took_ms=1.0,
                               embedder=use_embedder)["hits"]

    italian = shown("Il locatore non mi restituisce la garanzia")
    assert [(h["doc_id"], h["lang"], h["version"]) for h in italian] == [
        ("OR-art257e-de", "it", "OR-art257e-it"), ("OR-art41-de", "it", "OR-art41-it")]
    assert italian[0]["citation"] == "art. 257e CO" and "garanzia" in italian[0]["snippet"]["text"]
    assert [v["doc_id"] for v in italian[0]["versions"]] == ["OR-art257e-de", "OR-art257e-fr", "OR-art257e-it"]
    assert italian[0]["pinpoint"] and italian[0]["pinpoint"][0]["citation"].startswith("Art. 257e cpv. ")
    assert {h["lang"] for h in shown("My landlord keeps the deposit")} == {"de"}  # no English version
    assert {h["lang"] for h in shown("My landlord keeps the deposit", Filters.of(lang="fr"))} == {"fr"}
    assert {h["lang"] for h in shown("Kaution", lang="fr")} == {"fr"}
