"""Step 1 of an agentic search: the first pool and what the trained models say before any agent runs.

The probe (BM25 + kNN, or the router's) gives the hybrid pool. The law classifier predicts the
laws the question touches, mixed with the laws of the best hits and the laws the question names
(:mod:`service.agents.law_evidence`; the LLM picks among them when configured and the prefilter is
on), the memory of training questions votes for articles (its best candidates join the pool), so do
the articles the question cites, a pass restricted to the predicted laws adds its hits, and the
planner gets its query features.

Example::

    state = AgenticStart(settings=..., backend=..., retrieval=..., hybrid=..., llm=None, rounds=True)(
        request, options, models, resources, probe=None)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from service.agents.law_evidence import LawEvidence
from service.agents.prefilter import LawPrediction, LlmLawPredictor, prefilter_laws
from service.agents.rewriters.decompose import split_issues
from service.agents.vocabulary import Vocabulary, unseen_share
from service.analysis.chain import analyzer_for
from service.analysis.language import detect_language
from service.backends.base import SearchBackend
from service.config import Settings
from service.corpus.citations import cites_of
from service.corpus.model import Filters
from service.llm.client import LlmClient
from service.models import TrainedModels
from service.pipelines.agentic_state import AgenticOptions, AgenticState, jsonable_options
from service.pipelines.base import Probe, RetrievalOf, SearchRequest
from service.pipelines.candidates import add_ranked, allowed, by_rank, links, seed_pool
from service.pipelines.hybrid import HybridPipeline
from service.pipelines.resources import IndexResources
from service.retrieval.weights import FusionWeights, with_trained
from service.tracing import Stopwatch

MEMORY_VOTES_KEPT = 200


@dataclass(frozen=True, kw_only=True)
class AgenticStart:
    """Builds the first :class:`AgenticState` of a search (see the module docstring).

    Args:
        settings: ``retrieval.depth``, ``agents.memory_candidates``, ``agents.prefilter_depth``, ``llm``.
        backend, retrieval, hybrid: the index, each index's query embedder and fusion weights, and the
            probe and fusion.
        llm: the LLM client (``None`` offline).
        rounds: whether agents will run (the ``links`` planner feature is computed only then).
    """

    settings: Settings
    backend: SearchBackend
    retrieval: RetrievalOf
    hybrid: HybridPipeline
    llm: LlmClient | None
    rounds: bool

    def __call__(self, request: SearchRequest, options: AgenticOptions, models: TrainedModels | None,
                 resources: IndexResources, probe: Probe | None) -> AgenticState:
        """The state after the probe (or ``probe``), law prediction, memory votes and the prefilter pass."""
        watch = Stopwatch()
        retrieval = self.retrieval(request.index)
        if models is not None:
            models.check_embedder(retrieval.embedder.name)
        language = (request.lang or (models.language if models else "")
                    or detect_language(request.query, candidates=resources.languages or None,
                                       default=(resources.languages or ("en",))[0]))
        terms = analyzer_for(language).tokens(request.query)
        depth = max(request.k, self.settings.retrieval.depth)
        if probe is None:
            probe = self.hybrid.probe(request.query, request.index, k=depth, filters=request.filters,
                                      lang=request.lang, watch=watch)
        probe = replace(probe, weights=with_trained(probe.weights, models.fusion if models else None,
                                                    self.settings.retrieval))
        vector = probe.vector
        if vector is None:
            with watch.stage("embed"):
                vector = self.hybrid.query_vector(request.query, request.index)
        state = AgenticState(
            request={"query": request.query, "index": request.index, "k": request.k,
                     "filters": request.filters.to_dict() if request.filters else None, "lang": request.lang,
                     "explain": request.explain, "qid": request.qid, "options": jsonable_options(request.options)},
            options=options, language=language, terms=terms, vector=vector, pool=seed_pool(self.hybrid.fuse(probe)),
            resources=resources, term_weights=probe.term_weights if probe.long_query is not None else None)
        state.trace["models"] = ({"path": models.path, "components": models.components()} if models
                                 else "none (offline agents without training; reranker falls back to the pool order)")
        state.trace["fusion_weights"] = probe.weights.to_dict()
        with watch.stage("law"):
            self._predict_laws(state, models, resources)
        with watch.stage("memory"):
            self._consult_memory(state, models, resources)
            self._add_cited(state, resources)
        if options.prefilter:
            with watch.stage("prefilter"):
                self._prefilter(state, resources, probe.weights)
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
        evidence = None
        if models.law_mixer is not None:
            graph = resources.graph
            evidence = LawEvidence.gather(state.request["query"], laws,
                                          [graph.law_of(d) for d in by_rank(state.pool, "hybrid")], graph.laws())
            laws = models.law_mixer.probabilities(evidence)
        prediction = LawPrediction(laws)
        if self.llm is not None and state.options.prefilter:
            graph = resources.graph
            top_laws = [graph.law_of(d) for d in by_rank(state.pool, "hybrid")[:10]]
            prediction = LlmLawPredictor(self.llm).predict(state.request["query"], laws, top_laws,
                                                           state.llm_budget(self.settings.llm))
            state.count_llm([prediction.llm] if prediction.llm else [])
        state.law = prediction.to_trace(top=10)
        if evidence is not None:
            state.law["evidence"] = evidence.to_trace()
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
        add_ranked(state.pool, allowed(self.backend, state, candidates), "memory")

    def _add_cited(self, state: AgenticState, resources: IndexResources) -> None:
        """The articles the question cites (``Art. 725 Abs. 2 OR``) join the pool (ranks ``cited``)."""
        keys = cites_of(state.request["query"], lang=state.language)
        ids = list(dict.fromkeys(d for key in keys for d in resources.graph.resolve(key)))
        add_ranked(state.pool, allowed(self.backend, state, ids), "cited")

    def _prefilter(self, state: AgenticState, resources: IndexResources, weights: FusionWeights) -> None:
        laws = [(law, p) for law, p in state.law.get("laws", [])]
        if not laws or len(resources.graph.laws()) < 2:
            return
        chosen, widened = prefilter_laws(laws)
        if not chosen:
            return
        request = state.search_request()
        filters = (request.filters or Filters()).narrowed("law", tuple(chosen))
        depth = self.settings.agents.prefilter_depth
        bm25 = self.hybrid.bm25(request.query, request.index, k=depth, filters=filters, lang=request.lang)
        knn = (self.backend.knn(request.index, state.vector, k=depth, filters=filters)
               if state.vector is not None else [])
        fused = self.hybrid.fuse(Probe(bm25, knn, None, weights))[:depth]
        add_ranked(state.pool, [h.doc_id for h in fused], "prefilter")
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
            features["links"] = float(links(state, resources.graph))
        return features
