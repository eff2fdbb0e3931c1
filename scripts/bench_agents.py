#!/usr/bin/env python3
"""Benchmark of the agentic pipelines (issue 4): hybrid vs agentic without and with learned reranking,
each agent switched off in turn, planner rounds, candidates per query and latency.

For each dataset the learned parts are trained on its training split only (``lexsearch train``;
skipped when ``--models DIR/<dataset>`` already holds a model and ``--retrain`` is not given), then
every configuration is evaluated on the reporting split with the embedded engine. Each
configuration starts with an empty query-embedding cache, so latencies include embedding.

Usage::

    python scripts/bench_agents.py                      # all three datasets
    python scripts/bench_agents.py --datasets stard --ablation-limit 0 --json /tmp/bench.json

Prints one table per dataset (R@10, R@100, MRR@10, nDCG@10, p50/p95 latency, mean rounds, pool and
agent candidates per query) and per-agent statistics (how often each ran and what it added).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from service.config import load_settings
from service.corpus.datasets import Dataset
from service.corpus.model import Query
from service.evaluation.dataset_index import ensure_dataset_index
from service.evaluation.harness import evaluate, format_table
from service.pipelines.base import SearchResponse
from service.pipelines.build import Runtime
from service.training import train_models

AGENTS = ("terminology", "conditions", "decompose", "supportive", "repair")


@dataclass(frozen=True)
class Bench:
    key: str
    data: str
    train: str
    report: str


BENCHES = {
    "stard": Bench("stard", "data/stard-split", "fit", "dev"),
    "gerlayqa": Bench("gerlayqa", "data/gerlayqa-split", "fit", "dev"),
    "coliee": Bench("coliee", "../shared/data/coliee-en", "train", "dev"),
}


class TraceStats:
    """Collects planner rounds, pool sizes and per-agent activity from agentic traces."""

    def __init__(self) -> None:
        self.rounds: list[int] = []
        self.pool: list[int] = []
        self.agent_new: list[int] = []
        self.ran: Counter[str] = Counter()
        self.added: Counter[str] = Counter()
        self.queries = 0

    def __call__(self, query: Query, response: SearchResponse) -> None:
        trace = response.trace
        self.queries += 1
        if "rounds" not in trace:
            return
        self.rounds.append(int(trace["rounds"]))
        self.pool.append(int(trace["candidates"]))
        self.agent_new.append(int(trace.get("agent_candidates", 0)))
        for rnd in trace.get("agents", []):
            for step in rnd["steps"]:
                self.ran[step["agent"]] += 1
                self.added[step["agent"]] += int(step["new"])

    def summary(self) -> dict[str, Any]:
        if not self.rounds:
            return {}
        n = len(self.rounds)
        return {"rounds_mean": round(statistics.mean(self.rounds), 3),
                "pool_mean": round(statistics.mean(self.pool), 1),
                "agent_candidates_mean": round(statistics.mean(self.agent_new), 2),
                "agent_runs": {a: round(self.ran[a] / n, 3) for a in sorted(self.ran)},
                "agent_new_per_run": {a: round(self.added[a] / self.ran[a], 2) for a in sorted(self.ran)}}


def configurations(ablation: bool) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, pipeline, options) of every configuration."""
    configs: list[tuple[str, str, dict[str, Any]]] = [
        ("hybrid", "hybrid", {}),
        ("hybrid+rerank", "hybrid+rerank", {"reranker": "learned"}),
        ("agentic (no reranking)", "agentic", {"reranker": "none"}),
        ("agentic (learned)", "agentic", {"reranker": "learned"}),
    ]
    if ablation:
        for agent in AGENTS:
            rest = ",".join(a for a in AGENTS if a != agent)
            configs.append((f"agentic -{agent}", "agentic", {"reranker": "learned", "agents": rest}))
        configs.append(("agentic -prefilter", "agentic", {"reranker": "learned", "prefilter": "0"}))
    return configs


