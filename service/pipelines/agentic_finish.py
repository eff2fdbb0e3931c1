"""Step 5 of an agentic search: the pool's features, the reranker, the top ``k`` and the trace.

The reranker is the one the request asks for (:func:`~service.rerank.base.choose_reranker`, which
falls back when its parts are missing). Its declared needs decide what it gets: a reranker that
``uses_features`` scores the feature rows; one that ``reads_documents`` (LLM, cross-encoder)
reorders the top of the learned order when there is a trained model, else of the heuristic
order, and gets the texts of the best 50; the others get the heuristic order. For a multi-issue
question each issue's best candidate then gets a place in the first ten (:func:`balance`).

Example::

    response = AgenticFinish(settings=..., backend=..., rerankers=parts)(state, models, resources, learned)
    response.trace["reranker"]
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from service.backends.base import SearchBackend
from service.config import Settings
from service.corpus.model import Hit, Query
from service.models import TrainedModels
from service.pipelines.agentic_state import AgenticState
from service.pipelines.base import SearchResponse
from service.pipelines.candidates import answer_order, fetch
from service.pipelines.issue_pool import RESERVE, IssueEvidence, balance
from service.pipelines.resources import IndexResources
from service.rerank.base import RerankContext, Reranker, RerankerParts, choose_reranker
from service.rerank.features import FEATURE_NAMES, FeatureContext, IssueContext, pool_features
from service.rerank.learned import LearnedReranker
from service.tracing import Stopwatch

DOCUMENT_CANDIDATES = 50
"""Documents fetched for a reranker that reads them (the LLM sees at most 20, a cross-encoder 50)."""


@dataclass(frozen=True, kw_only=True)
class AgenticFinish:
    """Reranks the pool and answers (see the module docstring).

    Args:
        settings: ``retrieval.depth`` (a feature) and the ``llm`` budget.
        backend: fetches the documents a reranker reads.
        rerankers: the runtime's parts of the rerankers (LLM client, cross-encoder); the trained
            model is added per search.
    """

    settings: Settings
    backend: SearchBackend
    rerankers: RerankerParts

    def __call__(self, state: AgenticState, models: TrainedModels | None, resources: IndexResources,
                 learned: LearnedReranker | None, pipeline: str) -> SearchResponse:
        """The top ``k`` of the pool by the requested reranker; ``learned`` is the pipeline's trained model."""
        watch = Stopwatch()
        request = state.search_request()
        pool = list(state.pool.values())
        reranker, note = choose_reranker(state.options.reranker, replace(self.rerankers, learned=learned))
        hits, tail = _head_and_tail(pool, state.options.rerank_depth if reranker.uses_features else 0)
        with watch.stage("features"):
            features = pool_features(pool, self.feature_context(state, resources, models), rows=hits)
        learned_order = learned if reranker.reads_documents else None
        light_order = ([] if reranker.uses_features or learned_order is not None
                       else answer_order(state, resources.graph))
        context = RerankContext(features=features, feature_names=FEATURE_NAMES, fallback=light_order,
                                budget=state.llm_budget(self.settings.llm))
        with watch.stage("rerank"):
            if reranker.reads_documents:
                if learned_order is not None:
                    scores = learned_order.scores(features, FEATURE_NAMES)
                    context.fallback = [hits[i].doc_id for i in np.argsort(-scores, kind="stable")]
                context.docs = fetch(self.backend, state, context.fallback[:DOCUMENT_CANDIDATES])
            balanced = len(state.issues) > 1 and state.options.balance
            ranked = reranker.rerank(Query(request.query, request.qid, state.language), hits,
                                     k=len(hits) if balanced else request.k, context=context)
            if balanced:
                reserve = models.issue_reserve if models is not None and models.issue_reserve is not None else RESERVE
                ranked = balance(ranked, len(state.issues), reserve=reserve, label=reranker.name)[: request.k]
            if tail and len(ranked) < request.k:
                ranked += _after(ranked, tail[: request.k - len(ranked)], reranker.name)
        notes = dict(context.notes)
        if notes.get("llm"):
            state.count_llm([notes["llm"]])
        for stage, ms in watch.stages.items():
            state.add_time(stage, ms)
        return SearchResponse(hits=ranked, trace=_trace(state, pipeline, reranker, note, notes))

    def feature_context(self, state: AgenticState, resources: IndexResources,
                        models: TrainedModels | None) -> FeatureContext:
        """The query-level inputs of the reranker features for ``state``."""
        return FeatureContext(
            graph=resources.graph, law_probabilities=state.law_prediction(),
            section_probabilities={k: float(v) for k, v in state.law.get("sections", {}).items()},
            prior=models.prior if models else None, memory=state.memory_votes(),
            memory_top_sim=state.features.get("memory_top_sim", 0.0), query_terms=len(state.terms),
            depth=max(int(state.request["k"]), self.settings.retrieval.depth),
            issues=[_issue_context(IssueEvidence.from_json(i)) for i in state.issues],
            cocitation={d: (v[0], v[1]) for d, v in state.cocitation.items()}, agents_ran=state.round >= 1,
            similarities=self.similarities(state), **_article_evidence(state, models))

    def similarities(self, state: AgenticState) -> dict[str, float]:
        """The question vector's kNN score with every pool candidate ({} without a vector)."""
        if state.vector is None or not state.pool:
            return {}
        return self.backend.similarities(state.request["index"], state.vector, list(state.pool))


