"""Hybrid fusion: hand-computed RRF and linear scores, sub-scores kept."""

from __future__ import annotations

import pytest

from service.corpus.model import Hit, Provenance
from service.retrieval.fusion import linear, normalize_scores, rrf, section_lift, zscore_within_depth

pytestmark = pytest.mark.unit


def _hits(name: str, items: list[tuple[str, float]]) -> list[Hit]:
    return [Hit(doc_id=d, score=s, scores={name: s}, ranks={name: r}) for r, (d, s) in enumerate(items, 1)]


BM25 = _hits("bm25", [("a", 12.0), ("b", 9.0), ("c", 3.0)])
KNN = _hits("knn", [("b", 0.9), ("d", 0.8), ("a", 0.1)])


def test_rrf_matches_hand_computation() -> None:
    fused = rrf({"bm25": BM25, "knn": KNN}, k=60)
    scores = {h.doc_id: h.score for h in fused}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 63)
    assert scores["d"] == pytest.approx(1 / 62)
    assert [h.doc_id for h in fused] == ["b", "a", "d", "c"]


def test_rrf_keeps_every_sub_score_and_rank() -> None:
    fused = {h.doc_id: h for h in rrf({"bm25": BM25, "knn": KNN}, k=60)}
    assert fused["a"].scores == {"bm25": 12.0, "knn": 0.1, "rrf": pytest.approx(1 / 61 + 1 / 63)}
    assert fused["a"].ranks == {"bm25": 1, "knn": 3, "rrf": 2}
    assert "knn" not in fused["c"].scores  # found by BM25 only
    assert fused["d"].ranks == {"knn": 2, "rrf": 3}


def test_rrf_weights_and_k() -> None:
    fused = rrf({"bm25": BM25, "knn": KNN}, k=1, weights={"bm25": 2.0, "knn": 0.5})
    scores = {h.doc_id: h.score for h in fused}
    assert scores["a"] == pytest.approx(2 / 2 + 0.5 / 4)
    assert scores["d"] == pytest.approx(0.5 / 3)
    with pytest.raises(ValueError):
        rrf({"bm25": BM25}, k=0)


def test_rrf_merges_provenance_and_inputs_stay_untouched() -> None:
    left = [Hit("x", 1.0, {"a": 1.0}, {"a": 1}, [Provenance("terminology", 1, 1)])]
    right = [Hit("x", 2.0, {"b": 2.0}, {"b": 1}, [Provenance("decompose", 2, 1)])]
    fused = rrf({"a": left, "b": right})
    assert [p.agent for p in fused[0].provenance] == ["terminology", "decompose"]
    assert left[0].scores == {"a": 1.0}


def test_normalisations() -> None:
    assert list(normalize_scores([2.0, 4.0, 6.0], "minmax")) == [0.0, 0.5, 1.0]
    z = normalize_scores([1.0, 2.0, 3.0], "zscore")
    assert z.mean() == pytest.approx(0.0) and z.std() == pytest.approx(1.0)
    assert list(normalize_scores([5.0, 5.0], "minmax")) == [1.0, 1.0]
    assert list(normalize_scores([5.0, 5.0], "zscore")) == [0.0, 0.0]
    assert normalize_scores([], "minmax").size == 0
    with pytest.raises(ValueError):
        normalize_scores([1.0], "rank")


def test_linear_minmax_hand_computed() -> None:
    fused = linear({"bm25": BM25, "knn": KNN}, weights={"bm25": 1.0, "knn": 1.0}, normalization="minmax")
    scores = {h.doc_id: h.score for h in fused}
    # bm25 minmax: a=1, b=6/9, c=0 ; knn minmax: b=1, d=0.875, a=0 ; missing -> list minimum (0)
    assert scores["a"] == pytest.approx(1.0)
    assert scores["b"] == pytest.approx(6 / 9 + 1.0)
    assert scores["c"] == pytest.approx(0.0)
    assert scores["d"] == pytest.approx(0.875)
    assert fused[0].doc_id == "b"
    assert fused[0].scores["linear"] == fused[0].score and fused[0].ranks["linear"] == 1


def test_linear_zscore_weights() -> None:
    only_bm25 = linear({"bm25": BM25, "knn": KNN}, weights={"bm25": 1.0, "knn": 0.0})
    scores = {h.doc_id: h.score for h in only_bm25}
    assert [h.doc_id for h in only_bm25][:2] == ["a", "b"]
    assert scores["d"] == scores["c"]  # missing from BM25 = BM25's lowest score


def test_empty_inputs() -> None:
    assert rrf({"bm25": [], "knn": []}) == []
    assert linear({"bm25": []}) == []


# The demo question d03 (Italian: a payment order for a debt one does not owe; how long to object?) on
# the Swiss excerpt, default settings: z-scored BM25 and kNN (USE) of five SchKG articles, and the kNN
# list's minimum. BM25 ranks Art. 74 (the time limit) first; kNN finds its section (C. Rechtsvorschlag:
# Art. 74-77) but ranks Art. 74 itself 56th.
D03_BM25 = {"74": 3.77, "75": 1.69, "76": 1.05, "77": 2.77, "83": 1.74}
D03_KNN = {"74": -0.46, "75": 1.16, "76": 3.86, "77": 2.49, "83": 2.83}
D03_KNN_FLOOR = -1.03
D03_SECTIONS = {"74": "C", "75": "C", "76": "C", "77": "C", "83": "D"}


