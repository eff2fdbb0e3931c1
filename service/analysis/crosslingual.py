"""BM25 terms of a question, also when it is in a language the index does not hold.

An index of Swiss statutes holds German, French and Italian; an English question shares almost no
words with it, so BM25 (which only matches words) finds nothing and leaves hybrid search to the
embedder alone. Where a bilingual legal glossary exists (``analyzers/glossary/<from>-<to>.txt``,
Solr synonym format: English words on the left, the words the statutes of the other language use on
the right), the question's words are translated through it: each glossary entry that the question
contains adds its target-language terms, analysed with the target language's chain, weighted by the
number of words of the entry (a specific phrase such as "share of the inheritance" outweighs "share"),
and the target language's own synonym rules then apply to them. A word no glossary entry holds is
looked up in the term translations learned from statutes published in both languages
(``analyzers/glossary/<from>-<to>.learned.tsv``, :mod:`service.analysis.term_translations`): its
translations join at their probability times :data:`LEARNED_TRANSLATION_WEIGHT` (*usufruct* brings
*Nutzniessung*). The question's own words stay, at :data:`UNTRANSLATED_WEIGHT` (names, numbers and
shared words such as "police" still match).

Questions in a language the index holds are analysed as before (:meth:`Analyzer.query_weights`). A
long question's weights (:meth:`~service.retrieval.long_query.LongQuery.term_weights`) are translated
the same way (:func:`translate_term_weights`).

Example::

    bm25_query_weights("My landlord keeps my deposit", ("de", "fr", "it"))
    # {'vermiet': 1.0, 'sich': 1.0, 'mietzinsdepot': 1.0, ..., 'landlord': 0.5, 'deposit': 0.5}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cache

from service.analysis.chain import LANGUAGES, SYNONYM_WEIGHT, analyzer_for, analyzers_dir
from service.analysis.language import WORD, detect_language, detected_language
from service.analysis.synonyms import SynonymRules
from service.analysis.term_translations import TermTranslations

MIN_KNOWN_CHARS = 4
"""Shorter words are not looked up in the statutes' word list (it holds none)."""
UNTRANSLATED_WEIGHT = 0.5
"""The weight of a question's own words when they are translated for the index (their translations weigh 1)."""
LEARNED_TRANSLATION_WEIGHT = 2.0
"""A learned translation of a word that no glossary entry holds weighs its probability times this."""


@cache
def glossary(source: str, target: str) -> SynonymRules | None:
    """The ``source``-to-``target`` legal glossary (``analyzers/glossary/<source>-<target>.txt``), or ``None``."""
    path = analyzers_dir() / "glossary" / f"{source}-{target}.txt"
    if not path.is_file():
        return None
    return SynonymRules.load(path, analyzer_for(source).query_tokens, analyzer_for(target).query_tokens,
                             analyzer_for(source).word_stems)


@cache
def term_translations(source: str, target: str) -> TermTranslations | None:
    """The learned ``source``-to-``target`` term translations (``analyzers/glossary/<source>-<target>.learned.tsv``),
    or ``None``."""
    path = analyzers_dir() / "glossary" / f"{source}-{target}.learned.tsv"
    return TermTranslations.load(path) if path.is_file() else None


def forget_glossaries() -> None:
    """Read the glossary files again on next use (after they changed)."""
    glossary.cache_clear()
    term_translations.cache_clear()


def bm25_query_weights(query: str, languages: Sequence[str], lang: str = "") -> dict[str, float]:
    """The weighted BM25 terms of ``query`` for an index holding ``languages`` (first = its main one).

    ``lang`` is the question's language when the caller knows it ('' = detect). A question in one of
    ``languages`` is analysed in it; one in another language is translated through a glossary into the
    first of ``languages`` that has one. Without a glossary it is analysed in ``lang`` when the caller
    gave one, else as the index language it resembles most, as before.

    A question that shows no sign of its language (one term of art: "Verrechnung", "deposit") is read
    as the index's main language, as :func:`~service.analysis.language.question_language` reads it.
    Unless each of its words is a word of that language's statutes (:meth:`Analyzer.knows`: "Rente",
    "Arrest"), it is also read through the glossaries into the index's languages: the translations it
    matches join its terms (:func:`glossary_readings`), so an English term of art finds the statutes'
    word too.
    """
    languages = tuple(languages) or ("en",)
    shown = lang or detected_language(query)
    asked = shown or languages[0]
    into = glossary_into(asked, languages) if asked not in languages else None
    if into is not None:
        return translated_weights(query, asked, *into)
    chain = lang or detect_language(query, candidates=languages, default=languages[0])
    weights = analyzer_for(chain).query_weights(query)
    if not shown and not all(analyzer_for(languages[0]).knows(word) for word in _words(query)):
        for term, weight in glossary_readings(query, languages).items():
            weights[term] = max(weights.get(term, 0.0), weight)
    return weights


