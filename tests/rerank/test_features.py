"""Pool features: shape, the signals each column carries, and neutral values for missing inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from service.corpus.graph import CorpusGraph
from service.corpus.model import Hit, LegalDoc, Provenance
from service.rerank.features import FEATURE_NAMES, FeatureContext, pool_features
from service.rerank.priors import ArticlePrior, MemoryVote

pytestmark = pytest.mark.unit

COL = {n: i for i, n in enumerate(FEATURE_NAMES)}


def _graph() -> CorpusGraph:
    docs = [LegalDoc(id=f"or-{i}", citation=f"Art. {i} OR", text="x" * 10 * i, law="OR",
                     cites=("OR art. 1",) if i == 3 else ()) for i in range(1, 5)]
    docs.append(LegalDoc(id="zgb-1", citation="Art. 1 ZGB", text="y", law="ZGB"))
    return CorpusGraph.build(docs)


def _hits() -> list[Hit]:
    return [
        Hit("or-1", 1.0, scores={"bm25": 10.0, "knn": 0.8}, ranks={"bm25": 1, "knn": 1, "hybrid": 1},
            provenance=[Provenance("hybrid", 0, 1)]),
        Hit("or-3", 0.5, scores={"bm25": 5.0}, ranks={"bm25": 2, "hybrid": 2},
            provenance=[Provenance("hybrid", 0, 2), Provenance("terminology", 1, 3), Provenance("conditions", 2, 1)]),
        Hit("zgb-1", 0.0, ranks={"memory": 1}, provenance=[Provenance("memory", 0, 1)]),
    ]


def test_matrix_has_one_row_per_hit_and_named_columns() -> None:
    matrix = pool_features(_hits(), FeatureContext())
    assert matrix.shape == (3, len(FEATURE_NAMES)) and matrix.dtype == np.float32
    assert len(set(FEATURE_NAMES)) == len(FEATURE_NAMES)
    assert pool_features([], FeatureContext()).shape == (0, len(FEATURE_NAMES))


def test_columns_carry_retrieval_agent_prior_and_graph_signals() -> None:
    ctx = FeatureContext(graph=_graph(), law_probabilities={"OR": 0.9, "ZGB": 0.1},
                         section_probabilities={"OR#0": 0.8},
                         prior=ArticlePrior.fit([{"or-3"}, {"or-3"}], lambda d: "OR"),
                         memory={"zgb-1": MemoryVote(0.7, 0.9, 1)}, memory_top_sim=0.9, query_terms=4, depth=100)
    m = pool_features(_hits(), ctx)
    or1, or3, zgb = m
    assert or1[COL["bm25"]] == 10.0 and or1[COL["bm25_z"]] > or3[COL["bm25_z"]]
    assert zgb[COL["bm25_rank_log"]] == pytest.approx(math.log(200))  # not found: twice the depth
    assert or3[COL["knn"]] < or1[COL["knn"]]
    assert or3[COL["n_agents"]] == 2 and or3[COL["n_rounds"]] == 2 and or3[COL["n_rewrites"]] == 2
    assert or3[COL["agent_terminology"]] == pytest.approx(1 / 3) and or3[COL["agent_conditions"]] == 1.0
    assert or1[COL["n_agents"]] == 0 and or1[COL["agent_repair"]] == 0
    assert zgb[COL["memory_vote"]] == pytest.approx(0.7) and or1[COL["memory_vote"]] == 0
    assert or3[COL["prior_log"]] == pytest.approx(math.log(3)) and or3[COL["prior_law_share"]] == 1.0
    assert or1[COL["law_logp"]] > zgb[COL["law_logp"]] and or1[COL["law_rank"]] == 1
    assert or1[COL["section_logp"]] == pytest.approx(math.log(0.8 + 1e-4))
    assert or3[COL["cites_top"]] == 1 and or1[COL["cited_by_top"]] == 1
    assert or3[COL["article_position"]] == pytest.approx(2 / 3) and or3[COL["law_size_log"]] == pytest.approx(
        math.log(5))
    assert or1[COL["same_law_top10"]] == 1.0
    assert all(row[COL["query_terms"]] == 4 and row[COL["law_top_p"]] == pytest.approx(0.9) for row in m)


def test_pool_without_agents_gets_the_neutral_agent_columns() -> None:
    hits = [Hit("or-1", 1.0, scores={"bm25": 10.0}, ranks={"bm25": 1, "hybrid": 1},
                provenance=[Provenance("hybrid", 0, 1)]),
            Hit("or-2", 0.5, scores={"knn": 0.7}, ranks={"knn": 1, "hybrid": 2})]
    m = pool_features(hits, FeatureContext(depth=50))
    for row in m:
        assert row[COL["n_agents"]] == 0 and row[COL["n_rewrites"]] == 0 and row[COL["agent_rrf"]] == 0
        assert row[COL["best_agent_rank_log"]] == pytest.approx(math.log(100))
        assert row[COL["agent_terminology_z"]] == -4.0 and row[COL["agent_z_max"]] == -4.0


def test_agent_scores_count_even_without_an_agent_provenance() -> None:
    hits = [Hit("or-1", 1.0, scores={"bm25": 10.0, "agent:repair": 1.5}, ranks={"bm25": 1, "hybrid": 1}),
            Hit("or-2", 0.5, scores={"bm25": 4.0}, ranks={"bm25": 2, "hybrid": 2})]
    first, second = pool_features(hits, FeatureContext())
    assert first[COL["agent_repair_z"]] == 1.5 and first[COL["agent_z_max"]] == 1.5
    assert first[COL["n_agents"]] == 0 and second[COL["agent_repair_z"]] == -4.0


def test_the_agents_ran_hint_only_skips_the_scan() -> None:
    """A caller that knows whether agent rounds ran gets the rows the scan of the pool would give."""
    quiet = [Hit("or-1", 1.0, scores={"bm25": 10.0}, ranks={"bm25": 1, "hybrid": 1},
                 provenance=[Provenance("hybrid", 0, 1)]),
             Hit("or-2", 0.5, scores={"knn": 0.7}, ranks={"knn": 1, "hybrid": 2})]
    scanned = pool_features(quiet, FeatureContext())
    for hint in (False, True):  # a round that added nothing leaves every row as it was
        assert pool_features(quiet, FeatureContext(agents_ran=hint)).tobytes() == scanned.tobytes()
    busy = _hits()
    assert pool_features(busy, FeatureContext(agents_ran=True)).tobytes() == \
        pool_features(busy, FeatureContext()).tobytes()


def test_link_counts_to_the_top_candidates() -> None:
    # or-3 cites or-1; or-4 cites or-1 and or-3 (hand-counted against a top set of or-1, or-3, or-4).
    docs = [LegalDoc(id="or-1", citation="Art. 1 OR", text="a", law="OR"),
            LegalDoc(id="or-3", citation="Art. 3 OR", text="b", law="OR", cites=("OR art. 1",)),
            LegalDoc(id="or-4", citation="Art. 4 OR", text="c", law="OR", cites=("OR art. 1", "OR art. 3")),
            LegalDoc(id="zgb-9", citation="Art. 9 ZGB", text="d", law="ZGB", cites=("OR art. 4",))]
    hits = [Hit(d, 1.0 / r, scores={"bm25": 1.0 / r}, ranks={"bm25": r, "hybrid": r})
            for r, d in enumerate(["or-1", "or-3", "or-4", "zgb-9"], start=1)]
    rows = dict(zip(["or-1", "or-3", "or-4", "zgb-9"],
                    pool_features(hits, FeatureContext(graph=CorpusGraph.build(docs))), strict=True))
    assert [rows[d][COL["cites_top"]] for d in rows] == [0, 1, 2, 1]
    assert [rows[d][COL["cited_by_top"]] for d in rows] == [2, 1, 1, 0]
    assert rows["or-1"][COL["same_law_top10"]] == pytest.approx(0.75)
    assert rows["zgb-9"][COL["same_law_top10"]] == pytest.approx(0.25)


def test_heading_share_among_the_top_candidates() -> None:
    def doc(i: int, path: list[str], cited: bool = False) -> LegalDoc:
        return LegalDoc(id=f"or-{i}", citation=f"Art. {i} OR", text="t", law="OR", title=path[-1],
                        meta={"heading_path": path}, cites=("OR art. 9",) if cited else ())
    company = ["Dritte Abteilung: Die Handelsgesellschaften", "Die Aktiengesellschaft"]
    docs = [doc(1, [*company, "Begriff"]), doc(2, [*company, "Statuten"]), doc(3, ["Mietrecht", "Kaution"]),
            doc(4, [*company, "Organe"])]
    hits = [Hit(d.id, 1.0 / r, scores={"bm25": 1.0 / r}, ranks={"bm25": r, "hybrid": r})
            for r, d in enumerate(docs[:3], start=1)] + [Hit("or-4", 0.1, ranks={"memory": 1})]
    rows = pool_features(hits, FeatureContext(graph=CorpusGraph.build(docs)))
    assert [r[COL["same_heading_top10"]] for r in rows] == pytest.approx([2 / 3, 2 / 3, 1 / 3, 2 / 3])


def test_document_columns_are_cached_per_graph_and_prior() -> None:
    graph = _graph()
    prior_a = ArticlePrior.fit([{"or-3"}], lambda d: "OR")
    prior_b = ArticlePrior.fit([{"or-1"}], lambda d: "OR")
    first = pool_features(_hits(), FeatureContext(graph=graph, prior=prior_a))
    again = pool_features(_hits(), FeatureContext(graph=graph, prior=prior_a))
    other = pool_features(_hits(), FeatureContext(graph=graph, prior=prior_b))
    assert np.array_equal(first, again)
    assert first[1][COL["prior_log"]] == pytest.approx(math.log(2)) and other[1][COL["prior_log"]] == 0.0
    assert other[0][COL["prior_log"]] == pytest.approx(math.log(2))


def test_rows_of_some_hits_are_those_the_whole_pool_gives_them() -> None:
    ctx = FeatureContext(graph=_graph(), law_probabilities={"OR": 0.9, "ZGB": 0.1})
    hits = _hits()
    whole = pool_features(hits, ctx)
    some = pool_features(hits, ctx, rows=[hits[2], hits[0]])
    assert np.array_equal(some, whole[[2, 0]])
    assert pool_features(hits, ctx, rows=[]).shape == (0, len(FEATURE_NAMES))


def test_dense_similarity_covers_the_candidates_the_knn_list_missed() -> None:
    or1, or3, zgb = pool_features(_hits(), FeatureContext(similarities={"or-1": 0.8, "or-3": 0.6, "zgb-1": 0.1}))
    assert or3[COL["dense_sim"]] == pytest.approx(0.6)  # BM25 found it; kNN did not
    assert or3[COL["knn"]] == pytest.approx(0.75)  # the kNN list's own column keeps its floor (0.8 - 0.05)
    mean, std = 0.5, math.sqrt(((0.3 ** 2) + (0.1 ** 2) + (0.4 ** 2)) / 3)
    assert or1[COL["dense_sim_z"]] == pytest.approx((0.8 - mean) / std, rel=1e-5)
    assert zgb[COL["dense_sim_z"]] < or3[COL["dense_sim_z"]] < or1[COL["dense_sim_z"]]


def test_without_similarities_the_dense_columns_repeat_the_knn_list() -> None:
    m = pool_features(_hits(), FeatureContext())
    assert np.array_equal(m[:, COL["dense_sim"]], m[:, COL["knn"]])
    assert np.array_equal(m[:, COL["dense_sim_z"]], m[:, COL["knn_z"]])


def test_article_columns_carry_the_classifier_evidence_and_floors_for_unknown_articles() -> None:
    ctx = FeatureContext(articles={"or-1": (0.4, 2.5, 1), "or-3": (-0.6, -0.2, 7)}, article_count=50)
    matrix = pool_features(_hits(), ctx)
    score, z, rank = COL["article_score"], COL["article_z"], COL["article_rank_log"]
    assert matrix[0, score] == pytest.approx(0.4) and matrix[0, z] == pytest.approx(2.5) and matrix[0, rank] == 0.0
    assert matrix[1, score] == pytest.approx(-0.6) and matrix[1, rank] == pytest.approx(math.log(7))
    # zgb-1 is no training article: fixed values below every known one
    assert matrix[2, score] < matrix[1, score] and matrix[2, z] < matrix[1, z]
    assert matrix[2, rank] == pytest.approx(math.log(100))
