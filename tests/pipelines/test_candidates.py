"""The candidate pool's bookkeeping (pure functions over hits)."""

from __future__ import annotations

import pytest

from service.corpus.model import Hit
from service.pipelines.candidates import add_ranked, by_rank, member, seed_pool

pytestmark = pytest.mark.unit


def test_the_seed_pool_is_the_fusion_with_its_hybrid_rank_and_provenance() -> None:
    pool = seed_pool([Hit(doc_id="a", score=2.0, scores={"bm25": 3.0}), Hit(doc_id="b", score=1.0)])
    assert list(pool) == ["a", "b"]
    assert pool["a"].scores == {"bm25": 3.0, "hybrid": 2.0} and pool["b"].ranks == {"hybrid": 2}
    assert [(p.agent, p.round, p.rank) for p in pool["b"].provenance] == [("hybrid", 0, 2)]


def test_seed_pools_share_nothing_mutable_with_the_fusion_or_each_other() -> None:
    fused = [Hit(doc_id="a", score=2.0, scores={"bm25": 3.0}, ranks={"bm25": 1})]
    first, second = seed_pool(fused), seed_pool(fused)
    add_ranked(first, ["a"], "memory")
    first["a"].scores["agent:terminology"] = 1.0
    assert fused[0].scores == {"bm25": 3.0} and fused[0].ranks == {"bm25": 1} and fused[0].provenance == []
    assert [p.agent for p in second["a"].provenance] == ["hybrid"] and "memory" not in second["a"].ranks
    assert second["a"].scores == {"bm25": 3.0, "hybrid": 2.0}


def test_sources_add_members_with_their_rank_and_provenance() -> None:
    pool = seed_pool([Hit(doc_id="a", score=2.0)])
    add_ranked(pool, ["c", "a"], "memory")
    assert list(pool) == ["a", "c"] and pool["c"].score == 0.0
    assert pool["a"].ranks == {"hybrid": 1, "memory": 2} and pool["c"].ranks == {"memory": 1}
    assert [p.agent for p in pool["a"].provenance] == ["hybrid", "memory"]
    assert by_rank(pool, "memory") == ["c", "a"] and by_rank(pool, "prefilter") == []
    assert member(pool, "a") == (pool["a"], False)
    hit, new = member(pool, "d")
    assert new and pool["d"] is hit