def glossary_readings(query: str, languages: Sequence[str]) -> dict[str, float]:
    """``query`` read in each language the index lacks and has a glossary from, as weighted terms of the
    index's languages (:func:`translated_weights`); a reading counts only where a glossary entry matches
    or a learned translation exists for one of its terms (*usufruct*). Several readings merge by the larger
    weight of each term."""
    readings: dict[str, float] = {}
    for source in sorted(glossary_sources(languages)):
        into = glossary_into(source, languages)
        if into is None:
            continue
        target, rules = into
        asked = analyzer_for(source)
        tokens = asked.query_tokens(query)
        learned = term_translations(source, target)
        if (next(rules.matches(tokens, asked.word_stems(query)), None) is not None
                or (learned is not None and learned.translate(tokens))):
            for term, weight in translated_weights(query, source, target, rules).items():
                readings[term] = max(readings.get(term, 0.0), weight)
    return readings


def glossary_into(source: str, languages: Sequence[str]) -> tuple[str, SynonymRules] | None:
    """The first of ``languages`` with a non-empty glossary from ``source``, and that glossary."""
    for target in languages:
        rules = glossary(source, target)
        if rules is not None and rules.rules:
            return target, rules
    return None


def glossary_sources(languages: Sequence[str]) -> set[str]:
    """The languages outside ``languages`` that have a glossary into one of them."""
    return {source for source in LANGUAGES if source not in languages and glossary_into(source, languages)}


def _words(query: str) -> list[str]:
    return [word for word in WORD.findall(query.lower()) if len(word) >= MIN_KNOWN_CHARS]


def translated_weights(query: str, source: str, target: str, rules: SynonymRules) -> dict[str, float]:
    """``query`` (in ``source``) as weighted ``target`` terms: :func:`translate_term_weights` of its terms,
    each weighing its count, and each term's translations as much as one occurrence (a word said twice,
    "divorce ... divorced", does not double its translation: measured on the told-as-one-story English lay
    questions, where that pushed the other matter's article out of the first ten)."""
    asked = analyzer_for(source)
    tokens = asked.query_tokens(query)
    counts = {tok: float(n) for tok, n in Counter(tokens).items()}
    return translate_term_weights(counts, tokens, asked.word_stems(query), target, rules,
                                  strengths=dict.fromkeys(counts, 1.0), learned=term_translations(source, target))


def translate_term_weights(weights: Mapping[str, float], tokens: list[str], words: list[str], target: str,
                           rules: SynonymRules, *, strengths: Mapping[str, float] | None = None,
                           learned: TermTranslations | None = None,
                           synonym_weight: float = SYNONYM_WEIGHT) -> dict[str, float]:
    """Weighted terms of a question in another language as weighted ``target`` terms.

    Args:
        weights: the question's analysed terms and their weights (a short question: each term's count;
            a long one: :meth:`~service.retrieval.long_query.LongQuery.term_weights`).
        tokens, words: the question's terms in order and its words stemmed with their stopwords, where
            the glossary's entries are matched (:meth:`SynonymRules.matches`).
        target: the index language the glossary ``rules`` lead into.
        strengths: how much each term's translations weigh (default: its weight in ``weights``).
        learned: the learned term translations from the question's language into ``target``.
        synonym_weight: the weight of a synonym expansion of a translation (in ``target``).

    Each glossary translation weighs the number of words of the longest entry that gives it (once, however
    many entries do) times the largest strength of that entry's terms; the target's synonym expansions of
    the translations ``synonym_weight``; the learned translations of the terms no entry holds their
    probability times :data:`LEARNED_TRANSLATION_WEIGHT` times the term's strength; and the question's own
    terms :data:`UNTRANSLATED_WEIGHT` of their weight. The target's sense rules read the translations as
    they read a question in that language (:meth:`~service.analysis.senses.SenseRules.reweigh`): "sick"
    beside "dismissed" becomes the untimely dismissal, not the wage during illness."""
    strengths = weights if strengths is None else strengths
    translated: dict[str, float] = {}
    covered: set[str] = set()
    for trigger, targets in rules.matches(tokens, words):
        covered.update(trigger)
        strength = len(trigger) * max(strengths.get(tok, 1.0) for tok in trigger)
        for tok in targets:
            translated[tok] = max(translated.get(tok, 0.0), strength)
    out = {tok: UNTRANSLATED_WEIGHT * weight for tok, weight in weights.items()}
    for tok, weight in translated.items():
        out[tok] = out.get(tok, 0.0) + weight
    if learned is not None and LEARNED_TRANSLATION_WEIGHT > 0:
        found: dict[str, float] = {}
        for tok, strength in strengths.items():
            if tok not in covered:
                for target_term, probability in learned.translate([tok]).items():
                    found[target_term] = max(found.get(target_term, 0.0), probability * strength)
        for tok, weight in found.items():
            out[tok] = out.get(tok, 0.0) + LEARNED_TRANSLATION_WEIGHT * weight
    into = analyzer_for(target)
    terms = list(translated)
    reading = into.senses.reading(terms)
    for tok, count in into.synonyms.expand(terms, read=reading.read_terms).items():
        out[tok] = out.get(tok, 0.0) + synonym_weight * count
    return reading.reweigh(out)
