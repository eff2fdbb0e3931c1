"""HyDE (LLM mode only): search with hypothetical statute text written for each sub-question.

The LLM writes one statute-style passage per sub-question; each passage is embedded and searched by
kNN and BM25. The sub-questions are the issues the search already segmented the question into
(``Evidence.issues``: the LLM's own decomposition when it ran, else the offline segmentation, at most
:func:`~service.agents.issues.issue_cap` of them), so HyDE answers the same issues that the issue
search retrieves for; a question of one issue gets one passage. Passages pass the vocabulary check
like every LLM rewrite. Offline, or when the call fails, it adds nothing.

Example::

    out = LlmHydeRewriter(client, OfflineHydeRewriter()).rewrite(query, evidence)
    out.rewrites[0].text      # 'Der Vermieter hat die Mietsicherheit nach Beendigung ...'
"""

from __future__ import annotations

from service.agents.base import AgentName, Evidence, Mode, OfflineRewriter, RewriteOutput, Rewriter
from service.agents.issues import issue_cap
from service.agents.rewriters._llm import guard
from service.corpus.model import Query
from service.llm.budget import CallBudget
from service.llm.client import LlmClient
from service.llm.prompt import quote_json
from service.llm.schemas import OUTPUT_SCHEMAS


class OfflineHydeRewriter(OfflineRewriter):
    """HyDE's offline side: without an LLM there is no hypothetical passage to search."""

    agent = AgentName.HYDE.value

    def rewrite(self, query: Query, evidence: Evidence) -> RewriteOutput:
        return RewriteOutput([], fallback="disabled")


class LlmHydeRewriter:
    """Hypothetical answer passages by the LLM, searched like queries (nothing when the call fails).

    Args:
        client: the LLM client (``None`` or a disabled one: the offline side answers).
        offline: what answers without an LLM (default: :class:`OfflineHydeRewriter`).
    """

    agent = AgentName.HYDE.value

    def __init__(self, client: LlmClient | None, offline: Rewriter | None = None) -> None:
        self.client = client
        self.offline = offline or OfflineHydeRewriter()

    def rewrite(self, query: Query, evidence: Evidence) -> RewriteOutput:
        if self.client is None or not self.client.settings.enabled:
            return self.offline.rewrite(query, evidence)
        parts = list(evidence.issues)[: issue_cap(evidence.language)] or [query.text]
        budget = evidence.budget or CallBudget(0, 0)

        def one_per_part(value: dict[str, list[str]]) -> None:
            if len(value["passages"]) != len(parts):
                raise ValueError(f"expected {len(parts)} passages, one per sub-question")

        outcome = self.client.complete_json(
            "hyde", {"question": query.text, "language": evidence.language or "the question's language",
                     "sub_questions": quote_json(parts)},
            OUTPUT_SCHEMAS["hyde"], budget=budget, validate=one_per_part)
        if not outcome.ok:
            return RewriteOutput([], fallback=outcome.fallback_reason, llm=[outcome.to_trace()])
        kept, discarded = guard(list(outcome.value["passages"]), self.agent, evidence.round, evidence)
        return RewriteOutput(kept, mode=Mode.LLM.value, llm=[outcome.to_trace()], discarded=discarded)
