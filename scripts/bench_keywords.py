#!/usr/bin/env python3
"""Keyword questions: one rare word, or an article's short title, asked as the whole question.

Usage::

    python scripts/bench_keywords.py [--data examples/swiss-excerpt] [--lang de] [--detect] [--count 300]
        [--seed 7] [--pipelines bm25,dense,hybrid] [--questions lay-tune,lay-check] [--json OUT]

Lawyers often type a term of art rather than a question ("Verrechnung", "Retentionsrecht"). Two
query sets are drawn from the corpus itself, from the documents in ``--lang``:

- ``rare word``: a word of at least six letters that occurs in the texts of 2 to 8 works; the gold is
  every work whose text holds it (a set that favours BM25 by construction: it asks whether the fusion
  keeps what BM25 found);
- ``short title``: a title of one or two words that only one work has; the gold is that work.

With ``--questions``, a third kind comes from the dataset's own questions of those splits:

- ``words <lang>``: each question cut down to its words without the stopwords of its language
  ("My landlord keeps my deposit. What can I do?" -> "landlord keeps deposit"), the way people type
  into a search box; the gold is the question's. Such a question has lost the function words that
  tell its language, so it shows what the service makes of keywords in each language.

Such questions match few documents, so BM25 often returns fewer hits than the depth asked for. The
script indexes the dataset (cached like ``lexsearch eval``), asks every question through each pipeline
and prints Recall@10 and MRR@10 per set, and how many questions got a BM25 list shorter than the depth
(docs/FUSION.md, "Short BM25 lists"). The questions are asked in ``--lang``; with ``--detect`` the
service works out their language itself, as it does for the CLI and the API when none is given.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import defaultdict
from typing import Any

from service.analysis.chain import analyzer_for
from service.analysis.language import WORD, detect_language
from service.config import load_settings
from service.corpus.datasets import Dataset, load_corpus
from service.evaluation import metrics
from service.evaluation.dataset_index import ensure_dataset_index
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime
from service.pipelines.hybrid import HybridPipeline
from service.tracing import Stopwatch

LONG_WORD = re.compile(r"[^\W\d_]{6,}")
RARE = (2, 8)
"""A rare word occurs in the texts of this many works (inclusive)."""


def keyword_sets(dataset: Dataset, lang: str, count: int, seed: int
                 ) -> tuple[dict[str, list[tuple[str, set[str]]]], dict[str, str]]:
    """The two query sets (question, gold works) and the work of every document id."""
    docs = load_corpus(dataset)
    work_of = {d.id: d.work for d in docs}
    holders: dict[str, set[str]] = defaultdict(set)
    titles: dict[str, set[str]] = defaultdict(set)
    for doc in docs:
        if doc.lang != lang:
            continue
        for word in set(LONG_WORD.findall(doc.text)):
            holders[word].add(doc.work)
        if doc.title and len(doc.title.split()) <= 2:
            titles[doc.title.strip()].add(doc.work)
    rng = random.Random(seed)
    rare = sorted(w for w, works in holders.items() if RARE[0] <= len(works) <= RARE[1])
    unique = sorted(t for t, works in titles.items() if len(works) == 1)
    return {"rare word": [(w, holders[w]) for w in rng.sample(rare, min(count, len(rare)))],
            "short title": [(t, titles[t]) for t in rng.sample(unique, min(count, len(unique)))]}, work_of


def question_words(dataset: Dataset, splits: list[str]) -> dict[str, list[tuple[str, set[str]]]]:
    """The ``words <lang>`` sets: each question of ``splits`` without its language's stopwords, with its gold."""
    sets: dict[str, list[tuple[str, set[str]]]] = defaultdict(list)
    for split in splits:
        gold = dataset.qrels(split)
        for query in dataset.queries(split):
            lang = query.lang or detect_language(query.text, candidates=("de", "fr", "it", "en"))
            stopwords = analyzer_for(lang).spec.stopwords
            words = [w for w in WORD.findall(query.text) if w.lower() not in stopwords and len(w) >= 3]
            if words and gold.get(query.qid):
                sets[f"words {lang}"].append((" ".join(words), gold[query.qid]))
    return dict(sorted(sets.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="examples/swiss-excerpt")
    parser.add_argument("--lang", default="de", help="the language of the documents the questions come from")
    parser.add_argument("--count", type=int, default=300, help="questions per set")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pipelines", default="bm25,dense,hybrid")
    parser.add_argument("--detect", action="store_true",
                        help="leave the question's language to the service, as the CLI and the API do")
    parser.add_argument("--questions", default="",
                        help="comma-separated splits whose questions, without stopwords, form the 'words' sets")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    runtime = Runtime(load_settings())
    dataset = Dataset(args.data)
    index = ensure_dataset_index(runtime, dataset)
    sets, work_of = keyword_sets(dataset, args.lang, args.count, args.seed)
    if args.questions:
        sets.update(question_words(dataset, args.questions.split(",")))
    depth = runtime.settings.retrieval.depth
    hybrid = runtime.pipeline("hybrid")
    assert isinstance(hybrid, HybridPipeline)
    results: dict[str, Any] = {}
    print(f"{'set':<12} {'pipeline':<8} {'n':>4} {'R@10':>7} {'MRR@10':>7} {'short BM25 lists':>17}")
    asked = "" if args.detect else args.lang
    for label, questions in sets.items():
        short = sum(len(hybrid.probe(q, index, k=depth, filters=None, lang=asked, watch=Stopwatch()).bm25) < depth
                    for q, _ in questions)
        for name in args.pipelines.split(","):
            pipe = runtime.pipeline(name)
            recall, mrr = [], []
            for question, gold in questions:
                response = pipe.run(SearchRequest(query=question, index=index, k=10, lang=asked))
                ranked = list(dict.fromkeys(work_of.get(h.doc_id, h.doc_id) for h in response.hits))
                recall.append(metrics.recall_at(ranked, gold, 10))
                mrr.append(metrics.mrr_at(ranked, gold, 10))
            row = {"questions": len(questions), "recall@10": metrics.mean(recall), "mrr@10": metrics.mean(mrr),
                   "short_bm25_lists": short}
            results[f"{label}/{name}"] = row
            print(f"{label:<12} {name:<8} {len(questions):>4} {row['recall@10']:>7.4f} {row['mrr@10']:>7.4f} "
                  f"{short:>17}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
