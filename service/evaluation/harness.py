"""Run a pipeline over a query split and score it against the qrels.

The JSON form of a result is a contract (``lexsearch eval --json``): one object per pipeline with
``pipeline, queries, recall@10, recall@100, mrr@10, ndcg@10, latency_ms{p50,p95,mean}``, plus
optional extra keys: ``set`` (the set a pipeline returned itself, e.g. routed's cut), ``sets`` (set
precision, recall and F1 macro-averaged over questions, and the mean size, for every citation-set
choice of :mod:`service.retrieval.sets`), agent statistics.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from service.corpus.model import Filters, Query
from service.evaluation import metrics
from service.pipelines.base import Pipeline, SearchRequest, SearchResponse
from service.retrieval.sets import SetChoice


@dataclass
class EvalResult:
    """Scores of one pipeline on one split."""

    pipeline: str
    queries: int
    recall_10: float
    recall_100: float
    mrr_10: float
    ndcg_10: float
    latency_p50: float
    latency_p95: float
    latency_mean: float
    extra: dict[str, Any] = field(default_factory=dict)
    per_query: list[dict[str, Any]] = field(default_factory=list)
    """One row per query (qid, latency_ms, cpu_ms, recall@10, recall@100, mrr@10, sets), for pooling
    results of several runs (cross-validation folds); not part of the JSON contract. ``cpu_ms`` is the
    process's CPU time during the search (all its threads): on a machine shared with other jobs it
    shows what the search costs, where the wall-clock latency also counts the wait for a core."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "pipeline": self.pipeline,
            "queries": self.queries,
            "recall@10": round(self.recall_10, 4),
            "recall@100": round(self.recall_100, 4),
            "mrr@10": round(self.mrr_10, 4),
            "ndcg@10": round(self.ndcg_10, 4),
            "latency_ms": {"p50": round(self.latency_p50, 2), "p95": round(self.latency_p95, 2),
                           "mean": round(self.latency_mean, 2)},
            **self.extra,
        }


Run = dict[str, list[tuple[str, float]]]


