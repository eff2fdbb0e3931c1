#!/usr/bin/env python3
"""Foundation benchmarks: retrieval quality of bm25/dense/hybrid, and indexing and query speed.

    python scripts/bench_foundation.py quality --out runs/foundation-quality.json \
        stard=data/stard-split:dev coliee=/work/shared/data/coliee-en:dev gerlayqa=/work/shared/data/gerlayqa:dev
    python scripts/bench_foundation.py speed --data data/stard-split --split dev --runs 3

`quality` scores bm25, dense, hybrid and hybrid without the kNN side's feedback (docs/FUSION.md) on each
split and checks the fusion rule (hybrid at least the better of bm25 and dense on R@10 and MRR@10, within
0.005). `speed` builds the full index twice from a cold embedding cache (fresh temporary cache folder), re-indexes
with the warm cache `--runs` times, and times `--runs` passes of hybrid search over the split's queries;
it prints the median of each. Everything runs in this process with the embedded engine and the default
settings (the USE v3 embedder).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from service.config import load_settings
from service.corpus.datasets import Dataset, load_corpus
from service.embeddings.cache import CachedEmbedder
from service.evaluation.dataset_index import ensure_dataset_index
from service.evaluation.harness import EvalResult, evaluate, format_table
from service.indexing import rebuild_embedded
from service.pipelines.build import Runtime, build_embedder

RULE_TOLERANCE = 0.005
"""Issue 12's fusion rule: the default hybrid scores at least the better of bm25 and dense, within this."""


def fusion_rule(results: dict[str, EvalResult], hybrid: str) -> dict[str, Any]:
    """Whether ``hybrid`` is within :data:`RULE_TOLERANCE` of the better of bm25 and dense on Recall@10
    and on MRR@10, with the margins."""
    out: dict[str, Any] = {"pipeline": hybrid}
    for metric in ("recall_10", "mrr_10"):
        best = max(("bm25", "dense"), key=lambda name: getattr(results[name], metric))
        margin = getattr(results[hybrid], metric) - getattr(results[best], metric)
        out[metric] = {"best_part": best, "margin": round(margin, 4), "holds": margin >= -RULE_TOLERANCE}
    out["holds"] = out["recall_10"]["holds"] and out["mrr_10"]["holds"]
    return out


def quality(args: argparse.Namespace) -> None:
    settings = load_settings()
    runtime = Runtime(settings)
    # the hybrid pipeline without vector feedback, side by side (docs/FUSION.md)
    plain = Runtime(settings.replace(retrieval={"knn_feedback_docs": 0}), backend=runtime.backend)
    report = {}
    for spec in args.datasets:
        label, _, rest = spec.partition("=")
        path, _, split = rest.rpartition(":")
        dataset = Dataset(path)
        index = ensure_dataset_index(runtime, dataset)
        queries, qrels = dataset.queries(split), dataset.qrels(split)
        results: dict[str, EvalResult] = {}
        for name, pipeline in (("bm25", runtime.pipeline("bm25")), ("dense", runtime.pipeline("dense")),
                               ("hybrid", runtime.pipeline("hybrid")),
                               ("hybrid, no feedback", plain.pipeline("hybrid"))):
            runtime.forget_query_caches()
            plain.forget_query_caches()
            results[name], _ = evaluate(pipeline, queries, qrels, index=index, k=100,
                                        max_query_chars=settings.retrieval.max_query_chars, label=name)
        print(f"\n{label} ({path}, split {split})")
        print(format_table(list(results.values())))
        rules = [fusion_rule(results, name) for name in ("hybrid", "hybrid, no feedback")]
        for rule in rules:
            print(f"fusion rule, {rule['pipeline']}: " + ("holds" if rule["holds"] else "FAILS") + "; " + ", ".join(
                f"{m} {rule[m]['margin']:+.4f} against {rule[m]['best_part']}" for m in ("recall_10", "mrr_10")))
        report[label] = {"results": [r.to_dict() for r in results.values()], "fusion_rule": rules}
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


