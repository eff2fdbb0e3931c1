#!/usr/bin/env python3
"""Compiled reranker trees vs LightGBM's own predictor, side by side in one run.

    python scripts/bench_rerank_speed.py --data data/stard-split --models models/stard --limit 200 \
        --compile-times

Three runtimes share one index and embedder: LightGBM's predictor (``agents.compiled_trees`` off),
the trees compiled as served (without inlining, ``service.rerank.compiled.INLINE_TREES``) and the
trees compiled with inlining. For every dev question, ``hybrid+rerank`` and ``agentic`` run once with
each scorer, in an order that rotates from question to question, from cold query caches. Reported:
mean and median latency per configuration, the median of the reranking stage alone, and whether the
rankings agree with LightGBM's (same top 100 order; the largest score difference). With
``--compile-times`` each reranker of the folder is first compiled from scratch both ways, one after
the other in this process, and the seconds are reported.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import service.rerank.compiled as compiled_trees
from service.config import load_settings
from service.corpus.datasets import Dataset
from service.evaluation.dataset_index import ensure_dataset_index
from service.models import reranker_files
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime

PIPELINES = ("hybrid+rerank", "agentic")
SCORERS = ("lightgbm", "compiled", "inlined")


def compile_seconds(model_file: Path, folder: Path, *, inline: bool) -> float:
    """Seconds to compile ``model_file`` from scratch with or without inlining, as a copy in ``folder``
    (where the machine code stays)."""
    served = compiled_trees.INLINE_TREES
    copy = folder / model_file.name
    if not copy.is_file():
        shutil.copyfile(model_file, copy)
    compiled_trees.INLINE_TREES = inline
    try:
        if compiled_trees.compiled_path(copy).is_file():
            raise SystemExit(f"{copy} is compiled already: pass a fresh folder")
        start = time.perf_counter()
        compiled_trees.compile_model(copy)
        return time.perf_counter() - start
    finally:
        compiled_trees.INLINE_TREES = served


def tree_count(model_file: Path) -> int:
    """The number of trees in a LightGBM model file."""
    with model_file.open(encoding="utf-8") as handle:
        return sum(1 for line in handle if line.startswith("Tree="))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="dataset folder with a dev split")
    parser.add_argument("--models", required=True, help="model folder trained on the dataset's training split")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--compile-times", action="store_true",
                        help="first time compiling each reranker from scratch, with and without inlining")
    args = parser.parse_args()
    # models are cached per folder and process, so the inlined scorer reads a copy of the folder
    copy_root = tempfile.TemporaryDirectory()
    inlined_folder = Path(copy_root.name) / "inlined"
    shutil.copytree(args.models, inlined_folder, ignore=shutil.ignore_patterns(compiled_trees.COMPILED_DIR))
    compile_times: dict[str, dict[str, float]] = {}
    if args.compile_times:
        scratch = Path(copy_root.name) / "not-inlined"
        scratch.mkdir()
        for model_file in reranker_files(Path(args.models)):
            times = {"trees": tree_count(model_file),
                     "not_inlined_s": compile_seconds(model_file, scratch, inline=False),
                     "inlined_s": compile_seconds(model_file, inlined_folder, inline=True)}
            compile_times[model_file.name] = times
            print(f"{model_file.name}: {times['trees']} trees, compiled in {times['not_inlined_s']:.1f} s without "
                  f"inlining, {times['inlined_s']:.1f} s with", flush=True)
    base = load_settings().replace(index={"model_dir": args.models})
    dataset = Dataset(args.data)
    lightgbm = Runtime(base.replace(agents={"compiled_trees": False}))
    shared = {"embedder": lightgbm.embedder_for(dataset.language), "backend": lightgbm.backend}
    compiled_settings = base.replace(agents={"compiled_trees": True})
    runtimes = {"lightgbm": lightgbm, "compiled": Runtime(compiled_settings, **shared),
                "inlined": Runtime(compiled_settings.replace(index={"model_dir": str(inlined_folder)}), **shared)}
    index = ensure_dataset_index(lightgbm, dataset)
    queries = dataset.queries(args.split)[: args.limit]
    configs = [(p, s) for p in PIPELINES for s in SCORERS]
    served = compiled_trees.INLINE_TREES
    for pipeline, scorer in configs:  # warm-up, untimed: models load (and compile) on first use
        compiled_trees.INLINE_TREES = scorer == "inlined"  # a scorer is fixed when its model loads
        try:
            runtimes[scorer].pipeline(pipeline).run(SearchRequest(query=queries[0].text, index=index, k=100,
                                                                   lang=queries[0].lang))
        finally:
            compiled_trees.INLINE_TREES = served
    rows: dict[str, list[dict[str, Any]]] = {f"{p} / {s}": [] for p, s in configs}
    for i, query in enumerate(queries):
        order = configs[i % len(configs):] + configs[: i % len(configs)]
        for pipeline, scorer in order:
            runtime = runtimes[scorer]
            runtime.forget_query_caches()
            request = SearchRequest(query=query.text, index=index, k=100, lang=query.lang, qid=query.qid)
            start = time.perf_counter()
            response = runtime.pipeline(pipeline).run(request)
            ms = (time.perf_counter() - start) * 1000.0
            rows[f"{pipeline} / {scorer}"].append({
                "ms": ms, "rerank_ms": response.trace["timings_ms"].get("rerank", 0.0),
                "hits": [(h.doc_id, h.score) for h in response.hits]})
        if (i + 1) % 50 == 0:
            print(f"   {i + 1}/{len(queries)}", file=sys.stderr, flush=True)
    summary: dict[str, Any] = {}
    for name, runs in rows.items():
        lat = [r["ms"] for r in runs]
        summary[name] = {"mean_ms": statistics.fmean(lat), "p50_ms": statistics.median(lat),
                         "rerank_p50_ms": statistics.median(r["rerank_ms"] for r in runs)}
    agreement = {}
    for pipeline in PIPELINES:
        for scorer in SCORERS[1:]:
            a, b = rows[f"{pipeline} / lightgbm"], rows[f"{pipeline} / {scorer}"]
            same = sum(1 for x, y in zip(a, b, strict=True)
                       if [d for d, _ in x["hits"]] == [d for d, _ in y["hits"]])
            diff = max((abs(s - t) for x, y in zip(a, b, strict=True)
                        for (_, s), (_, t) in zip(x["hits"], y["hits"], strict=False)), default=0.0)
            agreement[f"{pipeline} / {scorer}"] = {"same_ranking": same, "questions": len(a), "max_score_diff": diff}
    print("| configuration | mean ms | p50 ms | rerank stage p50 ms |")
    print("|---|---:|---:|---:|")
    for name, m in summary.items():
        print(f"| {name} | {m['mean_ms']:.1f} | {m['p50_ms']:.1f} | {m['rerank_p50_ms']:.2f} |")
    for name, a in agreement.items():
        print(f"{name} against LightGBM: same top-100 ranking on {a['same_ranking']}/{a['questions']} questions, "
              f"largest score difference {a['max_score_diff']:.1e}")
    if args.out:
        report = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "command": " ".join(sys.argv),
                  "queries": len(queries), "compile_times": compile_times, "summary": summary,
                  "agreement": agreement}
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    copy_root.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
