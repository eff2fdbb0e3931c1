"""Issue pool helpers: which issue a candidate answers, the balanced first ten, the issues' own answers
interleaved, the evidence's JSON."""

from __future__ import annotations

import pytest

from service.corpus.model import Hit
from service.pipelines.issue_pool import IssueEvidence, balance, interleave_answers, issue_of

pytestmark = pytest.mark.unit


def _hit(doc_id: str, **ranks: int) -> Hit:
    return Hit(doc_id=doc_id, score=0.0, ranks=dict(ranks))


def test_a_candidate_answers_the_issue_that_ranks_it_best() -> None:
    assert issue_of(_hit("a", issue0=5, issue1_memory=2), 2) == 1
    assert issue_of(_hit("b", issue0=3, issue1=3), 2) == 0  # ties go to the first issue
    assert issue_of(_hit("c", hybrid=1), 2) is None
    assert issue_of(_hit("d", issue2=1), 2) is None  # only issues 0 and 1 exist


def test_balance_moves_each_issues_best_into_the_window() -> None:
    ranked = [_hit(f"a{i}", issue0=i + 1) for i in range(4)] + [_hit("b0", issue1=1), _hit("b1", issue1=2)]
    out = balance(ranked, 2, reserve=1, window=3, label="learned")
    assert [h.doc_id for h in out] == ["a0", "a1", "b0", "a2", "a3", "b1"]
    assert [h.ranks["learned"] for h in out] == [1, 2, 3, 4, 5, 6]
    assert [h.doc_id for h in balance(ranked, 2, reserve=2, window=4)] == ["a0", "a1", "b0", "b1", "a2", "a3"]
    assert balance(ranked, 1) == ranked and balance(ranked, 2, reserve=0) == ranked
    already = [_hit("b0", issue1=1), _hit("a0", issue0=1), _hit("x")]
    assert [h.doc_id for h in balance(already, 2, window=2)] == ["b0", "a0", "x"]


def test_evidence_round_trips_through_json() -> None:
    evidence = IssueEvidence("押金怎么退？", laws=[["合同法", 0.7]], sections={"合同法#1": 0.5},
                             memory={"17": [0.5, 0.8, 1]}, hits=30)
    again = IssueEvidence.from_json(evidence.to_json())
    assert again == evidence and again.law_probabilities() == {"合同法": 0.7}
    assert again.memory_votes()["17"].rank == 1 and again.to_trace()["hits"] == 30


def test_issue_answers_interleave_with_the_whole_ranking() -> None:
    whole = [Hit(d, score=s) for d, s in (("w1", 9.0), ("a1", 8.0), ("w2", 3.0), ("w3", 2.5))]
    first = [Hit("a1", 1.0), Hit("a2", 0.9)]  # the first issue's own answer; a1 is in the whole ranking too
    second = [Hit("b1", 5.0), Hit("w1", 4.0), Hit("b2", 3.0)]
    out = interleave_answers(whole, [first, second], k=6, label="issue_answers")
    assert [h.doc_id for h in out] == ["w1", "a1", "b1", "a2", "w2", "b2"]
    # the whole ranking's scores by position, so a score-cliff cut sizes the answer as before
    assert [h.score for h in out] == [9.0, 8.0, 3.0, 2.5, 1.5, 0.5]
    assert [h.ranks["issue_answers"] for h in out] == [1, 2, 3, 4, 5, 6]
    assert out[0] is whole[0] and out[1] is whole[1]  # documents of the whole ranking keep its hit
    assert [h.doc_id for h in interleave_answers(whole, [], k=2, label="x")] == ["w1", "a1"]
