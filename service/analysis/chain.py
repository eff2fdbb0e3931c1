"""The text-analysis chain: tokenise, lowercase, drop stopwords, stem.

One chain per language, defined by ``analyzers/<lang>.json`` (tokenizer, stopwords, Snowball
stemmer). The embedded engine indexes the tokens this module produces, and the engine mappings
under ``mappings/`` are generated from the same files, so every backend analyses text alike.

Example::

    analyze("Mein Vermieter gibt die Kaution nicht zurück", "de")
    # ['vermiet', 'gibt', 'kaution', 'zuruck']
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import threading
import unicodedata
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import Stemmer

from service.analysis.ages import MINOR_WORDS, mentions_minor
from service.analysis.compounds import CompoundSplitter
from service.analysis.language import detect_language
from service.analysis.senses import SenseRules
from service.analysis.synonyms import SynonymRules

LANGUAGES: tuple[str, ...] = ("de", "fr", "it", "en", "zh")
"""Languages with a dedicated chain. Other codes fall back to the English-free 'simple' chain."""

SYNONYM_WEIGHT = 1.0
"""A word added by a synonym rule counts as much as a word the user wrote: lay questions rarely use the
statutes' words, so the legal term a rule adds is the evidence BM25 needs (on the Swiss lay questions
1.0 beat 0.5 and 0.75, and GerLayQA and COLIEE were not harmed: docs/BENCHMARKS.md, "Swiss lay questions")."""
CACHED_TEXT_CHARS = 1000
"""Texts up to this long have their terms cached (questions; see :meth:`Analyzer.tokens`)."""
CACHED_TEXTS = 512
"""How many recent short texts keep their terms, per language."""
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_HAS_WORD_CHAR = re.compile(r"[^\W_]", re.UNICODE)
_LATIN_END = 0x250
"""Code points below this are Latin letters (Basic Latin to Latin Extended-B), the scripts whose lone letters
are labels rather than words."""
ONE_LETTER_WORDS: dict[str, frozenset[str]] = {"fr": frozenset({"a"})}
"""Lone letters that are words of a language and no stopword: French *a* (has). Italian *a, e, o* and
English *a, i* are stopwords already."""
_JIEBA_LOCK = threading.Lock()
_ANALYZERS: weakref.WeakSet[Analyzer] = weakref.WeakSet()
"""Every analyzer built, so :func:`forget_cached_terms` can reach their caches."""


def analyzers_dir() -> Path:
    """The folder holding ``<lang>.json`` analyzer definitions.

    ``LEXSEARCH_ANALYZERS_DIR`` overrides it; by default it is ``analyzers/`` at the repository root.
    """
    override = os.environ.get("LEXSEARCH_ANALYZERS_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "analyzers"


@dataclass(frozen=True)
class AnalyzerSpec:
    """The definition of one language chain, as read from ``analyzers/<lang>.json``."""

    language: str
    tokenizer: str
    stemmer: str | None
    stopwords: frozenset[str]
    lowercase: bool = True
    compound_words: frozenset[str] = frozenset()
    """Word list for compound splitting (German); empty = no splitting."""

    @classmethod
    def load(cls, lang: str) -> AnalyzerSpec:
        path = analyzers_dir() / f"{lang}.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        words: frozenset[str] = frozenset()
        if data.get("compound_words"):
            text = (analyzers_dir() / data["compound_words"]).read_text(encoding="utf-8")
            words = frozenset(w for w in text.split() if w)
        return cls(
            language=data["language"],
            tokenizer=data["tokenizer"],
            stemmer=data.get("stemmer"),
            stopwords=frozenset(data.get("stopwords", ())),
            lowercase=bool(data.get("lowercase", True)),
            compound_words=words,
        )


class Analyzer:
    """Turns text into index terms for one language. Thread-safe; build with :func:`analyzer_for`."""

    def __init__(self, spec: AnalyzerSpec) -> None:
        self.spec = spec
        self.lang = spec.language
        self._stemmer_local = threading.local()
        self._splitter = CompoundSplitter(spec.compound_words) if spec.compound_words else None
        self._synonyms: SynonymRules | None = None
        self._senses: SenseRules | None = None
        # One search analyses its question several times (BM25 query, agents, routing): keep the
        # tokens and terms of recent short texts. Documents are longer and analysed once, so they
        # bypass it.
        self._cached_tokens = functools.lru_cache(maxsize=CACHED_TEXTS)(self._tokens_of_short_text)
        self._cached_raw = functools.lru_cache(maxsize=CACHED_TEXTS)(self._raw_tokens_of_short_text)
        _ANALYZERS.add(self)
        if spec.stemmer:
            Stemmer.Stemmer(spec.stemmer)  # fail early on an unknown stemmer name

    def _stemmer(self) -> Stemmer.Stemmer | None:
        # PyStemmer objects are not thread-safe, so each thread gets its own.
        if not self.spec.stemmer:
            return None
        stemmer = getattr(self._stemmer_local, "stemmer", None)
        if stemmer is None:
            stemmer = Stemmer.Stemmer(self.spec.stemmer)
            stemmer.maxCacheSize = 50_000
            self._stemmer_local.stemmer = stemmer
        return stemmer

    def raw_tokens(self, text: str) -> list[str]:
        """Tokens before stopword removal and stemming (lowercased)."""
        if len(text) <= CACHED_TEXT_CHARS:
            return list(self._cached_raw(text))
        return self._split(text)

    def _raw_tokens_of_short_text(self, text: str) -> tuple[str, ...]:
        return tuple(self._split(text))

    def _split(self, text: str) -> list[str]:
        text = unicodedata.normalize("NFKC", text)
        if self.spec.lowercase:
            text = text.lower()
        if self.spec.tokenizer == "jieba":
            return [t for t in _jieba_cut(text) if _HAS_WORD_CHAR.search(t)]
        return _WORD.findall(text)

    def word_stems(self, text: str) -> list[str]:
        """The text's words stemmed, stopwords kept and compounds whole: how multi-word synonym triggers
        that analysis would shrink are matched (:class:`~service.analysis.synonyms.SynonymRules`)."""
        raw = self.raw_tokens(text)
        stemmer = self._stemmer()
        return stemmer.stemWords(raw) if stemmer is not None else raw

    def tokens(self, text: str) -> list[str]:
        """Index terms: tokens without stopwords, compounds followed by their parts, stemmed."""
        if len(text) <= CACHED_TEXT_CHARS:
            return list(self._cached_tokens(text))
        return self.terms(self.raw_tokens(text))

    def _tokens_of_short_text(self, text: str) -> tuple[str, ...]:
        return tuple(self.terms(self.raw_tokens(text)))

    def query_tokens(self, text: str) -> list[str]:
        """The :meth:`tokens` of a question, without lone Latin letters (:func:`is_label_letter`).

        Case facts name their parties by letters ("K kauft von V"), and those letters, repeated in every
        sentence, became the question's heaviest BM25 terms, matching the lettered items of statutes
        ("k. ...") instead of anything the question is about. Documents keep their letters; a
        question's are never searched. The query-side rules (:attr:`synonyms`, :attr:`senses`) are read
        the same way, so a trigger such as "E-Mail" still fires and no rule adds a lone letter.

        A person's age under 18 adds the terms of the language's word for a minor at the end
        (:mod:`service.analysis.ages`: "mein 15-jähriger Sohn" holds *minderjährig*)."""
        words = ONE_LETTER_WORDS.get(self.lang, frozenset())
        terms = [t for t in self.tokens(text) if t in words or not is_label_letter(t)]
        if self.lang in MINOR_WORDS and mentions_minor(text, self.lang):
            terms += self.tokens(MINOR_WORDS[self.lang])
        return terms

    def terms(self, raw: Sequence[str]) -> list[str]:
        """The index terms of already :meth:`raw_tokens`-split text (see :meth:`tokens`)."""
        toks = [t for t in raw if t not in self.spec.stopwords]
        if self._splitter is not None:
            toks = [part for t in toks for part in (t, *self._splitter.split(t))]
        stemmer = self._stemmer()
        if stemmer is not None:
            toks = stemmer.stemWords(toks)
        return toks

    @property
    def synonyms(self) -> SynonymRules:
        """The language's query-side synonym rules (``analyzers/synonyms/<lang>.txt``), loaded once."""
        if self._synonyms is None:
            self._synonyms = SynonymRules.load(analyzers_dir() / "synonyms" / f"{self.lang}.txt", self.query_tokens,
                                               analyze_words=self.word_stems)
        return self._synonyms

    @property
    def senses(self) -> SenseRules:
        """The language's sense rules (``analyzers/senses/<lang>.txt``, :mod:`service.analysis.senses`),
        loaded once."""
        if self._senses is None:
            self._senses = SenseRules.load(analyzers_dir() / "senses" / f"{self.lang}.txt", self.query_tokens)
        return self._senses

    def query_weights(self, text: str) -> dict[str, float]:
        """BM25 query terms with weights: each term's count, plus synonym expansions (:data:`SYNONYM_WEIGHT`),
        with words the question's context reads in their everyday sense replaced (:attr:`senses`; such a
        word fires no synonym rule).

        Every backend turns a text query into these weights, so they all score alike.
        """
        tokens = self.query_tokens(text)
        weights: dict[str, float] = {}
        for tok in tokens:
            weights[tok] = weights.get(tok, 0.0) + 1.0
        reading = self.senses.reading(tokens)
        for tok, count in self.synonyms.expand(tokens, self.word_stems(text), read=reading.read_terms).items():
            weights[tok] = weights.get(tok, 0.0) + SYNONYM_WEIGHT * count
        return reading.reweigh(weights)

    def knows(self, word: str) -> bool:
        """Whether ``word`` is a word of the language's statutes: its word list (``compound_words``,
        written by scripts/make_compound_words.py from statute corpora) holds it. ``False`` for a
        language without a list."""
        return word.lower() in self.spec.compound_words

    def stem(self, word: str) -> str:
        """The index form of one word (lowercased, stemmed)."""
        toks = self.tokens(word)
        return toks[0] if toks else ""


