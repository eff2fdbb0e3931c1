#!/usr/bin/env python3
"""Write the joined-question proxy of multi-issue questions (issue 12) as a dataset folder.

Two to five questions of one split (never the training split) about different areas of law are
asked as one question whose gold set is the union of theirs (``service.corpus.joined``). The
folder gets split ``joined``, split ``single`` (the same parts asked alone) and ``parts.tsv``, so
that a benchmark can compare a pipeline on both. With ``--narrative`` every part but the last is
told as a statement, so that only the last part asks (``service.corpus.joined.as_statement``); with
``--one-sentence`` two parts are told in one sentence joined by "and", then the second part's question
(``service.corpus.joined.told_in_one_sentence``; pairs only, of questions that tell before they ask).

Usage (the folders the benchmarks read)::

    python scripts/make_joined_proxy.py --data data/stard-split --split dev --avoid fit \
        --pairs 100 --triples 60 --max-uses 2 --seed 7 --out /work/data/stard-joined
    python scripts/make_joined_proxy.py --data data/gerlayqa-split --split dev --avoid fit \
        --pairs 200 --triples 100 --max-uses 1 --seed 7 --out /work/data/gerlayqa-joined
    python scripts/make_joined_proxy.py --data data/stard-split --split dev --avoid fit \
        --pairs 100 --triples 60 --max-uses 2 --seed 7 --narrative --out /work/data/stard-narrative
    # questions of four and five issues, about seven and eight and a half gold articles each:
    python scripts/make_joined_proxy.py --data data/stard-split --split dev --avoid fit \
        --pairs 0 --triples 0 --quads 60 --max-uses 2 --seed 7 --out /work/data/stard-joined4
    python scripts/make_joined_proxy.py --data data/stard-split --split dev --avoid fit \
        --pairs 0 --triples 0 --fives 40 --max-uses 2 --seed 7 --out /work/data/stard-joined5
    # a dataset of several languages: one language's questions at a time (Swiss lay questions)
    python scripts/make_joined_proxy.py --data data/swiss-lay --split lay-de --language de \
        --pairs 16 --triples 4 --max-uses 3 --seed 7 --narrative --out /work/data/swiss-lay-narr-de
    python scripts/make_joined_proxy.py --data data/swiss-lay --split lay-de --language de \
        --pairs 20 --triples 0 --max-uses 3 --seed 7 --one-sentence --out /work/data/swiss-lay-sentence-de
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from service.corpus.datasets import Dataset, load_corpus
from service.corpus.graph import CorpusGraph
from service.corpus.joined import CLAUSE_JOINERS, Joined, draw_joined, singles_of, write_joined

DRAWS = ((5, "fives", 3), (4, "quads", 2), (3, "triples", 0), (2, "pairs", 1))
"""(parts, option, seed offset) in drawing order: the largest first, while every question is still free;
the offsets keep the folders of two and three parts that were drawn before four and five existed."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="dataset folder")
    parser.add_argument("--split", required=True, help="split the parts come from, e.g. dev")
    parser.add_argument("--avoid", default="", help="comma list of splits whose question texts may not be parts "
                                                   "(the training split)")
    parser.add_argument("--pairs", type=int, default=100, help="joined questions of two parts")
    parser.add_argument("--triples", type=int, default=60, help="joined questions of three parts")
    parser.add_argument("--quads", type=int, default=0, help="joined questions of four parts")
    parser.add_argument("--fives", type=int, default=0, help="joined questions of five parts")
    parser.add_argument("--max-uses", type=int, default=1, help="how often one question may be a part")
    parser.add_argument("--max-chars", type=int, default=8000, help="longest joined question")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--language", default="",
                        help="the questions' language, where the dataset holds several (default: the dataset's)")
    parser.add_argument("--narrative", action="store_true", help="only the last part of a joined question asks")
    parser.add_argument("--one-sentence", action="store_true",
                        help="two parts told in one sentence joined by 'and', then the second's question (pairs only)")
    parser.add_argument("--out", required=True, help="folder to write (outside the repository)")
    args = parser.parse_args(argv)
    dataset = Dataset(args.data)
    avoid = [s.strip() for s in args.avoid.split(",") if s.strip()]
    for name in [args.split, *avoid]:
        dataset.queries(name)  # a missing split fails here, before the corpus is read
    if args.split in avoid:
        parser.error("--split may not be one of --avoid")
    if args.one_sentence and (args.narrative or args.triples or args.quads or args.fives):
        parser.error("--one-sentence joins pairs only: give --triples 0 and no --quads, --fives or --narrative")
    language = args.language or dataset.language
    if args.one_sentence and language not in CLAUSE_JOINERS:
        parser.error(f"--one-sentence knows the word 'and' in {', '.join(sorted(CLAUSE_JOINERS))}, not {language!r}")
    graph = CorpusGraph.build(load_corpus(dataset))
    singles = singles_of(dataset, args.split, graph, avoid=avoid)
    uses: Counter[str] = Counter()
    narrative = 1.0 if args.narrative else 0.0  # every joined question, or none
    asked = {arity: getattr(args, option) for arity, option, _ in DRAWS}
    joined: list[Joined] = []
    for arity, _, seed_offset in DRAWS:
        joined += draw_joined(singles, arity=arity, count=asked[arity], seed=args.seed + seed_offset,
                              language=language, max_uses=args.max_uses, max_chars=args.max_chars, uses=uses,
                              narrative=narrative, one_sentence=args.one_sentence)
    sizes = write_joined(dataset, singles, joined, args.out, source=args.split,
                         settings={"avoid": avoid, **{option: asked[arity] for arity, option, _ in DRAWS},
                                   "max_uses": args.max_uses, "max_chars": args.max_chars, "seed": args.seed,
                                   "narrative": args.narrative, "one_sentence": args.one_sentence})
    drawn = Counter(len(j.parts) for j in joined)
    print(f"wrote {args.out}: {sizes['joined']} joined questions ({drawn[2]} of two parts, {drawn[3]} of three, "
          f"{drawn[4]} of four, {drawn[5]} of five) from {sizes['single']} questions of {args.split}")
    if any(drawn[arity] < count for arity, count in asked.items()):
        print("note: fewer joined questions than asked; the split has too few questions of different areas",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
