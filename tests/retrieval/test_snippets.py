"""Snippets: the window with the most question terms, and the spans that match them."""

from __future__ import annotations

from service.retrieval.snippets import make_snippet

TEXT = ("Der Verkäufer haftet: a. für zugesicherte Eigenschaften; b. für Mängel. "
        "Der Käufer muss den Mangel sofort anzeigen.")


def _marked(text: str, spans: tuple[tuple[int, int], ...]) -> list[str]:
    return [text[a:b] for a, b in spans]


def test_the_question_terms_are_marked_in_their_analysed_forms() -> None:
    snippet = make_snippet(TEXT, "Muss der Käufer den Mangel anzeigen?", "de", max_chars=300)
    assert _marked(snippet.text, snippet.spans) == ["Mängel", "Käufer", "Mangel", "anzeigen"]


def test_the_parties_letters_mark_no_lettered_item() -> None:
    """A case names its parties "A" and "B"; the statute's items "a." and "b." are not what it asks about."""
    snippet = make_snippet(TEXT, "A kauft von B ein Auto mit einem Mangel", "de", max_chars=300)
    assert _marked(snippet.text, snippet.spans) == ["Mängel", "Mangel"]
