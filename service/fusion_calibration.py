"""Label-free fusion weights for one index, from known-item pseudo-queries made out of its corpus.

No relevance label is needed, so every index gets weights of its own when it is built (or on its
first hybrid search), stored with the index (``backend.update_metadata(name, fusion={...})``):

1. sample documents uniformly (reservoir sampling over ``backend.scan``, fixed seed);
2. each pseudo-query is a passage of one sampled document: a window of 12 to 40 consecutive words
   of its text (its analysed surface tokens), whose known item is that document (its work, in a
   corpus of language versions);
3. run BM25 and kNN for each, with the index's own embedder, as the hybrid pipeline does;
4. weight each retriever by its effectiveness on them: ``bm25 = M_b / (M_b + M_k)`` and
   ``knn = M_k / (M_b + M_k)``, where ``M`` is the retriever's MRR@10 of the known items (the
   classic effectiveness-weighted linear combination).

Why not the weight whose fusion finds the known items best: a passage shares its exact words with
its document, which real questions, written by people who do not know the statute's wording, do
not. That weight overrates BM25 on every corpus measured (0.75-1.0 where real questions want
0.3-0.65 with a good embedder; docs/BENCHMARKS.md). The ratio of the two retrievers' scores is a
steadier signal: a kNN side that reads the corpus finds 80-90 % of what BM25 finds in passages, so
the split stays near even; one that does not read the corpus language, or cannot tell the articles
apart, finds little, and the weight moves to BM25 in proportion.

An index that holds statutes and decisions is searched one group at a time (service/pipelines/kinds.py),
and a decision's vector reads only its first 512 tokens, so weights drawn from passages of the whole
index (mostly decisions) undervalue kNN for the statutes: each group also gets weights of its own,
calibrated on its documents alone (``fusion_groups``, :func:`ensure_group_fusion_weights`).

Example::

    fit = calibrate_fusion(backend, embedder, "stard", settings.retrieval)
    backend.update_metadata("stard", fusion=fit.to_dict())
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from service.analysis.chain import analyzer_for
from service.backends.base import SearchBackend
from service.corpus.model import Filters, LegalDoc, kind_groups
from service.embeddings.base import Embedder
from service.errors import InvalidInput
from service.evaluation.metrics import mean, mrr_at, recall_at
from service.retrieval.weights import FUSION_KEY, FusionFit, FusionWeights, RetrievalSettings, fusion_method
from service.routing.calibration import sample_documents

log = logging.getLogger(__name__)

METHOD = "known-item-passages-v1"
"""Recorded with the weights; weights of another method are calibrated again."""
SAMPLES = 300
GROUPS_KEY = "fusion_groups"
"""The index-metadata entry holding the label-free weights of each group of an index of statutes and
decisions (``{"statutes": {...}, "decisions": {...}}``, each as :data:`FUSION_KEY` holds the index's)."""
MIN_WORDS = 12
MAX_WORDS = 40


@dataclass(frozen=True)
class PseudoQuery:
    """A passage of one document, and the id under which search returns that document."""

    text: str
    lang: str
    known_item: str


def passage_queries(docs: Sequence[LegalDoc], *, default_lang: str, count: int, rng: random.Random,
                    min_words: int = MIN_WORDS, max_words: int = MAX_WORDS) -> list[PseudoQuery]:
    """``count`` passages of ``min_words`` to ``max_words`` consecutive words, each of a random document
    of ``docs`` that has at least ``min_words`` words ([] when none has).

    Raises:
        ValueError: for bounds that are not ``1 <= min_words <= max_words``.
    """
    if not 1 <= min_words <= max_words:
        raise ValueError("passages need 1 <= min_words <= max_words")
    usable = []
    for doc in docs:
        lang = doc.lang or default_lang
        words = analyzer_for(lang).raw_tokens(doc.text)
        if len(words) >= min_words:
            usable.append((doc, lang, words))
    out = []
    for _ in range(count if usable else 0):
        doc, lang, words = usable[rng.randrange(len(usable))]
        length = min(rng.randint(min_words, max_words), len(words))
        start = rng.randrange(len(words) - length + 1)
        joiner = "" if lang == "zh" else " "
        out.append(PseudoQuery(joiner.join(words[start:start + length]), lang, doc.work))
    return out


def calibrate_fusion(backend: SearchBackend, embedder: Embedder, index: str, settings: RetrievalSettings, *,
                     language: str = "", samples: int = SAMPLES, seed: int = 13,
                     filters: Filters | None = None) -> FusionFit:
    """Label-free fusion weights for ``index`` (see the module docstring).

    Args:
        backend: the backend holding the index.
        embedder: the index's embedder (queries are embedded as at search time).
        index: the index name.
        settings: the fusion to calibrate (linear with its normalisation, or RRF with its k).
        language: the corpus language for documents that name none ('' = from the index stats).
        samples: how many pseudo-queries (each one BM25 and one kNN search).
        seed: the random seed, so a calibration can be repeated exactly.
        filters: calibrate for searches under these filters: passages of the documents they let
            through, searched with them (one group of an index of statutes and decisions).

    Raises:
        InvalidInput: when the index holds too few documents with text to calibrate on.
    """
    rng = random.Random(seed)
    if not language or "," in language:
        languages = backend.stats(index).languages
        language = languages[0] if languages else "en"
    scanned = backend.scan(index)
    docs = sample_documents(scanned if filters is None else (d for d in scanned if filters.matches(d)),
                            min(2 * samples, 5000), rng)
    queries = passage_queries(docs, default_lang=language, count=samples, rng=rng)
    if len(queries) < 30:
        raise InvalidInput(f"cannot calibrate fusion weights on index {index!r}: it has too few documents "
                           f"of at least {MIN_WORDS} words")
    vectors = embedder.embed_queries([q.text for q in queries])
    lists = [backend.probe(index, q.text, vector, k=settings.depth, lang=q.lang, filters=filters)
             for q, vector in zip(queries, vectors, strict=True)]
    items = [{q.known_item} for q in queries]
    scores = {}
    for position, label in enumerate(("bm25", "knn")):
        ranked = [[h.doc_id for h in pair[position]] for pair in lists]
        scores[label] = {"recall@10": mean(recall_at(r, g, 10) for r, g in zip(ranked, items, strict=True)),
                         "mrr@10": mean(mrr_at(r, g, 10) for r, g in zip(ranked, items, strict=True))}
    total = scores["bm25"]["mrr@10"] + scores["knn"]["mrr@10"]
    if total <= 0:
        raise InvalidInput(f"cannot calibrate fusion weights on index {index!r}: neither retriever finds "
                           "the passages' documents")
    bm25 = round(scores["bm25"]["mrr@10"] / total, 4)  # as stored, so fresh and stored weights fuse alike
    evidence = {"known_items": {label: {k: round(v, 4) for k, v in s.items()} for label, s in scores.items()}}
    return FusionFit(bm25, round(1.0 - bm25, 4), len(queries), METHOD, fusion_method(settings), evidence,
                     time.strftime("%Y-%m-%dT%H:%M:%S"))


def ensure_fusion_weights(backend: SearchBackend, embedder: Embedder, index: str, settings: RetrievalSettings, *,
                          language: str = "", force: bool = False) -> FusionWeights:
    """The label-free weights stored with ``index``, calibrated and stored first when missing (or ``force``).

    Raises:
        InvalidInput: when the index is too small to calibrate (see :func:`calibrate_fusion`).
    """
    entry = backend.metadata(index).get(FUSION_KEY)
    stored = FusionWeights.from_entry(entry, "index")
    if stored is not None and stored.suits(settings) and entry.get("method") == METHOD and not force:
        return stored
    fit = calibrate_fusion(backend, embedder, index, settings, language=language)
    backend.update_metadata(index, **{FUSION_KEY: fit.to_dict()})
    log.info("fusion weights of %s: bm25 %.2f, knn %.2f (%s)", index, fit.bm25, fit.knn, METHOD)
    return fit.weights("index")


def ensure_group_fusion_weights(backend: SearchBackend, embedder: Embedder, index: str,
                                settings: RetrievalSettings, *, language: str = "",
                                force: bool = False) -> dict[str, FusionWeights]:
    """The label-free weights of each group of an index of statutes and decisions (``{}`` for an index of
    one group), each calibrated on its group's documents and stored first when missing (or ``force``).
    A group too small to calibrate has none: its searches fuse with the index's weights."""
    groups = kind_groups(backend.kinds(index))
    if len(groups) < 2:
        return {}
    entry = backend.metadata(index).get(GROUPS_KEY)
    stored_entries = entry if isinstance(entry, Mapping) else {}
    kept: dict[str, dict] = {}
    out: dict[str, FusionWeights] = {}
    for name, kinds in groups.items():
        found = stored_entries.get(name)
        stored = FusionWeights.from_entry(found, "index")
        if stored is not None and stored.suits(settings) and found.get("method") == METHOD and not force:
            kept[name], out[name] = dict(found), stored
            continue
        try:
            fit = calibrate_fusion(backend, embedder, index, settings, language=language,
                                   filters=Filters.of(kind=list(kinds)))
        except InvalidInput as exc:
            log.info("no fusion weights of their own for the %s of %s: %s", name, index, exc)
            continue
        kept[name], out[name] = fit.to_dict(), fit.weights("index")
        log.info("fusion weights of the %s of %s: bm25 %.2f, knn %.2f", name, index, fit.bm25, fit.knn)
    if kept != stored_entries:
        backend.update_metadata(index, **{GROUPS_KEY: kept})
    return out


def ensure_fusion_quietly(backend: SearchBackend, embedder: Embedder, index: str, settings: RetrievalSettings, *,
                          language: str = "", force: bool = False) -> str:
    """:func:`ensure_fusion_weights` for the indexing commands: a status line; never raises for a corpus
    too small to calibrate (its hybrid search then fuses 0.5 / 0.5)."""
    try:
        weights = ensure_fusion_weights(backend, embedder, index, settings, language=language, force=force)
    except InvalidInput as exc:
        return f"fusion weights not calibrated ({exc}); hybrid search fuses 0.5/0.5"
    line = f"fusion weights: bm25 {weights.bm25:.2f}, knn {weights.knn:.2f} (label-free, from known-item passages)"
    groups = ensure_group_fusion_weights(backend, embedder, index, settings, language=language, force=force)
    for name, own in groups.items():
        line += f"; {name}: bm25 {own.bm25:.2f}, knn {own.knn:.2f}"
    return line
