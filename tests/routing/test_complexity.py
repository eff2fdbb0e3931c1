"""Complexity formulas on hand-computed cases: saturation, intrinsic, QSI, RDI, gating, fusion."""

from __future__ import annotations

import math

import pytest

from service.llm.schemas import COMPLEXITY_DIMENSIONS
from service.routing.complexity import (
    DIMENSION_NAMES,
    Dimensions,
    QuestionFeatures,
    base_complexity,
    consistency,
    dimensions,
    fuse,
    intrinsic,
    qsi,
    question_features,
    rdi,
    saturate,
    sigmoid,
)
from service.routing.markers import count_matches, markers_for

pytestmark = pytest.mark.unit

E1 = 1 - math.exp(-1)  # saturate(x, x)


def test_saturate_and_sigmoid() -> None:
    assert saturate(2.0, 2.0) == pytest.approx(E1)
    assert saturate(0.0, 3.0) == 0.0
    assert saturate(-1.0, 3.0) == 0.0
    assert saturate(1e9, 1.0) == pytest.approx(1.0)
    assert sigmoid(0.0) == 0.5
    assert sigmoid(1.0) == pytest.approx(1 / (1 + math.exp(-1)))
    assert sigmoid(-1000.0) == pytest.approx(0.0) and sigmoid(1000.0) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        saturate(1.0, 0.0)


def test_intrinsic_weights_base_and_five_dimensions() -> None:
    assert intrinsic(0.5, 0.2) == pytest.approx(0.3 * 0.5 + 0.7 * 0.2)  # 0.29
    assert intrinsic(1.0, 0.0, base_weight=0.0) == 0.0
    with pytest.raises(ValueError):
        intrinsic(0.5, 0.5, base_weight=1.5)


def test_qsi_hand_computed() -> None:
    assert qsi(12.5, a=0.5, b=12.5) == 0.5
    assert qsi(14.5, a=0.5, b=12.5) == pytest.approx(1 / (1 + math.exp(-1.0)))  # 0.7311
    assert qsi(10.5, a=0.5, b=12.5) == pytest.approx(1 / (1 + math.exp(1.0)))   # 0.2689
    assert qsi(None, a=0.5, b=12.5) == 0.0
    assert qsi(float("nan"), a=0.5, b=12.5) == 0.0


def test_rdi_hand_computed() -> None:
    # top-4 sets share {a, b}: Jaccard 2/6; top-3 share {a, b}: 2/3.
    value = rdi(["a", "b", "c", "d"], ["b", "a", "e", "f"], k=4)
    assert value == pytest.approx(1 - (0.7 * 2 / 6 + 0.3 * 2 / 3))  # 0.5667
    assert rdi(["a", "b", "c"], ["c", "b", "a"], k=3) == pytest.approx(0.0)
    assert rdi(["a", "b", "c"], ["x", "y", "z"], k=3) == pytest.approx(1.0)
    assert rdi([], ["x"], k=3) == 1.0
    # only the top k count: the lists agree on their first two, differ beyond
    assert rdi(["a", "b", "c"], ["a", "b", "z"], k=2, top=2) == pytest.approx(0.0)


def test_consistency_gating_hand_computed() -> None:
    # QSI 1 and RDI 0: both signals say easy.
    assert consistency(1.0, 0.0) == 0.0
    # u = 1 - QSI = 1, v = RDI = 1: both say hard.
    assert consistency(0.0, 1.0) == pytest.approx(1.0)
    # u = 0, v = 1: the gate gives the hard signal all the weight; q keeps the average's share.
    assert consistency(1.0, 1.0) == pytest.approx(0.7 * 1.0 + 0.3 * 0.5)  # 0.85
    # u = 0.2, v = 0.6 with p = 1.5, q = 0.3
    u, v = 0.2, 0.6
    gated = (u**2.5 + v**2.5) / (u**1.5 + v**1.5)
    assert consistency(0.8, 0.6) == pytest.approx(0.7 * gated + 0.3 * (u + v) / 2)  # 0.4948
    assert consistency(0.8, 0.6) == pytest.approx(0.49481, abs=1e-4)
    # equal signals give that value back
    assert consistency(0.6, 0.4) == pytest.approx(0.4)


def test_consistency_is_competitive() -> None:
    # the stronger signal pulls harder than a plain average would
    assert consistency(0.9, 0.8) > (0.1 + 0.8) / 2
    # a larger p sharpens the competition
    assert consistency(0.9, 0.8, p=4.0) > consistency(0.9, 0.8, p=1.0)
    # q = 1 is the plain average
    assert consistency(0.9, 0.8, q=1.0) == pytest.approx((0.1 + 0.8) / 2)


def test_fuse_and_ablations() -> None:
    assert fuse(0.4, 0.6) == pytest.approx(0.5)
    assert fuse(0.4, 0.6, gamma=0.25) == pytest.approx(0.25 * 0.4 + 0.75 * 0.6)
    assert fuse(None, 0.6) == 0.6
    assert fuse(0.4, None) == 0.4
    with pytest.raises(ValueError):
        fuse(None, None)


