"""``lexsearch eval``: score pipelines on a dataset split (builds the dataset's index when missing)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from service.commands.common import (
    add_common_options,
    add_reranker_option,
    add_split_options,
    check_output_path,
    filters_from_args,
    info,
    progress_enabled,
    settings_from_args,
)
from service.corpus.datasets import Dataset
from service.errors import InvalidInput
from service.evaluation.dataset_index import ensure_dataset_index
from service.evaluation.harness import evaluate, format_table
from service.evaluation.runs import write_run
from service.models import load_models
from service.pipelines.base import check_query_lengths
from service.pipelines.build import Runtime
from service.plugins import PIPELINES
from service.retrieval.sets import DEFAULT_SET_CHOICES, CliffSet, parse_set_choices
from service.routing.router import RoutingParams


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("eval", help="evaluate pipelines on a dataset split",
                              description="Print Recall@10, Recall@100, MRR@10, nDCG@10 and latency per pipeline, "
                                          "and per question language when the questions are in several. Gold "
                                          "articles match by work: a hit in any language version counts.")
    add_split_options(p, split_help="query split, e.g. dev")
    p.add_argument("--pipeline", default="bm25,dense,hybrid",
                   help=f"comma-separated pipelines among {', '.join(PIPELINES.names())} (default bm25,dense,hybrid)")
    p.add_argument("--k", type=int, default=100, help="ranking depth scored (default 100)")
    p.add_argument("--limit", type=int, default=0, help="evaluate only the first N queries (0 = all)")
    p.add_argument("--filter", action="append", default=[], metavar="FIELD=VALUE")
    add_reranker_option(p)
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="pipeline option, e.g. --option no_cliff=1 (repeatable)")
    ablation = p.add_argument_group("routed pipeline ablations")
    ablation.add_argument("--no-intrinsic", action="store_true", help="route on retrieval consistency only")
    ablation.add_argument("--no-consistency", action="store_true", help="route on intrinsic complexity only")
    ablation.add_argument("--no-cliff", action="store_true",
                          help="return a fixed top-10 set instead of cutting at the score cliff")
    p.add_argument("--sets", default=DEFAULT_SET_CHOICES, metavar="CHOICES",
                   help="citation-set choices scored by set precision/recall/F1: top<K>, cliff (score cliff), "
                        "fixed (best fixed size on the training questions) and count (predicted number of "
                        f"citations; fixed and count need --model); default {DEFAULT_SET_CHOICES}, '' = none")
    p.add_argument("--json", dest="json_out", metavar="OUT", help="write the results as JSON to this file")
    p.add_argument("--runs", metavar="DIR", help="write one TREC run file per pipeline into DIR")
    add_common_options(p)
    p.set_defaults(run=run)


def parse_options(specs: list[str]) -> dict[str, object]:
    options: dict[str, object] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--option {spec!r} must look like key=value")
        options[key.strip()] = value.strip()
    return options


def kinds_of_gold(runtime: Runtime, index: str, qrels: dict[str, set[str]]) -> dict[str, str]:
    """Gold id -> document kind, when the index holds several kinds (``{}`` otherwise: no per-kind scores)."""
    if len(runtime.backend.kinds(index)) < 2:
        return {}
    gold = sorted({doc_id for ids in qrels.values() for doc_id in ids})
    return {doc_id: doc.kind.value for doc_id, doc in runtime.backend.fetch(index, gold).items()}


def run(args: argparse.Namespace) -> int:
    if args.k < 10:
        raise InvalidInput("--k must be at least 10 (Recall@10 and MRR@10 need ten results)")
    if args.limit < 0:
        raise InvalidInput("--limit must be 0 (all) or a positive number of queries")
    settings = settings_from_args(args)
    check_output_path(args.json_out, "--json")
    check_output_path(args.runs, "--runs", folder=True)
    dataset = Dataset(args.data)
    queries = dataset.queries(args.split)
    if args.limit:
        queries = queries[: args.limit]
    # Everything below is checked before the index is built or a question is searched.
    check_query_lengths(queries, settings.retrieval.max_query_chars)
    qrels = dataset.qrels(args.split)
    names = [n.strip() for n in args.pipeline.split(",") if n.strip()]
    if not names:
        raise InvalidInput("--pipeline names no pipeline")
    options = parse_options(args.option)
    if args.reranker:
        options["reranker"] = args.reranker
    for flag in ("no_intrinsic", "no_consistency", "no_cliff"):
        if getattr(args, flag):
            options[flag] = True
    filters = filters_from_args(args.filter)
    runtime = Runtime(settings)
    pipelines = [runtime.search_pipeline(n) for n in names]  # fail on an unknown name before building anything
    models = load_models(settings.index.model_dir, compile_trees=settings.agents.compiled_trees)
    choices, skipped = parse_set_choices(args.sets, counter=models.citation_counter if models else None)
    if skipped:
        info(f"set choices {', '.join(skipped)} need a model folder with a citation counter (--model); left out")
    index = ensure_dataset_index(runtime, dataset)
    gold_kinds = kinds_of_gold(runtime, index, qrels)
    params = RoutingParams.resolve(settings.routing, runtime.backend.metadata(index))
    choices = [CliffSet(params.cut_sigma, params.cut_min_k, params.cut_max_k, params.cut_depth)
               if c.name == "cliff" else c for c in choices]
    results = []
    for name, pipeline in zip(names, pipelines, strict=True):
        info(f"evaluating {name} on {dataset.name}/{args.split} ({len(queries)} queries)")
        runtime.forget_query_caches()  # each pipeline pays for its own query embeddings
        result, run_ = evaluate(pipeline, queries, qrels, index=index, k=args.k, filters=filters, options=options,
                                max_query_chars=settings.retrieval.max_query_chars, progress=progress_enabled(),
                                label=name, set_choices=choices, gold_kinds=gold_kinds)
        results.append(result)
        if args.runs:
            Path(args.runs).mkdir(parents=True, exist_ok=True)
            write_run(Path(args.runs) / f"{dataset.file_stem}.{args.split}.{name}.run", run_, tag=name)
    print(format_table(results))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps([r.to_dict() for r in results], ensure_ascii=False, indent=1) + "\n",
                                       encoding="utf-8")
        info(f"wrote {args.json_out}")
    return 0
