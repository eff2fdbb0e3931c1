"""Step 1 of an agentic search: the first pool and what the trained models say before any agent runs.

The probe (BM25 + kNN, or the router's) gives the hybrid pool. The law classifier predicts the
laws the question touches, mixed with the laws of the best hits and the laws the question names
(:mod:`service.agents.law_evidence`; the LLM picks among them when configured and the prefilter is
on), the memory of training questions votes for articles (its best candidates join the pool), so do
the articles the question cites, passes restricted to the predicted laws and to the most likely
sections add their hits, a multi-issue question has each issue searched with its own quota
(:mod:`service.pipelines.issue_pool`), the training companions of the best candidates join
(co-citation), and the planner gets its query features.

Example::

    state = AgenticStart(settings=..., backend=..., retrieval=..., hybrid=..., llm=None, agents=...,
                         rounds=True)(request, options, models, resources, probe=None)
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from service.agents.base import AgentName, Evidence
from service.agents.factory import AgentFactory
from service.agents.law_evidence import LawEvidence, mentioned_laws
from service.agents.prefilter import (
    LawPrediction,
    LlmLawPredictor,
    prefilter_laws,
    prefilter_sections,
    section_filter,
)
from service.agents.rewriters.decompose import split_issues
from service.agents.vocabulary import Vocabulary, unseen_share
from service.analysis.chain import analyzer_for
from service.analysis.language import question_language
from service.backends.base import SearchBackend
from service.config import Settings
from service.corpus.citations import SWISS_CODES, cites_of, law_alias
from service.corpus.model import Filters, Query
from service.embeddings.base import Embedder
from service.llm.client import LlmClient
from service.models import TrainedModels
from service.pipelines.agentic_state import AgenticOptions, AgenticState, jsonable_options
from service.pipelines.base import IndexRetrieval, Probe, RetrievalOf, SearchRequest
from service.pipelines.candidates import add_ranked, allowed, by_rank, links, seed_pool
from service.pipelines.hybrid import HybridPipeline
from service.pipelines.issue_pool import IssueSearch
from service.pipelines.resources import IndexResources
from service.rerank.cocitation import expand_pool
from service.retrieval.weights import FusionWeights, with_trained
from service.tracing import Stopwatch

MEMORY_VOTES_KEPT = 200


@dataclass(frozen=True, kw_only=True)
class AgenticStart:
    """Builds the first :class:`AgenticState` of a search (see the module docstring).

    Args:
        settings: ``retrieval.depth``, ``agents.memory_candidates``, ``agents.classifier_candidates``,
            ``agents.prefilter_depth``, ``llm``.
        backend, retrieval, hybrid: the index, each index's query embedder and fusion weights, and the
            probe and fusion.
        llm: the LLM client (``None`` offline).
        agents: the issue segmenter (offline, or the LLM's decomposition).
        rounds: whether agents will run (the ``links`` planner feature is computed only then).
    """

    settings: Settings
    backend: SearchBackend
    retrieval: RetrievalOf
    hybrid: HybridPipeline
    llm: LlmClient | None
    agents: AgentFactory
    rounds: bool

    def __call__(self, request: SearchRequest, options: AgenticOptions, models: TrainedModels | None,
                 resources: IndexResources, probe: Probe | None) -> AgenticState:
        """The state after the probe (or ``probe``), law prediction, memory votes and the prefilter pass."""
        watch = Stopwatch()
        retrieval = self.retrieval(request.index)
        if models is not None:
            models.check_embedder(retrieval.embedder.name)
        language = question_language(request.query, request.lang, trained=models.language if models else "",
                                     candidates=resources.languages)
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
            self._add_classified(state, models, resources)
            self._add_cited(state, resources)
        if options.prefilter:
            with watch.stage("prefilter"):
                self._prefilter(state, resources, probe.weights)
        if options.issues and AgentName.DECOMPOSE.value in options.agents:
            with watch.stage("issues"):
                self._search_issues(state, models, resources, retrieval.embedder, probe.weights)
        if options.cocitation and models is not None and models.cocitation is not None:
            with watch.stage("cocitation"):
                state.cocitation = expand_pool(state.pool, models.cocitation,
                                               allowed=functools.partial(allowed, self.backend, state))
        state.features = self._planner_features(state, resources, probe)
        for stage, ms in watch.stages.items():
            state.add_time(stage, ms)
        return state

    def _predict_laws(self, state: AgenticState, models: TrainedModels | None, resources: IndexResources) -> None:
        if models is None:
            self._mentioned_laws(state, resources)
            return
        if models.law_classifier is None:
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
        likely = ((law, p) for law, p in prediction.laws if p > 1e-4)
        state.law["laws"] = [[law, p] for law, p in itertools.islice(likely, 50)]
        order = np.argsort(-section_p)[:50]
        state.law["sections"] = {clf.sections[i]: float(section_p[i]) for i in order if section_p[i] > 1e-4}

    def _mentioned_laws(self, state: AgenticState, resources: IndexResources) -> None:
        """Without a model folder, the acts the question names or cites are its law prediction, in equal
        shares (``mode`` "named"): they narrow the prefilter pass and weigh in the pool's heuristic order.
        Nothing on an index of one law, or for a question that names none."""
        graph = resources.graph
        named = mentioned_laws(state.request["query"], graph.laws()) if len(graph.acts()) > 1 else []
        if not named:
            state.law = {"mode": "none", "laws": []}
            return
        share = 1.0 / len({law_alias(law) for law in named})
        state.law = {"mode": "named", "laws": [[law, share] for law in named]}

    def _consult_memory(self, state: AgenticState, models: TrainedModels | None, resources: IndexResources) -> None:
        if models is None or models.memory is None:
            return
        sims = models.memory.similarities(state.terms, state.vector)
        votes = models.memory.votes_from(sims)
        kept = list(itertools.islice(((d, v) for d, v in votes.items() if d in resources.graph), MEMORY_VOTES_KEPT))
        state.memory = {d: [v.vote, v.best, v.rank] for d, v in kept}
        state.features["memory_top_sim"] = float(sims.max()) if len(sims) else 0.0
        candidates = [d for d, _ in kept[: self.settings.agents.memory_candidates]]
        add_ranked(state.pool, allowed(self.backend, state, candidates), "memory")

    def _add_classified(self, state: AgenticState, models: TrainedModels | None, resources: IndexResources) -> None:
        """The article classifier's best articles join the pool (ranks ``classifier``)."""
        if models is None or models.article_classifier is None:
            return
        clf = models.article_classifier
        n = self.settings.agents.classifier_candidates
        best = [d for d in clf.top(state.scores_of(clf), 2 * n) if d in resources.graph][:n]
        add_ranked(state.pool, allowed(self.backend, state, best), "classifier")

    def _add_cited(self, state: AgenticState, resources: IndexResources) -> None:
        """The articles the question cites (``Art. 725 Abs. 2 OR``) join the pool (ranks ``cited``).

        In an index of one law, a citation without a law name ("§ 535", "Art. 5") names that law's
        article: lay questions about the BGB write "nach § 535" and leave the code unnamed."""
        acts = resources.graph.acts()
        keys = cites_of(state.request["query"], law=next(iter(acts)) if len(acts) == 1 else "", lang=state.language,
                        swiss=not acts.isdisjoint(SWISS_CODES))
        ids = list(dict.fromkeys(d for key in keys for d in resources.graph.resolve(key)))
        add_ranked(state.pool, allowed(self.backend, state, ids), "cited")

    def _prefilter(self, state: AgenticState, resources: IndexResources, weights: FusionWeights) -> None:
        """The law-prefiltered pass (several laws) and the section pass (the most likely sections)."""
        request = state.search_request()
        depth = self.settings.agents.prefilter_depth
        trace: dict[str, Any] = {}
        laws = [(law, p) for law, p in state.law.get("laws", [])]
        if laws and len(resources.graph.laws()) > 1:
            chosen, widened = prefilter_laws(laws)
            if chosen:
                filters = (request.filters or Filters()).narrowed("law", tuple(chosen))
                fused = self.hybrid.filtered(request.index, request.query, state.vector, k=depth, filters=filters,
                                             lang=request.lang, weights=weights, terms=state.term_weights)
                add_ranked(state.pool, [h.doc_id for h in fused], "prefilter")
                trace.update({"laws": chosen, "widened": widened, "hits": len(fused)})
        if state.options.sections:
            sections = prefilter_sections(state.law.get("sections", {}))
            filters = section_filter(resources.graph, sections, request.filters) if sections else None
            if filters is not None:
                fused = self.hybrid.filtered(request.index, request.query, state.vector, k=depth, filters=filters,
                                             lang=request.lang, weights=weights, terms=state.term_weights)
                add_ranked(state.pool, [h.doc_id for h in fused], "section")
                trace.update({"sections": sections, "section_hits": len(fused)})
        if trace:
            state.trace["prefilter"] = trace

    def _search_issues(self, state: AgenticState, models: TrainedModels | None, resources: IndexResources,
                       embedder: Embedder, weights: FusionWeights) -> None:
        """Segment the question (the LLM's sub-questions when configured, else offline) and, for two or
        more issues, search each with its own pool quota (:mod:`service.pipelines.issue_pool`)."""
        query = Query(state.request["query"], state.request["qid"], state.language)
        evidence = Evidence(round=0, language=state.language, terms=state.terms, top=[],
                            vocabulary=resources.vocabulary, budget=state.llm_budget(self.settings.llm))
        output = self.agents.issues(models).rewrite(query, evidence)
        state.count_llm(output.llm)
        texts = [r.text for r in output.rewrites]
        trace: dict[str, Any] = {"mode": output.mode, "count": max(1, len(texts))}
        if output.fallback:
            trace["fallback"] = output.fallback
        state.trace["issues"] = trace
        if len(texts) < 2:
            return
        request = state.search_request()
        search = IssueSearch(self.backend, IndexRetrieval(embedder, weights), self.hybrid)
        found = search.search(texts, index=request.index, language=state.language, lang=request.lang,
                              filters=request.filters, pool=state.pool,
                              classifier=models.law_classifier if models else None,
                              memory=models.memory if models else None, graph=resources.graph,
                              prefilter=state.options.prefilter, quotas=state.options.quotas,
                              allowed=functools.partial(allowed, self.backend, state))
        state.issues = [e.to_json() for e in found]
        trace["issues"] = [e.to_trace() for e in found]

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
