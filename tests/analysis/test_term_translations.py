"""Term translations learned from parallel statutes (IBM Model 1)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from service.analysis.term_translations import TermTranslations, learn_translations

pytestmark = pytest.mark.unit

# Each English "article" and its German version, as analysed terms. "the"/"der" is in every text, so
# Model 1 must learn that it translates nothing in particular, and "landlord" only co-occurs with
# "vermiet" consistently.
PAIRS = [
    (["the", "landlord", "deposit"], ["der", "vermiet", "sicher"]),
    (["the", "landlord", "rent"], ["der", "vermiet", "mietzin"]),
    (["the", "tenant", "rent"], ["der", "miet", "mietzin"]),
    (["the", "tenant", "deposit"], ["der", "miet", "sicher"]),
    (["the", "usufruct"], ["der", "nutzniess"]),
    (["the", "usufruct", "rent"], ["der", "nutzniess", "mietzin"]),
]


def test_model_1_finds_each_terms_translation() -> None:
    table = learn_translations(PAIRS, min_count=2, min_probability=0.3, max_target_share=1.0)
    best = {source: pairs[0][0] for source, pairs in table.table.items()}
    assert best["landlord"] == "vermiet"
    assert best["tenant"] == "miet"
    assert best["rent"] == "mietzin"
    assert best["usufruct"] == "nutzniess"
    assert all(0.3 <= p <= 1.0 for pairs in table.table.values() for _, p in pairs)


def test_target_terms_of_most_texts_are_no_translation() -> None:
    table = learn_translations(PAIRS, min_count=2, min_probability=0.01, max_target_share=0.5)
    assert "der" not in {target for pairs in table.table.values() for target, _ in pairs}
    assert learn_translations([], min_count=1).table == {}


def test_a_table_is_written_read_and_applied(tmp_path: Path) -> None:
    path = tmp_path / "en-de.learned.tsv"
    TermTranslations({"landlord": (("vermiet", 0.6), ("miet", 0.25)), "lien": (("pfandrecht", 0.3),)}).write(
        path, header=["a test table"])
    table = TermTranslations.load(path)
    assert path.read_text(encoding="utf-8").startswith("# a test table\n")
    assert table.table["landlord"] == (("vermiet", 0.6), ("miet", 0.25))
    assert table.translate(["landlord", "lien", "unknown"]) == {"vermiet": 0.6, "miet": 0.25, "pfandrecht": 0.3}


@pytest.mark.parametrize("line, message", [
    ("landlord vermiet 0.6", "expected 'source<TAB>target<TAB>probability'"),
    ("landlord\tvermiet\tmuch", "expected 'source<TAB>target<TAB>probability'"),
    ("landlord\tvermiet\t1.5", "must lie in (0, 1]"),
])
def test_a_malformed_line_is_named_by_file_and_number(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.learned.tsv"
    path.write_text(f"# header\nlien\tpfandrecht\t0.3\n{line}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"bad\.learned\.tsv:3: .*{re.escape(message)}"):
        TermTranslations.load(path)


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "make_term_translations", Path(__file__).resolve().parents[2] / "scripts" / "make_term_translations.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_the_builder_learns_from_articles_published_in_two_languages(tmp_path: Path) -> None:
    english = ["The landlord keeps the deposit.", "The landlord may raise the rent.", "A usufruct ends.",
               "The usufruct of the tenant.", "The tenant pays the rent.", "The tenant returns the deposit."]
    german = ["Der Vermieter behält die Kaution.", "Der Vermieter darf den Mietzins erhöhen.",
              "Eine Nutzniessung endet.", "Die Nutzniessung des Mieters.", "Der Mieter zahlt den Mietzins.",
              "Der Mieter gibt die Kaution zurück."]
    for lang, texts in (("en", english), ("de", german)):
        rows = [{"id": f"SR1_Art{i}", "title": "", "text": t, "meta": {"occurrence": 1}} for i, t in enumerate(texts)]
        rows.append({"id": "SR1_Art0_occ2", "title": "", "text": texts[0], "meta": {"occurrence": 2}})
        (tmp_path / f"corpus_{lang}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n",
                                                        encoding="utf-8")
    out = tmp_path / "en-de.learned.tsv"
    assert _script().main(["--data", str(tmp_path), "--out", str(out), "--max-target-share", "1"]) == 0
    table = TermTranslations.load(out)
    assert table.table["landlord"][0][0] == "vermiet"
    assert table.table["usufruct"][0][0] == "nutzniess"
    assert "from 6 articles" in out.read_text(encoding="utf-8").splitlines()[0]  # the repeated id is left out


def test_the_builder_learns_no_lone_letters() -> None:
    """Lettered list items ("k. ...", "u. dgl.") are no words: a question never searches a lone letter
    (Analyzer.query_tokens), so the table neither translates one nor into one."""
    assert _script().terms("e. the tenant, like a lessee, shall pay", "en") == ["tenant", "like", "lesse", "pay"]
    assert "u" not in _script().terms("Mieter u. dgl. zahlen", "de")


def test_the_builder_names_a_missing_corpus_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _script().main(["--data", str(tmp_path)])
    assert "corpus_en.jsonl" in capsys.readouterr().err
