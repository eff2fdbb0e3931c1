"""Indices that hold statutes and court decisions: each of the two is searched as a corpus of its own
and the rankings are merged.

A decision runs to thousands of words and a statute to a few hundred, so one ranking over both is
decided by length before it is decided by relevance: on the AILA 2019 corpus (197 statutes, 2,914
Supreme Court decisions) no pipeline puts a statute into the first ten for any of the 10 training
questions, while the statutes searched alone rank a gold statute first for one question in four or
five (docs/BENCHMARKS.md, "Statutes and decisions in one index").

:func:`run_by_group` runs a pipeline for a request. When the request's index holds statutes and
decisions (leading or other: the two kinds of case law are one group; :func:`groups_to_balance`) and
the request does not filter on ``kind``, it runs the pipeline once per group (its kinds as a filter)
and interleaves the two rankings by rank, statutes first: the first hits are the best statute, the best
decision, the second statute, and so on. The merge uses ranks, not scores, because the groups' scores
differ in scale and in shape (a reranker trained on one kind of pool spreads another kind's scores
differently: standardised within each group and merged by z-score, the decisions took nine of the first
ten places in a held-out run, docs/BENCHMARKS.md). Each group's answer set (the score-cliff cut, when
its pipeline cuts) comes first, interleaved likewise; the merged answer set is their union. A hit's
``score`` is ``1 / (60 + its merged rank)``; the score its group's pipeline gave it stays in
``scores["group_score"]``, with every earlier stage's. Each group's search fuses with the label-free
weights calibrated on that group alone (``IndexRetrieval.weights_for``, service/fusion_calibration.py).
``retrieval.balance_kinds = false`` or the request option ``one_ranking`` search the index as one
corpus.

Example::

    request = SearchRequest("theft by a public servant", index="aila")
    groups = groups_to_balance(backend, request, enabled=True)     # {'statutes': (...), 'decisions': (...)}
    run_by_group(runtime.pipeline("hybrid"), request, groups)      # statutes and decisions, merged

The entry points get this step from :class:`~service.pipelines.served.ServedPipeline`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from service.backends.base import SearchBackend
from service.corpus.model import KIND_GROUPS, Filters, Hit, kind_groups
from service.pipelines.base import Pipeline, SearchRequest, SearchResponse, option_flag, summed_timings, tier_of

KINDS_TTL_S = 30.0
"""How long a process trusts the kinds it read of an index (a write may add a kind)."""

STAGE = "kind_balance"
"""The name of the merge in every hit's ``scores`` and ``ranks``."""

GROUP_SCORE = "group_score"
"""Where a merged hit keeps the score its group's pipeline gave it."""

RANK_OFFSET = 60
"""A merged hit scores ``1 / (RANK_OFFSET + rank)``, as in reciprocal rank fusion."""

_KINDS: dict[tuple[int, str], tuple[float, tuple[str, ...]]] = {}
_KINDS_LOCK = threading.Lock()


def index_kinds(backend: SearchBackend, index: str) -> tuple[str, ...]:
    """The document kinds of ``index``, read at most once per :data:`KINDS_TTL_S` per backend."""
    key = (id(backend), index)
    now = time.monotonic()
    with _KINDS_LOCK:
        cached = _KINDS.get(key)
    if cached is not None and now - cached[0] < KINDS_TTL_S:
        return cached[1]
    kinds = tuple(backend.kinds(index))
    with _KINDS_LOCK:
        _KINDS[key] = (now, kinds)
    return kinds


def with_kinds(filters: Filters | None, kinds: tuple[str, ...]) -> Filters:
    """``filters`` plus ``kind`` in ``kinds`` (the request has no kind restriction of its own)."""
    base = filters or Filters()
    return replace(base, terms=tuple(sorted((*base.terms, ("kind", kinds)))))


def merge_groups(responses: dict[str, SearchResponse], k: int) -> tuple[list[Hit], int | None]:
    """One ranking of at most ``k`` hits from the groups' responses, and the size of its answer set.

    The hits of the groups' answer sets (``response.answer``) come first, then the others; each part
    interleaves the groups by rank, in the order of
    :data:`~service.corpus.model.KIND_GROUPS` (statutes first). A document in both
    rankings keeps its first place. The answer set is ``None`` (no cut) unless some group's pipeline cut
    its ranking.
    """
    order = {name: i for i, name in enumerate(KIND_GROUPS)}
    rows: list[tuple[bool, int, int, Hit]] = []
    for group, response in responses.items():
        answer = len(response.answer)
        rows += [(rank >= answer, rank, order.get(group, len(order)), hit) for rank, hit in enumerate(response.hits)]
    rows.sort(key=lambda row: row[:3])
    merged: list[Hit] = []
    placed: set[str] = set()
    answered = 0
    for outside, _, _, hit in rows:
        if len(merged) == k:
            break
        if hit.doc_id in placed:  # a pipeline that let a document of the other group through
            continue
        placed.add(hit.doc_id)
        answered += not outside
        place = len(merged) + 1
        score = 1.0 / (RANK_OFFSET + place)
        scores = {**hit.scores, GROUP_SCORE: hit.score, STAGE: score}
        merged.append(replace(hit, score=score, scores=scores, ranks={**hit.ranks, STAGE: place}))
    cut = any(r.returned is not None for r in responses.values())
    return merged, (answered if cut else None)


def merged_trace(name: str, responses: dict[str, SearchResponse]) -> dict[str, Any]:
    """The trace of a merged search: each group's own trace under ``groups``, the stage timings summed,
    the highest routing tier and the LLM calls added up, where the groups' traces have them."""
    trace: dict[str, Any] = {
        "pipeline": name,
        "timings_ms": summed_timings(responses.values()),
        STAGE: {group: {"hits": len(r.hits), "answer": len(r.answer)} for group, r in sorted(responses.items())},
        "groups": {group: r.trace for group, r in sorted(responses.items())},
    }
    known = [t for t in (tier_of(r.trace) for r in responses.values()) if t is not None]
    if known:
        trace["tier"] = max(known)
    calls = sum(int(r.trace.get("llm_calls", 0) or 0) for r in responses.values())
    if calls:
        trace["llm_calls"] = calls
    return trace


def groups_to_balance(backend: SearchBackend, request: SearchRequest, *, enabled: bool) -> dict[str, tuple[str, ...]]:
    """The groups ``request`` is searched in one by one, each with its kinds; ``{}``: the request is searched
    as it is (``enabled`` false, asked off with ``one_ranking``, a ``kind`` filter, or an index of statutes
    alone or decisions alone)."""
    if not enabled or option_flag(request.options, "one_ranking"):
        return {}
    if request.filters is not None and request.filters.values("kind") is not None:
        return {}
    if not request.index or not isinstance(request.query, str) or not request.query.strip():
        return {}  # the pipeline refuses the request with its own message
    groups = kind_groups(index_kinds(backend, request.index))
    return groups if len(groups) > 1 else {}


def run_by_group(pipeline: Pipeline, request: SearchRequest, groups: dict[str, tuple[str, ...]]) -> SearchResponse:
    """``pipeline`` run once per group of ``groups`` (its kinds as a filter), the rankings merged
    (:func:`merge_groups`); with no groups, ``pipeline.run(request)``."""
    if not groups:
        return pipeline.run(request)
    responses = {name: pipeline.run(replace(request, filters=with_kinds(request.filters, kinds)))
                 for name, kinds in groups.items()}
    hits, returned = merge_groups(responses, request.k)
    return SearchResponse(hits=hits, trace=merged_trace(pipeline.name, responses), returned=returned)
