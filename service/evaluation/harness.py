"""Run a pipeline over a query split and score it against the qrels.

The JSON form of a result is a contract (``lexsearch eval --json``): one object per pipeline with
``pipeline, queries, recall@10, recall@100, mrr@10, ndcg@10, latency_ms{p50,p95,mean}``, plus
optional extra keys: ``set`` (the set a pipeline returned itself, e.g. routed's cut), ``sets`` (set
precision, recall and F1 macro-averaged over questions, and the mean size, for every citation-set
choice of :mod:`service.retrieval.sets`), ``cpu_ms`` (the process's CPU time per search), agent
statistics, ``by_language``: the same figures per question language when the questions are in
several, and ``by_kind``: when the gold holds several document kinds (statutes and decisions), the
same figures per kind, each scored against that kind's gold alone (questions without gold of the kind
left out) on the one ranking.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from service.analysis.language import detect_language
from service.corpus.model import Filters, Query
from service.evaluation import metrics
from service.pipelines.base import Pipeline, SearchRequest, SearchResponse, check_query_lengths
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
    rows: list[QueryScore] = field(default_factory=list)
    """The score of each question, for pooling several runs (cross-validation folds with
    :func:`summarise`); not part of the JSON contract."""

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


@dataclass
class QueryScore:
    """The scores of one question (the rows :func:`summarise` averages)."""

    lang: str
    recall_10: float
    recall_100: float
    mrr_10: float
    ndcg_10: float
    latency_ms: float
    set_prf: tuple[float, float, float] | None = None
    qid: str = ""
    cpu_ms: float = 0.0
    """The process's CPU time during the search (all its threads): on a machine shared with other jobs
    it shows what the search costs, where the wall-clock latency also counts the wait for a core."""
    sets: dict[str, tuple[float, float, float, int]] = field(default_factory=dict)
    """Set precision, recall, F1 and size per citation-set choice."""


def summarise(rows: Sequence[QueryScore]) -> dict[str, Any]:
    """Mean metrics, latency percentiles and (when the pipeline cut its lists) set P/R/F1 of some questions,
    in the JSON shape of :meth:`EvalResult.to_dict` (without the pipeline name)."""
    latencies = [r.latency_ms for r in rows]
    cpu = [r.cpu_ms for r in rows]
    out: dict[str, Any] = {
        "queries": len(rows),
        "recall@10": round(metrics.mean(r.recall_10 for r in rows), 4),
        "recall@100": round(metrics.mean(r.recall_100 for r in rows), 4),
        "mrr@10": round(metrics.mean(r.mrr_10 for r in rows), 4),
        "ndcg@10": round(metrics.mean(r.ndcg_10 for r in rows), 4),
        "latency_ms": {"p50": round(metrics.percentile(latencies, 50), 2),
                       "p95": round(metrics.percentile(latencies, 95), 2),
                       "mean": round(metrics.mean(latencies), 2)},
        "cpu_ms": {"p50": round(metrics.percentile(cpu, 50), 2), "p95": round(metrics.percentile(cpu, 95), 2)},
    }
    choices = list(dict.fromkeys(name for r in rows for name in r.sets))
    if choices:
        out["sets"] = {name: {key: round(metrics.mean(r.sets[name][i] for r in rows if name in r.sets), 4)
                              for i, key in enumerate(("precision", "recall", "f1", "size"))}
                       for name in choices}
    sets = [r.set_prf for r in rows if r.set_prf is not None]
    if sets:
        out["set"] = {name: round(metrics.mean(s[i] for s in sets), 4)
                      for i, name in enumerate(("precision", "recall", "f1"))}
    return out


def query_language(query: Query) -> str:
    """The question's language: given with the query, else detected among every supported language."""
    return query.lang or detect_language(query.text)


