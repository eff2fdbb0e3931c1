"""Query-side legal synonyms."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

from service.analysis.chain import SYNONYM_WEIGHT, analyzer_for
from service.analysis.synonyms import SynonymRules

pytestmark = pytest.mark.unit


def _rules(*lines: str) -> SynonymRules:
    return SynonymRules.parse(lines, analyzer_for("en").tokens)


def test_one_way_rules_add_the_legal_words() -> None:
    rules = _rules("deposit, rent deposit => security", "# a comment", "")
    assert rules.expand(["landlord", "deposit"]) == {"secur": 1}
    assert rules.expand(["landlord"]) == {}


def test_equivalence_groups_expand_both_ways_and_phrases_must_be_contiguous() -> None:
    rules = _rules("boss, line manager")
    assert rules.expand(["boss"]) == {"line": 1, "manag": 1}
    assert rules.expand(["line", "manag"]) == {"boss": 1}
    assert rules.expand(["manag", "line"]) == {}


def test_targets_of_one_rule_count_once_even_when_they_share_a_stem() -> None:
    assert _rules("fired => termination, terminate").expand(["fire"]) == {"termin": 1}


def test_query_weights_keep_the_users_words_at_full_weight() -> None:
    weights = analyzer_for("de").query_weights("Der Vermieter gibt die Kaution nicht zurück")
    assert weights["kaution"] == 1.0
    assert weights["mietzinsdepot"] == SYNONYM_WEIGHT
    chinese = analyzer_for("zh")
    assert chinese.query_weights("房东不退押金") == {t: 1.0 for t in chinese.tokens("房东不退押金")}


def test_a_trigger_that_analysis_shrinks_to_one_term_fires_only_on_its_words_as_written() -> None:
    italian = analyzer_for("it")
    rules = SynonymRules.parse(["non devo, padrone di casa => opposizione"], italian.tokens,
                               analyze_words=italian.word_stems)

    def added(text: str) -> dict[str, int]:
        return rules.expand(italian.tokens(text), italian.word_stems(text))

    assert italian.tokens("non devo") == ["dev"]  # "non" is a stopword
    assert added("Cosa devo fare?") == {}
    assert added("Non devo niente a nessuno!") == {"opposizion": 1}
    # without the question's words such a trigger never fires; one that keeps two terms matches as before
    assert rules.expand(italian.tokens("Non devo niente")) == {}
    assert added("Il padrone della casa") == {"opposizion": 1}


def test_query_weights_read_multi_word_triggers_as_written() -> None:
    assert "opposizion" not in analyzer_for("it").query_weights("Il locatore non mi restituisce la cauzione. "
                                                                "Cosa devo fare?")
    assert "opposizion" in analyzer_for("it").query_weights("Ho ricevuto un precetto esecutivo, ma non devo "
                                                            "niente. Cosa faccio?")


def test_the_lint_script_names_shrunk_triggers_dead_targets_and_common_triggers() -> None:
    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("lint_synonyms", root / "scripts" / "lint_synonyms.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    frequencies = Counter({"garanz": 5, "dev": 900, "cap": 500})
    findings = script.lint("it", frequencies, common=100)
    assert "it: trigger read as a phrase: non dev (its term: dev)" in findings
    assert "it: trigger the statutes use in 500 documents: cap" in findings  # "capo" => datore di lavoro
    assert "it: target no document holds: locator" in findings
    assert "it: target no document holds: garanz" not in findings
    assert not any(line.endswith(": dev") for line in findings)  # a phrase trigger is no common trigger


@pytest.mark.parametrize("lang, question, statute_word", [
    ("de", "In meiner Wohnung ist die Heizung seit Wochen ausgefallen.", "Mangel"),
    ("de", "Ich habe die Rechnung schon bezahlt, trotzdem kam eine Betreibung.", "getilgt"),
    ("fr", "Il y a de la moisissure dans ma chambre depuis l'hiver.", "défaut"),
    ("fr", "Mon voisin fait la fête avec de la musique tous les soirs.", "excès"),
    ("fr", "Je suis encore en période d'essai.", "temps"),
    ("it", "Il datore di lavoro non mi versa lo stipendio.", "salario"),
    ("it", "Un collega racconta a tutti che ho rubato.", "diffamazione"),
    ("it", "Voglio scrivere il testamento a mano.", "olografo"),
    ("it", "Mio marito non versa niente per i bambini.", "figli"),
    ("de", "Wer bekommt nach der Trennung das Sorgerecht?", "Obhut"),
])
def test_everyday_words_of_common_subjects_bring_the_statutes_word(lang: str, question: str,
                                                                   statute_word: str) -> None:
    analyzer = analyzer_for(lang)
    stem = analyzer.stem(statute_word)
    assert stem not in analyzer.tokens(question)
    assert analyzer.query_weights(question)[stem] >= SYNONYM_WEIGHT


def test_a_lay_word_that_stems_like_a_common_statute_word_is_no_trigger() -> None:
    # Italian "paga" (pay) stems like "pagare", and French "punaises" (bedbugs) like "puni": as triggers they
    # would fire on most questions about paying or punishment
    assert "salar" not in analyzer_for("it").query_weights("Chi deve pagare le spese?")
    assert analyzer_for("fr").stem("défaut") not in analyzer_for("fr").query_weights("Il sera puni d'une amende.")


def test_rules_are_read_as_questions_are_so_lone_letters_neither_trigger_nor_expand() -> None:
    # "E-Mail" is read without its lone "e", as a question is, so the rule still fires
    german = analyzer_for("de")
    assert german.stem("Datenverarbeitungssystem") in german.query_weights("Jemand liest meine E-Mail.")
    # "locali d'abitazione" adds no lone "d"
    italian = analyzer_for("it").query_weights("Il mio appartamento ha la muffa.")
    assert italian.get(analyzer_for("it").stem("abitazione"), 0) > 0
    assert "d" not in italian