def _index_once(settings, docs, language: str, cache_dir: Path, root: Path) -> tuple[float, int, float]:
    """Wall seconds, texts embedded, and CPU seconds of this process (all its threads) for one build."""
    embedder = CachedEmbedder(build_embedder(settings, language).inner, cache_dir,
                              batch_size=settings.embedder.batch_size)
    start, start_cpu = time.perf_counter(), time.process_time()
    rebuild_embedded(root, "bench", embedder, docs, language=language,
                     hnsw_min_docs=settings.backend.hnsw_min_docs)
    return time.perf_counter() - start, embedder.computed, time.process_time() - start_cpu


def speed(args: argparse.Namespace) -> None:
    settings = load_settings()
    dataset = Dataset(args.data)
    start = time.perf_counter()
    docs = load_corpus(dataset)
    load_s = time.perf_counter() - start
    print(f"corpus: {len(docs)} documents, loaded in {load_s:.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        cold = []
        for i in range(args.cold_runs):
            seconds, computed, cpu = _index_once(settings, docs, dataset.language, tmp_path / f"cold-cache-{i}",
                                                 tmp_path / "indices")
            cold.append(seconds)
            print(f"cold index run {i + 1}: {seconds:.1f} s, {cpu:.0f} CPU s ({computed} texts embedded, "
                  f"{computed / seconds:.1f} docs/s; load average {os.getloadavg()[0]:.1f})", flush=True)
        warm = []
        for i in range(args.runs):
            seconds, computed, cpu = _index_once(settings, docs, dataset.language, tmp_path / "cold-cache-0",
                                                 tmp_path / "indices")
            warm.append(seconds)
            print(f"warm re-index run {i + 1}: {seconds:.1f} s, {cpu:.0f} CPU s ({computed} texts embedded)",
                  flush=True)
        runtime = Runtime(settings.replace(index={"root": str(tmp_path / "indices"), "name": "bench"}))
        queries, qrels = dataset.queries(args.split), dataset.qrels(args.split)
        p50s, p95s = [], []
        runtime.pipeline("hybrid").run  # noqa: B018 - build the pipeline before timing
        runtime.retrieval("bench").embedder.embed_queries(["warm-up"])
        for i in range(args.runs):
            runtime.forget_query_caches()
            start_cpu = time.process_time()
            result, _ = evaluate(runtime.pipeline("hybrid"), queries, qrels, index="bench", k=100,
                                 max_query_chars=settings.retrieval.max_query_chars)
            cpu_ms = (time.process_time() - start_cpu) * 1000 / len(queries)
            p50s.append(result.latency_p50)
            p95s.append(result.latency_p95)
            print(f"hybrid pass {i + 1}: p50 {result.latency_p50:.1f} ms, p95 {result.latency_p95:.1f} ms, "
                  f"CPU {cpu_ms:.1f} ms per query (mean), R@10 {result.recall_10:.4f}; "
                  f"load average {os.getloadavg()[0]:.1f}", flush=True)
    print("\nsummary (medians):")
    print(f"  full index incl. embeddings (cold cache): {statistics.median(cold):.1f} s over {len(cold)} run(s)")
    print(f"  re-index with warm cache: {statistics.median(warm):.1f} s over {len(warm)} runs")
    print(f"  hybrid query end to end: p50 {statistics.median(p50s):.1f} ms, p95 {statistics.median(p95s):.1f} ms "
          f"over {len(p50s)} passes of {len(queries)} queries")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    q = sub.add_parser("quality")
    q.add_argument("datasets", nargs="+", help="label=DATASET_DIR:SPLIT")
    q.add_argument("--out")
    q.set_defaults(run=quality)
    s = sub.add_parser("speed")
    s.add_argument("--data", required=True)
    s.add_argument("--split", required=True)
    s.add_argument("--runs", type=int, default=3)
    s.add_argument("--cold-runs", type=int, default=2)
    s.set_defaults(run=speed)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