def evaluate(pipeline: Pipeline, queries: Sequence[Query], qrels: dict[str, set[str]], *, index: str,
             k: int = 100, filters: Filters | None = None, options: dict[str, Any] | None = None,
             max_query_chars: int | None = None, progress: bool = False, label: str | None = None,
             on_response: Callable[[Query, SearchResponse], None] | None = None,
             set_choices: Sequence[SetChoice] = (),
             gold_kinds: Mapping[str, str] | None = None) -> tuple[EvalResult, Run]:
    """Search every query, time each search end to end, and compute the metrics, overall and per
    question language (``extra["by_language"]``, when the questions are in more than one language).

    ``set_choices`` turn each ranking into an answer set; their set scores go to ``extra["sets"]``.
    ``gold_kinds`` (gold id -> document kind) adds ``extra["by_kind"]`` when the gold holds several kinds.

    Raises:
        InvalidInput: before any search, when a question is longer than ``max_query_chars``
            (questions are never cut).

    Returns:
        The result and the run (``{qid: [(docid, score), ...]}``) for a TREC run file.
    """
    if max_query_chars:
        check_query_lengths(queries, max_query_chars)
    run: Run = {}
    rows: list[QueryScore] = []
    kind_rows: dict[str, list[QueryScore]] = {}
    gold_kinds = gold_kinds or {}
    kinds = sorted(set(gold_kinds.values()))
    name = label or pipeline.name
    for query in tqdm(queries, desc=f"eval {name}", unit="q", disable=not progress, leave=False):
        request = SearchRequest(query=query.text, index=index, k=max(k, 10), filters=filters, lang=query.lang,
                                qid=query.qid, options=dict(options or {}))
        start, cpu_start = time.perf_counter(), time.process_time()
        response = pipeline.run(request)
        latency = (time.perf_counter() - start) * 1000.0
        cpu_ms = (time.process_time() - cpu_start) * 1000.0
        run[query.qid] = [(h.doc_id, h.score) for h in response.hits]
        relevant = qrels.get(query.qid, set())
        lang = query_language(query)
        rows.append(_score(query, response, relevant, lang, latency, cpu_ms, set_choices))
        for kind in kinds if len(kinds) > 1 else ():
            of_kind = {d for d in relevant if gold_kinds.get(d) == kind}
            if of_kind:
                kind_rows.setdefault(kind, []).append(
                    _score(query, response, of_kind, lang, latency, cpu_ms, set_choices))
        if on_response is not None:
            on_response(query, response)
    overall = summarise(rows)
    extra: dict[str, Any] = {key: overall[key] for key in ("set", "sets", "cpu_ms") if key in overall}
    languages = sorted({r.lang for r in rows})
    if len(languages) > 1:
        extra["by_language"] = {lang: summarise([r for r in rows if r.lang == lang]) for lang in languages}
    if kind_rows:
        extra["by_kind"] = {kind: summarise(kind_rows[kind]) for kind in sorted(kind_rows)}
    latencies = [r.latency_ms for r in rows]
    result = EvalResult(
        pipeline=name,
        queries=len(queries),
        recall_10=metrics.mean(r.recall_10 for r in rows),
        recall_100=metrics.mean(r.recall_100 for r in rows),
        mrr_10=metrics.mean(r.mrr_10 for r in rows),
        ndcg_10=metrics.mean(r.ndcg_10 for r in rows),
        latency_p50=metrics.percentile(latencies, 50),
        latency_p95=metrics.percentile(latencies, 95),
        latency_mean=metrics.mean(latencies),
        extra=extra,
        rows=rows,
    )
    return result, run


def _score(query: Query, response: SearchResponse, relevant: set[str], lang: str, latency: float, cpu_ms: float,
           set_choices: Sequence[SetChoice]) -> QueryScore:
    """The scores of one ranking against ``relevant``."""
    ranked = [h.doc_id for h in response.hits]
    return QueryScore(
        lang=lang,
        recall_10=metrics.recall_at(ranked, relevant, 10),
        recall_100=metrics.recall_at(ranked, relevant, 100),
        mrr_10=metrics.mrr_at(ranked, relevant, 10),
        ndcg_10=metrics.ndcg_at(ranked, relevant, 10),
        latency_ms=latency,
        set_prf=(metrics.set_scores(ranked[: response.returned], relevant)
                 if response.returned is not None else None),
        qid=query.qid, cpu_ms=cpu_ms,
        sets={c.name: (*metrics.set_scores(ranked[:size], relevant), size)
              for c in set_choices for size in (c.size(query.text, response.hits),)},
    )


def format_table(results: Sequence[EvalResult]) -> str:
    """A fixed-width comparison table of several results."""
    header = f"{'pipeline':<28} {'queries':>7} {'R@10':>7} {'R@100':>7} {'MRR@10':>7} {'nDCG@10':>8} " \
             f"{'p50 ms':>8} {'p95 ms':>8}"
    lines = [header, "-" * len(header)]
    for r in results:
        lines.append(_row(r.pipeline, r.to_dict()))
        for lang, scores in r.extra.get("by_language", {}).items():
            lines.append(_row(f"  {lang or '?'}", scores))
        for kind, scores in r.extra.get("by_kind", {}).items():
            lines.append(_row(f"  {kind} gold", scores))
    choices = list(dict.fromkeys(name for r in results for name in r.extra.get("sets", {})))
    if choices:
        header = f"{'set F1 (mean size)':<28} " + " ".join(f"{name:>13}" for name in choices)
        lines += ["", header, "-" * len(header)]
        for r in results:
            sets = r.extra.get("sets", {})
            cells = [f"{sets[n]['f1']:.3f} ({sets[n]['size']:>4.1f})" if n in sets else f"{'-':>13}" for n in choices]
            lines.append(f"{r.pipeline:<28} " + " ".join(f"{c:>13}" for c in cells))
    return "\n".join(lines)


def _row(label: str, scores: dict[str, Any]) -> str:
    """One line of :func:`format_table` from a summary in the JSON shape."""
    latency = scores["latency_ms"]
    line = (f"{label:<28} {scores['queries']:>7} {scores['recall@10']:>7.4f} {scores['recall@100']:>7.4f} "
            f"{scores['mrr@10']:>7.4f} {scores['ndcg@10']:>8.4f} {latency['p50']:>8.1f} {latency['p95']:>8.1f}")
    if "set" in scores:
        s = scores["set"]
        line += f"   set P/R/F1 {s['precision']:.3f}/{s['recall']:.3f}/{s['f1']:.3f}"
    return line
