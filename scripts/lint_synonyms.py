#!/usr/bin/env python3
"""Check the query-side rule files against a statute corpus.

Usage::

    python scripts/lint_synonyms.py --data SWISS_STATUTES [--languages de,fr,it]

For each language's ``analyzers/synonyms/<lang>.txt`` the script prints:

* **targets no document holds**: a rule's right-hand side should be the statutes' words; a target that
  no article of the corpus contains adds nothing to BM25, and a compound's parts may add noise;
* **triggers read as phrases**: written with several words, analysed to one term (the others are
  stopwords: "non devo" is only *dev*); they fire only where the question has their words as written
  (``SynonymRules.phrases``), which is worth knowing when writing a rule;
* **one trigger in several rules**: two rules whose triggers analyse alike ("ferie" and "ferito" are both
  *fer*) fire together;
* **triggers the statutes use often** (in at least ``--common`` documents): the question's own word then
  also matches the statutes in their sense of it, which may not be the everyday one (*caution*, the
  guarantor); a sense rule (``analyzers/senses``) can settle it.

The corpus is any dataset folder whose documents carry their language (the swiss-statutes dataset).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

from service.analysis.chain import analyzer_for
from service.corpus.datasets import Dataset, load_corpus


def document_frequencies(data: Path, languages: list[str]) -> dict[str, Counter[str]]:
    """Per language, in how many documents of that language each analysed term occurs."""
    frequencies: dict[str, Counter[str]] = {lang: Counter() for lang in languages}
    for doc in load_corpus(Dataset(data)):
        lang = doc.lang or ""
        if lang in frequencies:
            frequencies[lang].update(set(analyzer_for(lang).tokens(f"{doc.title or ''} {doc.text}")))
    return frequencies


def lint(lang: str, df: Counter[str], common: int) -> list[str]:
    """The findings for one language's synonym file, one line each."""
    rules = analyzer_for(lang).synonyms
    lines: list[str] = []
    for target in sorted({t for _, targets in rules.rules for t in targets if df[t] == 0}):
        lines.append(f"{lang}: target no document holds: {target}")
    owners: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
    for (trigger, targets), phrase in zip(rules.rules, rules.phrases, strict=True):
        if phrase is not None:
            lines.append(f"{lang}: trigger read as a phrase: {' '.join(phrase)} (its term: {trigger[0]})")
        else:
            owners[trigger].add(targets)
            if len(trigger) == 1 and df[trigger[0]] >= common and trigger[0] not in targets:
                lines.append(f"{lang}: trigger the statutes use in {df[trigger[0]]} documents: {trigger[0]}")
    for trigger, target_sets in sorted(owners.items()):
        if len(target_sets) > 1:
            lines.append(f"{lang}: one trigger in {len(target_sets)} rules: {' '.join(trigger)}")
    return list(dict.fromkeys(lines))  # two spellings of one rule ("schuld, schulden") report once


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a dataset folder of statutes in the languages")
    parser.add_argument("--languages", default="de,fr,it")
    parser.add_argument("--common", type=int, default=200,
                        help="report triggers that at least this many documents hold (default 200)")
    args = parser.parse_args(argv)
    languages = [lang.strip() for lang in args.languages.split(",") if lang.strip()]
    frequencies = document_frequencies(args.data, languages)
    findings = [line for lang in languages for line in lint(lang, frequencies[lang], args.common)]
    print("\n".join(findings) if findings else "no findings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
