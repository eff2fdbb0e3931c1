#!/usr/bin/env python3
"""Routing benchmark (issues 5 and 14): ``lexsearch train`` alone, then routed vs always-agentic on dev.

    python scripts/bench_routing.py --out runs/routing.json stard=data/stard-split gerlayqa=data/gerlayqa-split
    python scripts/plot_routing_tiers.py runs/routing.json docs/routing-tiers.png

For each dataset folder (a derived split folder with ``fit`` and ``dev``):

1. ``lexsearch train --data FOLDER --split fit --out MODELS/LABEL``: nothing else. Training carves
   its own cross-fitted calibration folds out of fit and stores the routing calibration
   (thresholds, gamma, cut) in the model folder; dev is never seen. ``--reuse-models`` skips this
   step for a model folder that already holds a calibration (development only: the benchmark of
   record trains).
2. ONE pass over the dev split with that model folder. For every query each configuration runs
   once, one after the other, in an order that rotates from query to query so load drift on the
   shared machine hits all of them alike; the query caches (embeddings, question terms, law
   predictions) are emptied before each, so every configuration pays for its own. Configurations:
   always-agentic (the tier-3 strategy: full agentic), routed, routed without intrinsic
   complexity, routed without retrieval consistency, and plain hybrid (tier 0). "Routed without
   dynamic cut" is the routed run's own ranking with a fixed top-10 set (the cut is a pure
   post-processing step, so the ranking and latency are those of the routed run). One untimed
   warm-up query per configuration comes first; then the heap is settled as the API's warm-up
   settles it (``service.heap.settled_heap``), so no full garbage collection of the loaded models
   lands in a timed search.

It prints Markdown tables (quality, latency, set precision/recall/F1, tier distribution) and the
acceptance check (routed keeps >= 95 % of the always-agentic Recall@10 at <= 50 % of its mean
latency), and writes everything, including per-query tiers and latencies and the load average
before and after each dataset, to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from service.cli import main as cli_main
from service.config import load_settings
from service.corpus.datasets import Dataset
from service.corpus.model import Query
from service.evaluation import metrics
from service.evaluation.dataset_index import ensure_dataset_index
from service.heap import settled_heap
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime, pipeline_names

CONFIGS = ("agentic", "routed", "routed-no-intrinsic", "routed-no-consistency", "hybrid")
LABELS = {
    "agentic": "always agentic (tier-3 strategy)",
    "routed": "routed (full)",
    "routed-no-intrinsic": "w/o intrinsic",
    "routed-no-consistency": "w/o consistency",
    "routed-no-cut": "w/o dynamic cut (fixed top-10)",
    "hybrid": "hybrid only (tier 0)",
}


def _pct(values: list[float], q: float) -> float:
    return metrics.percentile(values, q)


def _summary(rows: list[dict[str, Any]], relevant: list[set[str]]) -> dict[str, Any]:
    ranked = [r["ids"] for r in rows]
    lat = [r["ms"] for r in rows]
    out: dict[str, Any] = {
        "recall@10": metrics.mean(metrics.recall_at(ids, rel, 10) for ids, rel in zip(ranked, relevant, strict=True)),
        "recall@100": metrics.mean(metrics.recall_at(ids, rel, 100) for ids, rel in zip(ranked, relevant, strict=True)),
        "mrr@10": metrics.mean(metrics.mrr_at(ids, rel, 10) for ids, rel in zip(ranked, relevant, strict=True)),
        "latency_ms": {"mean": metrics.mean(lat), "p50": _pct(lat, 50), "p95": _pct(lat, 95)},
        "llm_calls_mean": metrics.mean(r["llm_calls"] for r in rows),
    }
    tiers = [r.get("tier") for r in rows]
    if all(t is not None for t in tiers):
        out["tier_shares"] = [tiers.count(t) / len(tiers) for t in range(4)]
    if all(r["returned"] is not None for r in rows):
        scores = [metrics.set_scores(r["ids"][: r["returned"]], rel) for r, rel in zip(rows, relevant, strict=True)]
        out["set"] = {"precision": metrics.mean(s[0] for s in scores), "recall": metrics.mean(s[1] for s in scores),
                      "f1": metrics.mean(s[2] for s in scores),
                      "mean_size": metrics.mean(r["returned"] for r in rows)}
    return out


def _requests(runtime: Runtime, index: str, text: str, qid: str, lang: str) -> dict[str, SearchRequest]:
    routed = runtime.pipeline("routed")
    tier3 = dict(routed.router.strategy(3).options)  # type: ignore[attr-defined]

    def req(**options: Any) -> SearchRequest:
        return SearchRequest(query=text, index=index, k=100, lang=lang, qid=qid, options=options)

    # Without the agents package (--allow-fallback) "agentic" is the routed pipeline forced to tier 3,
    # which falls back to hybrid fusion and says so in its trace.
    agentic = req(**tier3) if "agentic" in pipeline_names() else req(tier=3)
    return {"agentic": agentic, "routed": req(), "routed-no-intrinsic": req(no_intrinsic=True),
            "routed-no-consistency": req(no_consistency=True), "hybrid": req()}


def _pipeline_for(config: str) -> str:
    if config == "agentic" and "agentic" not in pipeline_names():
        return "routed"
    return config if config in ("agentic", "hybrid") else "routed"


def train(label: str, folder: str, models: Path, *, reuse: bool) -> dict[str, Any]:
    """``lexsearch train`` on the fit split (skipped with ``reuse`` when a calibrated folder exists);
    returns the model folder's manifest."""
    manifest = models / "manifest.json"
    if not (reuse and manifest.is_file() and "routing" in json.loads(manifest.read_text(encoding="utf-8"))):
        print(f"## {label}: lexsearch train --data {folder} --split fit --out {models}", file=sys.stderr, flush=True)
        code = cli_main(["train", "--data", folder, "--split", "fit", "--out", str(models)])
        if code:
            raise SystemExit(f"training {label} failed ({code})")
    return json.loads(manifest.read_text(encoding="utf-8"))


