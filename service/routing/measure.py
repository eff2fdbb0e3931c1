"""Measuring every tier on labelled questions: the data a routing calibration is fitted on.

For each question, :func:`collect_fit_data` records both complexity parts and, for every tier, the
Recall@10, the ranking and the latency of a served search with that tier forced. The grid searches
of :mod:`service.routing.tuning` then choose the thresholds, gamma and the cut from these numbers.
``lexsearch train`` runs it once per calibration fold, with models that never saw the fold's
questions; ``lexsearch calibrate`` runs it on a held-out split.

Example::

    pipe = runtime.pipeline("routed")
    data = collect_fit_data(pipe, dataset.queries("cal_hold"), dataset.qrels("cal_hold"), index="stard",
                            forget_caches=runtime.forget_query_caches)
    data.recall.shape        # (tiers, questions)
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from service.corpus.model import Query
from service.evaluation import metrics
from service.heap import settled_heap
from service.pipelines.base import SearchRequest
from service.routing.tuning import FitData
from service.tracing import Stopwatch

if TYPE_CHECKING:
    from service.pipelines.routed import RoutedPipeline


def collect_fit_data(pipe: RoutedPipeline, queries: Sequence[Query], qrels: Mapping[str, set[str]], *, index: str,
                     forget_caches: Callable[[], None], progress: bool | tqdm = False) -> FitData:
    """Measure, for each query, both complexity parts and every tier's Recall@10, ranking and latency.

    ``forget_caches`` is the pipeline's runtime's
    :meth:`~service.pipelines.build.Runtime.forget_query_caches`. Each tier's strategy runs as a
    served search with that tier forced (probe, strategy and cut; tiers with the same pipeline and
    options run once and share the result), from cold query caches, so no tier reuses what another
    one embedded or predicted. The tiers run in an order that rotates from query to query, as in
    the benchmarks: a search leaves the operating system's and the CPU's caches warm for the next
    search of the same question, and a fixed order would hand that advantage to the same tier every
    time. A tier's latency is its forced search plus the complexity estimate, timed once per query
    after a probe of its own (a served search estimates between its probe and its strategy). The
    reference, "always the top tier", is the top tier's forced search: no complexity estimate.
    After an untimed warm-up search per tier, the timed searches run with the heap settled
    (:func:`service.heap.settled_heap`), as the API runs them after its warm-up: a full garbage
    collection of a training process's heap would otherwise land on whichever search allocates then.

    ``progress``: show a bar of its own (``True``), or advance the given bar by one per query.
    """
    from service.pipelines.routed import RoutedOptions

    tiers = len(pipe.router.strategies)
    # The first tier of each distinct strategy runs; the others share its result.
    runs_as: dict[int, int] = {}
    first_of: dict[str, int] = {}
    for tier in range(tiers):
        strategy = pipe.router.strategy(tier)
        key = json.dumps([strategy.pipeline, strategy.options], sort_keys=True)
        runs_as[tier] = first_of.setdefault(key, tier)
    distinct = list(first_of.values())  # ascending: each is the first tier of its strategy
    c_int, c_con = [], []
    recall: list[list[float]] = [[] for _ in range(tiers)]
    latency: list[list[float]] = [[] for _ in range(tiers)]
    reference: list[float] = []
    rankings: list[list[list[tuple[str, float]]]] = [[] for _ in range(tiers)]
    relevant = []
    params = pipe.params(index)

    def request_for(query: Query, qid: str = "") -> SearchRequest:
        return SearchRequest(query=query.text, index=index, k=max(10, params.cut_depth), lang=query.lang, qid=qid)

    def forced(request: SearchRequest, tier: int) -> tuple[list[tuple[str, float]], float]:
        forget_caches()
        begin = time.perf_counter()
        response = pipe.run(replace(request, options={"tier": tier}))
        ms = (time.perf_counter() - begin) * 1000.0
        return [(h.doc_id, h.score) for h in response.hits], ms

    def measure(i: int, query: Query) -> None:
        """Both complexity parts and every tier's search of one query (tiers in rotating order)."""
        request = request_for(query, query.qid)
        forget_caches()
        probe = pipe.probe(request, params, Stopwatch())
        begin = time.perf_counter()
        report = pipe.assess(request, probe, params, RoutedOptions())
        assess_ms = (time.perf_counter() - begin) * 1000.0
        rel = qrels.get(query.qid, set())
        relevant.append(rel)
        c_int.append(report.c_intrinsic)
        c_con.append(report.c_consistency)
        shift = i % len(distinct)
        done = {tier: forced(request, tier) for tier in distinct[shift:] + distinct[:shift]}
        for tier in range(tiers):
            ranking, ms = done[runs_as[tier]]
            rankings[tier].append(ranking)
            recall[tier].append(metrics.recall_at([d for d, _ in ranking], rel, 10))
            latency[tier].append(ms + assess_ms)
        reference.append(done[runs_as[tiers - 1]][1])

    if queries:  # warm-up, untimed: the first search of a tier loads models and builds per-index resources
        for tier in distinct:
            forced(request_for(queries[0]), tier)
    bar: Any = progress if isinstance(progress, tqdm) else tqdm(
        total=len(queries), desc="calibrate", unit="q", disable=not progress, leave=False)
    with settled_heap():  # time the searches as a served process runs them (service.heap)
        for i, query in enumerate(queries):
            measure(i, query)
            bar.update(1)
    if bar is not progress:
        bar.close()
    return FitData(c_intrinsic=np.asarray(c_int, dtype=np.float64), c_consistency=np.asarray(c_con, dtype=np.float64),
                   recall=np.asarray(recall, dtype=np.float64), latency_ms=np.asarray(latency, dtype=np.float64),
                   rankings=rankings, relevant=relevant, reference_latency_ms=np.asarray(reference, dtype=np.float64))
