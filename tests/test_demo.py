"""`make demo` answers Swiss law right: the shipped excerpt, the README's question and the example questions.

The excerpt (examples/swiss-excerpt, seven acts in German, French and Italian) is indexed with the
default settings, as `make demo` does, and each example question is asked through `lexsearch search`
with its default (routed) pipeline. The embedding cache is the configured one (`var/embedding-cache`
unless LEXSEARCH_EMBEDDER_CACHE_DIR says otherwise), so after `make demo` the index builds from
cached vectors; on a fresh clone the first run embeds the 13,515 articles (about a minute on two
idle cores).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from service.analysis.language import detect_language
from service.cli import main
from service.corpus.datasets import Dataset, LoadReport, load_corpus
from tests.support.corpus import EXAMPLE

pytestmark = pytest.mark.slow

DEPOSIT = "Mein Vermieter gibt mir die Kaution nach dem Auszug nicht zurück. Was kann ich tun?"


def _makefile_question() -> str:
    line = next(x for x in (Path(__file__).parents[1] / "Makefile").read_text(encoding="utf-8").splitlines()
                if x.startswith("QUESTION ?="))
    return line.split("?=", 1)[1].strip()


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory: pytest.TempPathFactory) -> str:
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("LEXSEARCH_PROGRESS", "0")
    monkeypatch.delenv("LEXSEARCH_INDEX_MODEL_DIR", raising=False)
    if not os.environ.get("LEXSEARCH_EMBEDDER_CACHE_DIR"):  # the cache `make demo` fills
        monkeypatch.setenv("LEXSEARCH_EMBEDDER_CACHE_DIR", str(Path(__file__).parents[1] / "var" / "embedding-cache"))
    path = str(tmp_path_factory.mktemp("demo") / "swiss")
    assert main(["index", "--data", str(EXAMPLE), "--index", path]) == 0
    yield path
    monkeypatch.undo()


def _search(capsys: pytest.CaptureFixture[str], index: str, question: str) -> dict:
    assert main(["search", question, "--index", index, "--json", "--top", "5"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_excerpt_is_small_complete_and_trilingual() -> None:
    size = sum(f.stat().st_size for f in EXAMPLE.iterdir())
    assert size < 5 * 2**20
    report = LoadReport()
    docs = load_corpus(Dataset(EXAMPLE), report)
    assert report.skipped == 0
    assert {d.meta["law_de"] for d in docs} == {"OR", "ZGB", "StGB", "StPO", "ZPO", "SchKG", "BV"}
    assert {d.lang for d in docs} == {"de", "fr", "it"}
    assert sum(1 for d in docs if d.work == d.id) == 4509
    languages = {detect_language(q.text) for q in Dataset(EXAMPLE).queries("demo")}
    assert languages == {"de", "fr", "it", "en"}


def test_the_readme_deposit_question_returns_art_257e_or_first(demo_index, capsys) -> None:
    assert _makefile_question() == DEPOSIT
    assert DEPOSIT in (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    body = _search(capsys, demo_index, DEPOSIT)
    top = body["hits"][0]
    assert top["doc_id"] == "OR-art257e-de" and top["citation"] == "Art. 257e OR"
    assert body["returned"] >= 1  # the score-cliff cut keeps the right article
    assert {v["citation"] for v in top["versions"]} == {"Art. 257e OR", "art. 257e CO"}


@pytest.mark.parametrize("qid", ["d01", "d02", "d03", "d04", "d05", "d06"])
def test_each_example_question_finds_its_article_in_the_top_3(demo_index, capsys, qid: str) -> None:
    dataset = Dataset(EXAMPLE)
    question = next(q for q in dataset.queries("demo") if q.qid == qid)
    expected = dataset.qrels("demo")[qid]
    body = _search(capsys, demo_index, question.text)
    top3 = [h["doc_id"] for h in body["hits"][:3]]
    assert expected & set(top3), f"{qid} {question.text!r}: expected {expected}, got {top3}"


@pytest.mark.parametrize("qid", [f"c0{i}{lang}" for i, lang in
                                 ((1, "de"), (2, "de"), (3, "fr"), (4, "fr"), (5, "it"), (6, "it"), (7, "en"),
                                  (8, "en"))])
def test_an_article_the_question_cites_comes_first(demo_index, capsys, qid: str) -> None:
    dataset = Dataset(EXAMPLE)
    question = next(q for q in dataset.queries("cites") if q.qid == qid)
    (expected,) = dataset.qrels("cites")[qid]
    work = expected.rsplit("-", 1)[0]  # any language version of the article
    top = _search(capsys, demo_index, question.text)["hits"][0]["doc_id"]
    assert top.rsplit("-", 1)[0] == work, f"{qid} {question.text!r}: expected {work} first, got {top}"
