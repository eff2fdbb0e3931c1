"""Everyday words whose statute sense differs, read in their everyday sense where the question says so.

A synonym rule only adds words: "caution => sûretés" still leaves *caution* in a French question, and in the
Code of obligations *caution* is the guarantor (Art. 492 ff. CO), so "mon bailleur ne me rend pas ma
caution" ranks the suretyship articles above the tenant's deposit (Art. 257e CO). A sense rule names the
context that settles the word's meaning; when the question holds the word and any of that context, the
word's own term is dropped from the BM25 query, its reading takes its place, and the synonym rules the word
would fire are not applied (they were written for its statute sense: "krank => Lohnfortzahlung" is not what
"krank" means beside "gekündigt"). The index language's rules also read the glossary translation of a
question in another language ("sick ... dismissed" translated as *Krankheit ... Kündigung*).

Rules live in ``analyzers/senses/<lang>.txt``, one per line: ``word, word | context, context => reading,
reading``. A rule written with ``+=`` instead of ``=>`` keeps the word (and its synonyms) and adds the
reading: a subject that two words name only together ("Testament … nichts bekommen": the compulsory share).
Every part is analysed with the language's chain (so "cauzioni" fires a rule written for "cauzione"), and
a part of several words must occur as a sequence. The files are read only by the query side; engines never
see them.

Example::

    rules = SenseRules.parse(["caution | bailleur, loyer => sûretés"], analyzer.tokens)
    rules.reweigh(["bailleur", "caution"], {"bailleur": 1.0, "caution": 1.0})
    # {'bailleur': 1.0, 'sûret': 1.0}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from service.analysis.synonyms import contains


@dataclass(frozen=True)
class SenseRule:
    """One word (any of ``triggers``) read as ``reading`` when any of ``contexts`` occurs beside it."""

    triggers: tuple[tuple[str, ...], ...]
    contexts: tuple[tuple[str, ...], ...]
    reading: tuple[str, ...]
    keeps: bool = False
    """A ``+=`` rule: the word keeps its own sense and the reading joins it (a subject the two words name
    together: "Testament … nichts bekommen" is the compulsory share)."""

    def fires(self, tokens: list[str]) -> tuple[str, ...] | None:
        """The trigger ``tokens`` hold when one of the contexts occurs too, else ``None``."""
        trigger = next((t for t in self.triggers if contains(tokens, t)), None)
        if trigger is None or not any(contains(tokens, c) for c in self.contexts if not set(c) <= set(trigger)):
            return None
        return trigger

    def touches(self, tokens: list[str]) -> bool:
        """Whether ``tokens`` hold one of the rule's words or contexts (a part of a question the rule reads)."""
        return any(contains(tokens, phrase) for phrase in (*self.triggers, *self.contexts))


@dataclass(frozen=True)
class SenseRules:
    """A language's sense rules (see the module docstring)."""

    rules: tuple[SenseRule, ...]

    @classmethod
    def parse(cls, lines: Iterable[str], analyze: Callable[[str], list[str]]) -> SenseRules:
        """Read ``words | context => reading`` and ``words | context += reading`` lines, ignoring comments
        (``#``) and blanks.

        Raises:
            ValueError: a line lacks ``|`` or both ``=>`` and ``+=``, or one of its three parts has no word.
        """
        rules: list[SenseRule] = []
        for number, raw in enumerate(lines, start=1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            keeps = "+=" in line
            left, arrow, right = line.partition("+=" if keeps else "=>")
            words, bar, context = left.partition("|")
            if not arrow or not bar:
                raise ValueError(f"sense rule on line {number} is not 'words | context => reading' "
                                 f"or 'words | context += reading': {raw!r}")
            triggers = _phrases(words, analyze)
            contexts = _phrases(context, analyze)
            reading = tuple(dict.fromkeys(tok for phrase in _phrases(right, analyze) for tok in phrase))
            if not triggers or not contexts or not reading:
                raise ValueError(f"sense rule on line {number} has an empty part: {raw!r}")
            rules.append(SenseRule(triggers, contexts, reading, keeps))
        return cls(tuple(rules))

    @classmethod
    def load(cls, path: Path, analyze: Callable[[str], list[str]]) -> SenseRules:
        """The rules in ``path``; none when the file does not exist.

        Raises:
            ValueError: a malformed line, named with the file.
        """
        if not path.is_file():
            return cls(())
        try:
            return cls.parse(path.read_text(encoding="utf-8").splitlines(), analyze)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def reading(self, tokens: list[str]) -> SenseReading:
        """What the rules read in the question ``tokens``: every rule that fires, found in one pass, for
        both :attr:`SenseReading.read_terms` (before the synonyms) and :meth:`SenseReading.reweigh` (after)."""
        fired: list[tuple[SenseRule, tuple[str, ...]]] = []
        read: set[str] = set()
        for rule in self.rules:
            trigger = rule.fires(tokens)
            if trigger is None:
                continue
            fired.append((rule, trigger))
            if not rule.keeps:
                read.update(term for phrase in rule.triggers if contains(tokens, phrase) for term in phrase)
        return SenseReading(tuple(fired), frozenset(read))

    def read_terms(self, tokens: list[str]) -> frozenset[str]:
        """:attr:`SenseReading.read_terms` of ``tokens``."""
        return self.reading(tokens).read_terms

    def reweigh(self, tokens: list[str], weights: dict[str, float]) -> dict[str, float]:
        """:meth:`SenseReading.reweigh` of ``weights`` by the rules that fire in ``tokens``."""
        return self.reading(tokens).reweigh(weights)


@dataclass(frozen=True)
class SenseReading:
    """The sense rules that fire in one question, each with the trigger it found.

    Attributes:
        fired: the rules that fire, in file order, with their trigger.
        read_terms: the terms of the words a rule reads in another sense (the words of every trigger of a
            firing ``=>`` rule that occurs). Their synonym rules, written for the statute sense, must not
            fire: "krank" beside "gekündigt" is not the wage during illness.
    """

    fired: tuple[tuple[SenseRule, tuple[str, ...]], ...]
    read_terms: frozenset[str]

    def reweigh(self, weights: dict[str, float]) -> dict[str, float]:
        """``weights`` (BM25 terms of the question) with each fired rule's word replaced by its reading: the
        word's terms are dropped (but for a ``+=`` rule, :attr:`SenseRule.keeps`), and each reading term
        weighs at least what the word did. Returns ``weights`` itself when no rule fires."""
        out = weights
        for rule, trigger in self.fired:
            if out is weights:
                out = dict(weights)
            take = out.get if rule.keeps else out.pop
            weight = max((take(term, 0.0) for term in set(trigger)), default=0.0) or 1.0
            for term in rule.reading:
                out[term] = max(out.get(term, 0.0), weight)
        return out


def _phrases(part: str, analyze: Callable[[str], list[str]]) -> tuple[tuple[str, ...], ...]:
    return tuple(phrase for phrase in (tuple(analyze(p)) for p in part.split(",")) if phrase)
