"""The runtime picks each index's embedder: by corpus language when building, by the index's record when searching."""

from __future__ import annotations

import json

import pytest

from service.config import load_settings
from service.errors import IndexCorrupt
from service.indexing import rebuild_index
from service.pipelines import resources
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime
from service.retrieval.weights import FusionWeights

pytestmark = pytest.mark.unit

BGE_ZH = "onnx:bge-small-zh-v15-q@512"


def _runtime(tmp_path, **embedder) -> Runtime:
    return Runtime(load_settings(environ={}, overrides={
        "index": {"root": str(tmp_path / "indices")},
        "embedder": {"cache_dir": str(tmp_path / "cache"), "threads": 1, **embedder}}))


@pytest.fixture
def zh_index(tmp_path, mini_docs, embedding_jar) -> tuple[Runtime, str]:
    """A Chinese index built with the default settings (zh -> bge-small-zh)."""
    embedding_jar("bge-small-zh-v15-q")
    runtime = _runtime(tmp_path)
    docs = [d for d in mini_docs if d.lang == "zh"]
    rebuild_index(runtime.backend, runtime.settings, "laws-zh", runtime.embedder_for("zh"), docs, language="zh")
    return runtime, "laws-zh"


def test_each_corpus_language_gets_its_embedder(zh_index, tmp_path) -> None:
    runtime, name = zh_index
    assert runtime.backend.stats(name).embedder == BGE_ZH
    assert runtime.embedder_for("de,fr,it").name == runtime.embedder_for("").name == "use-m3"
    assert runtime.index_embedder(name).name == BGE_ZH
    assert runtime.index_embedder("not-yet-built", "de").name == "use-m3"
    assert runtime.index_embedder("not-yet-built", "en").name == "onnx:e5-small-v2-q@512"
    response = runtime.pipeline("hybrid").run(SearchRequest("用人单位辞退劳动者应该提前多久告知？", index=name, k=5))
    assert response.hits and all(h.doc.lang == "zh" for h in response.hits if h.doc)
    assert response.trace["fusion_weights"]["source"] in ("index", "default")


def test_an_index_of_an_embedder_no_longer_configured_is_a_clear_error(zh_index) -> None:
    runtime, name = zh_index
    use_only = Runtime(runtime.settings.replace(embedder={"per_language": ()}))
    with pytest.raises(IndexCorrupt, match=f"'{name}' was built with embedder {BGE_ZH}, but the settings "
                                           r"configure use-m3 \(default\); rebuild the index"):
        use_only.pipeline("dense").run(SearchRequest("辞退", index=name))
    # Configured for another language, the model still serves the index that records it.
    moved = Runtime(runtime.settings.replace(embedder={"per_language": ("en=onnx:bge-small-zh-v15-q",)}))
    assert moved.index_embedder(name).name == BGE_ZH


def test_preload_loads_what_the_first_search_would(zh_index) -> None:
    runtime, name = zh_index
    key = (id(runtime.backend), name)
    resources._CACHE.pop(key, None)
    runtime.preload(name)
    assert resources._CACHE[key].graph.ids()  # the corpus graph is built
    assert runtime.retrieval(name).embedder.name == BGE_ZH


def test_a_given_embedder_serves_every_language(tmp_path, use_embedder) -> None:
    runtime = Runtime(_runtime(tmp_path).settings, embedder=use_embedder)
    assert runtime.embedder_for("zh") is use_embedder


def test_fusion_weights_by_precedence(zh_index, tmp_path) -> None:
    runtime, name = zh_index
    weights = runtime.fusion_weights(name)  # first use: calibrated without labels and stored with the index
    assert weights.source == "index" and 0.3 < weights.bm25 < 0.7
    assert runtime.backend.metadata(name)["fusion"]["bm25"] == weights.bm25
    fixed = Runtime(runtime.settings.replace(retrieval={"bm25_weight": 0.8, "knn_weight": 0.2}))
    assert fixed.fusion_weights(name) == FusionWeights(0.8, 0.2, "settings")
    model = tmp_path / "model"
    model.mkdir()
    (model / "manifest.json").write_text(json.dumps({"fusion": {"bm25": 0.3, "knn": 0.7, "fusion": "linear-zscore"}}))
    trained = Runtime(runtime.settings.replace(index={"model_dir": str(model)}))
    assert trained.fusion_weights(name) == FusionWeights(0.3, 0.7, "model", "linear-zscore")
    rrf = Runtime(runtime.settings.replace(index={"model_dir": str(model)}, retrieval={"fusion": "rrf"}))
    assert rrf.fusion_weights(name).source == "index"  # weights fitted for linear fusion do not serve RRF
