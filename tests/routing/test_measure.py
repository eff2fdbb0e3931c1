"""Measuring every tier on labelled questions (the data behind routing calibration), on the mini fixture."""

from __future__ import annotations

import json

import numpy as np
import pytest

from service.config import load_settings
from service.corpus.datasets import Dataset
from service.evaluation.dataset_index import ensure_dataset_index
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime
from service.routing.measure import collect_fit_data
from service.routing.tuning import FitData
from tests.support.corpus import MINI

pytestmark = pytest.mark.unit


def test_fit_data_times_each_tier_as_a_served_search_in_rotating_order(tmp_path, embedding_cache_dir) -> None:  # type: ignore[no-untyped-def]
    settings = load_settings().replace(index={"root": str(tmp_path / "indices")},
                                       embedder={"cache_dir": str(embedding_cache_dir)})
    runtime = Runtime(settings)
    dataset = Dataset(MINI)
    index = ensure_dataset_index(runtime, dataset)
    pipe = runtime.pipeline("routed")
    forced: list[int] = []
    served = pipe.run

    def recording_run(request):  # type: ignore[no-untyped-def]
        forced.append(request.options["tier"])
        return served(request)

    pipe.run = recording_run  # type: ignore[method-assign]
    queries = dataset.queries("dev")[:4]
    data = collect_fit_data(pipe, queries, dataset.qrels("dev"), index=index, forget_caches=runtime.forget_query_caches)
    tiers = len(pipe.router.strategies)
    distinct = len({json.dumps([s.pipeline, s.options], sort_keys=True) for s in pipe.router.strategies})
    per_query = [forced[distinct * (i + 1): distinct * (i + 2)] for i in range(len(queries))]  # after the warm-up
    assert all(sorted(order) == sorted(per_query[0]) and len(set(order)) == distinct for order in per_query)
    assert len({order[0] for order in per_query}) == min(distinct, len(queries))  # the first tier rotates
    # A tier's latency is its forced search plus the complexity estimate; the reference has no estimate.
    assert data.latency_ms.shape == (tiers, len(queries))
    assert np.all(data.latency_ms[-1] > data.reference_latency_ms)
    pipe.run = served  # type: ignore[method-assign]
    top = served(SearchRequest(query=queries[0].text, index=index, k=max(10, pipe.params(index).cut_depth),
                               lang=queries[0].lang, options={"tier": tiers - 1}))
    assert [d for d, _ in data.rankings[-1][0]] == [h.doc_id for h in top.hits]


def test_fit_data_of_several_folds_concatenate_in_order() -> None:
    def part(n: int, offset: float) -> FitData:
        recall = np.full((4, n), offset)
        return FitData(c_intrinsic=np.arange(n) + offset, c_consistency=np.arange(n) + offset, recall=recall,
                       latency_ms=recall * 10, rankings=[[[("d", offset)]] * n for _ in range(4)],
                       relevant=[{"d"}] * n)

    joined = FitData.concat([part(2, 0.0), part(3, 1.0)])
    assert joined.queries == 5 and joined.recall.shape == (4, 5) and joined.tiers == 4
    assert list(joined.c_intrinsic) == [0.0, 1.0, 1.0, 2.0, 3.0]
    assert list(joined.reference_latency_ms) == [0.0, 0.0, 10.0, 10.0, 10.0]
    assert [r[0][1] for r in joined.rankings[2]] == [0.0, 0.0, 1.0, 1.0, 1.0]
    with pytest.raises(ValueError):
        FitData.concat([])
