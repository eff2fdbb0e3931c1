"""The planner: stopping rules, candidates, the learned policy, the rule fallback and the LLM planner."""

from __future__ import annotations

import numpy as np
import pytest

from service.agents.base import PlanView
from service.agents.planner import (
    POLICY_FEATURES,
    LlmPlanner,
    OfflinePlanner,
    PlannerPolicy,
    candidates,
    must_stop,
    policy_vector,
)
from service.config import LlmSettings
from service.llm.budget import CallBudget
from service.llm.client import LlmClient
from tests.support.openai_server import OpenAITestServer, Reply

pytestmark = pytest.mark.unit

ALL = ["terminology", "conditions", "decompose", "supportive", "repair"]


def view(round_: int = 0, used: list[list[str]] | None = None, new: list[int] | None = None,
         **features: float) -> PlanView:
    return PlanView(question="Kaution zurück?", language="de", round=round_, max_rounds=4, allowed=ALL,
                    used=used or [], new_per_round=new or [], features={"terms": 3, **features})


def test_stops_after_four_rounds_or_two_quiet_rounds() -> None:
    assert "4 rounds" in must_stop(view(4, new=[5, 5, 5, 5]))
    assert "fewer than 2" in must_stop(view(2, new=[1, 0]))
    assert must_stop(view(2, new=[1, 3])) == "" and must_stop(view(1, new=[0])) == ""
    limited = view(1, new=[9])
    limited.max_rounds = 1
    assert must_stop(limited)


def test_candidates_exclude_agents_already_run() -> None:
    question, pool = candidates(view(1, used=[["terminology", "repair"]]))
    assert question == ["decompose"] and pool == ["conditions", "supportive"]


def test_rules_without_a_policy() -> None:
    planner = OfflinePlanner()
    first = planner.plan(view(parts=1, unseen=0.0))
    assert first.agents == ["terminology"] and first.mode == "offline"
    assert planner.plan(view(parts=3, unseen=0.2)).agents == ["terminology", "decompose", "repair"]
    second = planner.plan(view(1, used=[["terminology"]], new=[4], parts=1))
    assert second.agents == ["conditions", "supportive"]
    assert planner.plan(view(2, used=[["terminology"], ["conditions", "supportive"]], new=[4, 3])).agents is None


def _policy() -> PlannerPolicy:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, len(POLICY_FEATURES)))
    gains = (x[:, POLICY_FEATURES.index("parts")] > 0.5).astype(int)  # decompose helps multi-part questions
    always = (rng.random(300) < 0.5).astype(int)
    never = np.zeros(300, dtype=int)
    return PlannerPolicy.fit({"decompose": (x, gains), "terminology": (x, always), "repair": (x, never),
                              "conditions": (x, always), "supportive": (x, never)})


def test_learned_policy_runs_the_agents_likely_to_gain() -> None:
    policy = _policy()
    assert policy.threshold("repair") > 1.0  # never gained: never runs
    planner = OfflinePlanner(policy)
    many_parts = planner.plan(view(parts=5))
    assert "decompose" in many_parts.agents and "repair" not in many_parts.agents
    assert many_parts.reason.startswith("policy:")
    one_part = planner.plan(view(parts=0))
    assert "decompose" not in (one_part.agents or [])
    again = PlannerPolicy.from_json(policy.to_json())
    x = policy_vector({"parts": 4}, view())
    assert again.probability("decompose", x) == pytest.approx(policy.probability("decompose", x))
    with pytest.raises(ValueError, match="retrain"):
        PlannerPolicy.from_json({"features": ["other"], "agents": {}})


def _client(server: OpenAITestServer) -> LlmClient:
    return LlmClient(LlmSettings(base_url=server.base_url, model="m", timeout_s=2, max_retries=1),
                     backoff_base_s=0.01)


def test_llm_planner_valid_flow(openai_server: OpenAITestServer) -> None:
    openai_server.script_chat(Reply(json={"stop": False, "agents": ["decompose", "terminology"]}))
    decision = LlmPlanner(_client(openai_server), OfflinePlanner()).plan(view(), CallBudget(5, 10_000))
    assert decision.agents == ["decompose", "terminology"] and decision.mode == "llm"
    openai_server.script_chat(Reply(json={"stop": True, "agents": []}))
    assert LlmPlanner(_client(openai_server), OfflinePlanner()).plan(view(1, new=[3]), CallBudget(5, 10_000)).agents \
        is None


def test_llm_planner_rejects_agents_not_allowed_and_falls_back(openai_server: OpenAITestServer) -> None:
    openai_server.script_chat(*[Reply(json={"stop": False, "agents": ["supportive"]})] * 3)  # pool agent in round 1
    decision = LlmPlanner(_client(openai_server), OfflinePlanner()).plan(view(parts=1), CallBudget(5, 10_000))
    assert decision.mode == "offline" and decision.fallback.startswith("rejected")
    assert decision.agents == ["terminology"]


def test_llm_planner_keeps_the_hard_stop_rules(openai_server: OpenAITestServer) -> None:
    decision = LlmPlanner(_client(openai_server), OfflinePlanner()).plan(view(4, new=[5] * 4), CallBudget(5, 10_000))
    assert decision.agents is None and openai_server.chat_requests == []
