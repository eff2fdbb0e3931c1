"""The agentic pipelines: multi-agent query understanding and reranking (after LegalMALR).

``agentic`` (routing tiers 2 and 3)::

    probe (BM25 + kNN, reused from the router when given) → hybrid pool
      + law prediction (offline classifier; the LLM picks among its laws when configured)
      + votes of similar training questions (memory) and a law-prefiltered pass (recall-safe)
    rounds (≤ 4): planner → rewriters (in parallel) → each rewrite retrieves top-30 hybrid,
      the light reranker keeps 10 → merged into the pool by document id, with provenance
    finish: pool features → reranker (learned | llm | cross-encoder | none) → top k, trace

``hybrid+rerank`` (routing tier 1) is the same without rounds, prefilter or agents, reranked by
the model trained on hybrid pools.

The pipeline is step-wise so that Celery can run a round's rewrites in parallel:
``start → (plan → rewrite × agents → merge)* → finish``; :class:`AgenticState` and
:class:`StepResult` travel as plain JSON. :meth:`AgenticPipeline.run` is the in-process loop.

Example::

    pipe = runtime.pipeline("agentic")
    response = pipe.run(SearchRequest("公司辞退我不给补偿怎么办", index="stard", k=10, explain=True))
    response.trace["rounds"], response.trace["agents"], response.trace["reranker"]
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

from service.agents.base import (
    REWRITING_AGENTS,
    AgentName,
    Evidence,
    EvidenceDoc,
    PlanDecision,
    Planner,
    PlanView,
    Rewrite,
    Rewriter,
)
from service.agents.planner import LlmPlanner, OfflinePlanner
from service.agents.prefilter import LawPrediction, LlmLawPredictor, prefilter_laws
from service.agents.rewriters.decompose import split_issues
from service.agents.vocabulary import Vocabulary, unseen_share
from service.analysis.chain import analyzer_for
from service.analysis.language import detect_language
from service.config import Settings
from service.corpus.model import Filters, Hit, LegalDoc, Provenance, Query
from service.errors import ConfigError
from service.llm.budget import CallBudget
from service.llm.client import LlmClient
from service.models import TrainedModels, load_models
from service.pipelines.agentic_state import AgenticOptions, AgenticState, StepResult, jsonable_options
from service.pipelines.base import Probe, SearchRequest, SearchResponse
from service.pipelines.build import Runtime
from service.pipelines.hybrid import HybridPipeline
from service.pipelines.resources import IndexResources
from service.plugins import REWRITERS, resolve_reranker
from service.rerank.base import PoolOrderReranker, RerankContext, Reranker
from service.rerank.cross_encoder import CrossEncoderReranker
from service.rerank.features import FEATURE_NAMES, FeatureContext, pool_features, zscores_of
from service.rerank.learned import LearnedReranker
from service.rerank.light import Priors, light_scores, zscore
from service.rerank.llm import LlmReranker
from service.tracing import Stopwatch

log = logging.getLogger(__name__)

EVIDENCE_DOCS = 10
AGENT_WEIGHT = 2.0
"""Pool order: weight of an agent find (``1 / (10 + rank)`` per rewrite) next to the z-scored hybrid score."""
MEMORY_VOTES_KEPT = 200


# ----- the pipeline ----------------------------------------------------------------------------


class AgenticPipeline:
    """Planner, rewriters, pool and reranker over any backend. See the module docstring.

    Args:
        runtime: backend, embedder and settings.
        name: ``agentic`` or ``hybrid+rerank``.
        rounds: whether agents may run (``False`` for ``hybrid+rerank``).
        models: trained models (default: ``settings.index.model_dir``, loaded lazily).
    """

    def __init__(self, runtime: Runtime, *, name: str = "agentic", rounds: bool = True,
                 models: TrainedModels | None = None) -> None:
        self.runtime = runtime
        self.settings: Settings = runtime.settings
        self.name = name
        self.rounds = rounds
        self._models = models
        self._models_loaded = models is not None
        self._lock = threading.Lock()
        self._rewriters: dict[tuple[str, int], Rewriter] = {}
        self._client: LlmClient | None = None
        self._cross_encoder: CrossEncoderReranker | None = None
        self._hybrid: HybridPipeline | None = None

    @classmethod
    def from_runtime(cls, runtime: Runtime, *, name: str, rounds: bool) -> AgenticPipeline:
        """The pipeline of :data:`service.plugins.PIPELINES` entry ``name`` (``agentic`` or ``hybrid+rerank``)."""
        return cls(runtime, name=name, rounds=rounds)

    # ----- lazily built parts ------------------------------------------------------------------

    @property
    def hybrid(self) -> HybridPipeline:
        """The hybrid pipeline whose probe and fusion the agentic search starts from."""
        if self._hybrid is None:
            self._hybrid = HybridPipeline(self.runtime.backend, self.runtime.embedder, self.settings.retrieval)
        return self._hybrid

    def models(self) -> TrainedModels | None:
        """The trained models (``None`` without a model folder)."""
        with self._lock:
            if not self._models_loaded:
                self._models = load_models(self.settings.index.model_dir,
                                           compile_trees=self.settings.agents.compiled_trees)
                self._models_loaded = True
            models = self._models
        if models is not None:
            models.check_embedder(self.runtime.embedder.name)
        return models

    @property
    def llm_enabled(self) -> bool:
        return self.settings.llm.enabled

    def client(self) -> LlmClient:
        """The LLM client (built on first use; only called when an LLM is configured)."""
        with self._lock:
            if self._client is None:
                self._client = LlmClient(self.settings.llm)
            return self._client

    def rewriter(self, agent: str) -> Rewriter:
        """The rewriter of ``agent``: the LLM one when an LLM is configured, else the offline one.

        Raises:
            InvalidInput: for an unknown agent name.
        """
        models = self.models()
        key = (agent, id(models))  # a reloaded model folder gets fresh rewriters
        with self._lock:
            cached = self._rewriters.get(key)
        if cached is not None:
            return cached
        plugin = REWRITERS.entry(agent)
        rewriter: Rewriter = plugin.load().from_models(models)
        if self.llm_enabled:
            rewriter = plugin.load_llm()(self.client(), rewriter)
        with self._lock:
            self._rewriters[key] = rewriter
        return rewriter

    def planner(self) -> Planner:
        """The LLM planner when an LLM is configured (falling back to the offline one), else the offline one."""
        models = self.models()
        offline = OfflinePlanner(models.planner if models else None)
        return LlmPlanner(self.client(), offline) if self.llm_enabled else offline

    def default_options(self) -> AgenticOptions:
        """The options a request gets for keys it does not set (from the ``[agents]`` settings)."""
        cfg = self.settings.agents
        if not self.rounds:
            return AgenticOptions(reranker=cfg.reranker, agents=(), max_rounds=0, prefilter=False, hyde=False,
                                  citations=False)
        return AgenticOptions(reranker=cfg.reranker, max_rounds=cfg.max_rounds)

    def _budget(self, state: AgenticState) -> CallBudget:
        if state.budget is None:
            cfg = self.settings.llm
            state.budget = CallBudget(max(0, cfg.max_calls_per_query - state.llm_calls),
                                      max(0, cfg.max_tokens_per_query - state.llm_tokens))
        return state.budget

    def _resources(self, state: AgenticState) -> IndexResources:
        """The index resources, looked up once per query (each lookup asks the engine for a count)."""
        if state.resources is None:
            state.resources = IndexResources.get(self.runtime.backend, state.request["index"], self.models())
        return state.resources

    # ----- step 1: start -----------------------------------------------------------------------

    def start(self, request: SearchRequest, probe: Probe | None = None) -> AgenticState:
        """Probe (or reuse ``probe``), predict laws, consult the memory, run the prefilter pass.

        Raises:
            InvalidInput: for a bad request or bad options.
            LexsearchError: from the engine, or for an unreadable model folder.
        """
        request = request.validated(self.settings.retrieval.max_query_chars)
        options = AgenticOptions.parse(request.options, self.default_options())
        if not self.rounds:
            options = replace(options, agents=(), max_rounds=0, prefilter=False, hyde=False)
        watch = Stopwatch()
        models = self.models()
        resources = IndexResources.get(self.runtime.backend, request.index, models)
        language = (request.lang or (models.language if models else "")
                    or detect_language(request.query, candidates=resources.languages or None,
                                       default=(resources.languages or ("en",))[0]))
        terms = analyzer_for(language).tokens(request.query)
        depth = max(request.k, self.settings.retrieval.depth)
        if probe is None:
            probe = self.hybrid.probe(request.query, request.index, k=depth, filters=request.filters,
                                      lang=request.lang, watch=watch)
        vector = probe.vector
        if vector is None:
            with watch.stage("embed"):
                vector = self.runtime.embedder.embed_queries([request.query])[0]
        pool: dict[str, Hit] = {}
        for rank, hit in enumerate(self.hybrid.fuse(probe), start=1):
            pool[hit.doc_id] = Hit(doc_id=hit.doc_id, score=hit.score,
                                   scores={**hit.scores, "hybrid": hit.score},
                                   ranks={**hit.ranks, "hybrid": rank},
                                   provenance=[Provenance("hybrid", 0, rank, "")])
        state = AgenticState(
            request={"query": request.query, "index": request.index, "k": request.k,
                     "filters": request.filters.to_dict() if request.filters else None, "lang": request.lang,
                     "explain": request.explain, "qid": request.qid, "options": jsonable_options(request.options)},
            options=options, language=language, terms=terms, vector=vector, pool=pool, resources=resources)
        state.trace["models"] = ({"path": models.path, "components": models.components()} if models
                                 else "none (offline agents without training; reranker falls back to the pool order)")
        with watch.stage("law"):
            self._predict_laws(state, models, resources)
        with watch.stage("memory"):
            self._consult_memory(state, models, resources)
        if options.prefilter:
            with watch.stage("prefilter"):
                self._prefilter(state, resources)
        state.features = self._planner_features(state, resources, probe)
        for stage, ms in watch.stages.items():
            state.add_time(stage, ms)
        return state

    def _predict_laws(self, state: AgenticState, models: TrainedModels | None, resources: IndexResources) -> None:
        if models is None or models.law_classifier is None:
            state.law = {"mode": "none", "laws": []}
            return
        clf = models.law_classifier
        section_p = clf.section_probabilities(state.terms, state.vector)
        laws = clf.laws_from(section_p)
        prediction = LawPrediction(laws)
        if self.llm_enabled and state.options.prefilter:
            graph = resources.graph
            top_laws = [graph.law_of(d) for d in _by_rank(state.pool, "hybrid")[:10]]
            prediction = LlmLawPredictor(self.client()).predict(state.request["query"], laws, top_laws,
                                                                self._budget(state))
            self._count_llm(state, [prediction.llm] if prediction.llm else [])
        state.law = prediction.to_trace(top=10)
        state.law["laws"] = [[law, p] for law, p in prediction.laws if p > 1e-4][:50]
        order = np.argsort(-section_p)[:50]
        state.law["sections"] = {clf.sections[i]: float(section_p[i]) for i in order if section_p[i] > 1e-4}

    def _consult_memory(self, state: AgenticState, models: TrainedModels | None, resources: IndexResources) -> None:
        if models is None or models.memory is None:
            return
        sims = models.memory.similarities(state.terms, state.vector)
        votes = models.memory.votes_from(sims)
        kept = [(d, v) for d, v in votes.items() if d in resources.graph][:MEMORY_VOTES_KEPT]
        state.memory = {d: [v.vote, v.best, v.rank] for d, v in kept}
        state.features["memory_top_sim"] = float(sims.max()) if len(sims) else 0.0
        candidates = [d for d, _ in kept[: self.settings.agents.memory_candidates]]
        candidates = self._allowed(state, candidates)
        for rank, doc_id in enumerate(candidates, start=1):
            hit = state.pool.get(doc_id)
            if hit is None:
                hit = state.pool[doc_id] = Hit(doc_id=doc_id, score=0.0)
            hit.ranks["memory"] = rank
            hit.provenance.append(Provenance("memory", 0, rank, ""))

    def _prefilter(self, state: AgenticState, resources: IndexResources) -> None:
        laws = [(law, p) for law, p in state.law.get("laws", [])]
        if not laws or len(resources.graph.laws()) < 2:
            return
        chosen, widened = prefilter_laws(laws)
        if not chosen:
            return
        request = state.search_request()
        filters = (request.filters or Filters()).narrowed("law", tuple(chosen))
        depth = self.settings.agents.prefilter_depth
        backend = self.runtime.backend
        bm25 = backend.bm25(request.index, request.query, k=depth, filters=filters, lang=request.lang)
        knn = backend.knn(request.index, state.vector, k=depth, filters=filters) if state.vector is not None else []
        fused = self.hybrid.fuse(Probe(bm25, knn, None))[:depth]
        for rank, hit in enumerate(fused, start=1):
            target = state.pool.get(hit.doc_id)
            if target is None:
                target = state.pool[hit.doc_id] = Hit(doc_id=hit.doc_id, score=0.0)
            target.ranks["prefilter"] = rank
            target.provenance.append(Provenance("prefilter", 0, rank, ""))
        state.trace["prefilter"] = {"laws": chosen, "widened": widened, "hits": len(fused)}

    def _planner_features(self, state: AgenticState, resources: IndexResources, probe: Probe) -> dict[str, float]:
        features = dict(state.features)
        features["terms"] = float(len(state.terms))
        features["parts"] = float(len(split_issues(state.request["query"], state.language)))
        vocab = resources.vocabulary
        if isinstance(vocab, Vocabulary) or len(set(state.terms)) <= 30:
            features["unseen"] = unseen_share(vocab, state.terms)
        laws = state.law.get("laws", [])
        features["law_top_p"] = float(laws[0][1]) if laws else 0.0
        top_b = {h.doc_id for h in probe.bm25[:10]}
        top_k = {h.doc_id for h in probe.knn[:10]}
        features["overlap"] = len(top_b & top_k) / 10.0 if top_b and top_k else 0.0
        features["pool"] = float(len(state.pool))
        if self.rounds:  # only the planner reads it, and ordering the pool costs a few ms
            features["links"] = float(self._links(state, resources))
        return features

    @staticmethod
    def _links(state: AgenticState, resources: IndexResources) -> int:
        graph = resources.graph
        return sum(len(graph.cites(d)) + len(graph.cited_by(d)) for d in _pool_order(state, graph)[:5])

    def _allowed(self, state: AgenticState, ids: Sequence[str]) -> list[str]:
        """``ids`` that pass the request's filters (documents fetched only when there are filters)."""
        filters = state.search_request().filters
        if not filters or not ids:
            return list(ids)
        docs = self._fetch(state, ids)
        return [d for d in ids if d in docs and filters.matches(docs[d])]

    def _fetch(self, state: AgenticState, ids: Sequence[str]) -> dict[str, LegalDoc]:
        missing = [d for d in ids if d not in state.docs]
        if missing:
            state.docs.update(self.runtime.backend.fetch(state.request["index"], missing))
        return {d: state.docs[d] for d in ids if d in state.docs}

    def pool_order(self, state: AgenticState) -> list[str]:
        """The pool's document ids in the heuristic (light) order, best first."""
        return _pool_order(state, self._resources(state).graph)

    # ----- step 2: plan ------------------------------------------------------------------------

    def plan(self, state: AgenticState) -> list[str] | None:
        """The agents of the next round, or ``None`` to stop (the decision is kept in the trace)."""
        start = time.perf_counter()
        allowed = [a for a in state.options.agents if a in REWRITING_AGENTS]
        if state.options.hyde and self.llm_enabled and state.round == 0:
            allowed.append(AgentName.HYDE.value)
        if not self.rounds or state.options.max_rounds == 0 or not allowed:
            decision = PlanDecision(None, reason="no rounds requested")
        else:
            top = [{"citation": d.citation} for d in
                   self._fetch(state, self.pool_order(state)[:5]).values()] if self.llm_enabled else []
            view = PlanView(question=state.request["query"], language=state.language, round=state.round,
                            max_rounds=state.options.max_rounds, allowed=allowed, used=state.used,
                            new_per_round=state.new_per_round, features=state.features, top=top)
            decision = self.planner().plan(view, self._budget(state))
            if decision.llm:
                self._count_llm(state, [decision.llm])
        entry = {"round": state.round + 1, "agents": decision.agents, "mode": decision.mode,
                 "reason": decision.reason}
        if decision.fallback:
            entry["fallback"] = decision.fallback
        state.trace.setdefault("planner", []).append(entry)
        state.add_time("plan", (time.perf_counter() - start) * 1000)
        return list(decision.agents) if decision.agents else None

    # ----- step 3: rewrite ---------------------------------------------------------------------

    def evidence(self, state: AgenticState, resources: IndexResources) -> Evidence:
        """The pool as the rewriters see it: the best documents by the light order, and the priors."""
        ids = _pool_order(state, resources.graph)[:EVIDENCE_DOCS]
        docs = self._fetch(state, ids)
        top = [EvidenceDoc(docs[d], state.pool[d].score, rank) for rank, d in enumerate(ids, start=1) if d in docs]
        return Evidence(round=state.round + 1, language=state.language, terms=state.terms, top=top,
                        law_probabilities=[(law, p) for law, p in state.law.get("laws", [])], tried=state.tried,
                        query_vector=state.vector,
                        graph=resources.graph if state.options.citations else resources.graph.without_citations(),
                        vocabulary=resources.vocabulary,
                        budget=self._budget(state))

    def rewrite(self, state: AgenticState, agent: str) -> StepResult:
        """One agent's rewrites for the next round, each retrieved (top-30) and pruned (top-10).

        Independent of the round's other agents, so Celery may run them in parallel.
        """
        start = time.perf_counter()
        resources = self._resources(state)
        evidence = self.evidence(state, resources)
        query = Query(state.request["query"], state.request["qid"], state.language)
        output = self.rewriter(agent).rewrite(query, evidence)
        step = StepResult(agent=agent, round=state.round + 1, mode=output.mode, fallback=output.fallback,
                          rewrites=list(output.rewrites), llm=list(output.llm), discarded=list(output.discarded))
        step.hits, step.scores = self._retrieve(state, resources, step.rewrites)
        step.ms = round((time.perf_counter() - start) * 1000, 3)
        return step

    def _retrieve(self, state: AgenticState, resources: IndexResources, rewrites: Sequence[Rewrite]
                  ) -> tuple[list[list[Hit]], list[dict[str, float]]]:
        """Per rewrite: the pruned hits, and the z-scored retrieval score of every hit retrieved."""
        request = state.search_request()
        cfg = self.settings.agents
        backend = self.runtime.backend
        to_embed = [r.text for r in rewrites if r.dense and r.vector is None and not r.doc_ids]
        vectors = dict(zip(to_embed, self.runtime.embedder.embed_queries(to_embed), strict=True)) if to_embed else {}
        priors = self._priors(state, resources)
        out: list[list[Hit]] = []
        evidence: list[dict[str, float]] = []
        for rw in rewrites:
            if rw.doc_ids:
                ids = self._allowed(state, [d for d in rw.doc_ids if d in resources.graph])
                n = len(ids)
                candidates = [Hit(doc_id=d, score=float(n - i)) for i, d in enumerate(ids)]
            else:
                bm25: list[Hit] = []
                knn: list[Hit] = []
                if rw.lexical:
                    if rw.terms is not None:
                        bm25 = backend.bm25_terms(request.index, dict(rw.terms), k=cfg.rewrite_depth,
                                                  filters=request.filters)
                    else:
                        bm25 = backend.bm25(request.index, rw.text, k=cfg.rewrite_depth, filters=request.filters,
                                            lang=state.language)
                if rw.dense:
                    vector = rw.vector if rw.vector is not None else vectors.get(rw.text)
                    if vector is not None:
                        knn = backend.knn(request.index, vector, k=cfg.rewrite_depth, filters=request.filters)
                candidates = self.hybrid.fuse(Probe(bm25, knn, None)) if bm25 and knn else (bm25 or knn)
            raw = [h.score for h in candidates]
            scores = light_scores(raw, [h.doc_id for h in candidates], priors)
            order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))[: cfg.prune_to]
            out.append([Hit(doc_id=candidates[i].doc_id, score=scores[i]) for i in order])
            evidence.append({h.doc_id: round(float(z), 4) for h, z in zip(candidates, zscore(raw), strict=True)})
        return out, evidence

    def _priors(self, state: AgenticState, resources: IndexResources) -> Priors:
        models = self.models()
        return Priors(graph=resources.graph, law_probabilities=state.law_prediction(),
                      prior=models.prior if models else None, memory=state.memory_votes())

    # ----- step 4: merge -----------------------------------------------------------------------

    def merge(self, state: AgenticState, results: Sequence[StepResult]) -> AgenticState:
        """Add the round's pruned hits to the pool by document id, with provenance; count what is new."""
        start = time.perf_counter()
        round_ = state.round + 1
        new_total = 0
        entries = []
        for step in sorted(results, key=lambda s: s.agent):
            new = 0
            scores = step.scores or [{} for _ in step.rewrites]
            for rewrite, hits, evidence in zip(step.rewrites, step.hits, scores, strict=True):
                state.tried.append(rewrite.text)
                for rank, hit in enumerate(hits, start=1):
                    target = state.pool.get(hit.doc_id)
                    if target is None:
                        target = state.pool[hit.doc_id] = Hit(doc_id=hit.doc_id, score=0.0)
                        new += 1
                    target.provenance.append(Provenance(step.agent, round_, rank, rewrite.text[:200]))
                key = f"agent:{step.agent}"
                for doc_id, z in evidence.items():
                    target = state.pool.get(doc_id)
                    if target is not None:
                        target.scores[key] = max(z, target.scores.get(key, z))
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
            self._count_llm(state, step.llm)
            state.add_time(f"agent:{step.agent}", step.ms)
        state.trace.setdefault("agents", []).append({"round": round_, "steps": entries})
        state.round = round_
        state.used.append(sorted(s.agent for s in results))
        state.new_per_round.append(new_total)
        state.features["pool"] = float(len(state.pool))
        state.order = None  # the pool changed
        state.features["links"] = float(self._links(state, self._resources(state)))
        state.budget = None  # rebuilt from the counters, so a resumed state sees what is left
        state.add_time("merge", (time.perf_counter() - start) * 1000)
        return state

    # ----- step 5: finish ----------------------------------------------------------------------

    def finish(self, state: AgenticState) -> SearchResponse:
        """Rerank the pool and answer: top ``k`` hits, with the trace."""
        watch = Stopwatch()
        request = state.search_request()
        models = self.models()
        resources = self._resources(state)
        hits = list(state.pool.values())
        with watch.stage("features"):
            context = self.feature_context(state, resources, models)
            features = pool_features(hits, context)
        reranker, note = self._reranker(state.options.reranker, models)
        # The learned reranker always has features, and the LLM and cross-encoder rerankers fall back
        # to the learned order when there is one: only the others need the heuristic order.
        learned_fallback = reranker.name in ("llm", "cross-encoder") and self._learned_model(models) is not None
        light_order = ([] if isinstance(reranker, LearnedReranker) or learned_fallback
                       else _pool_order(state, resources.graph))
        rerank_context = RerankContext(features=features, feature_names=FEATURE_NAMES, fallback=light_order,
                                       budget=self._budget(state))
        with watch.stage("rerank"):
            if reranker.name in ("llm", "cross-encoder"):
                learned = self._learned_model(models)
                if learned is not None:
                    scores = learned.scores(features, FEATURE_NAMES)
                    rerank_context.fallback = [hits[i].doc_id for i in np.argsort(-scores, kind="stable")]
                rerank_context.docs = self._fetch(state, rerank_context.fallback[:50])
            ranked = reranker.rerank(Query(request.query, request.qid, state.language), hits, k=request.k,
                                     context=rerank_context)
        notes = dict(rerank_context.notes)
        if notes.get("llm"):
            self._count_llm(state, [notes["llm"]])
        for stage, ms in watch.stages.items():
            state.add_time(stage, ms)
        trace = self._trace(state, reranker, note, notes)
        return SearchResponse(hits=ranked, trace=trace)

    def feature_context(self, state: AgenticState, resources: IndexResources,
                        models: TrainedModels | None) -> FeatureContext:
        """The query-level inputs of the reranker features for ``state``."""
        return FeatureContext(
            graph=resources.graph, law_probabilities=state.law_prediction(),
            section_probabilities={k: float(v) for k, v in state.law.get("sections", {}).items()},
            prior=models.prior if models else None, memory=state.memory_votes(),
            memory_top_sim=state.features.get("memory_top_sim", 0.0), query_terms=len(state.terms),
            depth=max(int(state.request["k"]), self.settings.retrieval.depth))

    def _learned_model(self, models: TrainedModels | None) -> LearnedReranker | None:
        if models is None:
            return None
        if self.rounds:
            return models.reranker_agentic or models.reranker_hybrid
        return models.reranker_hybrid or models.reranker_agentic

    def _reranker(self, wanted: str, models: TrainedModels | None) -> tuple[Reranker, str]:
        """The reranker to use and a note when it is not the one asked for."""
        wanted = resolve_reranker(wanted, llm_enabled=self.llm_enabled)
        if wanted == "llm":
            if self.llm_enabled:
                return LlmReranker(self.client(), candidates=self.settings.agents.llm_rerank_candidates), ""
            wanted, note = "learned", "no LLM configured; used the learned reranker"
        elif wanted == "cross-encoder":
            path = self.settings.agents.cross_encoder_path
            if not path:
                raise ConfigError("reranker cross-encoder needs agents.cross_encoder_path "
                                  "(LEXSEARCH_AGENTS_CROSS_ENCODER_PATH), a local CrossEncoder folder")
            with self._lock:
                if self._cross_encoder is None or self._cross_encoder.path != path:
                    self._cross_encoder = CrossEncoderReranker(path)
                return self._cross_encoder, ""
        else:
            note = ""
        if wanted == "learned":
            learned = self._learned_model(models)
            if learned is not None:
                return learned, note
            return PoolOrderReranker(), "no trained reranker (no model folder); kept the heuristic pool order"
        return PoolOrderReranker(), note

    @staticmethod
    def _count_llm(state: AgenticState, traces: Sequence[dict[str, Any]]) -> None:
        """Add LLM call summaries (``LlmOutcome.to_trace``) to the state's counters."""
        for t in traces:
            if not t:
                continue
            state.llm_calls += int(t.get("calls", 0))
            state.llm_tokens += int(t.get("tokens", 0))
            state.llm_fallbacks += 0 if t.get("ok") else 1

    def _trace(self, state: AgenticState, reranker: Reranker, note: str, notes: dict[str, Any]) -> dict[str, Any]:
        rerank_trace: dict[str, Any] = {"name": reranker.name, **notes}
        if note:
            rerank_trace["note"] = note
        agent_rounds = state.trace.get("agents", [])
        return {
            "pipeline": self.name,
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
            "models": state.trace.get("models"),
            "options": state.options.to_json(),
        }

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
                if len(agents) == 1 or self.settings.agents.workers == 1:
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


