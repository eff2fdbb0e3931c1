#!/usr/bin/env python3
"""Swiss lay questions: everyday questions on the demo excerpt (docs/BENCHMARKS.md, "Swiss lay questions").

Usage::

    python scripts/bench_lay.py [--data examples/swiss-excerpt]
        [--splits demo,lay-tune,lay-check,senses,topics-tune,topics-check,cases-tune,cases-check,cites]
        [--pipelines bm25,dense,hybrid,routed] [--set section.key=value ...] [--ranks] [--json OUT]

Indexes the excerpt with the current settings (once; cached by corpus and configuration), asks every
question of each split through each pipeline, and prints per split and question language: the share
of questions whose first expected article is first (hit@1) or in the top 3 (hit@3, the demo test's
bar), MRR@10 and R@10. ``--ranks`` adds the rank of the first expected article for every question
(``-`` = not in the top 100). ``--set retrieval.fusion=rrf`` and the like override settings.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from typing import Any

from service.analysis.language import detect_language
from service.config import load_settings
from service.corpus.datasets import Dataset
from service.evaluation import metrics
from service.evaluation.dataset_index import ensure_dataset_index
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime

SPLITS = "demo,lay-tune,lay-check,senses,topics-tune,topics-check,cases-tune,cases-check,cites"
"""Every question set of the demo excerpt (docs/SWISS.md, "Lay questions")."""


def first_rank(ranked: list[str], relevant: set[str]) -> int | None:
    return next((i for i, doc in enumerate(ranked, start=1) if doc in relevant), None)


def scores(ranks: list[tuple[int | None, float]]) -> dict[str, float]:
    n = max(1, len(ranks))
    return {"n": len(ranks),
            "hit@1": sum(1 for r, _ in ranks if r == 1) / n,
            "hit@3": sum(1 for r, _ in ranks if r is not None and r <= 3) / n,
            "mrr@10": sum(1 / r for r, _ in ranks if r is not None and r <= 10) / n,
            "r@10": sum(rec for _, rec in ranks) / n}


def parse_overrides(pairs: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for pair in pairs:
        key, _, value = pair.partition("=")
        section, _, name = key.partition(".")
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        out[section][name] = parsed
    return dict(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="examples/swiss-excerpt")
    parser.add_argument("--splits", default=SPLITS)
    parser.add_argument("--pipelines", default="bm25,dense,hybrid,routed")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--ranks", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    runtime = Runtime(load_settings(overrides=parse_overrides(args.set)))
    dataset = Dataset(args.data)
    index = ensure_dataset_index(runtime, dataset)
    results: dict[str, Any] = {}
    per_question: dict[str, dict[str, int | None]] = defaultdict(dict)
    for split in args.splits.split(","):
        queries = dataset.queries(split)
        qrels = dataset.qrels(split)
        for name in args.pipelines.split(","):
            pipe = runtime.pipeline(name)
            by_lang: dict[str, list[tuple[int | None, float]]] = defaultdict(list)
            for q in queries:
                response = pipe.run(SearchRequest(query=q.text, index=index, k=100, qid=q.qid))
                ranked = [h.doc_id for h in response.hits]
                rank = first_rank(ranked, qrels[q.qid])
                per_question[f"{split}:{q.qid}"][name] = rank
                by_lang[detect_language(q.text)].append((rank, metrics.recall_at(ranked, qrels[q.qid], 10)))
            every = [r for rows in by_lang.values() for r in rows]
            results[f"{split}/{name}"] = {"all": scores(every),
                                          **{lang: scores(rows) for lang, rows in sorted(by_lang.items())}}
    print(f"{'split/pipeline':<22} {'lang':<4} {'n':>3} {'hit@1':>6} {'hit@3':>6} {'MRR@10':>7} {'R@10':>6}")
    for key, groups in results.items():
        for lang, s in groups.items():
            print(f"{key if lang == 'all' else '':<22} {lang:<4} {s['n']:>3} {s['hit@1']:>6.3f} {s['hit@3']:>6.3f} "
                  f"{s['mrr@10']:>7.3f} {s['r@10']:>6.3f}")
    if args.ranks:
        names = args.pipelines.split(",")
        print("\nrank of the first expected article\n" + f"{'question':<18} " + " ".join(f"{n:>8}" for n in names))
        for qid, ranks in per_question.items():
            print(f"{qid:<18} " + " ".join(f"{ranks.get(n) or '-':>8}" for n in names))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"results": results, "ranks": per_question}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