def test_section_lift_gives_each_candidate_a_share_of_its_sections_best_knn_score() -> None:
    lifted = section_lift(D03_KNN, list(D03_KNN), D03_SECTIONS, share=0.5, floor=D03_KNN_FLOOR)
    section_c = D03_KNN_FLOOR + 0.5 * (3.86 - D03_KNN_FLOOR)  # 1.415
    assert lifted["74"] == pytest.approx(section_c) and lifted["75"] == pytest.approx(section_c)
    assert {d: lifted[d] for d in ("76", "77", "83")} == {"76": 3.86, "77": 2.49, "83": 2.83}  # never lowered
    fused = {d: 0.55 * D03_BM25[d] + 0.45 * lifted[d] for d in D03_BM25}
    assert max(fused, key=fused.__getitem__) == "74"  # 2.71 against Art. 77's 2.64
    plain = {d: 0.55 * D03_BM25[d] + 0.45 * D03_KNN[d] for d in D03_BM25}
    assert sorted(plain, key=plain.__getitem__, reverse=True).index("74") == 3  # 4th without the rule


def test_section_lift_reaches_candidates_the_list_missed_and_leaves_the_rest() -> None:
    lifted = section_lift({"a": 2.0, "b": -1.0}, ["a", "b", "c", "d", "e"], {"a": "S", "c": "S", "d": "T"},
                          share=0.25, floor=-1.0)
    assert lifted == {"a": 2.0, "b": -1.0, "c": pytest.approx(-0.25)}  # d: its section found nothing; e: none
    assert section_lift({"a": 2.0}, ["a", "c"], {"a": "S", "c": "S"}, share=0.0, floor=-1.0) == {"a": 2.0}


def test_linear_fusion_shares_only_the_named_lists_evidence() -> None:
    sections = {"a": "S", "c": "S"}  # c (BM25 only) shares a section with a (kNN 0.1, its lowest)
    kwargs = {"weights": {"bm25": 1.0, "knn": 1.0}, "normalization": "minmax"}
    plain = {h.doc_id: h.score for h in linear({"bm25": BM25, "knn": KNN}, **kwargs)}
    assert plain == {h.doc_id: h.score for h in linear({"bm25": BM25, "knn": KNN}, sections=sections, **kwargs)}
    shared = {h.doc_id: h.score for h in linear({"bm25": BM25, "knn": KNN}, sections={"b": "S", "c": "S"},
                                                shared={"knn": 0.5}, **kwargs)}
    # knn minmax: b=1 (section S's best), d=0.875, a=0; c gets 0 + 0.5 * (1 - 0) from b
    assert shared["c"] == pytest.approx(0.0 + 0.5)
    assert shared["b"] == plain["b"] and shared["a"] == plain["a"] and shared["d"] == plain["d"]


def test_a_list_shorter_than_its_depth_is_z_scored_over_the_depth_with_zeros() -> None:
    z, zero = zscore_within_depth([12.0, 9.0, 3.0], 6)  # padded: 12, 9, 3, 0, 0, 0 (mean 4, deviation 4.80)
    deviation = (sum((x - 4.0) ** 2 for x in (12, 9, 3, 0, 0, 0)) / 6) ** 0.5
    assert list(z) == pytest.approx([8 / deviation, 5 / deviation, -1 / deviation])
    assert zero == pytest.approx(-4 / deviation)
    assert zscore_within_depth([0.0, 0.0], 5) == (pytest.approx([0.0, 0.0]), 0.0)  # nothing to scale


def test_documents_missing_from_a_short_bm25_list_score_as_non_matches() -> None:
    # BM25 matched three documents though asked for 100; kNN ranks d, which matches no query term, first
    knn = _hits("knn", [("d", 0.9), ("c", 0.6), ("a", 0.5), ("b", 0.45)])
    kwargs = {"weights": {"bm25": 0.5, "knn": 0.5}}
    old = [h.doc_id for h in linear({"bm25": BM25, "knn": knn}, **kwargs)]
    new = linear({"bm25": BM25, "knn": knn}, depths={"bm25": 100}, **kwargs)
    assert old == ["a", "d", "b", "c"]  # centred on its three matches, BM25 puts b and c below its mean
    assert [h.doc_id for h in new] == ["a", "b", "c", "d"]  # every term match before the non-match
    _, zero = zscore_within_depth([12.0, 9.0, 3.0], 100)
    knn_z = normalize_scores([0.9, 0.6, 0.5, 0.45], "zscore")
    assert {h.doc_id: h.score for h in new}["d"] == pytest.approx(0.5 * zero + 0.5 * knn_z[0])
    full = linear({"bm25": BM25, "knn": knn}, depths={"bm25": 3}, **kwargs)  # as deep as asked: as before
    assert [h.doc_id for h in full] == old
    minmax = linear({"bm25": BM25, "knn": knn}, depths={"bm25": 100}, normalization="minmax", **kwargs)
    assert [h.doc_id for h in minmax] == [h.doc_id for h in linear({"bm25": BM25, "knn": knn},
                                                                   normalization="minmax", **kwargs)]
