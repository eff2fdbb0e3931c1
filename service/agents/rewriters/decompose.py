"""The decomposition agent (LegalMALR's multi-element rewriter): one sub-query per issue.

Offline, the question is split at sentence ends, question marks, semicolons and the connectives
that usually join two issues, per language (zh, de, en, fr, it). Greetings and thanks are dropped.
The most informative parts (questions first, then the longest) become sub-queries, each searched
by BM25 and kNN; a short single-issue question yields nothing.

Example::

    split_issues("我被公司辞退了，另外公司还拖欠我三个月工资，怎么办？", "zh")
    # ['我被公司辞退了', '公司还拖欠我三个月工资，怎么办？']
"""

from __future__ import annotations

import re

from service.agents.base import AgentName, Evidence, OfflineRewriter, Rewrite, RewriteOutput, Rewriter
from service.agents.issues import issue_cap
from service.agents.rewriters._llm import LlmRewriter
from service.corpus.model import Query
from service.llm.client import LlmClient

MAX_PARTS = 3

_SENTENCE = {
    "zh": re.compile(r"(?<=[？?！!。；;])"),
    "latin": re.compile(r"(?<=[?!;])\s+|(?<=[.])\s+(?=[A-ZÄÖÜÀ-Ý0-9])|\s+(?=\d\s?[.)]\s)"),
}
_CONNECTIVE = {
    "zh": re.compile(r"[，,]\s*(?=另外|此外|同时|并且|而且|还有|以及|再者|其次|然后|那么|请问|如果|假如|若)"),
    "de": re.compile(r",?\s+(?=(?:und außerdem|außerdem|sowie|zudem|darüber hinaus|ferner|weiterhin)\b)", re.I),
    "en": re.compile(r",?\s+(?=(?:and also|also,|additionally|furthermore|moreover|in addition)\b)", re.I),
    "fr": re.compile(r",?\s+(?=(?:et aussi|de plus|en outre|par ailleurs|ainsi que)\b)", re.I),
    "it": re.compile(r",?\s+(?=(?:e inoltre|inoltre|inoltre,|oltre a ciò|nonché)\b)", re.I),
}
_NOISE = re.compile(
    r"^(?:hallo|hi|hello|guten (?:tag|morgen|abend)|liebe|lieber|sehr geehrte|danke|vielen dank|mfg|"
    r"mit freundlichen grüßen|lg|gruß|grüße|thanks|thank you|bonjour|merci|ciao|grazie|您好|你好|谢谢)\b[\s,.!:]*",
    re.I)


def _min_length(lang: str) -> int:
    return 6 if lang == "zh" else 15


def split_issues(text: str, lang: str) -> list[str]:
    """The question's parts, in order, without leading greetings or fragments too short to search."""
    sentence = _SENTENCE["zh" if lang == "zh" else "latin"]
    connective = _CONNECTIVE.get(lang)
    parts: list[str] = []
    for piece in sentence.split(text):
        for sub in (connective.split(piece) if connective else [piece]):
            sub = _NOISE.sub("", sub.strip(" ，,、")).strip(" ，,、")
            if len(sub) >= _min_length(lang):
                parts.append(sub)
    return parts


def choose_parts(parts: list[str], *, limit: int = MAX_PARTS) -> list[str]:
    """Up to ``limit`` parts: those asking something first, then the longest; original order kept."""
    scored = sorted(range(len(parts)), key=lambda i: (not parts[i].rstrip().endswith(("?", "？")), -len(parts[i])))
    keep = sorted(scored[:limit])
    return [parts[i] for i in keep]


class OfflineDecomposeRewriter(OfflineRewriter):
    """Sub-queries from clauses, question marks and connectives; nothing for a single-issue question."""

    agent = AgentName.DECOMPOSE.value

    def rewrite(self, query: Query, evidence: Evidence) -> RewriteOutput:
        parts = split_issues(query.text, evidence.language)
        if len(parts) < 2:
            return RewriteOutput([])
        tried = {t.strip() for t in evidence.tried}
        return RewriteOutput([Rewrite(text=p, agent=self.agent, round=evidence.round)
                              for p in choose_parts(parts) if p.strip() not in tried])


class LlmDecomposeRewriter(LlmRewriter):
    """Single-issue sub-queries written by the LLM, as many as the offline segmentation may find for
    the language (:func:`~service.agents.issues.issue_cap`); its fallback on failure."""

    def __init__(self, client: LlmClient, offline: Rewriter) -> None:
        super().__init__(AgentName.DECOMPOSE.value, client, offline)

    def query_limit(self, evidence: Evidence) -> int:
        return issue_cap(evidence.language)

    def variables(self, query: Query, evidence: Evidence) -> dict[str, str]:
        return {**super().variables(query, evidence), "max_issues": str(self.query_limit(evidence))}
