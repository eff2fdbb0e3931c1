"""Query-side legal synonyms: everyday words expanded into the words the statutes use.

Rules come from ``analyzers/synonyms/<lang>.txt`` in Solr's synonym format, the same files the
Elasticsearch/OpenSearch language analyzers read. Both sides of a rule are analysed with the
language's chain, so a rule written as ``kaution => sicherheit`` also fires for "Kautionen" and
expands into the stem of "Sicherheit".

Example::

    rules = SynonymRules.parse(["kaution, mietdepot => sicherheit"], analyzer.tokens)
    rules.expand(["vermiet", "kaution"])    # {'sich': 1}
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SynonymRules:
    """Analysed rules: each trigger (a token sequence) maps to the tokens it adds.

    ``phrases`` holds, rule by rule, the words of a trigger that analysis would shrink to one term (its
    other words are stopwords: "non devo" is only *dev*, "does not work" only *work*), else ``None``.
    Such a trigger fires only where the question has its words as written, stopwords included
    (:meth:`matches`), so that "Cosa devo fare?" does not read as "non devo"."""

    rules: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]
    phrases: tuple[tuple[str, ...] | None, ...]

    @classmethod
    def parse(cls, lines: Iterable[str], analyze: Callable[[str], list[str]],
              analyze_targets: Callable[[str], list[str]] | None = None,
              analyze_words: Callable[[str], list[str]] | None = None) -> SynonymRules:
        """Read Solr-format lines (``a, b => c`` or ``a, b, c``), ignoring comments and blanks.

        ``analyze_targets`` analyses the right-hand side of ``=>`` rules when it is in another language
        than the triggers (a bilingual glossary); by default both sides use ``analyze``.
        ``analyze_words`` gives a text's words as :meth:`matches` compares phrases (stemmed, stopwords
        kept); without it every trigger is matched by its analysed terms alone."""
        rules: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        phrases: list[tuple[str, ...] | None] = []

        def add(written: str, trigger: tuple[str, ...], targets: tuple[str, ...]) -> None:
            rules.append((trigger, targets))
            phrase = None
            if analyze_words is not None and len(trigger) < 2 and len(written.split()) > 1:
                phrase = tuple(analyze_words(written))
            phrases.append(phrase)

        for raw in lines:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if "=>" in line:
                left, _, right = line.partition("=>")
                targets = _unique(tok for t in right.split(",") for tok in (analyze_targets or analyze)(t))
                for written in left.split(","):
                    trigger = tuple(analyze(written))
                    if trigger:
                        add(written, trigger, targets)
            else:
                group = [(written, tuple(analyze(written))) for written in line.split(",")]
                for written, trigger in group:
                    if trigger:
                        add(written, trigger, _unique(tok for _, other in group if other != trigger for tok in other))
        return cls(tuple(rules), tuple(phrases))

    @classmethod
    def load(cls, path: Path, analyze: Callable[[str], list[str]],
             analyze_targets: Callable[[str], list[str]] | None = None,
             analyze_words: Callable[[str], list[str]] | None = None) -> SynonymRules:
        if not path.is_file():
            return cls((), ())
        return cls.parse(path.read_text(encoding="utf-8").splitlines(), analyze, analyze_targets, analyze_words)

    def expand(self, tokens: list[str], words: list[str] | None = None, *,
               read: Collection[str] = ()) -> dict[str, int]:
        """Tokens the rules add for a query (how often each is added); originals are not repeated.
        ``words``: the query's words for triggers matched as phrases (see :meth:`matches`). ``read``: terms
        that fire no rule, because a sense rule reads them in another sense
        (:attr:`~service.analysis.senses.SenseReading.read_terms`)."""
        added: dict[str, int] = {}
        present = set(tokens)
        if read:
            tokens = [t for t in tokens if t not in read]
            words = None if words is None else [w for w in words if w not in read]
        for _trigger, targets in self.matches(tokens, words):
            for tok in targets:
                if tok not in present:
                    added[tok] = added.get(tok, 0) + 1
        return added

    def matches(self, tokens: list[str], words: list[str] | None = None
                ) -> Iterator[tuple[tuple[str, ...], tuple[str, ...]]]:
        """The rules whose trigger occurs in ``tokens`` (as a contiguous sequence): (trigger, targets).

        A trigger that analysis shrank to one term (``phrases``) must occur in ``words``, the query's
        words stemmed with their stopwords (``Analyzer.word_stems``); without ``words`` it never fires."""
        present = set(tokens)
        for (trigger, targets), phrase in zip(self.rules, self.phrases, strict=True):
            if not set(trigger) <= present:
                continue
            if contains(tokens, trigger) if phrase is None else words is not None and contains(words, phrase):
                yield trigger, targets


def _unique(tokens: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(tokens))


def contains(tokens: list[str], phrase: tuple[str, ...]) -> bool:
    """Whether ``phrase`` occurs in ``tokens`` as a contiguous sequence.

    Only the places that start with the phrase's first term are compared (``list.index``): the sense rules
    test every trigger and context against a long input's thousands of terms, twice per search."""
    if not phrase:
        return True
    n, start = len(phrase), 0
    while True:
        try:
            i = tokens.index(phrase[0], start)
        except ValueError:
            return False
        if n == 1 or tuple(tokens[i:i + n]) == phrase:
            return True
        start = i + 1