def run_bench(bench: Bench, models_root: Path, *, retrain: bool, ablation_limit: int, limit: int) -> dict[str, Any]:
    model_dir = models_root / bench.key
    base = load_settings()
    dataset = Dataset(bench.data)
    out: dict[str, Any] = {"dataset": bench.key, "data": bench.data, "train_split": bench.train,
                           "report_split": bench.report, "model": str(model_dir)}
    if retrain or not (model_dir / "manifest.json").is_file():
        print(f"[{bench.key}] training on {bench.train} -> {model_dir}", flush=True)
        report = train_models(Runtime(base), dataset, bench.train, model_dir,
                              progress=lambda m: print(f"  {m}", flush=True))
        out["training"] = report.to_dict()
    else:
        out["training"] = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))
    runtime = Runtime(base.replace(index={"model_dir": str(model_dir)}))
    index = ensure_dataset_index(runtime, dataset)
    queries = dataset.queries(bench.report)
    if limit:
        queries = queries[:limit]
    qrels = dataset.qrels(bench.report)
    results, rows = [], []
    configs = configurations(ablation=True)
    if 0 < ablation_limit < len(queries):  # the reference of the ablations, on their subset
        configs.insert(4, (f"agentic (learned) first {ablation_limit}", "agentic", {"reranker": "learned"}))
    for label, pipeline, options in configs:
        subset = queries
        ablated = label.startswith("agentic -") or label.endswith(f"first {ablation_limit}")
        if ablated and ablation_limit == 0:
            continue
        if ablated and ablation_limit > 0:
            subset = queries[:ablation_limit]
        runtime.forget_query_caches()
        stats = TraceStats()
        started = time.perf_counter()
        result, _ = evaluate(runtime.pipeline(pipeline), subset, qrels, index=index, k=100, options=options,
                             max_query_chars=runtime.settings.retrieval.max_query_chars, label=label,
                             on_response=stats)
        result.extra.update(stats.summary())
        result.extra["wall_s"] = round(time.perf_counter() - started, 1)
        results.append(result)
        rows.append(result.to_dict())
        print(f"[{bench.key}] {label}: R@10 {result.recall_10:.4f} MRR@10 {result.mrr_10:.4f} "
              f"p50 {result.latency_p50:.0f} ms ({len(subset)} queries)", flush=True)
    print(f"\n== {bench.key}: train {bench.train}, report {bench.report} ==")
    print(format_table(results))
    for row in rows:
        if "rounds_mean" in row:
            print(f"  {row['pipeline']:<28} rounds {row['rounds_mean']:.2f}  pool {row['pool_mean']:.1f}  "
                  f"agent candidates {row['agent_candidates_mean']:.2f}  runs {row['agent_runs']}  "
                  f"new/run {row['agent_new_per_run']}")
    out["results"] = rows
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="stard,gerlayqa,coliee", help="comma list of stard, gerlayqa, coliee")
    parser.add_argument("--models", default="models", help="folder holding one model folder per dataset")
    parser.add_argument("--retrain", action="store_true", help="train even when a model folder exists")
    parser.add_argument("--limit", type=int, default=0, help="evaluate only the first N queries (0 = all)")
    parser.add_argument("--ablation-limit", type=int, default=-1,
                        help="queries for the agent-off ablations (-1 = all, 0 = skip them)")
    parser.add_argument("--json", dest="json_out", help="write every number as JSON here")
    args = parser.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    print(f"bench_agents: {started}; {platform.node()} {platform.machine()}, python {platform.python_version()}",
          flush=True)
    runs = []
    for key in [k.strip() for k in args.datasets.split(",") if k.strip()]:
        if key not in BENCHES:
            parser.error(f"unknown dataset {key!r}; use {', '.join(BENCHES)}")
        runs.append(run_bench(BENCHES[key], Path(args.models), retrain=args.retrain,
                              ablation_limit=args.ablation_limit, limit=args.limit))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"date": started, "runs": runs}, ensure_ascii=False, indent=1) + "\n",
                                       encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