def _head_and_tail(pool: list[Hit], depth: int) -> tuple[list[Hit], list[Hit]]:
    """The candidates a reranker scores (``rerank_depth``, see :class:`AgenticOptions`) and the rest, in
    fusion order; with ``depth`` 0 (or a pool no deeper) the whole pool and nothing."""
    if depth <= 0 or len(pool) <= depth:
        return pool, []
    head = [h for h in pool if h.ranks.get("hybrid", 0) <= depth]
    tail = sorted((h for h in pool if h.ranks.get("hybrid", 0) > depth), key=lambda h: h.ranks["hybrid"])
    return head, tail


def _after(ranked: list[Hit], tail: list[Hit], label: str) -> list[Hit]:
    """``tail`` in its order, ranked and scored below the last of ``ranked`` (as the reranker records its own)."""
    floor = min((h.score for h in ranked), default=0.0)
    for i, hit in enumerate(tail, start=1):
        hit.score = floor - i
        hit.scores[label] = hit.score
        hit.ranks[label] = len(ranked) + i
    return tail


def _issue_context(evidence: IssueEvidence) -> IssueContext:
    return IssueContext(law_probabilities=evidence.law_probabilities(), section_probabilities=evidence.sections,
                        memory=evidence.memory_votes())


def _trace(state: AgenticState, pipeline: str, reranker: Reranker, note: str, notes: dict[str, Any]
           ) -> dict[str, Any]:
    rerank_trace: dict[str, Any] = {"name": reranker.name, **notes}
    if note:
        rerank_trace["note"] = note
    agent_rounds = state.trace.get("agents", [])
    return {
        "pipeline": pipeline,
        "rounds": state.round,
        "agents": agent_rounds,
        "candidates": len(state.pool),
        "agent_candidates": sum(s["new"] for r in agent_rounds for s in r["steps"]),
        "llm_calls": state.llm_calls,
        "llm_fallbacks": state.llm_fallbacks,
        "timings_ms": dict(state.timings),
        "law_prediction": {k: v for k, v in state.law.items() if k != "sections"},
        "reranker": rerank_trace,
        "planner": state.trace.get("planner", []),
        "prefilter": state.trace.get("prefilter"),
        "memory_candidates": sum(1 for h in state.pool.values() if "memory" in h.ranks),
        "classifier_candidates": sum(1 for h in state.pool.values() if "classifier" in h.ranks),
        "issues": state.trace.get("issues"),
        "cocitation_candidates": sum(1 for h in state.pool.values() if "cocitation" in h.ranks),
        "models": state.trace.get("models"),
        "fusion_weights": state.trace.get("fusion_weights"),
        "options": state.options.to_json(),
    }


def _article_evidence(state: AgenticState, models: TrainedModels | None) -> dict[str, Any]:
    """The article classifier's evidence on the pool, as :class:`FeatureContext` arguments."""
    if models is None or models.article_classifier is None:
        return {}
    clf = models.article_classifier
    return {"articles": clf.evidence(state.scores_of(clf), list(state.pool)), "article_count": len(clf)}
