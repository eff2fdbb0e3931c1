"""Training on the mini fixture: cross-fitted folds, the model folder, and pipelines that use it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from service.config import load_settings
from service.corpus.datasets import Dataset
from service.errors import ConfigError, DataError
from service.models import load_models
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime
from service.training import folds_of, train_models
from tests.support.corpus import MINI

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def trained(tmp_path_factory, use_embedder) -> tuple[Runtime, Path, dict]:
    root = tmp_path_factory.mktemp("training")
    settings = load_settings(environ={}, overrides={"index": {"root": str(root / "indices")}})
    runtime = Runtime(settings, embedder=use_embedder)
    out = root / "model"
    report = train_models(runtime, Dataset(MINI), "dev", out, folds=2)
    return runtime, out, report.to_dict()


def test_folds_partition_the_questions() -> None:
    folds = folds_of(11, 3)
    assert sorted(i for f in folds for i in f) == list(range(11)) and {len(f) for f in folds} <= {3, 4}
    assert folds == folds_of(11, 3)


def test_training_writes_every_component(trained) -> None:
    _, out, report = trained
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["components"]) == {"law_classifier", "law_mixer", "memory", "prior", "term_mapping",
                                           "adapter", "vocabulary", "planner", "cocitation", "citation_counter",
                                           "reranker_agentic", "reranker_hybrid"}
    assert 1 <= report["cv"]["citation_count"]["fixed_k"] <= 10
    law = report["cv"]["law"]
    assert 0.0 <= law["mixed"]["top1"] <= law["mixed"]["top3"] <= 1.0 and len(law["weights"]) == 4
    assert manifest["questions"] == 8 and manifest["split"] == "dev" and manifest["embedder"] == "use-m3"
    assert 0.0 <= report["cv"]["agentic_recall@10"] <= 1.0 and report["timings_s"]["total"] > 0
    assert report["cv"]["joined_questions"] >= 0 and report["cv"]["issue_reserve"] in (0, 1, 2, 3)
    assert set(report["cv"]["by_reserve"]) == {"0", "1", "2", "3"}
    models = load_models(out)
    assert models is load_models(out)  # cached per process
    assert models.memory is not None and len(models.memory) == 8
    assert models.issue_reserve == report["cv"]["issue_reserve"] and models.cocitation is not None
    assert models.law_probabilities("用人单位辞退劳动者") and models.prior.count("17083") == 1
    # The fusion weights fitted on the split's labels, with the curve that chose them.
    assert manifest["fusion"]["source"] == "model" and manifest["fusion"]["fusion"] == "linear-zscore"
    assert models.fusion is not None and models.fusion.bm25 + models.fusion.knn == pytest.approx(1.0)
    assert manifest["fusion_fit"]["method"] == "trained" and len(manifest["fusion_fit"]["curve"]) == 21


def test_pipelines_use_the_trained_models(trained) -> None:
    runtime, out, report = trained
    settings = runtime.settings.replace(index={"model_dir": str(out)})
    rt = Runtime(settings, backend=runtime.backend, embedder=runtime.embedder)
    request = SearchRequest("用人单位辞退劳动者应该提前多久告知？", index=report["index"], k=10)
    agentic = rt.pipeline("agentic").run(request)
    assert agentic.trace["reranker"]["name"] == "learned" and agentic.trace["models"]["path"] == str(out.resolve())
    assert agentic.trace["law_prediction"]["laws"] and agentic.trace["memory_candidates"] >= 1
    assert set(agentic.trace["law_prediction"]["evidence"]) == {"named", "cited"}
    assert "17083" in [h.doc_id for h in agentic.hits]
    assert agentic.trace["fusion_weights"]["source"] == "model"
    hybrid = rt.pipeline("hybrid+rerank").run(request)
    assert hybrid.trace["reranker"]["name"] == "learned_hybrid" and hybrid.trace["rounds"] == 0
    plain = rt.pipeline("hybrid").run(request)  # reads the weights from the model folder's manifest alone
    assert plain.trace["fusion_weights"] == {**load_models(out).fusion.to_dict(), "source": "model"}
    assert all(np.isfinite(h.score) for h in hybrid.hits)


def test_a_model_trained_with_another_embedder_is_refused(trained) -> None:
    _, out, _ = trained
    models = load_models(out)
    with pytest.raises(ConfigError, match="embedder"):
        models.check_embedder("e5-small")


def test_split_without_usable_questions_is_a_data_error(trained, tmp_path: Path) -> None:
    runtime, _, _ = trained
    folder = tmp_path / "empty"
    folder.mkdir()
    for name in ("corpus.jsonl", "corpus_decisions.jsonl", "dataset.json"):
        (folder / name).write_text((MINI / name).read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "queries.x.tsv").write_text("a\tfrage\n", encoding="utf-8")
    (folder / "qrels.x.tsv").write_text("a\t0\tnot-a-doc\t1\n", encoding="utf-8")
    with pytest.raises(DataError, match="no question"):
        train_models(runtime, Dataset(folder), "x", tmp_path / "m", folds=2)
