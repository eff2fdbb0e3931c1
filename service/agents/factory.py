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
import weakref
from collections.abc import Callable

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
        # (agent or "issues", id(models)) -> (what gives the models back, the rewriter). An id is reused once its
        # object is gone (training makes one model set per fold), so a hit counts only while the
        # models it was built for are the ones asked about.
        self._rewriters: dict[tuple[str, int], tuple[Callable[[], object], Rewriter]] = {}
        self._lock = threading.Lock()

    def rewriter(self, agent: str, models: TrainedParts | None) -> Rewriter:
        """The rewriter of ``agent`` for ``models`` (a reloaded model folder gets fresh rewriters).

        Raises:
            InvalidInput: for an unknown agent name.
        """
        def build() -> Rewriter:
            plugin = REWRITERS.entry(agent)
            rewriter: Rewriter = plugin.load().from_models(models)
            return plugin.load_llm()(self.llm, rewriter) if self.llm is not None else rewriter

        return self._kept(agent, models, build)

    def issues(self, models: TrainedParts | None) -> Rewriter:
        """The issue segmenter for ``models``: the LLM's decomposition when configured (falling back to
        the offline segmentation), else the offline segmentation (:mod:`service.agents.issues`)."""
        def build() -> Rewriter:
            rewriter: Rewriter = OfflineIssueRewriter.from_models(models)
            return LlmDecomposeRewriter(self.llm, rewriter) if self.llm is not None else rewriter

        return self._kept("issues", models, build)

    def _kept(self, name: str, models: TrainedParts | None, build: Callable[[], Rewriter]) -> Rewriter:
        """The rewriter called ``name`` for ``models``, built once per model set."""
        key = (name, id(models))
        with self._lock:
            cached = self._rewriters.get(key)
        if cached is not None and cached[0]() is models:
            return cached[1]
        rewriter = build()
        owner = _owner(models)
        with self._lock:
            # Drop the rewriters of model sets that are gone, then keep this one.
            self._rewriters = {k: v for k, v in self._rewriters.items() if k[1] == id(None) or v[0]() is not None}
            self._rewriters[key] = (owner, rewriter)
        return rewriter

    def planner(self, models: TrainedParts | None) -> Planner:
        """The planner over the folder's policy (fixed rules without one); the LLM asks first when configured."""
        offline = OfflinePlanner(models.planner if models else None)
        return LlmPlanner(self.llm, offline) if self.llm is not None else offline


def _owner(models: TrainedParts | None) -> Callable[[], object]:
    """What gives ``models`` back while they exist (a weak reference: the cache keeps no model set alive)."""
    if models is None:
        return lambda: None
    try:
        return weakref.ref(models)
    except TypeError:  # an object without weak references: keep it
        return lambda: models
