"""A person's age under 18 in a question, read as the word for a minor.

Lay questions and case facts give ages, not legal status: "mein 15-jähriger Sohn", "N, âgé de 16 ans",
"mio figlio di 15 anni", "my 15-year-old son". The statutes speak of minors (*Minderjährige*, *mineurs*,
*minorenni*) or, for their contracts, of persons capable of judgement who lack the capacity to act
(Art. 19-19b ZGB), and never of ages. :func:`mentions_minor` finds an age under :data:`ADULT_AGE` that
belongs to a person, and :meth:`~service.analysis.chain.Analyzer.query_tokens` then adds the language's
:data:`MINOR_WORDS` entry to the question's terms, so synonym and sense rules written for that word
fire too ("minderjährig ... gekauft" reads as the capacity to act, ``analyzers/senses/de.txt``).

An age counts only beside a person: a person word or a party's letter ("der 16-jährige N"), or the
person saying it ("ich bin 16"). "Die 10-jährige Frist", "depuis 3 ans" and "the car is 5 years old"
name no minor.

Example::

    mentions_minor("Mein 15-jähriger Sohn hat ein Handy gekauft", "de")   # True
    mentions_minor("Die 10-jährige Frist ist abgelaufen", "de")           # False
"""

from __future__ import annotations

import functools
import re
import unicodedata

ADULT_AGE = 18
"""The age of majority (Art. 14 ZGB; § 2 BGB; the same in the other codes served)."""

MINOR_WORDS: dict[str, str] = {"de": "minderjährig", "fr": "mineur", "it": "minorenne", "en": "underage"}
"""The word a minor's age reads as, per language (English *minor* also means "small")."""

_PERSONS: dict[str, tuple[str, ...]] = {
    "de": ("sohn", "tochter", "kind", "junge", "mädchen", "jugendliche", "jugendlicher", "schüler", "schülerin",
           "enkel", "enkelin", "neffe", "nichte", "bruder", "schwester", "lehrling", "lernende", "lernender",
           "ich", "er", "sie"),
    "fr": ("fils", "fille", "enfant", "garçon", "ado", "adolescent", "adolescente", "élève", "petit-fils",
           "petite-fille", "neveu", "nièce", "frère", "sœur", "apprenti", "apprentie", "je", "il", "elle"),
    "it": ("figlio", "figlia", "bambino", "bambina", "ragazzo", "ragazza", "nipote", "fratello", "sorella",
           "apprendista", "io", "lui", "lei"),
    "en": ("son", "daughter", "child", "boy", "girl", "kid", "teenager", "nephew", "niece", "brother", "sister",
           "grandson", "granddaughter", "apprentice", "i", "he", "she"),
}
"""Words for a person (and the personal pronouns) that an age may belong to; a lone letter is a party."""

_AGE = r"(\d{1,2})"
_NOT_YEARS_OF_AGE = r"(?:%|chf|francs?|years?|months?|weeks?|days?|hours?|minutes?|times|km|kg|metres?|meters?|percent)"
"""What may follow "I was 16" when it is no age ("I was 3 years in prison", "5 minutes late")."""


def _patterns(lang: str) -> tuple[str, ...]:
    person = "|".join(re.escape(word) for word in _PERSONS[lang])
    party = rf"(?:{person}|[a-z])"
    bracketed = rf"\b(?:{person})\s*\(\s*{_AGE}\s*\)"  # "meine Tochter (13)"
    if lang == "de":
        return (rf"\b{_AGE}\s?-?\s?jährige?[nrs]?\s+{party}\b",  # "15-jähriger Sohn", "16jährige N"
                rf"\b(?:{person})\b(?:\s+\w+){{0,3}}\s+{_AGE}\s+jahre\s+alt",  # "Sohn ist jetzt 12 Jahre alt"
                bracketed)
    if lang == "fr":
        return (rf"\b(?:{person})\s+(?:âgée?s?\s+)?de\s+{_AGE}\s+ans\b",  # "ma fille de 15 ans"
                # "elle a 16 ans", "N a 16 ans"; not "il y a 3 ans" (French "y" and "a" name no party)
                rf"\b(?:{person}|[b-xz])\b(?:\s+(?!y\b)\w+)?\s+a\s+{_AGE}\s+ans\b",
                rf"\bâgée?\s+de\s+{_AGE}\s+ans\b", bracketed)
    if lang == "it":
        return (rf"\b(?:{person})\s+di\s+{_AGE}\s+anni\b",  # "mio figlio di 15 anni"
                rf"\b{party}\b(?:\s+\w+)?\s+ha\s+{_AGE}\s+anni\b", bracketed)
    return (rf"\b{_AGE}-year-old\s+{party}\b",  # "my 15-year-old son"
            rf"\b{party}\b(?:\s+\w+)?\s+(?:is|was|am|aged)\s+{_AGE}\b(?!\s*{_NOT_YEARS_OF_AGE})",
            rf"\b(?:{person})\b(?:\s+\w+){{0,3}}\s+{_AGE}\s+years?\s+old\b", bracketed)


@functools.cache
def _compiled(lang: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern) for pattern in _patterns(lang)) if lang in _PERSONS else ()


@functools.lru_cache(maxsize=64)
def mentions_minor(text: str, lang: str) -> bool:
    """Whether ``text`` (in ``lang``) gives a person an age under :data:`ADULT_AGE` (see the module docstring).
    Languages without patterns (Chinese) never do. Cached: one search reads its question's terms many times
    (BM25, the agents, every snippet), and the patterns take about 2.5 ms on a 30,000-character input."""
    patterns = _compiled(lang)
    if not patterns:
        return False
    lowered = unicodedata.normalize("NFKC", text).lower()
    return any(0 < int(match.group(1)) < ADULT_AGE for pattern in patterns for match in pattern.finditer(lowered))
