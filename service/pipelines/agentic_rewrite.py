"""Step 3 of an agentic search: one agent's rewrites, each retrieved (top 30) and pruned (top 10).

The agent sees the pool as evidence (its best documents in the heuristic order, the predicted laws,
the corpus graph and vocabulary). Each rewrite searches by its own means: weighted analysed terms
or text for BM25, a ready vector or the embedded text for kNN (fused when both ran), or seed
documents of the citation graph. The light reranker (fixed weights over the retrieval score and
the priors) keeps the best ten. A step depends only on the state before the round, so the job
workers may run a round's agents in parallel.

Example::

    step = RewriteStep(settings=..., backend=..., retrieval=..., hybrid=...)(state, rewriter, models, resources)
    step.rewrites, step.hits
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from service.agents.base import Evidence, EvidenceDoc, Rewrite, Rewriter
from service.backends.base import SearchBackend
from service.config import Settings
from service.corpus.model import Hit, Query
from service.models import TrainedModels
from service.pipelines.agentic_state import AgenticState, StepResult
from service.pipelines.base import Probe, RetrievalOf
from service.pipelines.candidates import allowed, fetch, pool_order
from service.pipelines.hybrid import HybridPipeline
from service.pipelines.resources import IndexResources
from service.rerank.light import Priors, light_scores, zscore
from service.retrieval.weights import FusionWeights, with_trained

EVIDENCE_DOCS = 10


@dataclass(frozen=True, kw_only=True)
class RewriteStep:
    """Runs one agent's step (see the module docstring).

    Args:
        settings: ``agents.rewrite_depth``, ``agents.prune_to`` and the ``llm`` budget.
        backend, retrieval, hybrid: the index, each index's embedder (of rewritten queries) and fusion
            weights, and the fusion.
    """

    settings: Settings
    backend: SearchBackend
    retrieval: RetrievalOf
    hybrid: HybridPipeline

    def __call__(self, state: AgenticState, agent: str, rewriter: Rewriter, models: TrainedModels | None,
                 resources: IndexResources) -> StepResult:
        """The step of ``agent`` (whose rewriter is ``rewriter``) for the next round of ``state``."""
        start = time.perf_counter()
        evidence = self.evidence(state, resources)
        query = Query(state.request["query"], state.request["qid"], state.language)
        output = rewriter.rewrite(query, evidence)
        step = StepResult(agent=agent, round=state.round + 1, mode=output.mode, fallback=output.fallback,
                          rewrites=list(output.rewrites), llm=list(output.llm), discarded=list(output.discarded))
        step.hits, step.scores = self._retrieve(state, resources, models, step.rewrites)
        step.ms = round((time.perf_counter() - start) * 1000, 3)
        return step

    def evidence(self, state: AgenticState, resources: IndexResources) -> Evidence:
        """The pool as the rewriters see it: the best documents by the light order, and the priors."""
        ids = pool_order(state, resources.graph)[:EVIDENCE_DOCS]
        docs = fetch(self.backend, state, ids)
        top = [EvidenceDoc(docs[d], state.pool[d].score, rank) for rank, d in enumerate(ids, start=1) if d in docs]
        return Evidence(round=state.round + 1, language=state.language, terms=state.terms, top=top,
                        law_probabilities=[(law, p) for law, p in state.law.get("laws", [])], tried=state.tried,
                        query_vector=state.vector,
                        graph=resources.graph if state.options.citations else resources.graph.without_citations(),
                        vocabulary=resources.vocabulary,
                        budget=state.llm_budget(self.settings.llm), query_weights=self.query_weights(state),
                        issues=[str(i["text"]) for i in state.issues])

    def query_weights(self, state: AgenticState) -> dict[str, float] | None:
        """A long question's BM25 weights, as the probe made them (again for a state restored from JSON)."""
        if state.term_weights is None:
            long = self.hybrid.long_query(state.request["query"])
            state.term_weights = (self.hybrid.long_weights(long, state.request["index"], state.language)
                                  if long is not None else {})
        return state.term_weights or None

    def _retrieve(self, state: AgenticState, resources: IndexResources, models: TrainedModels | None,
                  rewrites: Sequence[Rewrite]) -> tuple[list[list[Hit]], list[dict[str, float]]]:
        """Per rewrite: the pruned hits, and the z-scored retrieval score of every hit retrieved."""
        cfg = self.settings.agents
        retrieval = self.retrieval(state.request["index"])
        weights = with_trained(retrieval.weights_for(state.search_request().filters), models.fusion if models else None,
                               self.settings.retrieval)
        to_embed = [r.text for r in rewrites if r.dense and r.vector is None and not r.doc_ids]
        vectors = (dict(zip(to_embed, retrieval.embedder.embed_queries(to_embed), strict=True)) if to_embed
                   else {})
        priors = Priors(graph=resources.graph, law_probabilities=state.law_prediction(),
                        prior=models.prior if models else None, memory=state.memory_votes())
        out: list[list[Hit]] = []
        evidence: list[dict[str, float]] = []
        for rw in rewrites:
            if rw.doc_ids:
                ids = allowed(self.backend, state, [d for d in rw.doc_ids if d in resources.graph])
                n = len(ids)
                candidates = [Hit(doc_id=d, score=float(n - i)) for i, d in enumerate(ids)]
            else:
                candidates = self._search(state, rw, vectors, weights)
            raw = [h.score for h in candidates]
            scores = light_scores(raw, [h.doc_id for h in candidates], priors)
            order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))[: cfg.prune_to]
            out.append([Hit(doc_id=candidates[i].doc_id, score=scores[i]) for i in order])
            evidence.append({h.doc_id: round(float(z), 4) for h, z in zip(candidates, zscore(raw), strict=True)})
        return out, evidence

    def _search(self, state: AgenticState, rewrite: Rewrite, vectors: dict[str, np.ndarray],
                weights: FusionWeights) -> list[Hit]:
        """The hits of one rewrite: BM25 (weighted terms or text) and kNN, fused when both ran."""
        request = state.search_request()
        depth = self.settings.agents.rewrite_depth
        bm25: list[Hit] = []
        knn: list[Hit] = []
        if rewrite.lexical:
            if rewrite.terms is not None:
                bm25 = self.backend.bm25_terms(request.index, dict(rewrite.terms), k=depth, filters=request.filters)
            else:
                bm25 = self.backend.bm25(request.index, rewrite.text, k=depth, filters=request.filters,
                                         lang=state.language)
        if rewrite.dense:
            vector = rewrite.vector if rewrite.vector is not None else vectors.get(rewrite.text)
            if vector is not None:
                knn = self.backend.knn(request.index, vector, k=depth, filters=request.filters)
        if not (bm25 and knn):
            return bm25 or knn
        return self.hybrid.fuse(Probe(bm25, knn, None, weights, depth=depth))