def _time_query(runtime: Runtime, index: str, query: Query, order: Sequence[str],
                rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Run ``query`` under each configuration in ``order`` from cold query caches, append each run to
    ``rows[config]`` and return the question's record (routing decision and latencies)."""
    requests = _requests(runtime, index, query.text, query.qid, query.lang)
    record: dict[str, Any] = {"qid": query.qid}
    for config in order:
        runtime.forget_query_caches()
        pipe = runtime.pipeline(_pipeline_for(config))
        start = time.perf_counter()
        response = pipe.run(requests[config])
        ms = (time.perf_counter() - start) * 1000.0
        trace = response.trace
        rows[config].append({"ids": [h.doc_id for h in response.hits], "ms": ms, "returned": response.returned,
                             "llm_calls": int(trace.get("llm_calls", 0) or 0),
                             "tier": trace.get("routing", {}).get("tier")})
        if config == "routed":
            routing = trace["routing"]
            record.update(tier=routing["tier"], score=routing["score"], qsi=routing["qsi"], rdi=routing["rdi"],
                          ran=routing["ran"], fallback=routing["fallback"], routed_ms=ms,
                          stages_ms=trace["timings_ms"], cut=trace["cut"]["returned"])
        elif config == "agentic":
            record["agentic_ms"] = ms
    return record


def bench_dataset(runtime: Runtime, label: str, folder: str, *, dev_limit: int, manifest: dict[str, Any],
                  configs: Sequence[str] = CONFIGS) -> dict[str, Any]:
    dataset = Dataset(folder)
    index = ensure_dataset_index(runtime, dataset)
    load_before = os.getloadavg()
    queries, qrels = dataset.queries("dev"), dataset.qrels("dev")
    if dev_limit:
        queries = queries[:dev_limit]
    print(f"## {label}: {len(queries)} dev queries x {len(configs)} configurations ...", file=sys.stderr, flush=True)
    if queries:  # warm-up, untimed: models, per-index resources and the embedder load on first use
        warm_up = _requests(runtime, index, queries[0].text, "warm-up", queries[0].lang)
        for config in configs:
            runtime.pipeline(_pipeline_for(config)).run(warm_up[config])
    rows: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
    per_query = []
    relevant = []
    with settled_heap():  # the API settles its heap after warm-up (service.heap); time searches as it runs them
        for i, query in enumerate(queries):
            relevant.append(qrels.get(query.qid, set()))
            order = [*configs[i % len(configs):], *configs[: i % len(configs)]]
            per_query.append(_time_query(runtime, index, query, order, rows))
            if (i + 1) % 25 == 0:
                print(f"   {i + 1}/{len(queries)}", file=sys.stderr, flush=True)
    no_cut = [{**r, "returned": min(10, len(r["ids"]))} for r in rows["routed"]]
    summaries = {c: _summary(rows[c], relevant) for c in configs}
    summaries["routed-no-cut"] = _summary(no_cut, relevant)
    tiers = [q["tier"] for q in per_query]
    tier_info = {"count": [tiers.count(t) for t in range(4)],
                 "share": [tiers.count(t) / len(tiers) for t in range(4)],
                 "latency_mean_ms": [statistics.fmean([q["routed_ms"] for q in per_query if q["tier"] == t])
                                     if t in tiers else None for t in range(4)],
                 "fallbacks": sum(1 for q in per_query if q["fallback"])}
    return {"folder": folder, "index": index, "queries": len(queries), "models": runtime.settings.index.model_dir,
            "calibration": manifest["routing"], "training_seconds": manifest.get("timings_s", {}),
            "load_average": {"before": load_before, "after": os.getloadavg()}, "summaries": summaries,
            "tiers": tier_info, "per_query": per_query}


def _markdown(label: str, result: dict[str, Any]) -> str:
    s = result["summaries"]
    agentic = s["agentic"]
    lines = [f"### {label} dev ({result['queries']} queries)", "",
             "| configuration | R@10 | MRR@10 | R@100 | mean ms | p50 ms | p95 ms | R@10 vs agentic "
             "| mean latency vs agentic | LLM calls/q |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for config in [c for c in ("agentic", "routed", "routed-no-intrinsic", "routed-no-consistency", "routed-no-cut",
                                "hybrid") if c in s]:
        m = s[config]
        lat = m["latency_ms"]
        lines.append(f"| {LABELS[config]} | {m['recall@10']:.3f} | {m['mrr@10']:.3f} | {m['recall@100']:.3f} | "
                     f"{lat['mean']:.0f} | {lat['p50']:.0f} | {lat['p95']:.0f} | "
                     f"{m['recall@10'] / max(agentic['recall@10'], 1e-9):.1%} | "
                     f"{lat['mean'] / max(agentic['latency_ms']['mean'], 1e-9):.1%} | {m['llm_calls_mean']:.2f} |")
    lines += ["", "Ablations (paper style; every row but the last is its own routed run):", "",
              "| routed | R@10 | MRR@10 | set P | set R | set F1 | mean ms | tiers 0/1/2/3 |",
              "|---|---|---|---|---|---|---|---|"]
    for config in [c for c in ("routed", "routed-no-intrinsic", "routed-no-consistency", "routed-no-cut") if c in s]:
        m = s[config]
        st, shares = m["set"], "/".join(f"{x:.0%}" for x in m.get("tier_shares", s["routed"]["tier_shares"]))
        name = "full" if config == "routed" else LABELS[config]
        lines.append(f"| {name} | {m['recall@10']:.3f} | {m['mrr@10']:.3f} | {st['precision']:.3f} | "
                     f"{st['recall']:.3f} | {st['f1']:.3f} | {m['latency_ms']['mean']:.0f} | {shares} |")
    lines += ["", "| returned set | precision | recall | F1 | mean size |", "|---|---|---|---|---|"]
    for config, name in (("routed", "score-cliff cut"), ("routed-no-cut", "fixed top-10")):
        st = s[config]["set"]
        lines.append(f"| {name} | {st['precision']:.3f} | {st['recall']:.3f} | {st['f1']:.3f} | "
                     f"{st['mean_size']:.2f} |")
    t = result["tiers"]
    lines += ["", "| tier | queries | share | mean routed latency ms |", "|---|---|---|---|"]
    for tier in range(4):
        ms = t["latency_mean_ms"][tier]
        lines.append(f"| {tier} | {t['count'][tier]} | {t['share'][tier]:.1%} | {'-' if ms is None else f'{ms:.0f}'} |")
    cal = result["calibration"]
    fit = cal["fit"]["routing"]
    lines += ["", f"Calibration (lexsearch train, {cal['calibrated_on']['folds']} cross-fitted folds of "
                  f"{cal['calibrated_on']['split']}, {cal['calibrated_on']['queries']} questions): thresholds "
                  f"{cal['thresholds']}, gamma {cal['gamma']}, cut sigma {cal['cut']['sigma']} min_k "
                  f"{cal['cut']['min_k']} max_k {cal['cut']['max_k']}, rule {fit['rule']} (kept share >= "
                  f"{fit['kept_share_lower_bound']:.1%}, latency share <= {fit['latency_share_upper_bound']:.1%}); "
                  f"strategy fallbacks on dev: {t['fallbacks']}.",
              f"Training: {_seconds(result['training_seconds'])}. Load average before/after the dev pass: "
              f"{_load(result['load_average']['before'])} / {_load(result['load_average']['after'])}.",
              "", f"Acceptance: {acceptance(result)}"]
    return "\n".join(lines)


