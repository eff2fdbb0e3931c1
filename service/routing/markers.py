"""Word lists that the offline complexity estimate counts, per language (zh, de, en, fr, it).

The lists themselves are data, in ``markers.toml`` next to this module (read and checked once, at
import). Each list holds lowercased words or short phrases as the analysis chain's ``raw_tokens`` produce
them (jieba words for Chinese, ``\\w+`` words elsewhere); a phrase is several words separated by
spaces and matches consecutive tokens. Languages without a list fall back to English.

The lists are deliberately small and high-precision: they feed saturating counts, so a missed
marker costs little, while a frequent false positive (Chinese 若 inside 若干 "several") would
inflate every question. Matching whole jieba words instead of substrings avoids most of those.
"""

from __future__ import annotations

import importlib.resources
import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any


@dataclass(frozen=True)
class MarkerSet:
    """The marker words of one language, by role.

    Attributes:
        conditional: words that open a condition or exception (if, unless, 如果, sofern).
        connective: words that chain reasoning steps or facts (because, then, but, 但是, danach).
        negation: negations and refusals (not, 没有, kein).
        question: question words; each distinct question is one more issue to resolve.
        party: persons, roles and organisations (landlord, 用人单位, Arbeitgeber).
        relation: words that relate two parties (between, against, 与, gegen).
        quantity: units of time and money that signal a numeric constraint (days, 元, Euro).
        domains: legal domain name -> cue words, for the domain span.
        negation_prefixes: word beginnings that negate the word (Chinese 不签 "not sign", 未通知
            "not notified": jieba keeps them as one word).
        not_negations: words with such a beginning that are legal terms, not negations (不动产).
    """

    conditional: frozenset[str]
    connective: frozenset[str]
    negation: frozenset[str]
    question: frozenset[str]
    party: frozenset[str]
    relation: frozenset[str]
    quantity: frozenset[str]
    domains: dict[str, frozenset[str]]
    negation_prefixes: tuple[str, ...] = ()
    not_negations: frozenset[str] = frozenset()

    def negations(self, tokens: list[str]) -> int:
        """Negation words in ``tokens``: listed ones plus words opening with a negation prefix."""
        count = count_matches(tokens, self.negation)
        if self.negation_prefixes:
            count += sum(1 for t in tokens if len(t) > 1 and t not in self.negation and t not in self.not_negations
                         and t.startswith(self.negation_prefixes))
        return count


_ROLES = ("conditional", "connective", "negation", "question", "party", "relation", "quantity")
"""The word-list fields of :class:`MarkerSet` that every language fills."""
_OPTIONS = ("negation_prefixes", "not_negations")
_DOMAIN_NAMES = ("labour", "tenancy", "family", "inheritance", "contract", "tort", "criminal", "company",
                 "property", "procedure", "administrative")
_LISTS_FILE = "markers.toml"
"""The word lists, next to this module: a table per language, with a ``domains`` table inside."""


def _marker_set(lang: str, lists: dict[str, Any]) -> MarkerSet:
    """The :class:`MarkerSet` of the lists of ``lang`` in :data:`_LISTS_FILE`.

    Raises:
        ValueError: when a role or a domain is missing, or an entry is none of those or the options.
    """
    domains = lists.get("domains", {})
    problems = [f"no {role}" for role in _ROLES if role not in lists]
    problems += [f"no domain {name}" for name in _DOMAIN_NAMES if name not in domains]
    problems += [f"unknown entry {key}" for key in lists if key not in (*_ROLES, *_OPTIONS, "domains")]
    problems += [f"unknown domain {name}" for name in domains if name not in _DOMAIN_NAMES]
    if problems:
        raise ValueError(f"{_LISTS_FILE} [{lang}]: {', '.join(problems)}")
    return MarkerSet(**{role: frozenset(lists[role]) for role in _ROLES},
                     domains={name: frozenset(domains[name]) for name in _DOMAIN_NAMES},
                     negation_prefixes=tuple(lists.get("negation_prefixes", ())),
                     not_negations=frozenset(lists.get("not_negations", ())))


def _read_lists() -> dict[str, MarkerSet]:
    text = importlib.resources.files("service.routing").joinpath(_LISTS_FILE).read_text(encoding="utf-8")
    return {lang: _marker_set(lang, lists) for lang, lists in tomllib.loads(text).items()}


_BY_LANGUAGE = _read_lists()


@cache
def markers_for(lang: str) -> MarkerSet:
    """The marker set of ``lang`` (an ISO 639-1 code); English for languages without one.

    Example::

        "如果" in markers_for("zh").conditional   # True
    """
    base = (lang or "en").split("-")[0].lower()
    return _BY_LANGUAGE.get(base, _BY_LANGUAGE["en"])


def count_matches(tokens: list[str], words: frozenset[str]) -> int:
    """How many times any entry of ``words`` occurs in ``tokens`` (phrases match consecutive tokens).

    Example::

        count_matches(["es", "sei", "denn", "wenn"], frozenset({"wenn", "es sei denn"}))   # 2
    """
    if not tokens or not words:
        return 0
    phrases = [tuple(w.split()) for w in words if " " in w]
    count = sum(1 for t in tokens if t in words)
    for phrase in phrases:
        n = len(phrase)
        count += sum(1 for i in range(len(tokens) - n + 1) if tuple(tokens[i:i + n]) == phrase)
    return count


def distinct_matches(tokens: list[str], words: frozenset[str]) -> set[str]:
    """The distinct single-word entries of ``words`` found in ``tokens``."""
    return {t for t in tokens if t in words}
