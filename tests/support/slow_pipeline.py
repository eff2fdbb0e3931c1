"""Test-only pipelines, registered when ``api.pipeline_modules`` names this module.

* ``test-slow``: the hybrid pipeline, then a sleep of ``$LEXSEARCH_TEST_SLOW_S`` seconds (default 0),
  so a job is reliably "in the middle" when a test kills its worker;
* ``test-stuck``: the same with ``$LEXSEARCH_TEST_STUCK_S`` (default 60), to run into time limits.
* ``test-steps``: a small step-wise pipeline (``start/plan/rewrite/merge/finish``) over the hybrid
  one: three agents in round 1, two in round 2. Each rewrite sleeps ``$LEXSEARCH_TEST_STEP_S``
  (default 0) and, when an LLM is configured, asks it once (``rewrite_terminology``), so tests can
  see rounds run in parallel and LLM requests bounded across workers. Its state and step results
  travel as plain JSON, as the agentic pipeline's do.

Nothing here is used outside tests; the real agentic pipeline lives in ``service.pipelines.agentic``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from service.corpus.model import Hit, Provenance
from service.pipelines.base import SearchRequest, SearchResponse
from service.pipelines.build import register_pipeline
from service.search_json import request_from_json, request_to_json

if TYPE_CHECKING:
    from service.pipelines.build import Runtime

AGENTS_BY_ROUND = (["terminology", "conditions", "supportive"], ["repair", "decompose"])


class SlowPipeline:
    """Hybrid search plus a fixed sleep."""

    name = "test-slow"
    delay_variable = "LEXSEARCH_TEST_SLOW_S"
    default_delay = "0"

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def run(self, request: SearchRequest) -> SearchResponse:
        response = self.runtime.pipeline("hybrid").run(request)
        time.sleep(float(os.environ.get(self.delay_variable, self.default_delay)))
        response.trace["pipeline"] = self.name
        return response


class StuckPipeline(SlowPipeline):
    """Hybrid search plus a sleep longer than any test's time limit."""

    name = "test-stuck"
    delay_variable = "LEXSEARCH_TEST_STUCK_S"
    default_delay = "60"


@dataclass
class StepState:
    """The pool of candidates so far, by document id, and the rounds done."""

    request: dict[str, Any]
    round: int = 0
    pool: dict[str, float] = field(default_factory=dict)
    found_by: dict[str, list[str]] = field(default_factory=dict)
    agents: list[list[str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"request": self.request, "round": self.round, "pool": self.pool, "found_by": self.found_by,
                "agents": self.agents}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StepState:
        return cls(**data)


@dataclass
class StepOutcome:
    """One agent's candidates in one round."""

    agent: str
    hits: dict[str, float]
    llm: str = "offline"
    pid: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "hits": self.hits, "llm": self.llm, "pid": self.pid}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StepOutcome:
        return cls(**data)


class StepPipeline:
    """A step-wise pipeline with the interface of ``AgenticPipeline`` (see the module docstring)."""

    name = "test-steps"

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def _request(self, state: StepState) -> SearchRequest:
        return request_from_json(state.request, default_index=self.runtime.settings.index.name)

    def start(self, request: SearchRequest, probe: Any = None) -> StepState:
        hits = self.runtime.pipeline("hybrid").run(request).hits
        return StepState(request=request_to_json(request), pool={h.doc_id: h.score for h in hits},
                         found_by={h.doc_id: ["probe"] for h in hits})

    def plan(self, state: StepState) -> list[str] | None:
        return AGENTS_BY_ROUND[state.round] if state.round < len(AGENTS_BY_ROUND) else None

    def rewrite(self, state: StepState, agent: str) -> StepOutcome:
        time.sleep(float(os.environ.get("LEXSEARCH_TEST_STEP_S", "0")))
        request = self._request(state)
        llm = "offline"
        if self.runtime.settings.llm.enabled:
            from service.llm.budget import CallBudget
            from service.llm.client import LlmClient
            from service.llm.schemas import OUTPUT_SCHEMAS

            outcome = LlmClient(self.runtime.settings.llm).complete_json(
                "rewrite_terminology", {"question": request.query, "language": "en", "evidence": "[]"},
                OUTPUT_SCHEMAS["rewrite_terminology"], budget=CallBudget(4, 10_000))
            llm = "llm" if outcome.ok else f"fallback: {outcome.fallback_reason}"
        query = f"{request.query} {agent}"
        hits = self.runtime.backend.bm25(request.index, query, k=request.k, filters=request.filters)
        return StepOutcome(agent=agent, hits={h.doc_id: h.score for h in hits}, llm=llm, pid=os.getpid())

    def merge(self, state: StepState, results: list[StepOutcome]) -> StepState:
        pool = dict(state.pool)
        found_by = {k: list(v) for k, v in state.found_by.items()}
        for result in results:
            for doc_id, score in result.hits.items():
                pool[doc_id] = max(pool.get(doc_id, 0.0), score)
                found_by.setdefault(doc_id, []).append(f"{result.agent}@{state.round + 1}")
        return StepState(request=state.request, round=state.round + 1, pool=pool, found_by=found_by,
                         agents=[*state.agents, [r.agent for r in results]])

    def finish(self, state: StepState) -> SearchResponse:
        request = self._request(state)
        ranked = sorted(state.pool.items(), key=lambda item: (-item[1], item[0]))[: request.k]
        hits = [Hit(doc_id=doc_id, score=score, scores={"pool": score},
                    provenance=[Provenance(agent=a.split("@")[0], round=int(a.split("@")[1]) if "@" in a else 0,
                                           rank=0) for a in state.found_by.get(doc_id, [])])
                for doc_id, score in ranked]
        return SearchResponse(hits=hits, trace={"pipeline": self.name, "rounds": state.round,
                                                "agents": state.agents, "candidates": len(state.pool)})

    def run(self, request: SearchRequest) -> SearchResponse:
        state = self.start(request)
        while (agents := self.plan(state)) is not None:
            state = self.merge(state, [self.rewrite(state, agent) for agent in agents])
        return self.finish(state)


register_pipeline("test-slow", SlowPipeline)
register_pipeline("test-stuck", StuckPipeline)
register_pipeline("test-steps", StepPipeline)