def is_label_letter(term: str) -> bool:
    """Whether ``term`` is one Latin letter: a party's name in case facts ("A", "K") or an item label of a
    statute ("lit. a"). One Chinese character stays a word."""
    return len(term) == 1 and term.isalpha() and ord(term) < _LATIN_END


def forget_cached_terms() -> None:
    """Empty every analyzer's cache of question terms (see :meth:`Analyzer.tokens`)."""
    for analyzer in list(_ANALYZERS):
        analyzer._cached_tokens.cache_clear()
        analyzer._cached_raw.cache_clear()


def _jieba_cut(text: str) -> list[str]:
    jieba = _jieba()
    return jieba.lcut(text)


@cache
def _jieba():  # type: ignore[no-untyped-def]
    # jieba prints its dictionary-loading chatter through the logging module; keep it quiet.
    with _JIEBA_LOCK:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
        return jieba


@cache
def analyzer_for(lang: str) -> Analyzer:
    """The chain for ``lang`` (an ISO 639-1 code); unknown languages get a stemmer-free chain."""
    base = lang.split("-")[0].lower() if lang else ""
    if base in LANGUAGES:
        return Analyzer(AnalyzerSpec.load(base))
    return Analyzer(AnalyzerSpec(language=base or "und", tokenizer="word", stemmer=None, stopwords=frozenset()))


def analyze(text: str, lang: str = "") -> list[str]:
    """Index terms of ``text`` in ``lang`` ('' = detect the language first)."""
    return analyzer_for(lang or detect_language(text)).tokens(text)
