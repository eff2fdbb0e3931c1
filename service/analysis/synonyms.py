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

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SynonymRules:
    """Analysed rules: each trigger (a token sequence) maps to the tokens it adds."""

    rules: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]

    @classmethod
    def parse(cls, lines: Iterable[str], analyze: Callable[[str], list[str]],
              analyze_targets: Callable[[str], list[str]] | None = None) -> SynonymRules:
        """Read Solr-format lines (``a, b => c`` or ``a, b, c``), ignoring comments and blanks.

        ``analyze_targets`` analyses the right-hand side of ``=>`` rules when it is in another language
        than the triggers (a bilingual glossary); by default both sides use ``analyze``."""
        rules: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        for raw in lines:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if "=>" in line:
                left, _, right = line.partition("=>")
                triggers = [tuple(analyze(t)) for t in left.split(",")]
                targets = _unique(tok for t in right.split(",") for tok in (analyze_targets or analyze)(t))
                rules.extend((trig, targets) for trig in triggers if trig)
            else:
                group = [tuple(analyze(t)) for t in line.split(",")]
                for trig in group:
                    if trig:
                        rules.append((trig, _unique(tok for other in group if other != trig for tok in other)))
        return cls(tuple(rules))

    @classmethod
    def load(cls, path: Path, analyze: Callable[[str], list[str]],
             analyze_targets: Callable[[str], list[str]] | None = None) -> SynonymRules:
        if not path.is_file():
            return cls(())
        return cls.parse(path.read_text(encoding="utf-8").splitlines(), analyze, analyze_targets)

    def expand(self, tokens: list[str]) -> dict[str, int]:
        """Tokens the rules add for a query (how often each is added); originals are not repeated."""
        added: dict[str, int] = {}
        present = set(tokens)
        for _trigger, targets in self.matches(tokens):
            for tok in targets:
                if tok not in present:
                    added[tok] = added.get(tok, 0) + 1
        return added

    def matches(self, tokens: list[str]) -> Iterator[tuple[tuple[str, ...], tuple[str, ...]]]:
        """The rules whose trigger occurs in ``tokens`` (as a contiguous sequence): (trigger, targets)."""
        present = set(tokens)
        for trigger, targets in self.rules:
            if set(trigger) <= present and contains(tokens, trigger):
                yield trigger, targets


def _unique(tokens: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(tokens))


def contains(tokens: list[str], phrase: tuple[str, ...]) -> bool:
    """Whether ``phrase`` occurs in ``tokens`` as a contiguous sequence."""
    n = len(phrase)
    return any(tuple(tokens[i:i + n]) == phrase for i in range(len(tokens) - n + 1))
