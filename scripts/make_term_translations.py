#!/usr/bin/env python3
"""Learn term translations from a statute corpus published in two languages (docs/SWISS.md).

Usage::

    python scripts/make_term_translations.py --data SWISS_LAW [--source en] [--target de]
        [--out analyzers/glossary/en-de.learned.tsv] [--skip-ids FILE] [--min-probability 0.1]
        [--max-target-share 0.05]

``--data`` is a dataset folder holding ``corpus_<source>.jsonl`` and ``corpus_<target>.jsonl`` whose
documents share their ids across the two languages, one id per article: the Swiss Civil Code, Code
of Obligations and Criminal Code in German and English (the ``swiss-law`` corpus, from the GitHub
repository quadratecode/ch-law-tracker, Fedlex texts). Articles whose id repeats within an act
(``meta.occurrence`` above 1) are left out, as are the ids listed in ``--skip-ids`` (one per line: held
out for an evaluation). Each article's title and text are analysed with the two languages' chains, and
IBM Model 1 is fitted on the pairs (:mod:`service.analysis.term_translations`).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from service.analysis.chain import analyzer_for, analyzers_dir
from service.analysis.term_translations import learn_translations
from service.corpus.datasets import LoadReport, read_jsonl

GLUED_FOOTNOTE = re.compile(r"(?<=[^\W\d_])\d+")
"""A footnote number glued to the word before it ("Misdemeanour2743s") in the converted texts."""


def read_articles(path: Path) -> dict[str, str]:
    """id -> title and text of each article that is the only one with its id (bad lines are skipped, and
    reported on stderr)."""
    report = LoadReport()
    articles = {doc.id: GLUED_FOOTNOTE.sub("", f"{doc.title or ''}\n{doc.text or ''}")
                for doc in read_jsonl(path, report) if doc.meta.get("occurrence", 1) <= 1}
    for problem in report.problems:
        print(f"skipped {problem}", file=sys.stderr)
    return articles


def terms(text: str, lang: str) -> list[str]:
    """The text's analysed terms as a question's are searched (no lone letters: "u. dgl.", lettered list
    items), without numbers ("1", "179bis"): they name, they do not translate."""
    return [t for t in analyzer_for(lang).query_tokens(text) if not any(ch.isdigit() for ch in t)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--source", default="en")
    parser.add_argument("--target", default="de")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--skip-ids", type=Path)
    parser.add_argument("--min-probability", type=float, default=0.1,
                        help="drop translations less likely than this (default 0.1)")
    parser.add_argument("--max-target-share", type=float, default=0.05,
                        help="drop target terms found in a larger share of the articles (default 0.05)")
    args = parser.parse_args(argv)
    files = [args.data / f"corpus_{lang}.jsonl" for lang in (args.source, args.target)]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        parser.error(f"not found: {', '.join(missing)}")
    skip = set(args.skip_ids.read_text(encoding="utf-8").split()) if args.skip_ids else set()
    source, target = (read_articles(f) for f in files)
    ids = sorted((set(source) & set(target)) - skip)
    if not ids:
        parser.error(f"{args.data}: no article id is in both corpus files")
    print(f"{len(ids)} articles in both languages", file=sys.stderr)
    pairs = [(terms(source[i], args.source), terms(target[i], args.target)) for i in ids]
    table = learn_translations(pairs, min_probability=args.min_probability, max_target_share=args.max_target_share,
                               progress=lambda n: print(f"  round {n}", file=sys.stderr))
    out = args.out or analyzers_dir() / "glossary" / f"{args.source}-{args.target}.learned.tsv"
    table.write(out, header=[
        f"{args.source} -> {args.target} term translations learned by IBM Model 1 from {len(ids)} articles",
        "published in both languages (scripts/make_term_translations.py; service/analysis/term_translations.py).",
        "source term <TAB> target term <TAB> t(target | source); terms as the analysis chains write them.",
    ])
    print(f"wrote {out}: {sum(len(v) for v in table.table.values())} translations of {len(table.table)} terms",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
