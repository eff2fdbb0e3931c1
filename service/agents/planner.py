"""The planner: which agents run in the next round, and when to stop.

Rules shared by every planner (:func:`open_agents`, built on :func:`candidates` and :func:`must_stop`):

- each agent runs at most once per question; ``terminology``, ``decompose``, ``repair`` (and
  ``hyde``) work from the question and go first, ``conditions`` and ``supportive`` work from the
  pool and join from the second round (or the first, when no question-side agent is chosen);
- the search stops after ``max_rounds`` rounds (at most 4), after two rounds that each added
  fewer than two new candidates, or when no agent is left.

:class:`OfflinePlanner` decides with a :class:`PlannerPolicy` learned on the training split (our
CPU counterpart of LegalMALR's GRPO step): one logistic model per agent estimates, from query
features and pool statistics, the probability that the agent surfaces a gold article the pool's
top ten lacked; agents above their threshold run. Without a trained policy it uses fixed rules.
:class:`LlmPlanner` asks the LLM and falls back to the offline planner.

Example::

    decision = OfflinePlanner(policy).plan(view)
    decision.agents, decision.reason      # (['terminology', 'repair'], 'policy: terminology .62, ...')
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from service.agents.base import AgentName, Mode, PlanDecision, PlanView
from service.llm.budget import CallBudget
from service.llm.client import LlmClient
from service.llm.prompt import quote_json
from service.llm.schemas import OUTPUT_SCHEMAS

MAX_ROUNDS = 4
QUIET_ROUNDS = 2
QUIET_NEW = 2
QUESTION_AGENTS = (AgentName.TERMINOLOGY.value, AgentName.DECOMPOSE.value, AgentName.REPAIR.value,
                   AgentName.HYDE.value)
POOL_AGENTS = (AgentName.CONDITIONS.value, AgentName.SUPPORTIVE.value)
COVERAGE = 0.9
"""Share of the training questions where an agent helped on which the learned policy still runs it."""
POLICY_FEATURES: tuple[str, ...] = (
    "terms_log", "parts", "unseen", "law_top_p", "memory_top_sim", "overlap", "links", "round", "new_last_log",
    "pool_log",
)
"""Inputs of the learned policy (built by :func:`policy_vector` from ``PlanView.features``)."""


def must_stop(view: PlanView) -> str:
    """Why the search must stop now ('' when it may go on)."""
    if view.round >= min(view.max_rounds, MAX_ROUNDS):
        return f"reached {min(view.max_rounds, MAX_ROUNDS)} rounds"
    recent = view.new_per_round[-QUIET_ROUNDS:]
    if len(recent) == QUIET_ROUNDS and all(n < QUIET_NEW for n in recent):
        return f"the last {QUIET_ROUNDS} rounds each added fewer than {QUIET_NEW} new candidates"
    return ""


def candidates(view: PlanView) -> tuple[list[str], list[str]]:
    """Agents allowed and not run yet: (question-side, pool-side)."""
    used = {a for rnd in view.used for a in rnd}
    left = [a for a in view.allowed if a not in used]
    return [a for a in left if a in QUESTION_AGENTS], [a for a in left if a in POOL_AGENTS]


def open_agents(view: PlanView) -> tuple[PlanDecision | None, list[str], list[str]]:
    """The hard rules every planner applies first: a stop decision when the search must stop or no
    agent is left (else ``None``), and the agents still open as (question-side, pool-side)."""
    stop = must_stop(view)
    if stop:
        return PlanDecision(None, reason=stop), [], []
    question_side, pool_side = candidates(view)
    if not question_side and not pool_side:
        return PlanDecision(None, reason="every allowed agent has run"), [], []
    return None, question_side, pool_side


def policy_vector(features: Mapping[str, float], view: PlanView) -> np.ndarray:
    """The policy's input row for ``view``."""
    values = {
        "terms_log": math.log1p(features.get("terms", 0.0)),
        "parts": min(features.get("parts", 0.0), 5.0),
        "unseen": features.get("unseen", 0.0),
        "law_top_p": features.get("law_top_p", 0.0),
        "memory_top_sim": features.get("memory_top_sim", 0.0),
        "overlap": features.get("overlap", 0.0),
        "links": math.log1p(features.get("links", 0.0)),
        "round": float(view.round + 1),
        "new_last_log": math.log1p(view.new_per_round[-1]) if view.new_per_round else 0.0,
        "pool_log": math.log1p(features.get("pool", 0.0)),
    }
    return np.asarray([values[name] for name in POLICY_FEATURES], dtype=np.float64)


