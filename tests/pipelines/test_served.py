"""The pipeline as the entry points serve it: kind groups merged, deep requests deepened
(service/pipelines/served.py)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from service.backends.base import SearchBackend
from service.corpus.model import Hit
from service.pipelines.base import SearchRequest, SearchResponse
from service.pipelines.served import ServedPipeline

pytestmark = pytest.mark.unit


class _Kinds:
    """A backend that only says which kinds an index holds."""

    def __init__(self, kinds: tuple[str, ...]) -> None:
        self._kinds = kinds

    def kinds(self, index: str) -> tuple[str, ...]:
        return self._kinds


class _ByKind:
    """A pipeline whose ranking depends on the kind filter and on ``k`` (as past the depth)."""

    name = "fake"

    def __init__(self) -> None:
        self.calls: list[tuple[Any, int]] = []

    def run(self, request: SearchRequest) -> SearchResponse:
        kinds = request.filters.values("kind") if request.filters is not None else None
        self.calls.append((kinds, request.k))
        prefix = "S" if kinds == ("statute",) else "D" if kinds else "X"
        ids = [f"{prefix}{i}" for i in (range(1, 9) if request.k <= 3 else (2, 1, 3, 4, 5, 6, 7, 8))]
        hits = [Hit(doc_id, score=10.0 - i) for i, doc_id in enumerate(ids[: request.k])]
        return SearchResponse(hits=hits, trace={"pipeline": self.name})


def _served(kinds: tuple[str, ...], *, balance: bool = True, depth: int = 3) -> tuple[ServedPipeline, _ByKind]:
    inner = _ByKind()
    backend = cast(SearchBackend, _Kinds(kinds))
    return ServedPipeline(inner, backend, balance_kinds=balance, depth=depth), inner


def test_a_deep_request_on_a_mixed_index_is_balanced_at_the_depth_and_then_past_it() -> None:
    served, inner = _served(("decision", "statute"), depth=3)
    request = SearchRequest("theft by a public servant", index=f"mixed-{id(inner)}", k=6)
    assert served.groups_to_balance(request) == {"statutes": ("statute",), "decisions": ("decision",)}
    assert served.runs_whole(request)
    response = served.run(request)
    ids = [h.doc_id for h in response.hits]
    assert ids[:3] == ["S1", "D1", "S2"], "the head is the balanced ranking of a search at the depth"
    assert len(ids) == 6 and len(set(ids)) == 6
    assert sorted(k for _, k in inner.calls) == [3, 3, 6, 6], "each group at the depth, then at k"


def test_a_shallow_request_on_one_kind_is_one_run_of_the_inner_pipeline() -> None:
    served, inner = _served(("statute",), depth=3)
    request = SearchRequest("deposit", index=f"statutes-{id(inner)}", k=3)
    assert not served.runs_whole(request)
    assert [h.doc_id for h in served.run(request).hits] == ["X1", "X2", "X3"]
    assert inner.calls == [(None, 3)]


def test_balancing_off_searches_a_mixed_index_as_one_corpus() -> None:
    served, inner = _served(("decision", "statute"), balance=False, depth=0)
    request = SearchRequest("theft", index=f"mixed-off-{id(inner)}", k=5)
    assert served.groups_to_balance(request) == {} and not served.runs_whole(request)
    served.run(request)
    assert inner.calls == [(None, 5)]
