"""Law evidence: named and cited laws, retrieval shares, the mixer's fit and its probabilities."""

from __future__ import annotations

import math

import numpy as np
import pytest

from service.agents.law_evidence import (
    RANK_OFFSET,
    LawEvidence,
    LawMixer,
    cited_laws,
    mentioned_laws,
    named_laws,
    retrieval_shares,
    top_k_accuracy,
)

pytestmark = pytest.mark.unit

LAWS = ("OR", "ZGB", "StGB", "ZPO", "KG")


def test_named_laws_by_abbreviation_and_by_name() -> None:
    text = "Die X AG verklagt Y. Prüfen Sie die Ansprüche nach dem Obligationenrecht und der ZPO."
    assert named_laws(text, LAWS) == {"OR", "ZPO"}
    assert named_laws("Die Firma Meier & Co KG ist zahlungsunfähig.", LAWS) == {"KG"}  # noisy; the mixer weighs it
    assert named_laws("Kann er oder sie klagen?", LAWS) == set()  # case as written: "oder" is no law


def test_cited_laws_resolve_other_languages() -> None:
    assert cited_laws("Gemäss Art. 725 Abs. 2 OR und art. 8 CC", LAWS) == {"OR", "ZGB"}
    assert cited_laws("Art. 12 IPRG", LAWS) == set()


def test_mentioned_laws_name_every_language_version_of_an_act() -> None:
    index_laws = ("OR", "ZGB", "CO", "CC", "BV", "Cost.", "Cst.")
    assert mentioned_laws("Que dit l'art. 41 CO ?", index_laws) == ["OR", "CO"]
    assert mentioned_laws("Was gilt nach dem Obligationenrecht und dem ZGB?", index_laws) == ["OR", "ZGB", "CO", "CC"]
    assert mentioned_laws("Who pays the costs of the trial?", index_laws) == []


def test_retrieval_shares_weigh_ranks() -> None:
    shares = retrieval_shares(["OR", "OR", "ZGB", ""])
    weight = [1 / (r + RANK_OFFSET) for r in (1, 2, 3)]
    assert shares["OR"] == pytest.approx((weight[0] + weight[1]) / sum(weight))
    assert sum(shares.values()) == pytest.approx(1.0) and "" not in shares


def test_evidence_rows_and_the_default_mixer_follow_the_classifier() -> None:
    ev = LawEvidence.gather("Art. 41 OR regelt das. Und das ZGB?", [("StGB", 0.7), ("OR", 0.3)],
                            ["ZGB", "ZGB", "OR"], LAWS)
    row = dict(zip(ev.laws, ev.rows.tolist(), strict=True))
    assert row["OR"][2:] == [1.0, 1.0] and row["ZGB"][2:] == [1.0, 0.0]
    assert row["StGB"][0] == pytest.approx(math.log(0.7 + 1e-3)) and ev.to_trace() == {"named": ["OR", "ZGB"],
                                                                                       "cited": ["OR"]}
    assert [law for law, _ in LawMixer().probabilities(ev)][:2] == ["StGB", "OR"]


def test_evidence_covers_the_index_laws_once_and_then_classifier_laws_it_lacks() -> None:
    corpus = ("OR", "", "ZGB", "OR")  # '' for documents without a law, repeats as a graph may give them
    ev = LawEvidence.gather("Der Mieter nach OR und VVG", [("VVG", 0.6), ("ZGB", 0.3), ("VVG", 0.1)], ["OR"], corpus)
    assert ev.laws == ("OR", "ZGB", "VVG")
    row = dict(zip(ev.laws, ev.rows.tolist(), strict=True))
    assert row["VVG"][0] == pytest.approx(math.log(0.1 + 1e-3)) and row["VVG"][2] == 1.0  # named, last value wins
    again = LawEvidence.gather("Frage", [("ZGB", 1.0)], [], corpus)  # the next question: the index laws alone
    assert again.laws == ("OR", "ZGB") and again.to_trace() == {"named": [], "cited": []}


def test_the_mixer_learns_which_evidence_to_trust() -> None:
    rng = np.random.default_rng(0)
    evidence, gold = [], []
    for _ in range(60):
        truth = LAWS[rng.integers(len(LAWS))]
        ranked = [truth] * 3 + [LAWS[j] for j in rng.integers(len(LAWS), size=20)]
        noise = LAWS[rng.integers(len(LAWS))]
        evidence.append(LawEvidence.gather("Frage ohne Gesetz", [(noise, 0.9)], ranked, LAWS))
        gold.append({truth})
    mixer = LawMixer.fit(evidence, gold)
    classifier, retrieval = mixer.weights[:2]
    assert retrieval > classifier
    ranked = [[law for law, _ in mixer.probabilities(e)] for e in evidence]
    assert top_k_accuracy(ranked, gold, 1) > 0.9
    assert LawMixer.from_json(mixer.to_json()).weights.tolist() == pytest.approx(mixer.weights.tolist(), abs=1e-6)


def test_the_mixer_refuses_what_it_cannot_use() -> None:
    with pytest.raises(ValueError, match="weights"):
        LawMixer((1.0, 2.0))
    with pytest.raises(ValueError, match="features"):
        LawMixer.from_json({"features": ["classifier"], "weights": [1.0]})
    lone = LawEvidence.gather("x", [], ["OR"], ["OR"])
    with pytest.raises(ValueError, match="no training question"):
        LawMixer.fit([lone], [{"OR"}])