def _by_rank(pool: Mapping[str, Hit], key: str) -> list[str]:
    ranked = sorted((h for h in pool.values() if key in h.ranks), key=lambda h: h.ranks[key])
    return [h.doc_id for h in ranked]


def _pool_order(state: AgenticState, graph: Any) -> list[str]:
    """The pool's heuristic order, computed once per pool state (``merge`` clears it)."""
    if state.order is None:
        state.order = _pool_order_ids(state, graph)
    return state.order


def _pool_order_ids(state: AgenticState, graph: Any) -> list[str]:
    """The pool in its heuristic order: z-scored hybrid score, agent finds, memory, prefilter and priors."""
    hits = list(state.pool.values())
    z, floor = zscores_of(hits, "hybrid")
    priors = Priors(graph=graph, law_probabilities=state.law_prediction(), memory=state.memory_votes())
    scores = []
    for h in hits:
        value = z.get(h.doc_id, floor)
        value += AGENT_WEIGHT * sum(10.0 / (10 + p.rank) for p in h.provenance if p.round >= 1) / 10.0
        if "prefilter" in h.ranks:
            value += 1.0 / math.sqrt(h.ranks["prefilter"])
        value += priors.bonus(h.doc_id)
        scores.append(value)
    for h, s in zip(hits, scores, strict=True):
        h.score = s
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
    return [hits[i].doc_id for i in order]

