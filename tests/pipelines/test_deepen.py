"""A request deeper than the retrieval depth keeps the head of a shallower one (service/pipelines/deepen.py)."""

from __future__ import annotations

import pytest

from service.config import load_settings
from service.corpus.model import Hit
from service.pipelines.base import SearchRequest, SearchResponse
from service.pipelines.build import Runtime
from service.pipelines.deepen import STAGE, deepened

pytestmark = pytest.mark.unit

QUESTION = "Mein Vermieter gibt die Kaution nicht zurück"


def _k_dependent(request: SearchRequest) -> SearchResponse:
    """A ranking whose head changes with ``k``, as a fused and reranked one does past the depth."""
    shallow, deep = ["a", "b", "c"], ["b", "d", "a", "e", "c", "f", "g"]
    ids = shallow if request.k <= 3 else deep
    hits = [Hit(doc_id, score=10.0 - i, scores={"rerank": 10.0 - i}) for i, doc_id in enumerate(ids[: request.k])]
    return SearchResponse(hits=hits, trace={"pipeline": "fake", "timings_ms": {"rerank": 1.0}},
                          returned=2 if request.k <= 3 else 5)


def test_the_head_is_that_of_a_search_at_the_depth_and_the_tail_follows_in_its_order() -> None:
    response = deepened(_k_dependent, SearchRequest(QUESTION, index="x", k=6), depth=3)
    assert [h.doc_id for h in response.hits] == ["a", "b", "c", "d", "e", "f"]
    assert response.returned == 2, "the answer set is the head's"
    scores = [h.score for h in response.hits]
    assert scores == sorted(scores, reverse=True), "scores still fall along the ranking"
    assert response.hits[3].scores[STAGE] == 9.0, "a tail hit keeps the score its own search gave it"
    assert response.trace[STAGE] == {"depth": 3, "k": 6, "head": 3, "tail": 3}
    assert response.trace["timings_ms"] == {"rerank": 2.0}, "the two searches' time is counted"


def test_a_request_within_the_depth_is_one_search() -> None:
    calls: list[int] = []

    def run(request: SearchRequest) -> SearchResponse:
        calls.append(request.k)
        return _k_dependent(request)

    response = deepened(run, SearchRequest(QUESTION, index="x", k=3), depth=3)
    assert calls == [3] and STAGE not in response.trace
    deepened(run, SearchRequest(QUESTION, index="x", k=7), depth=0)
    assert calls == [3, 7], "depth 0 turns the step off"


@pytest.mark.parametrize("pipeline", ["hybrid", "agentic"])
def test_served_pipelines_keep_the_head_of_a_search_at_the_depth(trilingual_embedded, use_embedder,
                                                                  pipeline: str) -> None:
    backend, name = trilingual_embedded
    settings = load_settings(environ={}, overrides={"retrieval": {"depth": 4}})
    served = Runtime(settings, backend=backend, embedder=use_embedder).search_pipeline(pipeline)
    shallow = served.run(SearchRequest(QUESTION, index=name, k=4))
    deep = served.run(SearchRequest(QUESTION, index=name, k=12))
    assert [h.doc_id for h in deep.hits[:4]] == [h.doc_id for h in shallow.hits]
    assert len(deep.hits) > 4 and len({h.doc_id for h in deep.hits}) == len(deep.hits)
    assert deep.trace[STAGE]["depth"] == 4
    assert served.runs_whole(SearchRequest(QUESTION, index=name, k=12))
    assert not served.runs_whole(SearchRequest(QUESTION, index=name, k=4))