FEATURES = QuestionFeatures(lang="en", tokens=20, clauses=3, sentences=2, conditionals=1, connectives=2,
                            negations=1, numbers=1, questions=2, parties=3, relations=2, domains=2, citations=1)


def test_dimensions_hand_computed() -> None:
    d = dimensions(FEATURES)
    assert d.reasoning_chain == pytest.approx(saturate(3 - 1 + 2, 4.0))          # sat(4, 4)
    assert d.reasoning_chain == pytest.approx(E1)
    assert d.knowledge_integration == pytest.approx(saturate(0 + 1 + 1, 2.0))   # no classifier: laws = 1
    assert d.domain_span == pytest.approx(1 - math.exp(-1 / 1.5))
    assert d.relational_reasoning == pytest.approx(saturate(3 - 1 + 0.5 * 2, 3.0))
    assert d.conditional_density == pytest.approx(saturate((1 + 0.5 * (1 + 1)) / 2, 1.5))
    assert d.mean() == pytest.approx(sum(d.to_dict().values()) / 5)
    assert base_complexity(FEATURES) == pytest.approx(1 - math.exp(-0.5))       # 20 tokens, scale 40


def test_predicted_laws_raise_knowledge_integration() -> None:
    with_laws = QuestionFeatures(**{**FEATURES.to_dict(), "laws": 3})
    assert dimensions(with_laws).knowledge_integration == pytest.approx(saturate(2 + 1 + 1, 2.0))
    assert dimensions(with_laws).knowledge_integration > dimensions(FEATURES).knowledge_integration


def test_every_dimension_saturates() -> None:
    huge = QuestionFeatures(lang="en", tokens=10_000, clauses=500, sentences=1, conditionals=400, connectives=400,
                            negations=400, numbers=400, questions=50, parties=300, relations=300, domains=11,
                            citations=40, laws=5)
    values = dimensions(huge).to_dict().values()
    assert all(0.99 < v <= 1.0 for v in values)
    assert base_complexity(huge) <= 1.0


def test_dimension_names_match_the_llm_prompt() -> None:
    assert DIMENSION_NAMES == COMPLEXITY_DIMENSIONS
    dims = Dimensions.from_dict({name: 0.5 for name in DIMENSION_NAMES} | {"domain_span": 1.7})
    assert dims.domain_span == 1.0
    with pytest.raises(ValueError, match="missing"):
        Dimensions.from_dict({"reasoning_chain": 0.2})


@pytest.mark.parametrize(("text", "lang", "conditionals", "negations"), [
    ("如果公司不签劳动合同，员工离职后能否要求双倍工资？", "zh", 1, 1),
    ("Wenn mein Vermieter die Kaution nicht zurückgibt, obwohl ich ausgezogen bin: kann ich klagen?", "de", 2, 1),
    ("If the landlord refuses to return the deposit unless I pay 200 dollars, can I sue him?", "en", 2, 1),
    ("Si le bailleur refuse de rendre la caution, puis-je agir?", "fr", 1, 1),
    ("Se il locatore non restituisce la cauzione, posso agire?", "it", 1, 1),
])
def test_question_features_count_markers_per_language(text: str, lang: str, conditionals: int,
                                                      negations: int) -> None:
    f = question_features(text, lang)
    assert f.lang == lang
    assert f.conditionals == conditionals
    assert f.negations == negations
    assert f.clauses >= 2 and f.questions == 1 and f.parties >= 1


def test_chinese_legal_terms_are_not_negations() -> None:
    assert question_features("不动产登记和未成年人的监护", "zh").negations == 0


def test_question_features_detect_language_and_count_numbers() -> None:
    f = question_features("I lent him 5000 dollars two years ago. He refuses to pay. What can I do? Can I sue?")
    assert f.lang == "en"
    assert f.numbers >= 1 and f.questions == 2 and f.sentences >= 3


def test_complex_questions_score_higher_than_simple_ones() -> None:
    simple = question_features("商业保险的人身保险请求权可以转让吗？", "zh")
    hard = question_features("我和丈夫离婚时，如果他拒不支付抚养费，而且还拖欠房贷，我能否起诉要求赔偿，"
                             "同时申请财产保全？公司股权怎么分割？", "zh")
    c_simple = intrinsic(base_complexity(simple), dimensions(simple).mean())
    c_hard = intrinsic(base_complexity(hard), dimensions(hard).mean())
    assert c_simple < 0.1 < 0.4 < c_hard <= 1.0


def test_phrase_markers_match_consecutive_tokens() -> None:
    assert count_matches(["es", "sei", "denn", "wenn"], frozenset({"wenn", "es sei denn"})) == 2
    assert count_matches([], frozenset({"wenn"})) == 0
    assert markers_for("pt") is markers_for("en")  # unknown languages fall back to English
