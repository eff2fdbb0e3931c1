"""The repair agent: terms the corpus has never seen are repaired or dropped.

Offline, every analysed question term that no document contains (typos, slang, words jieba cut
differently from the statutes) is replaced by the closest known term (see
:meth:`Vocabulary.repair`) or dropped. Without a trained vocabulary the index is asked which terms
exist, and unknown terms are only dropped. The LLM rewriter gets the failed query and the unseen
terms as the problem to fix; its queries pass the same vocabulary check.

Example::

    OfflineRepairRewriter().rewrite(Query("Kauton nicht zurück"), evidence).rewrites[0].terms
    # {'kaution': 1.0, 'zuruck': 1.0}
"""

from __future__ import annotations

from collections import Counter

from service.agents.base import AgentName, Evidence, OfflineRewriter, Rewrite, RewriteOutput
from service.agents.rewriters._llm import LlmRewriter
from service.corpus.model import Query
from service.llm.client import LlmClient


def repaired_terms(evidence: Evidence) -> tuple[dict[str, float], list[str]]:
    """The question's terms with unseen ones repaired or dropped, and the unseen terms.

    Returns ``({}, [])`` when every term is known (nothing to repair).
    """
    vocab = evidence.vocabulary
    if vocab is None or not evidence.terms:
        return {}, []
    unseen = [t for t in dict.fromkeys(evidence.terms) if not vocab.known(t)]
    if not unseen:
        return {}, []
    weights: Counter[str] = Counter()
    for term in evidence.terms:
        if term not in unseen:
            weights[term] += 1.0
            continue
        fixed = vocab.repair(term)
        if fixed and fixed != term:
            weights[fixed] += 1.0
    return dict(weights), unseen


class OfflineRepairRewriter(OfflineRewriter):
    """The question's BM25 terms with unseen terms repaired or dropped."""

    agent = AgentName.REPAIR.value

    def rewrite(self, query: Query, evidence: Evidence) -> RewriteOutput:
        terms, _ = repaired_terms(evidence)
        if not terms:
            return RewriteOutput([])
        return RewriteOutput([Rewrite(text=" ".join(terms), agent=self.agent, round=evidence.round, terms=terms,
                                      dense=False)])


class LlmRepairRewriter(LlmRewriter):
    """Repaired queries by the LLM (``rewrite_repair`` prompt); offline repair on failure."""

    def __init__(self, client: LlmClient, offline: OfflineRepairRewriter) -> None:
        super().__init__(AgentName.REPAIR.value, client, offline)

    def variables(self, query: Query, evidence: Evidence) -> dict[str, str]:
        _, unseen = repaired_terms(evidence)
        problem = (f"these terms occur in no document of the corpus: {', '.join(unseen[:20])}" if unseen
                   else "the results do not match the question well")
        return {"question": query.text, "language": evidence.language or "the question's language",
                "query": query.text, "problem": problem}
