"""Tier boundaries, parameter resolution, strategies, and the complexity estimator (offline and LLM)."""

from __future__ import annotations

from dataclasses import fields

import pytest

from service.config import LlmSettings, RoutingNumbers, RoutingSettings, RoutingTier, load_settings
from service.corpus.model import Hit
from service.errors import ConfigError
from service.llm.client import LlmClient
from service.routing import complexity as cx
from service.routing.router import ComplexityEstimator, Router, RoutingParams, tier_for
from tests.support.openai_server import OpenAITestServer, Reply

pytestmark = pytest.mark.unit

THRESHOLDS = (0.25, 0.45, 0.7)


@pytest.mark.parametrize(("score", "tier"), [
    (0.0, 0), (0.2499, 0), (0.25, 1), (0.3, 1), (0.4499, 1), (0.45, 2), (0.6999, 2), (0.7, 3), (1.0, 3),
])
def test_tier_boundaries(score: float, tier: int) -> None:
    assert tier_for(score, THRESHOLDS) == tier


def test_router_caps_at_the_last_strategy_and_resolves_auto_reranker() -> None:
    router = Router.from_settings(RoutingSettings(), llm_enabled=False)
    params = RoutingParams()
    assert [router.tier(s, params) for s in (0.1, 0.3, 0.5, 0.9)] == [0, 1, 2, 3]
    assert router.strategy(0).pipeline == "hybrid"
    assert router.strategy(1).pipeline == "hybrid+rerank" and router.strategy(1).options["reranker"] == "learned"
    assert router.strategy(3).options["reranker"] == "learned"
    assert router.strategy(3).options["prefilter"] == "1" and "decompose" in router.strategy(3).options["agents"]
    assert "decompose" not in router.strategy(2).options["agents"]
    with_llm = Router.from_settings(RoutingSettings(), llm_enabled=True)
    assert with_llm.strategy(3).options["reranker"] == "llm"
    assert with_llm.strategy(2).options["reranker"] == "learned"
    with pytest.raises(ValueError):
        router.strategy(4)
    short = Router(router.strategies[:2])
    assert short.tier(0.99, params) == 1


def test_tiers_are_one_setting_in_the_environment_and_the_config_file(tmp_path) -> None:
    settings = load_settings(environ={"LEXSEARCH_ROUTING_TIERS": "hybrid | hybrid+rerank: reranker=learned | "
                                                                 "agentic: agents=terminology,repair;max_rounds=1 | "
                                                                 "hybrid: x=1",
                                      "LEXSEARCH_ROUTING_THRESHOLDS": "0.2,0.5,0.9"})
    router = Router.from_settings(settings.routing, llm_enabled=False)
    assert router.strategy(3).pipeline == "hybrid" and router.strategy(3).options == {"x": "1"}
    assert router.strategy(2).options == {"agents": "terminology,repair", "max_rounds": "1"}
    assert settings.routing.thresholds == (0.2, 0.5, 0.9)
    config = tmp_path / "lexsearch.toml"
    config.write_text('[routing]\ntiers = ["hybrid", "hybrid+rerank", "agentic: max_rounds=2", '
                      '"agentic: reranker=auto; hyde=1"]\n', encoding="utf-8")
    tiers = load_settings(config, environ={}).routing.tiers
    assert [t.spec() for t in tiers] == ["hybrid", "hybrid+rerank", "agentic: max_rounds=2",
                                         "agentic: reranker=auto;hyde=1"]
    assert [RoutingTier.parse(t.spec()) for t in RoutingSettings().tiers] == list(RoutingSettings().tiers)


def test_old_per_tier_spellings_are_still_read() -> None:
    settings = load_settings(environ={"LEXSEARCH_ROUTING_TIER3": "hybrid", "LEXSEARCH_ROUTING_TIER3_OPTIONS": "x=1",
                                      "LEXSEARCH_ROUTING_TIER1_OPTIONS": "reranker=none"})
    tiers = settings.routing.tiers
    assert tiers[3] == RoutingTier("hybrid", (("x", "1"),)) and tiers[1] == RoutingTier("hybrid+rerank",
                                                                                           (("reranker", "none"),))
    assert tiers[0] == RoutingSettings().tiers[0] and tiers[2] == RoutingSettings().tiers[2]


