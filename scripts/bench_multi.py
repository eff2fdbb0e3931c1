#!/usr/bin/env python3
"""Benchmark of multi-issue search (issue 12): each step as an ablation on the dev splits and on the
joined-question proxy, with the proxy's ratio to the same questions asked singly.

For every dataset the model folder ``--models/<dataset>`` must exist (``lexsearch train`` on the
training split; ``scripts/bench_agents.py`` trains it when missing). Every configuration runs with
an empty query-embedding cache, so latencies include embedding the question.

On a proxy folder (``scripts/make_joined_proxy.py``) a configuration runs twice: on split
``joined`` and on split ``single`` (the same parts asked alone). For a joined question with parts
P1..Pn, the singles score is the share of its gold that the parts' own top ten find::

    singles R@10(J) = Σ_i |top10(Pi) ∩ gold(Pi)| / |gold(J)|

and the ratio is mean joined R@10 / mean singles R@10 over the joined questions. Two ceilings come
from the same single rankings, with the issues known exactly: *interleaved* is the parts' own rankings
taken in turn (first of each, then the seconds, ...) to ten places, the best a joined question can get
by interleaving its issues' answers; *best split* gives each part the number of the ten places that
finds the most gold, chosen in hindsight. The ratio comes with a 95 % interval from resampling the
joined questions (``ratio_interval`` in the JSON, with the share of resamples at or above the bar of
0.85).

Every configuration ranks ``k`` = ``--depth`` hits, by default the served depth (``retrieval.depth``,
100): the depth of ``lexsearch eval`` and of every search for at most that many hits, whose first ten
do not depend on ``k``. A deeper ``k`` deepens the first retrieval and changes the pools the reranker
sees, so its first ten are not those a user gets. *pool* is the share of gold anywhere in the ``k``
hits, *lost* = pool − R@10 the share ranked below ten.

Usage::

    python scripts/bench_multi.py --datasets stard,gerlayqa,coliee --data coliee=/path/to/coliee-en \
        --json runs/bench-multi.json
    python scripts/bench_multi.py --datasets stard --configs landed,issues --limit 100
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from service.config import load_settings
from service.corpus.datasets import Dataset
from service.corpus.joined import read_parts
from service.corpus.model import Hit
from service.evaluation import metrics
from service.evaluation.bootstrap import ratio_interval
from service.evaluation.dataset_index import ensure_dataset_index
from service.evaluation.harness import evaluate
from service.pipelines.build import Runtime
from service.pipelines.issue_pool import interleave_answers


@dataclass(frozen=True)
class Bench:
    key: str
    data: str
    report: str
    proxy: str = ""


RATIO_BAR = 0.85
"""Issue 12's bar for the proxy's ratio; the interval reports the share of resamples at or above it."""

BENCHES = {
    "stard": Bench("stard", "data/stard-split", "dev", "data/stard-joined"),
    "gerlayqa": Bench("gerlayqa", "data/gerlayqa-split", "dev", "data/gerlayqa-joined"),
    "coliee": Bench("coliee", "data/coliee-en", "dev"),
}
"""The default folders of each dataset and its proxy (``--data`` and ``--proxy`` override them)."""

CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "hybrid": ("hybrid", {}),
    "hybrid+rerank": ("hybrid+rerank", {"reranker": "learned"}),
    "landed": ("agentic", {"reranker": "learned", "issues": "0", "cocitation": "0", "sections": "0",
                           "issue_answers": "0"}),
    "sections": ("agentic", {"reranker": "learned", "issues": "0", "cocitation": "0", "sections": "1",
                             "issue_answers": "0"}),
    "issues": ("agentic", {"reranker": "learned", "quotas": "0", "balance": "0", "cocitation": "0", "sections": "1",
                           "issue_answers": "0"}),
    "quotas": ("agentic", {"reranker": "learned", "balance": "0", "cocitation": "0", "sections": "1",
                           "issue_answers": "0"}),
    "balance": ("agentic", {"reranker": "learned", "cocitation": "0", "sections": "1", "issue_answers": "0"}),
    "agentic+sections": ("agentic", {"reranker": "learned", "sections": "1", "issue_answers": "0"}),
    "co-citation": ("agentic", {"reranker": "learned", "issue_answers": "0"}),
    "agentic": ("agentic", {"reranker": "learned"}),
}
"""Label → (pipeline, options), each step adding to the one before: ``landed`` (no issue search, no
co-citation, no section pass), ``sections`` (the prefilter's section pass), ``issues`` (issues
searched, ranking what the pool has), ``quotas`` (each issue's finds join the pool), ``balance``
(each issue's best candidate gets a place in the first ten), ``agentic+sections`` (plus co-citation
expansion), ``co-citation`` (the same without the whole question's section pass), and ``agentic``, the
default as it ships: plus each issue answered as a question of its own and interleaved."""


def _gold_found(ranked: list[str], gold: set[str], k: int) -> int:
    return len(set(ranked[:k]) & gold)


def run_split(runtime: Runtime, dataset: Dataset, split: str, index: str, pipeline: str, options: dict[str, Any],
              depth: int, limit: int) -> dict[str, Any]:
    """Evaluate one configuration on one split; the run keeps whole-pool rankings."""
    queries = dataset.queries(split)
    if limit:
        queries = queries[:limit]
    qrels = dataset.qrels(split)
    runtime.forget_query_caches()
    started = time.perf_counter()
    result, run = evaluate(runtime.pipeline(pipeline), queries, qrels, index=index, k=depth, options=options,
                           max_query_chars=runtime.settings.retrieval.max_query_chars)
    ranked = {qid: [d for d, _ in hits] for qid, hits in run.items()}
    pool = metrics.mean([len(set(ranked[q.qid]) & qrels[q.qid]) / len(qrels[q.qid]) for q in queries])
    out = result.to_dict()
    out["pool_recall"] = round(pool, 4)
    out["lost_below_10"] = round(pool - result.recall_10, 4)
    out["wall_s"] = round(time.perf_counter() - started, 1)
    out["ranked"] = ranked
    return out


def _in_turn(rankings: list[list[str]], k: int) -> list[str]:
    """The rankings taken in turn (the firsts, then the seconds, ...), each document once, ``k`` of them:
    the agentic pipeline's own interleaving, with no whole-question ranking ahead of the issues'."""
    answers = [[Hit(doc_id, 0.0) for doc_id in ranking] for ranking in rankings]
    return [hit.doc_id for hit in interleave_answers([], answers, k=k, label="in_turn")]


def _best_split(rankings: list[list[str]], golds: list[set[str]], k: int) -> int:
    """The most gold that ``k`` places find when each ranking gets the number of them chosen in hindsight."""
    best = 0
    for split in itertools.product(range(k + 1), repeat=len(rankings)):
        if sum(split) == k:
            found = set().union(*(set(r[:n]) & g for r, n, g in zip(rankings, split, golds, strict=True)))
            best = max(best, len(found))
    return best


def proxy_scores(joined: dict[str, Any], single: dict[str, Any], parts: dict[str, tuple[str, ...]],
                 qrels_joined: dict[str, set[str]], qrels_single: dict[str, set[str]]) -> dict[str, Any]:
    """Joined R@10 against the same parts asked singly, and the two ceilings of the module docstring,
    overall and by arity; the ratio with a 95 % interval from resampling the joined questions
    (:mod:`service.evaluation.bootstrap`; a single question can be a part of two joined ones, so the
    interval is a little narrower than one over independent questions would be)."""
    rows = []
    for qid, ranked in joined["ranked"].items():
        gold = qrels_joined[qid]
        rankings = [single["ranked"][p] for p in parts[qid]]
        golds = [qrels_single[p] for p in parts[qid]]
        found_single = sum(_gold_found(r, g, 10) for r, g in zip(rankings, golds, strict=True))
        rows.append((len(parts[qid]), _gold_found(ranked, gold, 10) / len(gold), found_single / len(gold),
                     _gold_found(_in_turn(rankings, 10), gold, 10) / len(gold),
                     _best_split(rankings, golds, 10) / len(gold)))
    out: dict[str, Any] = {}
    for label, keep in (("all", lambda n: True), ("2 parts", lambda n: n == 2), ("3 parts", lambda n: n == 3)):
        part = [row[1:] for row in rows if keep(row[0])]
        if not part:
            continue
        r_joined, r_single, r_turn, r_best = (statistics.mean(column) for column in zip(*part, strict=True))
        out[label] = {"questions": len(part), "joined_r10": round(r_joined, 4), "single_r10": round(r_single, 4),
                      "ratio": round(r_joined / r_single, 4) if r_single else None,
                      "interleaved_r10": round(r_turn, 4),
                      "interleaved_ratio": round(r_turn / r_single, 4) if r_single else None,
                      "best_split_r10": round(r_best, 4),
                      "best_split_ratio": round(r_best / r_single, 4) if r_single else None}
        if r_single:
            joined_col, single_col = [row[0] for row in part], [row[1] for row in part]
            out[label]["ratio_interval"] = ratio_interval(joined_col, single_col).to_dict(bar=RATIO_BAR)
    return out


def bench_dataset(bench: Bench, model_dir: Path, configs: list[str], depth: int, limit: int,
                  proxy_limit: int, splits: str) -> dict[str, Any]:
    if not (model_dir / "manifest.json").is_file():
        raise SystemExit(f"no model folder {model_dir}; train it first (lexsearch train or scripts/bench_agents.py)")
    runtime = Runtime(load_settings().replace(index={"model_dir": str(model_dir)}))
    depth = depth or runtime.settings.retrieval.depth
    dataset = Dataset(bench.data)
    index = ensure_dataset_index(runtime, dataset)
    proxy = Dataset(bench.proxy) if bench.proxy and Path(bench.proxy).is_dir() else None
    out: dict[str, Any] = {"dataset": bench.key, "data": bench.data, "model": str(model_dir), "dev": {},
                           "proxy": {}}
    for label in configs:
        pipeline, options = CONFIGS[label]
        line = f"[{bench.key}] {label:<14}"
        if splits in ("both", "dev"):
            dev = run_split(runtime, dataset, bench.report, index, pipeline, options, depth, limit)
            out["dev"][label] = {k: v for k, v in dev.items() if k != "ranked"}
            line += (f" dev R@10 {dev['recall@10']:.4f} MRR@10 {dev['mrr@10']:.4f} "
                     f"pool {dev['pool_recall']:.4f} p50 {dev['latency_ms']['p50']:.0f} ms "
                     f"(CPU {dev.get('cpu_ms', {}).get('p50', float('nan')):.0f} ms)")
        if proxy is not None and splits in ("both", "proxy"):
            joined = run_split(runtime, proxy, "joined", index, pipeline, options, depth, proxy_limit)
            used = {p for q in joined["ranked"] for p in read_parts(proxy.path / "parts.tsv")[q]}
            single = run_split(runtime, _only(proxy, "single", used), "single", index, pipeline, options, depth, 0)
            scores = proxy_scores(joined, single, read_parts(proxy.path / "parts.tsv"), proxy.qrels("joined"),
                                  proxy.qrels("single"))
            out["proxy"][label] = {"joined": {k: v for k, v in joined.items() if k != "ranked"},
                                   "single": {k: v for k, v in single.items() if k != "ranked"}, "ratio": scores}
            interval = scores["all"].get("ratio_interval", {})
            line += (f" | proxy R@10 {scores['all']['joined_r10']:.4f} vs singly {scores['all']['single_r10']:.4f}"
                     f" = {scores['all']['ratio']:.3f} (95 % {interval.get('low', float('nan')):.3f}-"
                     f"{interval.get('high', float('nan')):.3f};"
                     f" ceilings: interleaved {scores['all']['interleaved_ratio']:.3f},"
                     f" best split {scores['all']['best_split_ratio']:.3f}) pool {joined['pool_recall']:.4f} "
                     f"p50 {joined['latency_ms']['p50']:.0f} ms "
                     f"(CPU {joined.get('cpu_ms', {}).get('p50', float('nan')):.0f} ms)")
        print(line, flush=True)
    return out


class _Subset(Dataset):
    """A dataset folder whose split lists only some query ids (the parts a limited proxy run uses)."""

    def __init__(self, base: Dataset, split: str, keep: set[str]) -> None:
        super().__init__(base.path)
        self._split, self._keep = split, keep

    def queries(self, split: str):  # type: ignore[no-untyped-def]
        rows = super().queries(split)
        return [q for q in rows if q.qid in self._keep] if split == self._split else rows


def _only(dataset: Dataset, split: str, keep: set[str]) -> Dataset:
    return _Subset(dataset, split, keep)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="stard,gerlayqa,coliee")
    parser.add_argument("--configs", default=",".join(CONFIGS), help=f"comma list of {', '.join(CONFIGS)}")
    parser.add_argument("--models", default="models", help="folder with one model folder per dataset")
    parser.add_argument("--model", action="append", default=[], metavar="DATASET=DIR",
                        help="the model folder of one dataset (instead of MODELS/DATASET)")
    parser.add_argument("--data", action="append", default=[], metavar="DATASET=DIR",
                        help="the dataset folder of one dataset (default: data/<name>, see BENCHES)")
    parser.add_argument("--proxy", action="append", default=[], metavar="DATASET=DIR",
                        help="the joined-question proxy folder of one dataset (scripts/make_joined_proxy.py)")
    parser.add_argument("--depth", type=int, default=0,
                        help="ranking depth scored (default 0: the served depth, retrieval.depth)")
    parser.add_argument("--limit", type=int, default=0, help="first N dev questions (0 = all)")
    parser.add_argument("--proxy-limit", type=int, default=0, help="first N joined questions (0 = all)")
    parser.add_argument("--splits", choices=("both", "dev", "proxy"), default="both",
                        help="the dev split, the proxy, or both")
    parser.add_argument("--json", dest="json_out")
    args = parser.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown configurations {unknown}; use {', '.join(CONFIGS)}")
    keys = [k.strip() for k in args.datasets.split(",") if k.strip()]
    if any(k not in BENCHES for k in keys):
        parser.error(f"unknown dataset in {keys}; use {', '.join(BENCHES)}")
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.gmtime())
    print(f"bench_multi: {started}; {platform.node()}, load {os.getloadavg()[0]:.1f}", flush=True)
    folders = {k: Path(args.models) / k for k in keys}
    benches = dict(BENCHES)
    for flag, specs in (("--model", args.model), ("--data", args.data), ("--proxy", args.proxy)):
        for spec in specs:
            key, sep, folder = spec.partition("=")
            if not sep or key not in BENCHES:
                parser.error(f"{flag} {spec!r} must look like DATASET=DIR with DATASET one of {', '.join(BENCHES)}")
            if not Path(folder).is_dir():
                parser.error(f"{flag} {spec!r}: no folder {folder}")
            if flag == "--model":
                folders[key] = Path(folder)
            else:
                benches[key] = replace(benches[key], **{flag[2:]: folder})
    missing = [b.data for k, b in benches.items() if k in keys and not Path(b.data).is_dir()]
    if missing:
        parser.error(f"no dataset folder {', '.join(missing)}; pass --data DATASET=DIR")
    runs = [bench_dataset(benches[k], folders[k], configs, args.depth, args.limit, args.proxy_limit, args.splits)
            for k in keys]
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"date": started, "runs": runs}, ensure_ascii=False, indent=1) + "\n",
                                       encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
