"""The agentic pipelines: multi-agent query understanding and reranking (after LegalMALR).

``agentic`` (routing tiers 2 and 3)::

    probe (BM25 + kNN, reused from the router when given) → hybrid pool
      + law prediction (offline classifier; the LLM picks among its laws when configured)
      + votes of similar training questions (memory), law- and section-prefiltered passes (recall-safe)
      + each issue of a multi-issue question searched with its own quota; co-cited companions
    rounds (≤ 4): planner → rewriters (in parallel) → each rewrite retrieves top-30 hybrid,
      the light reranker keeps 10 → merged into the pool by document id, with provenance
    finish: pool features → reranker (learned | llm | cross-encoder | none) → each issue's best in
      the first ten → top k, trace

``hybrid+rerank`` (routing tier 1) is the same without rounds, prefilter or agents, reranked by
the model trained on hybrid pools.

The pipeline is step-wise so that Celery can run a round's rewrites in parallel:
``start → (plan → rewrite × agents → merge)* → finish``; :class:`AgenticState` and
:class:`StepResult` travel as plain JSON. :meth:`AgenticPipeline.run` is the in-process loop.
Each step has a module of its own (``agentic_start``, ``agentic_rewrite``, ``agentic_finish``; the
pool's bookkeeping in ``candidates``); this one plans, merges and runs the loop. Everything the
pipeline uses (backend, embedder, trained models, LLM client, agents, rerankers) comes from the
:class:`~service.pipelines.build.Runtime`.

Example::

    pipe = runtime.pipeline("agentic")
    response = pipe.run(SearchRequest("公司辞退我不给补偿怎么办", index="stard", k=10, explain=True))
    response.trace["rounds"], response.trace["agents"], response.trace["reranker"]
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from service.agents.base import REWRITING_AGENTS, AgentName, PlanDecision, PlanView
from service.agents.factory import AgentFactory
from service.backends.base import SearchBackend
from service.config import Settings
from service.corpus.model import Provenance
from service.llm.client import LlmClient
from service.models import TrainedModels
from service.pipelines.agentic_finish import AgenticFinish
from service.pipelines.agentic_rewrite import RewriteStep
from service.pipelines.agentic_start import AgenticStart
from service.pipelines.agentic_state import AgenticOptions, AgenticState, StepResult
from service.pipelines.base import Probe, RetrievalOf, SearchRequest, SearchResponse
from service.pipelines.candidates import fetch, links, member, pool_order
from service.pipelines.hybrid import HybridPipeline
from service.pipelines.issue_pool import interleave_answers
from service.pipelines.resources import IndexResources, widen_law_filter
from service.rerank.base import RerankerParts
from service.rerank.features import FeatureContext, pool_features
from service.rerank.learned import LearnedReranker

if TYPE_CHECKING:
    import numpy as np

    from service.pipelines.build import Runtime


class AgenticPipeline:
    """Planner, rewriters, pool and reranker over any backend. See the module docstring.

    Args:
        name: ``agentic`` or ``hybrid+rerank``.
        rounds: whether agents may run (``False`` for ``hybrid+rerank``).
        settings: the ``retrieval``, ``agents`` and ``llm`` settings.
        backend, retrieval: the index, and each index's query embedder and fusion weights.
        hybrid: the hybrid pipeline whose probe and fusion the search starts from.
        models: the trained models (``None`` without a model folder), asked for on every search.
        agents: the rewriters and the planner.
        llm: the LLM client (``None`` offline).
        rerankers: the parts of the rerankers (LLM client, cross-encoder); the trained model is added
            per search.
    """

    def __init__(self, *, name: str, rounds: bool, settings: Settings, backend: SearchBackend, retrieval: RetrievalOf,
                 hybrid: HybridPipeline, models: Callable[[], TrainedModels | None], agents: AgentFactory,
                 llm: LlmClient | None, rerankers: RerankerParts) -> None:
        self.name = name
        self.rounds = rounds
        self.settings = settings
        self.backend = backend
        self.models = models
        self.agents = agents
        self.llm = llm
        self._parts = (retrieval, hybrid, rerankers)
        self._offline: AgenticPipeline | None = None
        self._start = AgenticStart(settings=settings, backend=backend, retrieval=retrieval, hybrid=hybrid, llm=llm,
                                   agents=agents, rounds=rounds)
        self._rewrite = RewriteStep(settings=settings, backend=backend, retrieval=retrieval, hybrid=hybrid)
        self._finish = AgenticFinish(settings=settings, backend=backend, rerankers=rerankers)

    @classmethod
    def from_runtime(cls, runtime: Runtime, *, name: str = "agentic", rounds: bool = True,
                     models: TrainedModels | None = None) -> AgenticPipeline:
        """The pipeline of :data:`service.plugins.PIPELINES` entry ``name``, with the runtime's collaborators.

        ``models`` replaces the runtime's model folder (training builds pipelines over each fold's models).
        """
        hybrid = runtime.pipeline("hybrid")
        assert isinstance(hybrid, HybridPipeline)
        return cls(name=name, rounds=rounds, settings=runtime.settings, backend=runtime.backend,
                   retrieval=runtime.retrieval, hybrid=hybrid,
                   models=runtime.models if models is None else lambda: models, agents=runtime.agents,
                   llm=runtime.llm_client(), rerankers=runtime.reranker_parts())

    def default_options(self) -> AgenticOptions:
        """The options a request gets for keys it does not set (from the ``[agents]`` settings)."""
        cfg = self.settings.agents
        if not self.rounds:
            return AgenticOptions(reranker=cfg.reranker, agents=(), max_rounds=0, prefilter=False, hyde=False,
                                  citations=False)
        return AgenticOptions(reranker=cfg.reranker, max_rounds=cfg.max_rounds)

    def _resources(self, state: AgenticState) -> IndexResources:
        """The index resources, looked up once per query (each lookup asks the engine for a count)."""
        if state.resources is None:
            state.resources = IndexResources.get(self.backend, state.request["index"], self.models())
        return state.resources

    def pool_order(self, state: AgenticState) -> list[str]:
        """The pool's document ids in the heuristic (light) order, best first."""
        return pool_order(state, self._resources(state).graph)

    # ----- step 1: start -----------------------------------------------------------------------

    def start(self, request: SearchRequest, probe: Probe | None = None) -> AgenticState:
        """Probe (or reuse ``probe``), predict laws, consult the memory, run the prefilter pass.

        Raises:
            InvalidInput: for a bad request or bad options.
            LexsearchError: from the engine, or for an unreadable model folder.
        """
        request = widen_law_filter(self.backend, request.validated(self.settings.retrieval.max_query_chars))
        options = AgenticOptions.parse(request.options, self.default_options())
        if not self.rounds:
            options = replace(options, agents=(), max_rounds=0, prefilter=False, hyde=False)
        models = self.models()
        resources = IndexResources.get(self.backend, request.index, models)
        return self._start(request, options, models, resources, probe)

    # ----- step 2: plan ------------------------------------------------------------------------

    def plan(self, state: AgenticState) -> list[str] | None:
        """The agents of the next round, or ``None`` to stop (the decision is kept in the trace)."""
        start = time.perf_counter()
        allowed = [a for a in state.options.agents if a in REWRITING_AGENTS]
        if state.issues or state.trace.get("issues", {}).get("mode") == "llm":  # decomposition already ran
            allowed = [a for a in allowed if a != AgentName.DECOMPOSE.value]
        if state.options.hyde and self.llm is not None and state.round == 0:
            allowed.append(AgentName.HYDE.value)
        if not self.rounds or state.options.max_rounds == 0 or not allowed:
            decision = PlanDecision(None, reason="no rounds requested")
        else:
            top = [{"citation": d.citation} for d in
                   fetch(self.backend, state, self.pool_order(state)[:5]).values()] if self.llm is not None else []
            view = PlanView(question=state.request["query"], language=state.language, round=state.round,
                            max_rounds=state.options.max_rounds, allowed=allowed, used=state.used,
                            new_per_round=state.new_per_round, features=state.features, top=top)
            decision = self.agents.planner(self.models()).plan(view, state.llm_budget(self.settings.llm))
            if decision.llm:
                state.count_llm([decision.llm])
        entry = {"round": state.round + 1, "agents": decision.agents, "mode": decision.mode,
                 "reason": decision.reason}
        if decision.fallback:
            entry["fallback"] = decision.fallback
        state.trace.setdefault("planner", []).append(entry)
        state.add_time("plan", (time.perf_counter() - start) * 1000)
        return list(decision.agents) if decision.agents else None

    # ----- step 3: rewrite ---------------------------------------------------------------------

    def rewrite(self, state: AgenticState, agent: str) -> StepResult:
        """One agent's rewrites for the next round, each retrieved (top-30) and pruned (top-10).

        Independent of the round's other agents, so Celery may run them in parallel.

        Raises:
            InvalidInput: for an unknown agent name.
        """
        models = self.models()
        return self._rewrite(state, agent, self.agents.rewriter(agent, models), models, self._resources(state))

    # ----- step 4: merge -----------------------------------------------------------------------

    def merge(self, state: AgenticState, results: Sequence[StepResult]) -> AgenticState:
        """Add the round's pruned hits to the pool by document id, with provenance; count what is new."""
        start = time.perf_counter()
        round_ = state.round + 1
        new_total = 0
        entries = []
        for step in sorted(results, key=lambda s: s.agent):
            new = _merge_step(state, step, round_)
            new_total += new
            entry: dict[str, Any] = {"agent": step.agent, "new": new, "rewrites": len(step.rewrites),
                                     "mode": step.mode, "ms": step.ms}
            if step.fallback:
                entry["fallback"] = step.fallback
            if step.discarded:
                entry["discarded"] = step.discarded
            if state.request.get("explain"):
                entry["queries"] = [r.text[:200] for r in step.rewrites]
            entries.append(entry)
            state.count_llm(step.llm)
            state.add_time(f"agent:{step.agent}", step.ms)
        state.trace.setdefault("agents", []).append({"round": round_, "steps": entries})
        state.round = round_
        state.used.append(sorted(s.agent for s in results))
        state.new_per_round.append(new_total)
        state.features["pool"] = float(len(state.pool))
        state.order = None  # the pool changed
        state.features["links"] = float(links(state, self._resources(state).graph))
        state.budget = None  # rebuilt from the counters, so a resumed state sees what is left
        state.add_time("merge", (time.perf_counter() - start) * 1000)
        return state

    # ----- step 5: finish ----------------------------------------------------------------------

    def finish(self, state: AgenticState) -> SearchResponse:
        """Rerank the pool and answer: top ``k`` hits, with the trace. A multi-issue question's ranking
        is then interleaved with each issue's own answer (option ``issue_answers``)."""
        models = self.models()
        response = self._finish(state, models, self._resources(state), self.learned_model(models), self.name)
        if state.options.issue_answers and len(state.issues) > 1:
            self._add_issue_answers(state, response)
        return response

    def offline(self) -> AgenticPipeline:
        """This pipeline without its LLM (itself when it has none): it answers the issues of a multi-issue
        question, so that they cost no LLM call beyond the question's own budget."""
        if self.llm is None:
            return self
        if self._offline is None:
            retrieval, hybrid, rerankers = self._parts
            self._offline = AgenticPipeline(name=self.name, rounds=self.rounds, settings=self.settings,
                                            backend=self.backend, retrieval=retrieval, hybrid=hybrid,
                                            models=self.models, agents=self.agents, llm=None, rerankers=rerankers)
        return self._offline

    def _add_issue_answers(self, state: AgenticState, response: SearchResponse) -> None:
        """Answer each issue as a question of its own, offline (no segmentation, no agent rounds, the
        learned reranker) and interleave the answers with ``response``'s ranking."""
        start = time.perf_counter()
        request = state.search_request()
        options = {**request.options, "issues": False, "max_rounds": 0, "reranker": "learned"}
        pipeline = self.offline()
        answers = [pipeline.run(replace(request, query=issue["text"], explain=False, options=options)).hits
                   for issue in state.issues]
        response.hits = interleave_answers(response.hits, answers, k=request.k, label="issue_answers")
        ms = round((time.perf_counter() - start) * 1000, 3)
        response.trace["issue_answers"] = {"issues": len(answers), "ms": ms}
        response.trace.setdefault("timings_ms", {})["issue_answers"] = ms

    def learned_model(self, models: TrainedModels | None) -> LearnedReranker | None:
        """The trained reranker of this pipeline: the one trained on its own kind of pool, else the other."""
        if models is None:
            return None
        if self.rounds:
            return models.reranker_agentic or models.reranker_hybrid
        return models.reranker_hybrid or models.reranker_agentic

    def pool_features(self, state: AgenticState) -> np.ndarray:
        """The reranker features of the pool's hits (in ``state.pool`` order), as at query time."""
        return pool_features(list(state.pool.values()), self.feature_context(state))

    def feature_context(self, state: AgenticState) -> FeatureContext:
        """The query-level inputs of the reranker features for ``state``."""
        return self._finish.feature_context(state, self._resources(state), self.models())

    # ----- the in-process loop -----------------------------------------------------------------

    def run(self, request: SearchRequest) -> SearchResponse:
        """Search: start, rounds of plan → parallel rewrites → merge, then finish."""
        return self.run_with_probe(request, None)

    def run_with_probe(self, request: SearchRequest, probe: Probe | None) -> SearchResponse:
        """Like :meth:`run`, reusing the router's BM25 + kNN ``probe`` when given."""
        started = time.perf_counter()
        state = self.start(request, probe)
        pool: ThreadPoolExecutor | None = None
        try:
            while True:
                agents = self.plan(state)
                if not agents:
                    break
                agents = list(dict.fromkeys(agents))
                if len(agents) == 1 or self.settings.agents.workers <= 1:  # 0: unresolved (no Runtime)
                    results = [self.rewrite(state, a) for a in agents]
                else:
                    if pool is None:
                        pool = ThreadPoolExecutor(max_workers=self.settings.agents.workers,
                                                  thread_name_prefix="agent")
                    results = list(pool.map(functools.partial(self.rewrite, state), agents))
                budget = state.budget
                state = self.merge(state, results)
                state.budget = budget  # in-process: keep sharing the one budget object
        finally:
            if pool is not None:
                pool.shutdown(wait=False)
        response = self.finish(state)
        response.trace["timings_ms"]["total"] = round((time.perf_counter() - started) * 1000, 3)
        return response


def _merge_step(state: AgenticState, step: StepResult, round_: int) -> int:
    """Add one agent's pruned hits to the pool, with provenance and its retrieval evidence on members
    already there; returns how many candidates were new."""
    new = 0
    scores = step.scores or [{} for _ in step.rewrites]
    key = f"agent:{step.agent}"
    for rewrite, hits, evidence in zip(step.rewrites, step.hits, scores, strict=True):
        state.tried.append(rewrite.text)
        for rank, hit in enumerate(hits, start=1):
            target, is_new = member(state.pool, hit.doc_id)
            new += is_new
            target.provenance.append(Provenance(step.agent, round_, rank, rewrite.text[:200]))
        for doc_id, z in evidence.items():
            target = state.pool.get(doc_id)
            if target is not None:
                target.scores[key] = max(z, target.scores.get(key, z))
    return new
