"""The offline rewriters: decomposition, term mapping and adapter, PRF, citation expansion, repair."""

from __future__ import annotations

import numpy as np
import pytest

from service.agents.base import Evidence, EvidenceDoc, Rewrite
from service.agents.rewriters.conditions import OfflineConditionsRewriter, feedback_terms
from service.agents.rewriters.decompose import OfflineDecomposeRewriter, choose_parts, split_issues
from service.agents.rewriters.repair import OfflineRepairRewriter
from service.agents.rewriters.supportive import OfflineSupportiveRewriter, expand_citations
from service.agents.rewriters.terminology import OfflineTerminologyRewriter, QueryAdapter, TermMapping
from service.agents.vocabulary import Vocabulary
from service.corpus.graph import CorpusGraph
from service.corpus.model import LegalDoc, Query
from service.indexing import with_citations

pytestmark = pytest.mark.unit


def evidence(terms: list[str], top: list[LegalDoc] = (), **kwargs: object) -> Evidence:
    return Evidence(round=1, language=kwargs.pop("language", "de"), terms=terms,  # type: ignore[arg-type]
                    top=[EvidenceDoc(d, 1.0 / (i + 1), i + 1) for i, d in enumerate(top)], **kwargs)


@pytest.mark.parametrize(("lang", "text", "parts"), [
    ("zh", "我被公司辞退了，另外公司还拖欠我三个月工资，怎么办？", 2),
    ("zh", "公司辞退我不给补偿怎么办？", 1),
    ("de", "Hallo, mein Vermieter behält die Kaution. Außerdem will er die Miete erhöhen? Danke", 2),
    ("en", "My landlord keeps my deposit. Additionally he wants to raise the rent; what can I do?", 2),
    ("fr", "Mon bailleur garde la caution. De plus il veut augmenter le loyer?", 2),
    ("it", "Il locatore trattiene la cauzione. Inoltre vuole aumentare il canone?", 2),
])
def test_split_issues_per_language(lang: str, text: str, parts: int) -> None:
    found = split_issues(text, lang)
    assert len(found) == parts, found
    assert not any(p.lower().startswith(("hallo", "danke")) for p in found)


def test_choose_parts_prefers_questions_then_length_and_keeps_order() -> None:
    parts = ["kurzer Satz hier eins.", "Ein sehr langer Satz über den Mietvertrag und die Kaution.", "Darf er das?",
             "Noch ein mittellanger Satz dazu."]
    assert choose_parts(parts, limit=2) == [parts[1], parts[2]]


def test_decompose_rewriter_needs_two_issues() -> None:
    rewriter = OfflineDecomposeRewriter()
    q = Query("Mein Vermieter behält die Kaution. Außerdem will er die Miete erhöhen?")
    out = rewriter.rewrite(q, evidence(["vermiet"]))
    assert [r.agent for r in out.rewrites] == ["decompose", "decompose"] and all(r.dense for r in out.rewrites)
    assert rewriter.rewrite(Query("Kaution zurück?"), evidence(["kaution"])).rewrites == []


def test_term_mapping_learns_legal_terms_for_lay_terms() -> None:
    questions = [["chef", "rauswurf"], ["chef", "lohn"], ["rauswurf", "frist"], ["hund", "biss"], ["chef", "rauswurf"]]
    answers = [{"arbeitgeb", "kundigung"}, {"arbeitgeb", "vergutung"}, {"kundigung", "frist"}, {"tierhalt"},
               {"arbeitgeb", "kundigung"}]
    mapping = TermMapping.fit(questions, answers)
    expansion = mapping.expand(["chef", "rauswurf"])
    assert list(expansion)[:2] == ["arbeitgeb", "kundigung"] or list(expansion)[:2] == ["kundigung", "arbeitgeb"]
    assert max(expansion.values()) == pytest.approx(0.6) and "chef" not in expansion
    assert mapping.expand(["unbekannt"]) == {}
    again = TermMapping.from_json(mapping.to_json())
    assert again.expand(["chef", "rauswurf"]).keys() == expansion.keys()


def test_query_adapter_maps_towards_targets() -> None:
    rng = np.random.default_rng(3)
    q = rng.standard_normal((200, 6))
    rotation = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    adapter = QueryAdapter.fit(q, q @ rotation, ridge=0.01)
    out = adapter.adapt(q[0].astype(np.float32))
    target = (q[0] @ rotation) / np.linalg.norm(q[0] @ rotation)
    assert float(out @ target) > 0.99 and np.linalg.norm(out) == pytest.approx(1.0, abs=1e-5)