def evaluate(pipeline: Pipeline, queries: Sequence[Query], qrels: dict[str, set[str]], *, index: str,
             k: int = 100, filters: Filters | None = None, options: dict[str, Any] | None = None,
             max_query_chars: int | None = None, progress: bool = False, label: str | None = None,
             on_response: Callable[[Query, SearchResponse], None] | None = None,
             set_choices: Sequence[SetChoice] = ()) -> tuple[EvalResult, Run]:
    """Search every query, time each search end to end, and compute the metrics.

    ``set_choices`` turn each ranking into an answer set; their set scores go to ``extra["sets"]``.

    Queries longer than ``max_query_chars`` are cut to that length (and counted in
    ``extra["truncated_queries"]``) rather than rejected, so every query is scored.

    Returns:
        The result and the run (``{qid: [(docid, score), ...]}``) for a TREC run file.
    """
    run: Run = {}
    latencies: list[float] = []
    recalls10, recalls100, mrrs, ndcgs = [], [], [], []
    set_p, set_r, set_f = [], [], []
    by_choice: dict[str, list[tuple[float, float, float, int]]] = {c.name: [] for c in set_choices}
    rows: list[dict[str, Any]] = []
    truncated = 0
    name = label or pipeline.name
    for query in tqdm(queries, desc=f"eval {name}", unit="q", disable=not progress, leave=False):
        text = query.text
        if max_query_chars and len(text) > max_query_chars:
            text, truncated = text[:max_query_chars], truncated + 1
        request = SearchRequest(query=text, index=index, k=max(k, 10), filters=filters, lang=query.lang,
                                qid=query.qid, options=dict(options or {}))
        start, cpu_start = time.perf_counter(), time.process_time()
        response = pipeline.run(request)
        latencies.append((time.perf_counter() - start) * 1000.0)
        cpu_ms = (time.process_time() - cpu_start) * 1000.0
        ranked = [h.doc_id for h in response.hits]
        run[query.qid] = [(h.doc_id, h.score) for h in response.hits]
        relevant = qrels.get(query.qid, set())
        recalls10.append(metrics.recall_at(ranked, relevant, 10))
        recalls100.append(metrics.recall_at(ranked, relevant, 100))
        mrrs.append(metrics.mrr_at(ranked, relevant, 10))
        ndcgs.append(metrics.ndcg_at(ranked, relevant, 10))
        if response.returned is not None:
            p, r, f = metrics.set_scores(ranked[: response.returned], relevant)
            set_p.append(p)
            set_r.append(r)
            set_f.append(f)
        for choice in set_choices:
            size = choice.size(query.text, response.hits)
            by_choice[choice.name].append((*metrics.set_scores(ranked[:size], relevant), size))
        rows.append({"qid": query.qid, "latency_ms": latencies[-1], "cpu_ms": cpu_ms, "recall@10": recalls10[-1],
                     "recall@100": recalls100[-1], "mrr@10": mrrs[-1],
                     "sets": {name: values[-1] for name, values in by_choice.items()}})
        if on_response is not None:
            on_response(query, response)
    extra: dict[str, Any] = {}
    if set_f:
        extra["set"] = {"precision": round(metrics.mean(set_p), 4), "recall": round(metrics.mean(set_r), 4),
                        "f1": round(metrics.mean(set_f), 4)}
    if by_choice:
        extra["sets"] = {name: {"precision": round(metrics.mean(v[0] for v in rows), 4),
                                "recall": round(metrics.mean(v[1] for v in rows), 4),
                                "f1": round(metrics.mean(v[2] for v in rows), 4),
                                "size": round(metrics.mean(v[3] for v in rows), 2)}
                         for name, rows in by_choice.items()}
    if truncated:
        extra["truncated_queries"] = truncated
    result = EvalResult(
        pipeline=name,
        queries=len(queries),
        recall_10=metrics.mean(recalls10),
        recall_100=metrics.mean(recalls100),
        mrr_10=metrics.mean(mrrs),
        ndcg_10=metrics.mean(ndcgs),
        latency_p50=metrics.percentile(latencies, 50),
        latency_p95=metrics.percentile(latencies, 95),
        latency_mean=metrics.mean(latencies),
        extra=extra,
        per_query=rows,
    )
    return result, run


def format_table(results: Sequence[EvalResult]) -> str:
    """A fixed-width comparison table of several results."""
    header = f"{'pipeline':<28} {'queries':>7} {'R@10':>7} {'R@100':>7} {'MRR@10':>7} {'nDCG@10':>8} " \
             f"{'p50 ms':>8} {'p95 ms':>8}"
    lines = [header, "-" * len(header)]
    for r in results:
        line = (f"{r.pipeline:<28} {r.queries:>7} {r.recall_10:>7.4f} {r.recall_100:>7.4f} {r.mrr_10:>7.4f} "
                f"{r.ndcg_10:>8.4f} {r.latency_p50:>8.1f} {r.latency_p95:>8.1f}")
        if "set" in r.extra:
            s = r.extra["set"]
            line += f"   set P/R/F1 {s['precision']:.3f}/{s['recall']:.3f}/{s['f1']:.3f}"
        lines.append(line)
    choices = list(dict.fromkeys(name for r in results for name in r.extra.get("sets", {})))
    if choices:
        header = f"{'set F1 (mean size)':<28} " + " ".join(f"{name:>13}" for name in choices)
        lines += ["", header, "-" * len(header)]
        for r in results:
            sets = r.extra.get("sets", {})
            cells = [f"{sets[n]['f1']:.3f} ({sets[n]['size']:>4.1f})" if n in sets else f"{'-':>13}" for n in choices]
            lines.append(f"{r.pipeline:<28} " + " ".join(f"{c:>13}" for c in cells))
    return "\n".join(lines)
