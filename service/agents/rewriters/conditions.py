"""The conditions agent (LegalMALR's supplementary rewriter): make implicit conditions explicit.

Offline it is RM3-style pseudo-relevance feedback from the current pool: the best documents
found so far (ranked with the priors, so mostly the right law) vote for their terms, weighted by
rank, term frequency and corpus idf; the strongest terms not in the question are added to the
BM25 query at a lower weight. The LLM rewriter asks for queries stating the implied conditions.

Example::

    out = OfflineConditionsRewriter(vocabulary).rewrite(query, evidence)
    out.rewrites[0].terms      # {'租赁': 1.0, '押金': 1.0, '返还': 0.4, '承租人': 0.31, ...}
"""

from __future__ import annotations

from collections import Counter

from service.agents.base import AgentName, Evidence, Rewrite, RewriteOutput, TrainedParts
from service.agents.rewriters._llm import LlmRewriter
from service.agents.vocabulary import Vocabulary
from service.analysis.chain import analyzer_for
from service.corpus.model import Query
from service.corpus.views import bm25_text
from service.llm.client import LlmClient
from service.ordering import best_first

FEEDBACK_DOCS = 5
FEEDBACK_TERMS = 15
FEEDBACK_WEIGHT = 0.5
"""Weight of the strongest feedback term next to an original term (RM3's 1 - λ)."""


def feedback_terms(evidence: Evidence, vocabulary: Vocabulary | None, *, docs: int = FEEDBACK_DOCS,
                   size: int = FEEDBACK_TERMS) -> dict[str, float]:
    """Feedback term scores (max 1.0) from the top ``docs`` evidence documents, question terms excluded."""
    analyzer = analyzer_for(evidence.language)
    scores: Counter[str] = Counter()
    for position, item in enumerate(evidence.top[:docs]):
        tokens = analyzer.tokens(bm25_text(item.doc))
        if not tokens:
            continue
        counts = Counter(tokens)
        doc_weight = 1.0 / (1 + position)  # rank-based: scores of different stages are not comparable
        for term, c in counts.items():
            idf = vocabulary.idf(term) if vocabulary is not None else 1.0
            scores[term] += doc_weight * (c / len(tokens)) * idf
    for term in set(evidence.terms):
        scores.pop(term, None)
    best = [(t, s) for t, s in best_first(scores, size) if s > 0 and len(t) > 1]
    if not best:
        return {}
    top = best[0][1]
    return {t: s / top for t, s in best}


class OfflineConditionsRewriter:
    """RM3-style expansion of the question with terms of the best pool documents."""

    agent = AgentName.CONDITIONS.value

    def __init__(self, vocabulary: Vocabulary | None = None) -> None:
        self.vocabulary = vocabulary

    @classmethod
    def from_models(cls, models: TrainedParts | None) -> OfflineConditionsRewriter:
        """The rewriter with the folder's corpus vocabulary (idf of the expansion terms)."""
        return cls(models.vocabulary if models is not None else None)

    def rewrite(self, query: Query, evidence: Evidence) -> RewriteOutput:
        expansion = feedback_terms(evidence, self.vocabulary)
        if not expansion or not evidence.terms:
            return RewriteOutput([])
        terms = evidence.base_weights()
        for term, score in expansion.items():
            terms[term] = terms.get(term, 0.0) + FEEDBACK_WEIGHT * score
        text = " ".join(list(dict.fromkeys(evidence.terms)) + list(expansion))
        return RewriteOutput([Rewrite(text=text, agent=self.agent, round=evidence.round, terms=terms, dense=False)])


class LlmConditionsRewriter(LlmRewriter):
    """Queries stating the question's implicit conditions, by the LLM; offline PRF on failure."""

    def __init__(self, client: LlmClient, offline: OfflineConditionsRewriter) -> None:
        super().__init__(AgentName.CONDITIONS.value, client, offline)
