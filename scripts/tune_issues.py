#!/usr/bin/env python3
"""Tune and check issue segmentation (service/agents/issues.py) on a training split, cross-fitted.

The split is cut into folds. For each fold, the law/section classifier (the segmenter's topic
model) is fitted on the other folds, and the fold's questions are segmented twice: alone (they
should stay one issue) and joined two or three at a time into multi-issue questions
(``joined_for_training``; the true boundaries are where the parts meet). For every topic-cosine
threshold of the grid (``same_topic``) it reports:

- *singles kept whole*: share of single questions segmented into one issue;
- *joined count*: share of joined questions segmented into as many issues as they have parts;
- *boundary P/R/F1*: issue starts that fall on a true boundary (within a few characters).

With ``--narrative`` the joined questions tell every part but the last as a statement (only the
last part asks), and the grid is that of ``statement_topic``, the bar between the statements of a
question that asks at most once or in one run at its end (``same_topic`` stays at its default).

Usage::

    python scripts/tune_issues.py --data data/stard-split --split fit
    python scripts/tune_issues.py --data data/gerlayqa-split --split fit --grid 0.2,0.3,0.4,0.5
    python scripts/tune_issues.py --data data/stard-split --split fit --narrative --grid 0,0.05,0.1,0.15,0.2
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from service.agents.issues import segment_issues, topic_of
from service.agents.prefilter import LawClassifier
from service.analysis.chain import analyzer_for
from service.config import load_settings
from service.corpus.datasets import Dataset, load_corpus
from service.corpus.graph import CorpusGraph
from service.corpus.joined import as_statement, joined_for_training, part_as_joined
from service.pipelines.build import Runtime
from service.training import folds_of

TOLERANCE = {"zh": 4, "default": 40}
"""Characters a found issue start may be off a true boundary (joiners such as "另外，" lie between)."""


def _boundaries(text: str, parts: list[str], language: str, *, narrative: bool = False) -> list[int]:
    """Where parts 2..n start in the joined text."""
    out, at = [], 0
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        stem = part_as_joined(part, language, first=i == 0, last=last)
        stem = (stem if last or not narrative else as_statement(stem, language))[:12]
        at = text.find(stem, at)
        if i > 0:
            out.append(at)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="fit", help="training split (never the reporting split)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--grid", default="0,0.1,0.2,0.25,0.3,0.35,0.4,0.5,1.01",
                        help="topic-cosine thresholds (1.01: no topic merging)")
    parser.add_argument("--narrative", action="store_true",
                        help="only the last part of a joined question asks; the grid is statement_topic's")
    args = parser.parse_args(argv)
    dataset = Dataset(args.data)
    queries, qrels = dataset.queries(args.split), dataset.qrels(args.split)
    graph = CorpusGraph.build(load_corpus(dataset))
    rows = [(q, {d for d in qrels.get(q.qid, ()) if d in graph}) for q in queries]
    rows = [(q, g) for q, g in rows if g]
    language = dataset.language
    analyzer = analyzer_for(language)
    tokens = [analyzer.tokens(q.text) for q, _ in rows]
    runtime = Runtime(load_settings())
    started = time.perf_counter()
    vectors = runtime.embedder.embed_queries([q.text for q, _ in rows])
    sections = [[graph.info(d).block for d in g] for _, g in rows]  # type: ignore[union-attr]
    law_of = {s: s.rsplit("#", 1)[0] for labels in sections for s in labels}
    grid = [float(x) for x in args.grid.split(",")]
    tolerance = TOLERANCE.get(language, TOLERANCE["default"])
    kept = {t: [] for t in grid}
    counted = {t: [] for t in grid}
    found = {t: [0, 0, 0] for t in grid}  # correct starts, found starts, true starts
    for f, held in enumerate(folds_of(len(rows), args.folds)):
        rest = sorted(set(range(len(rows))) - set(held))
        classifier = LawClassifier.fit([tokens[i] for i in rest], vectors[rest], [sections[i] for i in rest], law_of)
        topic = topic_of(classifier, language)
        cache: dict[str, np.ndarray] = {}

        def cached(text: str, topic=topic, cache=cache) -> np.ndarray:
            if text not in cache:
                cache[text] = topic(text)
            return cache[text]

        joined = joined_for_training([rows[i][0].qid for i in held], [rows[i][0].text for i in held],
                                     [rows[i][1] for i in held], graph, language=language, seed=100 + f,
                                     pairs=0.3, triples=0.2, narrative=float(args.narrative))
        texts = {rows[i][0].qid: rows[i][0].text for i in held}
        for threshold in grid:
            bar = {"statement_topic" if args.narrative else "same_topic": threshold}
            for i in held:
                kept[threshold].append(len(segment_issues(rows[i][0].text, language, cached, **bar)) == 1)
            for j in joined:
                issues = segment_issues(j.text, language, cached, **bar)
                counted[threshold].append(len(issues) == len(j.parts))
                truth = _boundaries(j.text, [texts[p] for p in j.parts], language, narrative=args.narrative)
                starts = [i.start for i in issues[1:]]
                found[threshold][0] += sum(any(abs(s - b) <= tolerance for b in truth) for s in starts)
                found[threshold][1] += len(starts)
                found[threshold][2] += len(truth)
    print(f"{dataset.name} / {args.split}: {len(rows)} questions, {args.folds} folds, "
          f"{len(counted[grid[0]])} joined ({time.perf_counter() - started:.0f} s)")
    print(f"{'cosine':>8} {'singles whole':>14} {'joined count':>13} {'boundary P':>11} "
          f"{'R':>6} {'F1':>6}")
    for threshold in grid:
        correct, predicted, true = found[threshold]
        p = correct / predicted if predicted else 0.0
        r = correct / true if true else 0.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        print(f"{threshold:>8.2f} {np.mean(kept[threshold]):>14.3f} "
              f"{np.mean(counted[threshold]):>13.3f} "
              f"{p:>11.3f} {r:>6.3f} {f1:>6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
