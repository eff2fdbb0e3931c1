#!/usr/bin/env python3
"""Language detection on short texts whose language is known.

Usage::

    python scripts/bench_language.py --data SWISS_STATUTES [--count 1500] [--seed 3] [--questions DIR:SPLIT:LANG ...]

The question's language decides its analyser, its synonyms and whether it is read through a glossary
(docs/SWISS.md), and a short question shows little of it. The texts come from a multilingual corpus in
which every document carries its language (the swiss-statutes corpus: articles in German, French and
Italian): ``--count`` random documents per language, each cut to its first 60 and its first 120
characters (at a word boundary, paragraph numbers dropped). ``--questions`` adds a dataset split whose
questions are all in one language (``data/gerlayqa-split:dev:de``). For each set the script prints the
share detected right, once among the corpus's languages (and the set's own) and once among every supported
one. Last, the documents' titles ("e. Verjährung"): most show no language at all, so it prints the share
read as another language (lower is better).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import defaultdict

from service.analysis.language import detected_language
from service.corpus.datasets import Dataset, load_corpus

LENGTHS = (60, 120)


def cut(text: str, length: int) -> str:
    """The text's first ``length`` characters, at a word boundary, without a leading paragraph number."""
    text = re.sub(r"^\[\d+\w*\]\s*", "", " ".join(text.split()))
    return text[:length].rsplit(" ", 1)[0] if len(text) > length else text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a corpus whose documents carry their language")
    parser.add_argument("--count", type=int, default=1500, help="documents per language")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--questions", nargs="*", default=[], metavar="DIR:SPLIT:LANG",
                        help="dataset splits whose questions are all in one language")
    args = parser.parse_args(argv)
    sets: dict[str, list[tuple[str, str]]] = {}
    for spec in args.questions:
        try:
            folder, split, lang = spec.rsplit(":", 2)
        except ValueError:
            parser.error(f"--questions takes DIR:SPLIT:LANG, not {spec!r}")
        sets[f"{split} ({lang})"] = [(lang, q.text) for q in Dataset(folder).queries(split)]
    by_lang: dict[str, list[str]] = defaultdict(list)
    titles: dict[str, list[str]] = defaultdict(list)
    for doc in load_corpus(Dataset(args.data)):
        if doc.lang and doc.text.strip():
            by_lang[doc.lang].append(doc.text)
        if doc.lang and doc.title.strip():
            titles[doc.lang].append(doc.title.strip())
    rng = random.Random(args.seed)
    for lang in sorted(by_lang):
        drawn = rng.sample(by_lang[lang], min(args.count, len(by_lang[lang])))
        for length in LENGTHS:
            sets[f"{lang}, {length} characters"] = [(lang, t) for t in (cut(d, length) for d in drawn) if len(t) > 20]
    corpus_languages = tuple(sorted(by_lang))
    print(f"{'set':<28} {'n':>6}  {'among ' + ','.join(corpus_languages) + '(+)':>17}  {'among all':>10}")
    for name, items in sets.items():
        right = sum(detected_language(text, candidates=tuple(sorted({*corpus_languages, lang}))) == lang
                    for lang, text in items)
        right_all = sum(detected_language(text, candidates=None) == lang for lang, text in items)
        print(f"{name:<28} {len(items):>6}  {right / len(items):>17.4f}  {right_all / len(items):>10.4f}")
    for lang in sorted(titles):
        wrong = sum(detected_language(t, candidates=None) not in (lang, None) for t in titles[lang])
        name = f"{lang} titles, another language"
        print(f"{name:<28} {len(titles[lang]):>6}  {'':>17}  {wrong / len(titles[lang]):>10.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