@pytest.mark.parametrize(("env", "message"), [
    ({"LEXSEARCH_ROUTING_THRESHOLDS": "0.5,0.4,0.7"}, "thresholds"),
    ({"LEXSEARCH_ROUTING_THRESHOLDS": "0.2,0.4"}, "thresholds"),
    ({"LEXSEARCH_ROUTING_GAMMA": "1.5"}, "gamma"),
    ({"LEXSEARCH_ROUTING_TIERS": "hybrid | hybrid | agentic: reranker | agentic"}, "must look like key=value"),
    ({"LEXSEARCH_ROUTING_TIERS": "routed | hybrid | agentic | agentic"}, "routed pipeline itself"),
    ({"LEXSEARCH_ROUTING_TIERS": "hybrid | agentic"}, "4 tiers"),
    ({"LEXSEARCH_ROUTING_TIERS": "hybrid | : x=1 | agentic | agentic"}, "pipeline name"),
    ({"LEXSEARCH_ROUTING_TIER2_OPTIONS": "reranker"}, "key=value"),
    ({"LEXSEARCH_ROUTING_TIER0": "routed"}, "routed pipeline itself"),
    ({"LEXSEARCH_ROUTING_CUT_MIN_K": "20"}, "cut_min_k"),
])
def test_bad_routing_settings_are_rejected(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match="routing") as caught:
        load_settings(environ=env)
    assert message in str(caught.value)


def test_params_repeat_no_setting() -> None:
    numbers = {f.name for f in fields(RoutingNumbers)}
    assert numbers <= {f.name for f in fields(RoutingSettings)} and numbers <= {f.name for f in fields(RoutingParams)}
    assert {f.name for f in fields(RoutingParams)} - numbers == {"sources"}
    settings = RoutingSettings(gamma=0.2, cut_depth=60)
    params = RoutingParams.resolve(settings)
    assert all(getattr(params, name) == getattr(settings, name) for name in numbers - {"thresholds"})
    assert params.thresholds == settings.thresholds


def test_params_from_settings_and_stored_calibration() -> None:
    settings = RoutingSettings()
    plain = RoutingParams.resolve(settings, {})
    assert (plain.qsi_a, plain.qsi_b, plain.thresholds) == (0.5, 12.5, (0.25, 0.45, 0.7))
    assert plain.sources == {"qsi": "paper-default", "thresholds": "settings", "cut": "settings"}
    meta = {"qsi": {"a": 0.1, "b": 30.0},
            "routing": {"thresholds": [0.1, 0.5, 0.8], "gamma": 0.6, "cut": {"sigma": 0.05, "min_k": 2, "max_k": 20}}}
    tuned = RoutingParams.resolve(settings, meta)
    assert (tuned.qsi_a, tuned.qsi_b, tuned.thresholds, tuned.gamma) == (0.1, 30.0, (0.1, 0.5, 0.8), 0.6)
    assert (tuned.cut_sigma, tuned.cut_min_k, tuned.cut_max_k) == (0.05, 2, 20)
    assert tuned.sources == {"qsi": "calibrated", "thresholds": "index", "cut": "index"}
    # use_calibration = false keeps the configured thresholds, but QSI always follows the index's score scale
    fixed = RoutingParams.resolve(RoutingSettings(use_calibration=False), meta)
    assert fixed.thresholds == (0.25, 0.45, 0.7) and fixed.qsi_a == 0.1


def test_the_model_folders_calibration_comes_before_the_indexs() -> None:
    meta = {"routing": {"thresholds": [0.1, 0.5, 0.8], "gamma": 0.6, "cut": {"sigma": 0.05, "min_k": 2, "max_k": 20}}}
    model = {"thresholds": [0.3, 0.9, 0.9], "gamma": 0.1}
    params = RoutingParams.resolve(RoutingSettings(), meta, model)
    assert (params.thresholds, params.gamma) == ((0.3, 0.9, 0.9), 0.1)
    assert params.sources == {"qsi": "paper-default", "thresholds": "model", "cut": "settings"}
    broken = RoutingParams.resolve(RoutingSettings(), meta, {"thresholds": [0.9, 0.1, 0.2]})
    assert broken.thresholds == (0.1, 0.5, 0.8) and broken.sources["thresholds"] == "index"
    off = RoutingParams.resolve(RoutingSettings(use_calibration=False), meta, model)
    assert off.thresholds == (0.25, 0.45, 0.7) and off.sources["thresholds"] == "settings"


def test_malformed_stored_calibration_is_ignored() -> None:
    params = RoutingParams.resolve(RoutingSettings(), {"qsi": {"a": "x"}, "routing": {"thresholds": [0.9, 0.1]}})
    assert params.thresholds == (0.25, 0.45, 0.7) and params.qsi_a == 0.5
    negative = RoutingParams.resolve(RoutingSettings(), {"qsi": {"a": -1.0, "b": 3.0}})
    assert negative.qsi_a == 0.5 and negative.sources["qsi"] == "paper-default"


def _hits(kind: str, ids: list[str], top: float = 20.0) -> list[Hit]:
    return [Hit(doc_id=d, score=top - i, scores={kind: top - i}, ranks={kind: i + 1}) for i, d in enumerate(ids)]


BM25 = _hits("bm25", ["a", "b", "c", "d"], top=14.5)
KNN = _hits("knn", ["b", "a", "e", "f"], top=0.9)
QUESTION = "If the landlord refuses to return the deposit unless I pay, can I sue him?"


