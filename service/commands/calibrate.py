"""``lexsearch calibrate``: fit routing thresholds, gamma and the score-cliff cut on a training split.

For every query of the split it runs the routed pipeline's probe and records both complexity
parts, then runs a served search with each tier forced and records its Recall@10, latency and
ranking (:func:`collect_fit_data` says how the latencies are made comparable). Grid searches
(``service.routing.tuning``) then pick the thresholds and gamma (within a recall floor and a
latency budget, both relative to always running the top tier, the fastest setting whose Recall@10
is within one standard error of the best) and the cut parameters (the best set F1). The result
is written into the index's metadata (entry ``routing``), next to the label-free QSI calibration
(entry ``qsi``, made first when missing).

It refuses evaluation splits (dev, test, ...): calibration must never see them. It also refuses
a model folder trained on the very queries it calibrates on (they would be scored in-sample).

Example::

    lexsearch split --data data/stard-split --from fit --parts cal_train=0.7,cal_hold=0.3 --out var/stard-cal
    lexsearch train --data var/stard-cal --split cal_train --out var/stard-cal-models
    lexsearch calibrate --data var/stard-cal --split cal_hold --model var/stard-cal-models \
        --latency-model models/stard

``--model`` gives the recall of each tier and must not have seen the calibration queries;
``--latency-model`` (default: ``--model``) times the tiers with the models that will serve.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

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
from service.errors import ConfigError, InvalidInput
from service.evaluation.dataset_index import ensure_dataset_index
from service.pipelines.base import check_query_lengths
from service.pipelines.build import Runtime
from service.routing.calibration import ensure_qsi_calibration
from service.routing.measure import collect_fit_data
from service.routing.router import CALIBRATION_KEY
from service.routing.tuning import CalibrationTargets, fit_calibration

EVALUATION_SPLITS = frozenset({"dev", "test", "eval", "evaluation", "validation", "valid", "heldout", "held-out"})


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("calibrate", help="fit routing thresholds and the score cliff on a training split",
                              description="Grid-search the routed pipeline's thresholds, gamma and score-cliff "
                                          "parameters on a TRAINING split and store them with the index. "
                                          "Evaluation splits (dev, test) are refused.")
    add_split_options(p, split_help="training split, e.g. fit or train")
    p.add_argument("--limit", type=int, default=0, help="use only the first N queries (0 = all)")
    add_calibration_options(p)
    p.add_argument("--latency-model", metavar="DIR",
                   help="time the tiers with this model folder, the one that will serve (default: --model). "
                        "Recall always comes from --model; only the speed of these models is used, so they may "
                        "have been trained on the calibration queries")
    p.add_argument("--dry-run", action="store_true", help="print the choice without storing it")
    p.add_argument("--json", dest="json_out", metavar="OUT", help="also write the calibration as JSON to OUT")
    add_common_options(p)
    p.set_defaults(run=run)


def check_training_split(split: str) -> None:
    """Refuse evaluation splits.

    Raises:
        InvalidInput: when ``split`` names a dev/test-like split.
    """
    if split.strip().lower() in EVALUATION_SPLITS:
        raise InvalidInput(f"calibrate fits on training data only; {split!r} is an evaluation split. "
                           "Use the fit or train split.")


def check_models_not_trained_on(model_dir: str, dataset: Dataset, split: str) -> None:
    """Refuse to calibrate on the very queries the trained models learned from.

    Their memory and rerankers would score those queries in-sample, so every tier that uses them
    would look better than it is. Calibrate on a held-out part instead (``lexsearch split`` the
    training split, train on one part, calibrate on the other).

    Raises:
        InvalidInput: when the model folder's manifest names this dataset folder and split.
    """
    from service.models import read_manifest

    if not model_dir:
        return
    try:
        manifest = read_manifest(model_dir)
    except ConfigError:
        return  # unreadable models are reported by the pipelines that load them
    data, trained_split = manifest.get("data"), manifest.get("split")
    if data and trained_split == split and Path(data).resolve() == dataset.path.resolve():
        raise InvalidInput(f"the models in {model_dir} were trained on {split!r} of {data}; calibrating on the "
                           "same queries would score them in-sample. Train on one part of the split and "
                           "calibrate on another (see docs/ROUTING.md).")


def calibrate(runtime: Runtime, dataset: Dataset, split: str, *, limit: int = 0, recall_target: float = 0.95,
              latency_budget: float = 0.5, confidence: float | None = 0.9, min_confidence: float | None = 0.7,
              store: bool = True,
              progress: bool = False, latency_runtime: Runtime | None = None) -> dict[str, Any]:
    """Calibrate routing for the dataset's index on ``split`` and (unless ``store`` is false) store it.

    ``runtime``'s models give the recall of each tier, and must not have been trained on ``split``.
    ``latency_runtime`` (default ``runtime``) gives the latencies: it should hold the models that
    will serve. Models trained on part of the training data run fewer planner rounds and smaller
    rerankers than the ones trained on all of it, so timing them would misjudge the latency budget;
    and since only their speed is used, the serving models may have seen the calibration queries.

    Returns:
        The stored ``routing`` entry.

    Raises:
        InvalidInput: for an evaluation split, an empty split, or a bad budget.
    """
    check_training_split(split)
    check_models_not_trained_on(runtime.settings.index.model_dir, dataset, split)
    targets = CalibrationTargets(recall_target, latency_budget, confidence, min_confidence)
    targets.check()
    queries = dataset.queries(split)
    qrels = dataset.qrels(split)
    if limit:
        queries = queries[:limit]
    if not queries:
        raise InvalidInput(f"split {split!r} of {dataset.path} has no queries")
    check_query_lengths(queries, runtime.settings.retrieval.max_query_chars)
    index = ensure_dataset_index(runtime, dataset)
    ensure_qsi_calibration(runtime.backend, index, language=dataset.language)
    pipe = runtime.pipeline("routed")
    pipe.forget_params(index)  # type: ignore[attr-defined]
    data = collect_fit_data(pipe, queries, qrels, index=index, forget_caches=runtime.forget_query_caches,
                            progress=progress)
    timed_pipe = pipe
    if latency_runtime is not None:
        timed_pipe = latency_runtime.pipeline("routed")
        timed_pipe.forget_params(index)  # type: ignore[attr-defined]
        timed = collect_fit_data(timed_pipe, queries, qrels, index=index,
                                 forget_caches=latency_runtime.forget_query_caches, progress=progress)
        data = replace(data, latency_ms=timed.latency_ms, reference_latency_ms=timed.reference_latency_ms)
    entry = fit_calibration(data, targets, calibrated_on={
        "dataset": dataset.name, "split": split, "models": runtime.settings.index.model_dir or None,
        "latency_models": (latency_runtime or runtime).settings.index.model_dir or None})
    if store:
        runtime.backend.update_metadata(index, **{CALIBRATION_KEY: entry})
        pipe.forget_params(index)  # type: ignore[attr-defined]
        timed_pipe.forget_params(index)  # type: ignore[attr-defined]
    return entry


def run(args: argparse.Namespace) -> int:
    check_training_split(args.split)
    settings = settings_from_args(args)
    runtime = Runtime(settings)
    dataset = Dataset(args.data)
    latency_runtime = None
    if args.latency_model:
        if not Path(args.latency_model, "manifest.json").is_file():
            raise InvalidInput(f"--latency-model {args.latency_model}: no trained models there (manifest.json missing)")
        latency_runtime = Runtime(settings.replace(index={"model_dir": args.latency_model}),
                                  embedder=runtime.embedder_for(dataset.language))
    check_output_path(args.json_out, "--json")
    entry = calibrate(runtime, dataset, args.split, limit=args.limit, recall_target=args.recall_target,
                      latency_budget=args.latency_budget, confidence=args.confidence,
                      min_confidence=args.min_confidence, store=not args.dry_run,
                      progress=progress_enabled(), latency_runtime=latency_runtime)
    fit = entry["fit"]
    r, c = fit["routing"], fit["cut"]
    print(f"thresholds {entry['thresholds']}  gamma {entry['gamma']}  "
          f"tier shares {r['tier_shares']}  rule {r['rule']}")
    print(f"fit R@10 {r['fit_recall@10']:.4f} at {r['fit_latency_ms']:.1f} ms mean "
          f"(top tier always: {r['reference_recall@10']:.4f} at {r['reference_latency_ms']:.1f} ms)")
    print(f"cut sigma {entry['cut']['sigma']} min_k {entry['cut']['min_k']} max_k {entry['cut']['max_k']}: "
          f"set F1 {c['fit_set']['f1']:.4f} (fixed top-10: {c['fit_fixed10_f1']:.4f}; highest on the grid: "
          f"{c['fit_best']['f1']:.4f} at sigma {c['fit_best']['sigma']} min_k {c['fit_best']['min_k']} "
          f"max_k {c['fit_best']['max_k']})")
    info("not stored (--dry-run)" if args.dry_run else "stored with the index (metadata entry 'routing')")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(entry, fh, ensure_ascii=False, indent=1)
            fh.write("\n")
    return 0
