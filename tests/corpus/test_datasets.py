"""Dataset folders and user corpora."""

from __future__ import annotations

import json

import pytest

from service.corpus.datasets import Dataset, LoadReport, carve_split, load_corpus, read_user_corpus
from service.errors import DataError
from tests.support.corpus import MINI

pytestmark = pytest.mark.unit


def test_corpus_is_the_union_of_all_corpus_files(mini_dataset) -> None:
    docs = load_corpus(mini_dataset)
    assert len(docs) == 54
    assert {d.kind.value for d in docs} == {"statute", "decision", "leading_decision"}
    assert mini_dataset.queries("dev")[0].qid == "q1"
    assert mini_dataset.qrels("dev")["q2"] == {"17086", "4958"}


def test_symlinked_corpus_files_count(tmp_path) -> None:
    (tmp_path / "corpus.jsonl").symlink_to(MINI / "corpus.jsonl")
    (tmp_path / "corpus_more.jsonl").symlink_to(MINI / "corpus_decisions.jsonl")
    assert len(load_corpus(Dataset(tmp_path))) == 54


def test_malformed_lines_are_skipped_counted_and_listed(tmp_path) -> None:
    lines = [
        json.dumps({"id": "ok1", "text": "fine", "citation": "A"}),
        "{broken json",
        json.dumps({"id": "no text"}),
        json.dumps(["not", "an", "object"]),
        "",
        json.dumps({"id": "ok2", "text": "   "}),
        json.dumps({"id": "ok3", "text": "fine", "kind": "opinion"}),
        json.dumps({"id": "ok4", "text": "fine too"}),
    ]
    (tmp_path / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    report = LoadReport()
    docs = load_corpus(Dataset(tmp_path), report)
    assert [d.id for d in docs] == ["ok1", "ok4"]
    assert report.read == 2 and report.skipped == 5
    summary = report.summary()
    for lineno in (2, 3, 4, 6, 7):
        assert f"corpus.jsonl:{lineno}:" in summary
    assert "invalid JSON" in summary and "empty text" in summary


def test_same_ids_in_two_languages_are_both_kept(tmp_path) -> None:
    (tmp_path / "corpus_de.jsonl").write_text(json.dumps({"id": "A1", "text": "Miete", "lang": "de"}) + "\n")
    (tmp_path / "corpus_en.jsonl").write_text(json.dumps({"id": "A1", "text": "Lease", "lang": "en"}) + "\n")
    report = LoadReport()
    assert sorted(d.id for d in load_corpus(Dataset(tmp_path), report)) == ["A1", "A1_en"]
    assert "suffix _<lang>" in report.summary()


def test_missing_things_are_clear_errors(tmp_path) -> None:
    with pytest.raises(DataError, match="data folder not found"):
        Dataset(tmp_path / "nope")
    with pytest.raises(DataError, match=r"no corpus\*.jsonl"):
        Dataset(tmp_path)
    with pytest.raises(DataError, match="splits present: dev"):
        Dataset(MINI).queries("test")


def test_carve_split_is_reproducible_and_disjoint(tmp_path) -> None:
    sizes = carve_split(Dataset(MINI), "dev", tmp_path / "a", parts={"fit": 0.5, "dev": 0.5}, seed=7)
    carve_split(Dataset(MINI), "dev", tmp_path / "b", parts={"fit": 0.5, "dev": 0.5}, seed=7)
    assert sizes == {"fit": 4, "dev": 4}
    a, b = Dataset(tmp_path / "a"), Dataset(tmp_path / "b")
    assert [q.qid for q in a.queries("dev")] == [q.qid for q in b.queries("dev")]
    assert not {q.qid for q in a.queries("fit")} & {q.qid for q in a.queries("dev")}
    assert (tmp_path / "a" / "corpus.jsonl").is_symlink()
    assert len(load_corpus(a)) == 54
    assert a.meta["derived_from"]["seed"] == 7


def test_user_csv_with_field_mapping(tmp_path) -> None:
    path = tmp_path / "mine.csv"
    path.write_text("doc_no,body,code,refs\nX1,Der Mieter zahlt,OR,Art. 41 OR;Art. 42 OR\nX2,,OR,\n")
    report = LoadReport()
    docs = list(read_user_corpus(path, report, field_map={"id": "doc_no", "text": "body", "law": "code",
                                                          "cites": "refs"}, default_lang="de"))
    assert [d.id for d in docs] == ["X1"]
    assert docs[0].law == "OR" and docs[0].lang == "de" and docs[0].cites == ("Art. 41 OR", "Art. 42 OR")
    assert report.skipped == 1 and "mine.csv:3" in report.summary()
    with pytest.raises(DataError, match="no column 'id' for field 'id'"):
        list(read_user_corpus(path, LoadReport()))


def _swiss_line(doc_id: str, lang: str, law_de: str | None = "OR", article: str | None = "1") -> str:
    meta = {k: v for k, v in (("law_de", law_de), ("article", article)) if v is not None}
    return json.dumps({"id": doc_id, "citation": doc_id, "text": f"Text {doc_id}", "lang": lang, "law": "OR",
                       "meta": meta})


def test_bad_lines_of_a_corpus_with_versions_are_reported_and_skipped(tmp_path) -> None:
    (tmp_path / "dataset.json").write_text(json.dumps({"language": "de,fr"}))
    (tmp_path / "corpus_de.jsonl").write_text("\n".join([
        _swiss_line("OR-art1-de", "de"),
        _swiss_line("OR-art2-de", "de", article=None),
        _swiss_line("OR-art3-de", "de", law_de=""),
        _swiss_line("OR-art4-de", "de", article="4"),
    ]) + "\n")
    (tmp_path / "corpus_fr.jsonl").write_text(_swiss_line("OR-art1-fr", "fr") + "\n")
    report = LoadReport()
    docs = load_corpus(Dataset(tmp_path), report)
    assert sorted(d.id for d in docs) == ["OR-art1-de", "OR-art1-fr", "OR-art4-de"]  # nothing else is lost
    assert report.skipped == 2
    summary = report.summary()
    assert "corpus_de.jsonl:2: document 'OR-art2-de': missing article number" in summary
    assert "corpus_de.jsonl:3: document 'OR-art3-de': unknown law" in summary
    assert "3 documents are 2 works" in summary


def test_gold_of_any_language_version_counts_for_its_work(trilingual_dataset) -> None:
    qrels = trilingual_dataset.qrels("dev")
    assert qrels["t1"] == {"OR-art257e-de"}  # the gold names the French version
    assert qrels["t3"] == {"OR-art56-de"}  # German and Italian versions of one article: once
    assert trilingual_dataset.works["OR-art56-it"] == "OR-art56-de"
    # the questions of a corpus in several languages have their language detected, not the first one assumed
    assert {q.lang for q in trilingual_dataset.queries("dev")} == {""}
    assert {q.lang for q in Dataset(MINI).queries("dev")} == {""}


def test_gzip_compressed_corpus_files_are_read(tmp_path) -> None:
    import gzip

    with gzip.open(tmp_path / "corpus.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "a", "text": "Miete"}) + "\n" + "{broken\n")
    report = LoadReport()
    assert [d.id for d in load_corpus(Dataset(tmp_path), report)] == ["a"]
    assert "corpus.jsonl.gz:2: invalid JSON" in report.summary()
