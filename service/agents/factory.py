"""Rewriters and planners for a model folder: the offline ones, wrapped by their LLM ones when an LLM is configured.

The rewriters come from :data:`service.plugins.REWRITERS`: ``Offline<Role>Rewriter.from_models(models)``,
and with an LLM ``Llm<Role>Rewriter(client, offline)``, which falls back to the offline one. The
planner is :class:`~service.agents.planner.OfflinePlanner` over the folder's policy, wrapped the same
way by :class:`~service.agents.planner.LlmPlanner`. The runtime builds one factory per process.

Example::

    agents = AgentFactory(llm=None)
    agents.rewriter("terminology", models).rewrite(query, evidence)
    agents.planner(models).plan(view)
"""

from __future__ import annotations

import threading

from service.agents.base import Planner, Rewriter, TrainedParts
from service.agents.issues import OfflineIssueRewriter
from service.agents.planner import LlmPlanner, OfflinePlanner
from service.agents.rewriters.decompose import LlmDecomposeRewriter
from service.llm.client import LlmClient
from service.plugins import REWRITERS


class AgentFactory:
    """Builds (and keeps, per model folder) the rewriter of each agent and the planner.

    Args:
        llm: the LLM client; ``None`` offline.
    """

    def __init__(self, llm: LlmClient | None) -> None:
        self.llm = llm
        self._rewriters: dict[tuple[str, int], Rewriter] = {}
        self._lock = threading.Lock()

    def rewriter(self, agent: str, models: TrainedParts | None) -> Rewriter:
        """The rewriter of ``agent`` for ``models`` (a reloaded model folder gets fresh rewriters).

        Raises:
            InvalidInput: for an unknown agent name.
        """
        key = (agent, id(models))
        with self._lock:
            cached = self._rewriters.get(key)
        if cached is not None:
            return cached
        plugin = REWRITERS.entry(agent)
        rewriter: Rewriter = plugin.load().from_models(models)
        if self.llm is not None:
            rewriter = plugin.load_llm()(self.llm, rewriter)
        with self._lock:
            self._rewriters[key] = rewriter
        return rewriter

    def issues(self, models: TrainedParts | None) -> Rewriter:
        """The issue segmenter for ``models``: the LLM's decomposition when configured (falling back to
        the offline segmentation), else the offline segmentation (:mod:`service.agents.issues`)."""
        key = ("issues", id(models))
        with self._lock:
            cached = self._rewriters.get(key)
        if cached is not None:
            return cached
        rewriter: Rewriter = OfflineIssueRewriter.from_models(models)
        if self.llm is not None:
            rewriter = LlmDecomposeRewriter(self.llm, rewriter)
        with self._lock:
            self._rewriters[key] = rewriter
        return rewriter

    def planner(self, models: TrainedParts | None) -> Planner:
        """The planner over the folder's policy (fixed rules without one); the LLM asks first when configured."""
        offline = OfflinePlanner(models.planner if models else None)
        return LlmPlanner(self.llm, offline) if self.llm is not None else offline
