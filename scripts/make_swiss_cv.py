#!/usr/bin/env python3
"""Derive the Swiss statutes cross-validation folders: the split cut into five folds, grouped by case.

Usage::

    python scripts/make_swiss_cv.py SWISS_DIR OUT_DIR [--langs de,fr,it] [--split dev] [--folds 5] [--seed 42]

``SWISS_DIR`` is the Swiss federal statutes dataset folder (``corpus_{de,fr,it}.jsonl``,
``queries.dev.tsv``, ``qrels.dev.tsv``). ``OUT_DIR`` gets the corpus files of ``--langs`` (symlinked),
a ``dataset.json`` and, for every fold ``f`` (1-based):

- ``queries.cv<f>.tsv`` / ``qrels.cv<f>.tsv``: the questions scored in fold ``f``;
- ``queries.cv<f>-train.tsv`` / ``qrels.cv<f>-train.tsv``: the other four fifths, to train on.

Exam questions often share their case facts (several questions on one case). Questions whose text
starts with the same :data:`GROUP_PREFIX` characters are kept in one fold, so that no fold is scored
with a sibling question (and its answer) in its training part.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

from service.corpus.datasets import Dataset

GROUP_PREFIX = 200
"""Characters of the question that identify its case (the facts come first)."""


def case_of(text: str) -> str:
    """The case a question is about: its first :data:`GROUP_PREFIX` characters, spaces normalised."""
    return " ".join(text.split())[:GROUP_PREFIX]


def grouped_folds(texts: dict[str, str], folds: int, seed: int) -> list[list[str]]:
    """Question ids in ``folds`` parts of near-equal size; questions sharing a case stay together."""
    groups: dict[str, list[str]] = {}
    for qid in sorted(texts):
        groups.setdefault(case_of(texts[qid]), []).append(qid)
    ordered = sorted(groups.values(), key=lambda g: g[0])
    random.Random(seed).shuffle(ordered)
    ordered.sort(key=len, reverse=True)  # stable: big groups placed first, ties in shuffled order
    parts: list[list[str]] = [[] for _ in range(folds)]
    for group in ordered:
        min(parts, key=len).extend(group)
    return [sorted(p) for p in parts]


def write_split(out: Path, name: str, qids: list[str], texts: dict[str, str], qrels: dict[str, set[str]]) -> None:
    with open(out / f"queries.{name}.tsv", "w", encoding="utf-8") as fh:
        for qid in qids:
            fh.write(f"{qid}\t{texts[qid]}\n")
    with open(out / f"qrels.{name}.tsv", "w", encoding="utf-8") as fh:
        for qid in qids:
            for doc_id in sorted(qrels.get(qid, ())):
                fh.write(f"{qid}\t0\t{doc_id}\t1\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data")
    parser.add_argument("out")
    parser.add_argument("--langs", default="de,fr,it", help="corpus languages to link (default de,fr,it)")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    dataset = Dataset(args.data)
    langs = [x.strip() for x in args.langs.split(",") if x.strip()]
    files = [dataset.path / f"corpus_{lang}.jsonl" for lang in langs]
    missing = [str(f) for f in files if not f.is_file()]
    if missing or args.folds < 2:
        print(f"make_swiss_cv: error: {'missing ' + ', '.join(missing) if missing else '--folds must be >= 2'}",
              file=sys.stderr)
        return 2
    queries = dataset.queries(args.split)
    qrels = dataset.qrels(args.split)
    texts = {q.qid: q.text for q in queries}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("corpus*.jsonl"):
        stale.unlink()
    for corpus in files:
        (out / corpus.name).symlink_to(os.path.relpath(corpus.resolve(), out.resolve()))
    write_split(out, args.split, sorted(texts), texts, qrels)
    parts = grouped_folds(texts, args.folds, args.seed)
    splits = {args.split: len(texts)}
    for f, held in enumerate(parts, start=1):
        train = sorted(q for g, p in enumerate(parts, start=1) if g != f for q in p)
        write_split(out, f"cv{f}", held, texts, qrels)
        write_split(out, f"cv{f}-train", train, texts, qrels)
        splits[f"cv{f}"], splits[f"cv{f}-train"] = len(held), len(train)
    meta = dict(dataset.meta)
    meta.update({"name": f"{out.name}", "language": ",".join(langs), "splits": splits,
                 "corpus": [f.name for f in files],
                 "derived_from": {"dataset": str(dataset.path), "split": args.split, "folds": args.folds,
                                  "seed": args.seed, "grouped_by": f"first {GROUP_PREFIX} characters"}})
    (out / "dataset.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}: {len(texts)} questions in {args.folds} folds of "
          + ", ".join(str(len(p)) for p in parts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
