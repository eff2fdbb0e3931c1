"""``lexsearch train``: one command from a dataset split to a ready model folder (offline agents,
priors, rerankers and the routing calibration)."""

from __future__ import annotations

import argparse
import json

from service.commands.common import (
    add_calibration_options,
    add_common_options,
    add_split_options,
    check_output_path,
    info,
    progress_enabled,
    settings_from_args,
)
from service.corpus.datasets import Dataset
from service.pipelines.build import Runtime


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train", help="train the offline agents and rerankers and calibrate routing on a dataset split",
        description="Fit the law classifier, question memory, article prior, term mapping, query adapter, "
                    "planner policy and learned rerankers on one split, calibrate the routed pipeline on "
                    "cross-fitted folds of the same split, and write everything to a model folder (use it "
                    "with --model on search/eval, or LEXSEARCH_INDEX_MODEL_DIR).")
    add_split_options(p, split_help="training split, e.g. fit or train (never the one you report)",
                      data_help="dataset folder (corpus*.jsonl, queries/qrels of the split)")
    p.add_argument("--out", required=True, help="model folder to write (new, or one written by lexsearch train)")
    p.add_argument("--folds", type=int, default=5, help="cross-fitting folds, also used for calibration (default 5)")
    p.add_argument("--partitions", type=int, default=2, metavar="N",
                   help="cut the split into folds N times and average the rerankers trained on each cut's pools "
                        "(1 to 5, default 2; each further cut adds its searches and a reranker fit)")
    p.add_argument("--no-calibrate", dest="calibrate", action="store_false",
                   help="skip the routing calibration (routed search then uses the index's or the settings' "
                        "thresholds)")
    add_calibration_options(p)
    p.add_argument("--calibration-questions", type=int, metavar="N",
                   help="measure every tier on N questions of the split, spread over the folds (0 = all; "
                        "default 300: measuring is most of the training time)")
    p.add_argument("--borrow", action="append", default=[], metavar="FOLDER",
                   help="also train the rerankers on the training pools of another model folder (written by "
                        "lexsearch train; feature rows only, no text): helps splits of a few hundred questions "
                        "(docs/AGENTS.md, 'Borrowed pools'); repeatable")
    p.add_argument("--json", dest="json_out", metavar="OUT", help="write the training report as JSON")
    add_common_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from service.routing.tuning import CalibrationTargets
    from service.training import CALIBRATION_QUESTIONS, train_models

    settings = settings_from_args(args)
    check_output_path(args.json_out, "--json")  # --out: checked with the other inputs by train_models
    dataset = Dataset(args.data)
    targets = CalibrationTargets(args.recall_target, args.latency_budget, args.confidence,
                                 args.min_confidence) if args.calibrate else None
    runtime = Runtime(settings)
    report = train_models(runtime, dataset, args.split, args.out, folds=args.folds, partitions=args.partitions,
                          calibration=targets,
                          calibration_questions=(CALIBRATION_QUESTIONS if args.calibration_questions is None
                                                 else args.calibration_questions),
                          borrow=args.borrow, progress=info, show_bars=progress_enabled())
    cv = report.info["cv"]
    print(f"wrote {args.out}: {report.info['questions']} questions, cross-validated agentic Recall@10 "
          f"{cv['agentic_recall@10']:.4f} ({report.info['timings_s']['total']:.0f} s)")
    routing = report.info.get("routing")
    if routing:
        fit = routing["fit"]["routing"]
        print(f"routing calibrated on {routing['calibrated_on']['queries']} questions (cross-fitted): thresholds "
              f"{routing['thresholds']}, gamma {routing['gamma']}, cut sigma {routing['cut']['sigma']}; "
              f"keeps >= {fit['kept_share_lower_bound']:.1%} of the top tier's Recall@10 at <= "
              f"{fit['latency_share_upper_bound']:.1%} of its latency ({fit['rule']})")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(report.to_dict(), fh, ensure_ascii=False, indent=1)
    return 0
