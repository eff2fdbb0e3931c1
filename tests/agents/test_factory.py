"""The agent factory: offline rewriters from a model folder, wrapped by their LLM ones when an LLM is configured."""

from __future__ import annotations

import pytest

from service.agents.base import AgentName
from service.agents.factory import AgentFactory
from service.agents.hyde import LlmHydeRewriter, OfflineHydeRewriter
from service.agents.planner import LlmPlanner, OfflinePlanner
from service.agents.rewriters.conditions import OfflineConditionsRewriter
from service.agents.rewriters.terminology import LlmTerminologyRewriter, OfflineTerminologyRewriter, TermMapping
from service.agents.vocabulary import Vocabulary
from service.config import LlmSettings
from service.errors import InvalidInput
from service.llm.client import LlmClient
from service.models import TrainedModels

pytestmark = pytest.mark.unit


def test_offline_rewriters_take_their_trained_parts() -> None:
    models = TrainedModels(term_mapping=TermMapping({"chef": [("arbeitgeb", 1.0)]}), vocabulary=Vocabulary({"x": 1}, 1))
    agents = AgentFactory(llm=None)
    terminology = agents.rewriter(AgentName.TERMINOLOGY, models)
    assert isinstance(terminology, OfflineTerminologyRewriter) and terminology.mapping is models.term_mapping
    conditions = agents.rewriter(AgentName.CONDITIONS, models)
    assert isinstance(conditions, OfflineConditionsRewriter) and conditions.vocabulary is models.vocabulary
    assert isinstance(agents.rewriter(AgentName.HYDE, None), OfflineHydeRewriter)
    assert agents.rewriter(AgentName.TERMINOLOGY, models) is terminology  # kept per model folder
    assert agents.rewriter(AgentName.TERMINOLOGY, TrainedModels()) is not terminology
    assert isinstance(agents.planner(models), OfflinePlanner)
    with pytest.raises(InvalidInput, match="unknown agent 'oracle'"):
        agents.rewriter("oracle", models)


def test_a_new_model_set_never_gets_the_rewriters_of_a_dead_one_at_the_same_address() -> None:
    # Training builds one model set per fold, and CPython reuses a freed object's id: keyed by id
    # alone, fold 3 got fold 1's term mapping (fitted on fold 3's questions).
    agents = AgentFactory(llm=None)
    mappings = [TermMapping({"chef": [(f"fold{i}", 1.0)]}) for i in range(6)]
    for mapping in mappings:
        models = TrainedModels(term_mapping=mapping)
        rewriter = agents.rewriter(AgentName.TERMINOLOGY, models)
        assert isinstance(rewriter, OfflineTerminologyRewriter) and rewriter.mapping is mapping
        del models, rewriter
    assert len(agents._rewriters) <= 1  # the rewriters of model sets that are gone are dropped


def test_with_an_llm_every_role_asks_it_first_and_falls_back_offline() -> None:
    agents = AgentFactory(llm=LlmClient(LlmSettings(base_url="http://127.0.0.1:9", model="m")))
    terminology = agents.rewriter(AgentName.TERMINOLOGY, None)
    assert isinstance(terminology, LlmTerminologyRewriter) and isinstance(terminology.offline,
                                                                            OfflineTerminologyRewriter)
    assert isinstance(agents.rewriter(AgentName.HYDE, None), LlmHydeRewriter)
    planner = agents.planner(None)
    assert isinstance(planner, LlmPlanner) and isinstance(planner.offline, OfflinePlanner)