def acceptance(result: dict[str, Any]) -> str:
    """Routed keeps >= 95 % of the always-agentic Recall@10 at <= 50 % of its mean latency?"""
    s = result["summaries"]
    kept = s["routed"]["recall@10"] / max(s["agentic"]["recall@10"], 1e-9)
    share = s["routed"]["latency_ms"]["mean"] / max(s["agentic"]["latency_ms"]["mean"], 1e-9)
    verdict = "met" if kept >= 0.95 and share <= 0.5 else "NOT met"
    return f"{verdict}: routed keeps {kept:.1%} of the always-agentic Recall@10 at {share:.1%} of its mean latency"


def _seconds(timings: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.0f} s" for name, value in timings.items())


def _load(load: Sequence[float]) -> str:
    return " ".join(f"{x:.1f}" for x in load)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+", metavar="LABEL=FOLDER")
    parser.add_argument("--models-root", default="models", help="model folders are written to ROOT/LABEL")
    parser.add_argument("--reuse-models", action="store_true",
                        help="do not train when ROOT/LABEL already holds a calibrated model (development only)")
    parser.add_argument("--dev-limit", type=int, default=0, help="dev queries (0 = all)")
    parser.add_argument("--no-ablations", action="store_true",
                        help="run always-agentic, routed and hybrid only (about half the time of the dev pass)")
    parser.add_argument("--out", help="write the full results as JSON here")
    parser.add_argument("--allow-fallback", action="store_true",
                        help="run even when the agentic pipelines are not registered (development only)")
    args = parser.parse_args()
    names = pipeline_names()
    if not {"agentic", "hybrid+rerank"} <= set(names) and not args.allow_fallback:
        print(f"the agentic pipelines are not registered (have: {names}); nothing to compare against",
              file=sys.stderr)
        return 2
    base = Runtime(load_settings())
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.gmtime()),
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "command": " ".join(sys.argv),
        "pipelines": names,
        "datasets": {},
    }
    for spec in args.datasets:
        label, _, folder = spec.partition("=")
        models = Path(args.models_root) / label
        manifest = train(label, folder, models, reuse=args.reuse_models)
        runtime = Runtime(base.settings.replace(index={"model_dir": str(models)}), backend=base.backend)
        configs = [c for c in CONFIGS if not (args.no_ablations and c.startswith("routed-"))]
        result = bench_dataset(runtime, label, folder, dev_limit=args.dev_limit, manifest=manifest, configs=configs)
        report["datasets"][label] = result
        print(_markdown(label, result) + "\n", flush=True)
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
