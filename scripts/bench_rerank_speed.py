#!/usr/bin/env python3
"""Compiled reranker trees vs LightGBM's own predictor, side by side in one run.

    python scripts/bench_rerank_speed.py --data data/stard-split --models models/stard --limit 200

Two runtimes share one index and embedder and differ only in ``agents.compiled_trees``. For every
dev question, ``hybrid+rerank`` and ``agentic`` run once with each scorer, in an order that rotates
from question to question, from cold query caches. Reported: mean and median latency per
configuration, the median of the reranking stage alone, and whether the rankings agree (same top
100 order; the largest score difference).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from service.config import load_settings
from service.corpus.datasets import Dataset
from service.evaluation.dataset_index import ensure_dataset_index
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime

PIPELINES = ("hybrid+rerank", "agentic")
SCORERS = ("lightgbm", "compiled")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="dataset folder with a dev split")
    parser.add_argument("--models", required=True, help="model folder trained on the dataset's training split")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()
    base = load_settings().replace(index={"model_dir": args.models})
    dataset = Dataset(args.data)
    lightgbm = Runtime(base.replace(agents={"compiled_trees": False}))
    compiled = Runtime(base.replace(agents={"compiled_trees": True}), embedder=lightgbm.embedder_for(dataset.language),
                       backend=lightgbm.backend)
    runtimes = {"lightgbm": lightgbm, "compiled": compiled}
    index = ensure_dataset_index(lightgbm, dataset)
    queries = dataset.queries(args.split)[: args.limit]
    configs = [(p, s) for p in PIPELINES for s in SCORERS]
    for pipeline, scorer in configs:  # warm-up, untimed: models load (and compile) on first use
        runtimes[scorer].pipeline(pipeline).run(SearchRequest(query=queries[0].text, index=index, k=100,
                                                               lang=queries[0].lang))
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
        a, b = rows[f"{pipeline} / lightgbm"], rows[f"{pipeline} / compiled"]
        same = sum(1 for x, y in zip(a, b, strict=True) if [d for d, _ in x["hits"]] == [d for d, _ in y["hits"]])
        diff = max((abs(s - t) for x, y in zip(a, b, strict=True)
                    for (_, s), (_, t) in zip(x["hits"], y["hits"], strict=False)), default=0.0)
        agreement[pipeline] = {"same_ranking": same, "questions": len(a), "max_score_diff": diff}
    print("| configuration | mean ms | p50 ms | rerank stage p50 ms |")
    print("|---|---:|---:|---:|")
    for name, m in summary.items():
        print(f"| {name} | {m['mean_ms']:.1f} | {m['p50_ms']:.1f} | {m['rerank_p50_ms']:.2f} |")
    for pipeline, a in agreement.items():
        print(f"{pipeline}: same top-100 ranking on {a['same_ranking']}/{a['questions']} questions, "
              f"largest score difference {a['max_score_diff']:.1e}")
    if args.out:
        report = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "command": " ".join(sys.argv),
                  "queries": len(queries), "summary": summary, "agreement": agreement}
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