class PlannerPolicy:
    """Per-agent logistic models of "this agent adds a gold article the pool lacked".

    Args:
        models: ``{agent: {"coef": [...], "intercept": float, "threshold": float, "base_rate": float}}``.
    """

    def __init__(self, models: Mapping[str, Mapping[str, Any]]) -> None:
        self.models = {a: dict(m) for a, m in models.items()}

    @classmethod
    def fit(cls, rows: Mapping[str, tuple[np.ndarray, np.ndarray]], *, coverage: float = COVERAGE,
            min_threshold: float = 0.02) -> PlannerPolicy:
        """Fit one model per agent from ``{agent: (feature rows, 0/1 gains)}``.

        Each agent's threshold is set so that it would have run on ``coverage`` of the training
        questions where it gained (never below ``min_threshold``): offline agents are cheap and the
        reranker sorts out their noise, so the policy only skips an agent where it rarely helps.
        An agent that gained on fewer than three questions gets an unreachable threshold.
        """
        from sklearn.linear_model import LogisticRegression

        models: dict[str, dict[str, Any]] = {}
        for agent, (x, y) in rows.items():
            rate = float(np.mean(y)) if len(y) else 0.0
            if len(y) < 10 or y.sum() < 3 or y.sum() == len(y):
                models[agent] = {"coef": [0.0] * len(POLICY_FEATURES), "intercept": _logit(rate),
                                 "threshold": 1.01 if y.sum() < 3 else 0.0, "base_rate": rate}
                continue
            model = LogisticRegression(C=1.0, max_iter=500)
            model.fit(x, y)
            p = model.predict_proba(x)[:, 1]
            threshold = float(np.quantile(p[y == 1], 1.0 - coverage))
            models[agent] = {"coef": model.coef_[0].tolist(), "intercept": float(model.intercept_[0]),
                             "threshold": max(min_threshold, threshold), "base_rate": rate,
                             "run_rate": float(np.mean(p >= max(min_threshold, threshold)))}
        return cls(models)

    def probability(self, agent: str, x: np.ndarray) -> float | None:
        """P(gain) of ``agent`` for input row ``x``; ``None`` for an agent the policy has no model of."""
        model = self.models.get(agent)
        if model is None:
            return None
        z = float(np.dot(model["coef"], x) + model["intercept"])
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def threshold(self, agent: str) -> float:
        return float(self.models.get(agent, {}).get("threshold", 0.0))

    def to_json(self) -> dict[str, Any]:
        return {"features": list(POLICY_FEATURES), "agents": self.models}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PlannerPolicy:
        if list(data.get("features", [])) != list(POLICY_FEATURES):
            raise ValueError("planner policy was trained on other features; retrain it")
        return cls(data["agents"])


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


class OfflinePlanner:
    """The learned policy when there is one, else fixed rules."""

    def __init__(self, policy: PlannerPolicy | None = None) -> None:
        self.policy = policy

    def plan(self, view: PlanView, budget: CallBudget | None = None) -> PlanDecision:
        stopped, question_side, pool_side = open_agents(view)
        if stopped is not None:
            return stopped
        if self.policy is None:
            return self._rules(view, question_side, pool_side)
        x = policy_vector(view.features, view)
        groups = [question_side, pool_side] if view.round == 0 else [[*question_side, *pool_side]]
        chosen: list[str] = []
        notes: list[str] = []
        for group in groups:
            for agent in group:
                p = self.policy.probability(agent, x)
                if p is None:  # an agent the policy never saw (hyde): rules decide
                    if agent == AgentName.HYDE.value:
                        chosen.append(agent)
                    continue
                notes.append(f"{agent} {p:.2f}")
                if p >= self.policy.threshold(agent):
                    chosen.append(agent)
            if chosen:
                break
        if not chosen:
            return PlanDecision(None, reason="policy: no agent likely to add a relevant article (" +
                                ", ".join(notes) + ")")
        return PlanDecision(chosen, reason="policy: " + ", ".join(notes))

    @staticmethod
    def _rules(view: PlanView, question_side: Sequence[str], pool_side: Sequence[str]) -> PlanDecision:
        f = view.features
        chosen = []
        for agent in question_side:
            if agent == AgentName.DECOMPOSE.value and f.get("parts", 0) < 2:
                continue
            if agent == AgentName.REPAIR.value and f.get("unseen", 0) <= 0:
                continue
            chosen.append(agent)
        if chosen and view.round == 0:
            return PlanDecision(chosen, reason="rules: question-side agents first")
        chosen = [a for a in (*chosen, *pool_side)]
        if not chosen:
            return PlanDecision(None, reason="rules: no applicable agent left")
        return PlanDecision(chosen, reason="rules")


class LlmPlanner:
    """Asks the LLM (``planner`` prompt); the offline planner decides when the call fails.

    The hard rules (round limit, quiet rounds, each agent once) apply before the LLM is asked and
    to its answer: agents outside the remaining candidates reject the answer.
    """

    def __init__(self, client: LlmClient, offline: OfflinePlanner) -> None:
        self.client = client
        self.offline = offline

    def plan(self, view: PlanView, budget: CallBudget | None = None) -> PlanDecision:
        stopped, question_side, pool_side = open_agents(view)
        if stopped is not None:
            return stopped
        allowed = [*question_side, *(pool_side if view.round >= 1 else [])] or [*pool_side]

        def check(value: dict[str, Any]) -> None:
            unknown = [a for a in value["agents"] if a not in allowed]
            if unknown:
                raise ValueError(f"agents not allowed now: {unknown}")
            if not value["stop"] and not value["agents"]:
                raise ValueError("no agents although stop is false")

        state = {"round": view.round, "max_rounds": view.max_rounds, "agents_used": view.used,
                 "new_candidates_per_round": view.new_per_round, "best_hits": view.top[:5]}
        outcome = self.client.complete_json(
            "planner", {"question": view.question, "agents": quote_json(allowed), "state": quote_json(state)},
            OUTPUT_SCHEMAS["planner"], budget=budget or CallBudget(0, 0), validate=check)
        if not outcome.ok:
            decision = self.offline.plan(view)
            decision.fallback = outcome.fallback_reason
            decision.llm = outcome.to_trace()
            return decision
        if outcome.value["stop"]:
            return PlanDecision(None, mode=Mode.LLM.value, reason="the LLM planner stopped", llm=outcome.to_trace())
        return PlanDecision(list(outcome.value["agents"]), mode=Mode.LLM.value, reason="LLM planner",
                            llm=outcome.to_trace())
