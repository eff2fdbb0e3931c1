"""Joined multi-issue questions: areas of law, joining texts, drawing with constraints, the folder."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from service.agents.issues import asks, units_of
from service.corpus.datasets import Dataset
from service.corpus.graph import CorpusGraph
from service.corpus.joined import (
    TRAINING_NARRATIVE,
    Single,
    area_of,
    as_statement,
    draw_joined,
    join_texts,
    joined_for_training,
    read_parts,
    singles_of,
    statements_and_question,
    told_as_narrative,
    told_in_one_sentence,
    write_joined,
)
from service.corpus.model import LegalDoc

pytestmark = pytest.mark.unit


def _graph() -> CorpusGraph:
    return CorpusGraph.build([
        LegalDoc(id="BGB_433", citation="§ 433 BGB", text="Kauf.", law="BGB"),
        LegalDoc(id="BGB_535", citation="§ 535 BGB", text="Miete.", law="BGB"),
        LegalDoc(id="BGB_1922", citation="§ 1922 BGB", text="Erbfolge.", law="BGB"),
        LegalDoc(id="BGB_241a", citation="§ 241a BGB", text="Unbestellte Leistungen.", law="BGB"),
        LegalDoc(id="z1", citation="中华人民共和国民法典第一千零四十条", text="婚姻。", law="中华人民共和国民法典"),
        LegalDoc(id="z2", citation="中华人民共和国劳动合同法第四十六条", text="补偿。", law="中华人民共和国劳动合同法"),
    ])


def test_areas_are_laws_and_the_divisions_of_large_codes() -> None:
    graph = _graph()
    assert area_of(graph, "BGB_433") == "BGB / Kauf, Tausch"
    assert area_of(graph, "BGB_535") == "BGB / Miete, Pacht, Leihe, Sachdarlehen"
    assert area_of(graph, "BGB_1922") == "BGB / Erbrecht"
    assert area_of(graph, "BGB_241a") == "BGB / Schuldrecht, allgemeiner Teil"
    assert area_of(graph, "z1") == "中华人民共和国民法典 / 婚姻家庭编"
    assert area_of(graph, "z2") == "中华人民共和国劳动合同法"
    assert area_of(graph, "missing") == ""


def test_joining_keeps_every_part_and_records_the_joiners() -> None:
    rng = random.Random(0)
    seen = set()
    for _ in range(40):
        text, joiners = join_texts(["公司辞退我能要补偿吗？", "房东不退押金怎么办？"], "zh", rng)
        assert "公司辞退我能要补偿吗" in text and text.endswith("房东不退押金怎么办？") and len(joiners) == 1
        seen.update(joiners)
    assert seen == {"sequence", "另外", "还有", "semicolon", "comma"}
    text, _ = join_texts(["Hallo, mein Vermieter behält die Kaution. Darf er das? Mit freundlichen Grüßen Anna",
                          "Guten Tag, ich wurde gekündigt. Was nun? Vielen Dank"], "de", random.Random(1))
    assert text.startswith("Hallo, mein Vermieter") and text.endswith("Vielen Dank")
    assert "Grüßen Anna" not in text and "Guten Tag" not in text and "Ich wurde gekündigt." in text



def test_a_statement_keeps_the_issue_and_drops_what_asks() -> None:
    assert as_statement("旅游者可以转让合同吗？", "zh") == "旅游者可以转让合同"
    assert as_statement("公司辞退我，能否要求经济补偿？", "zh") == "公司辞退我，要求经济补偿"
    statement = as_statement("Darf mein Vermieter die Kaution behalten?", "de")
    assert statement == "Darf mein Vermieter die Kaution behalten."


def test_a_narrative_joined_question_asks_only_in_its_last_part() -> None:
    parts = ["公司辞退我能要补偿吗？", "医疗事故怎么鉴定？", "房东不退押金怎么办？"]
    for seed in range(20):
        text, joiners = join_texts(parts, "zh", random.Random(seed), narrative=True)
        assert text.endswith("房东不退押金怎么办？") and "公司辞退我" in text and "医疗事故" in text
        assert [asks(text[a:b], "zh") for a, b in units_of(text, "zh")][-1]
        assert not any(asks(text[a:b], "zh") for a, b in units_of(text, "zh") if b <= text.index("房东"))
        assert len(joiners) == 2
    drawn = draw_joined(_singles(), arity=2, count=2, seed=3, language="zh", narrative=1.0)
    assert drawn and all(j.text.count("怎么办") == 1 for j in drawn)


def test_two_parts_told_in_one_sentence_join_their_facts_by_and_and_keep_the_last_question() -> None:
    landlord = "My landlord keeps my deposit. He says the flat was dirty. Can he do that?"
    employer = "My employer fired me while I was ill. Is that allowed?"
    assert statements_and_question(landlord) == (
        "My landlord keeps my deposit. He says the flat was dirty.", "Can he do that?")
    assert statements_and_question("Can he keep my deposit?") is None  # asks at once: no facts
    assert statements_and_question("My landlord keeps my deposit.") is None  # never asks
    assert told_in_one_sentence([landlord, employer], "en") == (
        "My landlord keeps my deposit. He says the flat was dirty and my employer fired me while I was ill. "
        "Is that allowed?")
    french = told_in_one_sentence(
        ["Le bailleur garde la caution. Que faire ?", "Mon employeur m'a licencié. Est-ce permis ?"], "fr")
    assert french == "Le bailleur garde la caution et mon employeur m'a licencié. Est-ce permis ?"
    german = told_in_one_sentence(["Der Vermieter behält die Kaution. Darf er das?",
                                   "Arbeitgeber kündigen oft. Mein Chef hat gekündigt. Darf er das?"], "de")
    assert german.startswith("Der Vermieter behält die Kaution und Arbeitgeber kündigen")  # a noun keeps its case
    with pytest.raises(ValueError, match="two parts"):
        told_in_one_sentence([landlord, employer, landlord], "en")
    with pytest.raises(ValueError, match="facts"):
        told_in_one_sentence(["Can he keep my deposit?", employer], "en")


def test_questions_told_in_one_sentence_are_drawn_from_parts_that_tell_before_they_ask() -> None:
    singles = [Single(f"q{i}", f"Matter {i} happened to me. What can I do about matter {i}?", frozenset({f"d{i}"}),
                      frozenset({f"area{i}"})) for i in range(6)]
    singles.append(Single("bare", "What can I do?", frozenset({"d9"}), frozenset({"area9"})))
    drawn = draw_joined(singles, arity=2, count=10, seed=5, language="en", one_sentence=True)
    assert drawn and all("bare" not in j.parts and j.joiners == ("and",) for j in drawn)
    assert all(" happened to me and matter " in j.text and j.text.count("?") == 1 for j in drawn)


def test_a_share_of_narratives_draws_the_same_parts_and_tells_some_as_narratives() -> None:
    singles = [Single(f"q{i}", f"问题{i}怎么办？", frozenset({f"d{i}"}), frozenset({f"area{i}"})) for i in range(60)]
    draws = {share: draw_joined(singles, arity=2, count=25, seed=5, language="zh", narrative=share)
             for share in (0.0, 0.5, 1.0)}
    assert len({tuple(j.parts for j in drawn) for drawn in draws.values()}) == 1
    asking = {share: [j.text.count("怎么办") for j in drawn] for share, drawn in draws.items()}
    assert set(asking[0.0]) == {2} and set(asking[1.0]) == {1}
    assert 5 <= asking[0.5].count(1) <= 20 and asking[0.5].count(1) + asking[0.5].count(2) == 25
    texts = ["公司辞退我能要补偿吗？", "房东不退押金怎么办？"]
    assert told_as_narrative(texts, 0.5) == told_as_narrative(list(texts), 0.5)  # decided by the parts alone
    assert not told_as_narrative(texts, 0.0) and told_as_narrative(texts, 1.0)


def test_training_questions_are_told_as_narratives_only_in_the_languages_listed() -> None:
    graph = CorpusGraph.build([LegalDoc(id=f"d{i}", citation=f"法{i}第一条", text="条文", law=f"法{i}", lang="zh")
                               for i in range(40)])
    qids, texts = [f"q{i}" for i in range(40)], [f"问题{i}怎么办？" for i in range(40)]
    golds = [{f"d{i}"} for i in range(40)]
    chinese = joined_for_training(qids, texts, golds, graph, language="zh", seed=1)
    assert TRAINING_NARRATIVE["zh"] > 0 and "en" not in TRAINING_NARRATIVE
    assert any(j.text.count("怎么办") < len(j.parts) for j in chinese)
    english = [f"May my employer do question {i}?" for i in range(40)]
    assert all(j.text.count("?") == len(j.parts)  # a language not listed: every part asks
               for j in joined_for_training(qids, english, golds, graph, language="en", seed=1))
    assert any(j.text.count("?") < len(j.parts)  # (told as a narrative, only the last would)
               for j in joined_for_training(qids, english, golds, graph, language="en", seed=1, narrative=1.0))
    assert all(j.text.count("怎么办") == len(j.parts)
               for j in joined_for_training(qids, texts, golds, graph, language="zh", seed=1, narrative=0.0))


def _singles() -> list[Single]:
    areas = ["A", "A", "B", "B", "C", "C", "D", "E"]
    return [Single(f"q{i}", f"问题{i}怎么办？", frozenset({f"d{i}"}), frozenset({a})) for i, a in enumerate(areas)]


def test_drawn_parts_have_disjoint_areas_and_respect_the_use_limit() -> None:
    singles = _singles()
    areas = {s.qid: s.areas for s in singles}
    uses: Counter[str] = Counter()
    triples = draw_joined(singles, arity=3, count=2, seed=3, language="zh", uses=uses)
    pairs = draw_joined(singles, arity=2, count=5, seed=4, language="zh", uses=uses)
    assert len(triples) == 2 and 1 <= len(pairs) <= 5
    for joined in triples + pairs:
        covered = [a for q in joined.parts for a in areas[q]]
        assert len(covered) == len(set(covered)) and joined.gold == {f"d{q[1:]}" for q in joined.parts}
    assert max(uses.values()) == 1 and sum(uses.values()) == 6 + 2 * len(pairs)
    again = draw_joined(singles, arity=3, count=2, seed=3, language="zh")
    assert [j.text for j in again] == [j.text for j in triples]


def test_write_joined_makes_a_dataset_folder(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": f"d{i}", "citation": f"Art. {i}", "text": "T", "law": "L"}) + "\n" for i in range(8)),
        encoding="utf-8")
    (source / "dataset.json").write_text(json.dumps({"name": "toy", "language": "zh"}), encoding="utf-8")
    (source / "queries.dev.tsv").write_text("".join(f"q{i}\t问题{i}怎么办？\n" for i in range(8)), encoding="utf-8")
    (source / "qrels.dev.tsv").write_text("".join(f"q{i}\t0\td{i}\t1\n" for i in range(8)), encoding="utf-8")
    (source / "queries.fit.tsv").write_text("f1\t问题7怎么办？\n", encoding="utf-8")
    dataset = Dataset(source)
    graph = CorpusGraph.build(dataset.corpus())
    singles = singles_of(dataset, "dev", graph, avoid=["fit"])
    assert "q7" not in {s.qid for s in singles}  # its text is also a training question
    singles = [Single(s.qid, s.text, s.gold, frozenset({s.qid})) for s in singles]  # one area each
    joined = draw_joined(singles, arity=2, count=3, seed=0, language="zh")
    sizes = write_joined(dataset, singles, joined, tmp_path / "out", source="dev", settings={"seed": 0})
    out = Dataset(tmp_path / "out")
    assert sizes == {"joined": 3, "single": 6} and out.splits() == ["joined", "single"]
    assert {q.qid for q in out.queries("joined")} == {j.qid for j in joined}
    parts = read_parts(tmp_path / "out" / "parts.tsv")
    for j in joined:
        assert parts[j.qid] == j.parts and out.qrels("joined")[j.qid] == set(j.gold)
    assert (tmp_path / "out" / "corpus.jsonl").is_symlink() and out.meta["derived_from"]["seed"] == 0
