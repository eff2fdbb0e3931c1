"""Label-free QSI calibration (pseudo-queries) and the grid searches behind ``lexsearch calibrate``."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from service.backends.embedded import EmbeddedBackend
from service.corpus.model import LegalDoc
from service.errors import InvalidInput
from service.indexing import index_documents
from service.routing.calibration import (
    METHOD,
    calibrate_qsi,
    ensure_qsi_calibration,
    ensure_qsi_quietly,
    pseudo_queries,
    qsi_parameters,
    sample_documents,
)
from service.routing.complexity import qsi
from service.routing.laws import laws_covering
from service.routing.tuning import (
    CalibrationTargets,
    FitData,
    assign_tiers,
    routed_rankings,
    search_cut,
    search_routing,
)

pytestmark = pytest.mark.unit


def test_qsi_parameters_hand_computed() -> None:
    scores = [float(x) for x in range(1, 101)]
    a, b, pct = qsi_parameters(scores)
    assert b == pytest.approx(50.5)
    assert (pct["p10"], pct["p90"]) == (pytest.approx(10.9), pytest.approx(90.1))
    assert a == pytest.approx(2 * math.log(9) / (90.1 - 10.9))
    # the central 80% of scores spans QSI 0.1 .. 0.9
    assert qsi(pct["p10"], a=a, b=b) == pytest.approx(0.1)
    assert qsi(pct["p90"], a=a, b=b) == pytest.approx(0.9)


def test_qsi_parameters_refuse_too_little_or_flat_evidence() -> None:
    with pytest.raises(ValueError, match="at least 10"):
        qsi_parameters([1.0, 2.0])
    with pytest.raises(ValueError, match="spread"):
        qsi_parameters([3.0] * 50)


def test_reservoir_sample_and_pseudo_queries_are_reproducible() -> None:
    docs = [LegalDoc(id=f"d{i}", citation=f"Art. {i}", text=f"word{i} shared text number {i}", lang="en")
            for i in range(40)]
    sample = sample_documents(iter(docs), 10, random.Random(1))
    assert len(sample) == 10 and len({d.id for d in sample}) == 10
    assert [d.id for d in sample] == [d.id for d in sample_documents(iter(docs), 10, random.Random(1))]
    queries = pseudo_queries(docs, default_lang="en", count=20, rng=random.Random(2), min_terms=3, max_terms=5)
    again = pseudo_queries(docs, default_lang="en", count=20, rng=random.Random(2), min_terms=3, max_terms=5)
    assert queries == again and len(queries) == 20
    assert all(3 <= len(text.split()) <= 5 and lang == "en" for text, lang in queries)
    with pytest.raises(ValueError):
        pseudo_queries(docs, default_lang="en", count=1, rng=random.Random(), min_terms=5, max_terms=3)


@pytest.fixture(scope="module")
def own_index(tmp_path_factory, mini_docs, use_embedder) -> tuple[EmbeddedBackend, str]:
    """A private copy of the mini index: these tests write its metadata."""
    backend = EmbeddedBackend(tmp_path_factory.mktemp("calibration-indices"))
    assert index_documents(backend, use_embedder, "mini", mini_docs, language="").ok
    return backend, "mini"


def test_calibrate_qsi_on_the_mini_index_and_store_it(own_index) -> None:
    backend, name = own_index
    first = calibrate_qsi(backend, name, samples=80, seed=3)
    assert first.a > 0 and first.p10 < first.b < first.p90 and first.samples >= 10
    assert calibrate_qsi(backend, name, samples=80, seed=3).b == first.b  # same seed, same numbers
    stored = ensure_qsi_calibration(backend, name, samples=80)
    assert backend.metadata(name)["qsi"] == stored and stored["method"] == METHOD
    backend.update_metadata(name, qsi={**stored, "a": 123.0})
    assert ensure_qsi_calibration(backend, name)["a"] == 123.0  # already there: left alone
    assert ensure_qsi_calibration(backend, name, force=True, samples=80)["a"] != 123.0
    assert ensure_qsi_quietly(backend, name).startswith("QSI calibrated")


def test_calibration_of_an_index_too_small_is_a_clear_error(tmp_path, use_embedder) -> None:
    backend = EmbeddedBackend(tmp_path)
    doc = LegalDoc(id="only", citation="Art. 1", text="Einziger Artikel", lang="de")
    assert index_documents(backend, use_embedder, "tiny", [doc], language="de").ok
    with pytest.raises(InvalidInput, match="cannot calibrate QSI"):
        calibrate_qsi(backend, "tiny", samples=30)
    assert "not calibrated" in ensure_qsi_quietly(backend, "tiny")
    assert "qsi" not in backend.metadata("tiny")


def test_laws_covering() -> None:
    assert laws_covering([0.5, 0.2, 0.2, 0.1]) == 3
    assert laws_covering([0.9, 0.1]) == 1
    assert laws_covering([0.1] * 10) == 5  # capped
    assert laws_covering([]) == 0


# ----- grid searches -------------------------------------------------------------------------------

def _fit_data() -> FitData:
    """Four queries, two tiers: tier 1 helps the two hard queries (high complexity) and costs 10x."""
    c_int = np.array([0.1, 0.2, 0.8, 0.9])
    c_con = np.array([0.1, 0.2, 0.8, 0.9])
    recall = np.array([[1.0, 1.0, 0.0, 0.0],
                       [1.0, 1.0, 1.0, 1.0]])
    latency = np.array([[10.0, 10.0, 10.0, 10.0],
                        [100.0, 100.0, 100.0, 100.0]])
    return FitData(c_int, c_con, recall, latency)


def test_assign_tiers_matches_the_router() -> None:
    assert list(assign_tiers(np.array([0.0, 0.25, 0.45, 0.7, 1.0]), (0.25, 0.45, 0.7))) == [0, 1, 2, 3, 3]


def test_search_routing_finds_the_split_that_meets_the_budget() -> None:
    choice = search_routing(_fit_data(), latency_budget=0.6, confidence=None, gammas=(0.5,), grid=(0.0, 0.5, 1.0))
    # sending the two hard queries to tier 1 keeps full recall at (2 * 10 + 2 * 100) / 4 = 55 ms <= 60
    assert choice.thresholds[0] == 0.5
    assert choice.recall == 1.0 and choice.latency_ms == pytest.approx(55.0)
    assert choice.latency_upper == pytest.approx(0.55)
    assert choice.tier_shares == (0.5, 0.5) and choice.feasible and choice.rule == "both"
    assert choice.reference_recall == 1.0 and choice.reference_latency_ms == 100.0


def test_the_latency_budget_is_checked_on_an_upper_confidence_bound() -> None:
    # on four queries a resample may hold mostly hard ones: the 90% bound of the latency share is far
    # above the fit mean of 55%, so the budget of 60% is not trusted and the recall floor decides
    choice = search_routing(_fit_data(), latency_budget=0.6, gammas=(0.5,), grid=(0.0, 0.5, 1.0))
    assert choice.latency_upper > 0.7 and choice.rule == "recall-floor"
    assert choice.recall == 1.0 and choice.latency_ms == pytest.approx(55.0)
    # with many such queries the bound closes in on the mean and the budget is met
    many = _fit_data()
    many = FitData(np.tile(many.c_intrinsic, 100), np.tile(many.c_consistency, 100), np.tile(many.recall, 100),
                    np.tile(many.latency_ms, 100))
    choice = search_routing(many, latency_budget=0.6, gammas=(0.5,), grid=(0.0, 0.5, 1.0))
    assert 0.55 < choice.latency_upper < 0.6 and choice.rule == "both"


def test_the_bounds_are_relaxed_step_by_step_before_the_budget_is_given_up() -> None:
    base = _fit_data()
    data = FitData(np.tile(base.c_intrinsic, 10), np.tile(base.c_consistency, 10), np.tile(base.recall, 10),
                   np.tile(base.latency_ms, 10))
    args = {"gammas": (0.5,), "grid": (0.0, 0.5, 1.0)}
    upper = {level: search_routing(data, latency_budget=1.0, confidence=level, **args).latency_upper
             for level in (0.9, 0.8, 0.7)}
    assert upper[0.9] > upper[0.8] > upper[0.7] > 0.55  # the fit mean of the split setting is 55%
    budget = (upper[0.8] + upper[0.9]) / 2
    strict = search_routing(data, latency_budget=budget, confidence=0.9, **args)
    assert strict.rule == "recall-floor" and not strict.feasible
    relaxed = search_routing(data, latency_budget=budget, confidence=0.9, min_confidence=0.7, **args)
    assert relaxed.rule == "both-relaxed" and relaxed.feasible
    assert relaxed.confidence == 0.8 and relaxed.requested_confidence == 0.9  # the first step that meets both
    assert relaxed.latency_upper == pytest.approx(upper[0.8]) and relaxed.thresholds == strict.thresholds
    assert relaxed.to_dict()["requested_confidence"] == 0.9 and relaxed.to_dict()["confidence"] == 0.8
    # the last step is min_confidence itself (0.9 - 0.1 - 0.1 must not fall just below 0.7)
    lowest = search_routing(data, latency_budget=(upper[0.7] + upper[0.8]) / 2, confidence=0.9, min_confidence=0.7,
                            **args)
    assert lowest.rule == "both-relaxed" and lowest.confidence == 0.7
    # a budget below even the 70% bound: the recall floor decides, with the bounds at the requested confidence
    tight = search_routing(data, latency_budget=0.5, confidence=0.9, min_confidence=0.7, **args)
    assert tight.rule == "recall-floor" and tight.confidence == 0.9
    with pytest.raises(ValueError):
        search_routing(data, confidence=0.8, min_confidence=0.9)


def test_calibration_targets_name_their_options() -> None:
    assert CalibrationTargets().min_confidence == 0.7 and not CalibrationTargets().problems()
    with pytest.raises(InvalidInput, match="--min-confidence"):
        CalibrationTargets(confidence=0.8, min_confidence=0.9).check()


def test_search_routing_keeps_the_recall_floor_when_the_budget_is_too_tight() -> None:
    choice = search_routing(_fit_data(), latency_budget=0.2, gammas=(0.5,), grid=(0.0, 0.5, 1.0))
    assert choice.rule == "recall-floor" and not choice.feasible
    assert choice.recall == 1.0 and choice.latency_ms == pytest.approx(55.0)  # the fastest that keeps recall
    # on the fit mean, "all in tier 0" keeps exactly half the recall ...
    cheap = search_routing(_fit_data(), recall_target=0.5, latency_budget=0.2, confidence=None, gammas=(0.5,),
                           grid=(0.0, 0.5, 1.0))
    assert cheap.rule == "both" and cheap.recall == 0.5 and cheap.latency_ms == 10.0
    assert cheap.recall_lower == pytest.approx(0.5)
    # ... but on four queries its lower confidence bound is far below: the floor is not trusted
    careful = search_routing(_fit_data(), recall_target=0.5, latency_budget=0.2, gammas=(0.5,),
                             grid=(0.0, 0.5, 1.0))
    assert careful.rule == "recall-floor" and careful.recall == 1.0
    no_floor = search_routing(_fit_data(), gammas=(0.5,), grid=(1.0,))  # only "all in tier 0" is on the grid
    assert no_floor.rule == "best-recall" and no_floor.recall == 0.5


def test_recall_gains_within_one_standard_error_do_not_buy_latency() -> None:
    # 50 queries; tier 1 costs 10x. On the three hard ones it gains +1 and +0.5 and loses -1, so the
    # best setting (the hard ones in tier 1) is 0.01 of mean recall above all-in-tier-0: well within
    # one standard error of the per-query difference (0.03). That gain is noise; it buys no latency.
    n = 50
    complexity = np.linspace(0.0, 0.49, n)
    complexity[:3] = [0.9, 0.8, 0.85]
    recall = np.ones((2, n))
    recall[0, 0], recall[0, 1], recall[1, 2] = 0.0, 0.5, 0.0
    latency = np.vstack([np.full(n, 10.0), np.full(n, 100.0)])
    grid = (0.0, 0.5, 1.0)
    greedy = search_routing(FitData(complexity, complexity, recall, latency), latency_budget=0.5, confidence=None,
                            gammas=(0.5,), grid=grid, one_standard_error=False)
    assert greedy.thresholds[0] == 0.5 and greedy.tier_shares == (0.94, 0.06)
    assert greedy.recall == pytest.approx(0.98)
    frugal = search_routing(FitData(complexity, complexity, recall, latency), latency_budget=0.5, confidence=None,
                            gammas=(0.5,), grid=grid)
    assert frugal.tier_shares == (1.0, 0.0) and frugal.recall == pytest.approx(0.97)
    assert frugal.latency_ms == 10.0 and frugal.rule == "both"
    # a gain larger than the noise is still bought: tier 1 also wins on seven more hard queries
    recall[0, 3:10] = 0.0
    complexity[3:10] = 0.95
    clear = search_routing(FitData(complexity, complexity, recall, latency), latency_budget=0.5, confidence=None,
                           gammas=(0.5,), grid=grid)
    assert clear.thresholds[0] == 0.5 and clear.tier_shares == (0.8, 0.2)


def test_search_routing_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        search_routing(_fit_data(), latency_budget=0.0)
    with pytest.raises(ValueError):
        search_routing(_fit_data(), recall_target=1.5)
    with pytest.raises(ValueError):
        search_routing(_fit_data(), confidence=1.0)
    with pytest.raises(ValueError):
        FitData(np.zeros(2), np.zeros(3), np.zeros((2, 2)), np.zeros((2, 2)))


def test_search_cut_prefers_cutting_at_the_cliff() -> None:
    rankings = [[("a", 10.0), ("b", 9.8), ("x", 3.0), ("y", 2.9)] + [(f"z{i}", 1.0 - i * 0.01) for i in range(20)],
                [("c", 8.0), ("w", 2.0), ("v", 1.9)] + [(f"u{i}", 1.0 - i * 0.01) for i in range(20)]]
    relevant = [{"a", "b"}, {"c"}]
    choice = search_cut(rankings, relevant, sigmas=(0.1, 0.2), min_ks=(1,), max_ks=(10,))
    assert choice.f1 == pytest.approx(1.0) and choice.precision == 1.0 and choice.recall == 1.0
    assert choice.fixed10_f1 == pytest.approx((2 * 0.2 * 1 / 1.2 + 2 * 0.1 * 1 / 1.1) / 2)
    assert choice.sigma == 0.2  # both sigmas are perfect: the one closest to the default wins


def test_routed_rankings_follow_the_choice() -> None:
    data = _fit_data()
    data.rankings = [[[("t0", 1.0)]] * 4, [[("t1", 1.0)]] * 4]
    choice = search_routing(data, latency_budget=0.6, gammas=(0.5,), grid=(0.0, 0.5, 1.0))
    assert [r[0][0] for r in routed_rankings(data, choice)] == ["t0", "t0", "t1", "t1"]


def test_the_reference_latency_is_the_top_tier_without_routing() -> None:
    data = _fit_data()
    # routing adds 5 ms of complexity estimate to every tier; the reference runs tier 1 directly
    routed = FitData(data.c_intrinsic, data.c_consistency, data.recall, data.latency_ms + 5.0,
                     reference_latency_ms=data.latency_ms[-1])
    choice = search_routing(routed, latency_budget=0.6, confidence=None, gammas=(0.5,), grid=(0.0, 0.5, 1.0))
    assert choice.reference_latency_ms == 100.0 and choice.latency_ms == pytest.approx(60.0)
    assert choice.latency_upper == pytest.approx(0.6) and choice.rule == "both"
    assert _fit_data().reference_latency_ms.tolist() == [100.0] * 4
    with pytest.raises(ValueError):
        FitData(data.c_intrinsic, data.c_consistency, data.recall, data.latency_ms, reference_latency_ms=np.zeros(3))


def _tail(prefix: str) -> list[tuple[str, float]]:
    return [(f"{prefix}{i}", 1.0 - i * 0.01) for i in range(20)]


# Three relevant hits with 30 % drops between them: sigma 0.4 keeps all three, the default 0.2 only the first.
_STEPS = [("a", 10.0), ("b", 7.0), ("c", 4.9)]
# One relevant hit and a 25 % drop after it: the default keeps it alone, sigma 0.4 takes a wrong second hit.
_SHALLOW = [("a", 10.0), ("x", 7.5)]


def test_search_cut_takes_a_cut_that_is_better_on_every_question() -> None:
    rankings = [_STEPS + _tail("z")] * 10
    choice = search_cut(rankings, [{"a", "b", "c"}] * 10, sigmas=(0.2, 0.4, 0.5), min_ks=(1,), max_ks=(10,))
    assert (choice.sigma, choice.f1, choice.best_f1) == (0.4, pytest.approx(1.0), pytest.approx(1.0))
    assert choice.to_dict()["rule"] == "gain-lower-bound"


def test_search_cut_keeps_the_default_when_another_cut_wins_by_noise() -> None:
    clear = [("a", 10.0), *_tail("z")]  # every sigma cuts after the first hit
    rankings = [clear] * 20 + [_STEPS + _tail("z")] * 2 + [_SHALLOW + _tail("z")]
    relevant = [{"a"}] * 20 + [{"a", "b", "c"}] * 2 + [{"a"}]
    choice = search_cut(rankings, relevant, sigmas=(0.2, 0.4), min_ks=(1,), max_ks=(10,))
    # sigma 0.4 has the higher mean F1 (two questions gain 0.5, one loses 1/3), by less than a standard error
    assert choice.best_f1 > choice.f1
    assert (choice.sigma, choice.min_k, choice.max_k) == (0.2, 1, 10)
    assert choice.to_dict()["fit_best"] == {"sigma": 0.4, "min_k": 1, "max_k": 10, "f1": round(choice.best_f1, 4)}