def test_terminology_rewriter_combines_expansion_and_adapter() -> None:
    mapping = TermMapping({"chef": [("arbeitgeb", 1.0)]})
    adapter = QueryAdapter(np.eye(4))
    vector = np.asarray([1, 0, 0, 0], dtype=np.float32)
    out = OfflineTerminologyRewriter(mapping, adapter).rewrite(Query("Chef"), evidence(["chef"], query_vector=vector))
    (rw,) = out.rewrites
    assert rw.terms == {"chef": 1.0, "arbeitgeb": pytest.approx(0.6)} and rw.lexical and rw.dense
    assert rw.vector is not None and rw.agent == "terminology"
    assert OfflineTerminologyRewriter(None, None).rewrite(Query("x"), evidence(["x"])).rewrites == []


def test_lexical_rewrites_start_from_a_long_questions_weights() -> None:
    mapping = TermMapping({"chef": [("arbeitgeb", 1.0)]})
    short = OfflineTerminologyRewriter(mapping, None).rewrite(Query("Chef"), evidence(["chef"] * 3))
    assert short.rewrites[0].terms["chef"] == 3.0
    weighted = evidence(["chef"] * 3, query_weights={"chef": 2.1})
    assert weighted.base_weights() == {"chef": 2.1}
    long = OfflineTerminologyRewriter(mapping, None).rewrite(Query("Chef"), weighted)
    assert long.rewrites[0].terms == {"chef": 2.1, "arbeitgeb": pytest.approx(0.6)}


def test_conditions_feedback_terms_come_from_the_top_documents() -> None:
    docs = [LegalDoc(id="1", citation="§ 551 BGB", text="Mietsicherheit Kaution Mieter Mieter", lang="de"),
            LegalDoc(id="2", citation="§ 535 BGB", text="Mietvertrag Vermieter Mieter", lang="de")]
    ev = evidence(["kaution"], docs)
    terms = feedback_terms(ev, None)
    assert "kaution" not in terms and max(terms.values()) == 1.0 and "miet" in terms
    out = OfflineConditionsRewriter().rewrite(Query("Kaution"), ev)
    (rw,) = out.rewrites
    assert rw.terms["kaution"] == 1.0 and not rw.dense and all(w <= 1.0 for t, w in rw.terms.items() if t != "kaution")
    assert OfflineConditionsRewriter().rewrite(Query("x"), evidence(["x"])).rewrites == []


def test_supportive_walks_citations_and_neighbours() -> None:
    docs = [with_citations(LegalDoc(id=f"or-{i}", citation=f"Art. {i} OR", law="OR", lang="de",
                                    text="Vorbehalten bleibt Art. 9 OR." if i == 2 else "Text."))
            for i in range(1, 10)]
    graph = CorpusGraph.build(docs)
    ev = evidence(["x"], [docs[1]], graph=graph)
    ids = expand_citations(ev)
    assert ids[0] == "or-9" and set(ids) == {"or-9", "or-1", "or-3"}
    (rw,) = OfflineSupportiveRewriter().rewrite(Query("x"), ev).rewrites
    assert rw.doc_ids == tuple(ids) and not rw.lexical and not rw.dense
    assert OfflineSupportiveRewriter().rewrite(Query("x"), evidence(["x"], [docs[1]])).rewrites == []


def test_repair_replaces_or_drops_unseen_terms() -> None:
    vocab = Vocabulary({"kaution": 5, "vermiet": 9, "zuruck": 3}, documents=20)
    terms = ["vermiet", "kauton", "qqqq", "zuruck"]
    out = OfflineRepairRewriter().rewrite(Query("x"), evidence(terms, vocabulary=vocab))
    (rw,) = out.rewrites
    assert rw.terms == {"vermiet": 1.0, "kaution": 1.0, "zuruck": 1.0} and not rw.dense
    assert OfflineRepairRewriter().rewrite(Query("x"), evidence(["vermiet"], vocabulary=vocab)).rewrites == []


def test_rewrite_json_round_trip() -> None:
    rw = Rewrite(text="a b", agent="terminology", round=2, terms={"a": 1.0}, lexical=True, dense=True,
                 vector=np.ones(3, dtype=np.float32), doc_ids=("x",))
    again = Rewrite.from_json(rw.to_json())
    assert again == rw and np.array_equal(again.vector, rw.vector)