def test_estimator_combines_both_parts_hand_computed() -> None:
    params = RoutingParams(rdi_k=4)
    report = ComplexityEstimator().assess(QUESTION, "en", BM25, KNN, params)
    assert report.qsi == pytest.approx(cx.sigmoid(0.5 * (14.5 - 12.5)))
    assert report.rdi == pytest.approx(1 - (0.7 * 2 / 6 + 0.3 * 2 / 3))
    assert report.c_consistency == pytest.approx(cx.consistency(report.qsi, report.rdi))
    f = cx.question_features(QUESTION, "en")
    c_int = cx.intrinsic(cx.base_complexity(f), cx.dimensions(f).mean())
    assert report.c_intrinsic == pytest.approx(c_int)
    assert report.score == pytest.approx(0.5 * c_int + 0.5 * report.c_consistency)
    trace = report.to_dict()
    assert set(trace) == {"score", "intrinsic", "consistency"}
    assert set(trace["intrinsic"]["dimensions"]) == set(cx.DIMENSION_NAMES)
    assert trace["intrinsic"]["dimensions_source"] == "offline"
    assert trace["consistency"]["bm25_top1"] == 14.5


def test_estimator_ablations() -> None:
    params = RoutingParams(rdi_k=4)
    estimator = ComplexityEstimator()
    no_intrinsic = estimator.assess(QUESTION, "en", BM25, KNN, params, use_intrinsic=False)
    assert no_intrinsic.c_intrinsic is None and no_intrinsic.score == pytest.approx(no_intrinsic.c_consistency)
    no_consistency = estimator.assess(QUESTION, "en", BM25, KNN, params, use_consistency=False)
    assert no_consistency.qsi is None and no_consistency.score == pytest.approx(no_consistency.c_intrinsic)
    assert no_consistency.to_dict()["consistency"] is None
    with pytest.raises(ValueError):
        estimator.assess(QUESTION, "en", BM25, KNN, params, use_intrinsic=False, use_consistency=False)


def test_estimator_without_bm25_hits_is_maximally_inconsistent() -> None:
    report = ComplexityEstimator().assess("xyz", "en", [], KNN, RoutingParams(), use_intrinsic=False)
    assert (report.qsi, report.rdi, report.bm25_top1) == (0.0, 1.0, None)
    assert report.score == pytest.approx(1.0)


def test_law_counter_feeds_knowledge_integration() -> None:
    seen = []

    def count(question: str, lang: str, vector: object) -> int:
        seen.append(lang)
        return 3

    report = ComplexityEstimator(law_count=count).assess(QUESTION, "en", BM25, KNN, RoutingParams(),
                                                         use_consistency=False)
    assert seen == ["en"] and report.features is not None and report.features.laws == 3

    def broken(question: str, lang: str, vector: object) -> int:
        raise RuntimeError("model file missing")

    report = ComplexityEstimator(law_count=broken).assess(QUESTION, "en", BM25, KNN, RoutingParams(),
                                                          use_consistency=False)
    assert report.features is not None and report.features.laws is None


def _client(server: OpenAITestServer) -> LlmClient:
    return LlmClient(LlmSettings(base_url=server.base_url, model="test-model", timeout_s=2.0, max_retries=0),
                     backoff_base_s=0.01)


def test_llm_rates_the_five_dimensions(openai_server: OpenAITestServer) -> None:
    from service.llm.budget import CallBudget

    ratings = {"reasoning_chain": 0.9, "knowledge_integration": 0.8, "domain_span": 0.7,
               "relational_reasoning": 0.6, "conditional_density": 0.5}
    openai_server.script_chat(Reply(json=ratings))
    report = ComplexityEstimator(llm=_client(openai_server)).assess(
        QUESTION, "en", BM25, KNN, RoutingParams(), use_consistency=False, budget=CallBudget(4, 10_000))
    assert report.dimensions_source == "llm" and report.c_5d == pytest.approx(0.7)
    assert report.llm_calls == 1 and report.llm is not None and report.llm["ok"]
    assert QUESTION in openai_server.chat_requests[0].json["messages"][1]["content"]


def test_llm_failure_falls_back_to_offline_counts(openai_server: OpenAITestServer) -> None:
    from service.llm.budget import CallBudget

    openai_server.script_chat(Reply(text="not json"), Reply(text="{}"), Reply(json={"reasoning_chain": 2}))
    report = ComplexityEstimator(llm=_client(openai_server)).assess(
        QUESTION, "en", BM25, KNN, RoutingParams(), use_consistency=False, budget=CallBudget(4, 10_000))
    assert report.dimensions_source == "offline"
    assert report.llm is not None and not report.llm["ok"] and report.llm["fallback_reason"]
    f = cx.question_features(QUESTION, "en")
    assert report.c_5d == pytest.approx(cx.dimensions(f).mean())
