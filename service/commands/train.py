"""``lexsearch train``: fit the offline models (agents, priors, rerankers) on a dataset split."""

from __future__ import annotations

import argparse
import json

from service.commands.common import (
    add_common_options,
    check_output_path,
    info,
    progress_enabled,
    settings_from_args,
)
from service.corpus.datasets import Dataset
from service.errors import InvalidInput
from service.pipelines.base import check_query_lengths
from service.pipelines.build import Runtime


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train", help="train the offline agents and rerankers on a dataset split",
        description="Fit the law classifier, question memory, article prior, term mapping, query adapter, "
                    "planner policy and learned rerankers on one split, and write them to a model folder "
                    "(use it with --model on search/eval, or LEXSEARCH_INDEX_MODEL_DIR).")
    p.add_argument("--data", required=True, help="dataset folder (corpus*.jsonl, queries/qrels of the split)")
    p.add_argument("--split", required=True, help="training split, e.g. fit or train (never the one you report)")
    p.add_argument("--out", required=True, help="model folder to write")
    p.add_argument("--folds", type=int, default=5, help="cross-fitting folds (default 5)")
    p.add_argument("--json", dest="json_out", metavar="OUT", help="write the training report as JSON")
    add_common_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from service.training import train_models

    if not 2 <= args.folds <= 20:
        raise InvalidInput("--folds must be between 2 and 20")
    settings = settings_from_args(args)
    check_output_path(args.out, "--out", folder=True)
    check_output_path(args.json_out, "--json")
    dataset = Dataset(args.data)
    if args.split not in dataset.splits():
        raise InvalidInput(f"{args.data} has no split {args.split!r} (it has: {', '.join(dataset.splits()) or 'none'})")
    # Checked before the index is built and the folds are trained (minutes), not after.
    check_query_lengths(dataset.queries(args.split), settings.retrieval.max_query_chars)
    if not dataset.qrels(args.split):
        raise InvalidInput(f"{args.data}: qrels.{args.split}.tsv lists no relevant document")
    runtime = Runtime(settings)
    report = train_models(runtime, dataset, args.split, args.out, folds=args.folds, progress=info,
                          show_bars=progress_enabled())
    cv = report.info["cv"]
    print(f"wrote {args.out}: {report.info['questions']} questions, cross-validated agentic Recall@10 "
          f"{cv['agentic_recall@10']:.4f} ({report.info['timings_s']['total']:.0f} s)")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(report.to_dict(), fh, ensure_ascii=False, indent=1)
    return 0
