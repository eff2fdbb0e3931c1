"""Query processing for long inputs: the facts of a case, then the question.

Exam questions, like the case files that case-management systems send, put the facts first and the
question last. Searched as one text, long facts drown the question's terms in BM25 (every word of
the facts counts as often as it occurs) and blur its embedding. :func:`read_long_query` reads such an
input as

- the **question proper**: the trailing sentences, at most :data:`QUESTION_CHARS` characters but at
  least the last sentence;
- **passages**: the whole input cut at sentence ends into pieces of about :data:`PASSAGE_CHARS`
  characters. Nothing is dropped: the passages cover every character, the end included.

and turns it into what the retrievers take:

- **BM25 term weights** (:meth:`LongQuery.term_weights`): ``1 + ln tf`` for every analysed term of
  the whole input (a term that occurs 20 times weighs 4, not 20), the :data:`MAX_TERMS` best kept by
  tf-idf when document frequencies are known (else by tf) so that a 50,000-character file stays one
  bounded query, and the question's own terms added again with weight :data:`QUESTION_WEIGHT`, so
  they are never capped away and count double;
- **one query vector** (:meth:`LongQuery.vector`): the mean of the passage vectors, normalised (a share
  of the question's own vector can be mixed in, :data:`QUESTION_VECTOR_SHARE`; on exam questions it did
  not help: the facts carry the embedding).

Inputs up to ``retrieval.long_query_chars`` characters are searched as they are.

Measured on the Swiss exam questions and GerLayQA (docs/BENCHMARKS.md, "Swiss law").

Example::

    long = read_long_query(case_file, "de")
    long.question                       # 'Wie beurteilen Sie den Fall materiell?'
    backend.bm25_terms(index, long.term_weights("de"), k=100)
    backend.knn(index, long.vector(embedder), k=100)
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from service.analysis.chain import analyzer_for
from service.analysis.crosslingual import glossary_into, term_translations, translate_term_weights

QUESTION_CHARS = 400
"""Longest question proper: trailing sentences are added while they fit (the last one always)."""
PASSAGE_CHARS = 1000
"""Target passage length for the embedding (the embedders gain nothing from much longer input)."""
MAX_PASSAGES = 24
"""Most passages embedded for one input; longer inputs merge neighbouring sentences into longer
passages instead of dropping any (50,000 characters give passages of about 2,000)."""
MAX_TERMS = 200
"""BM25 terms kept from the whole input (the question's terms come on top)."""
QUESTION_WEIGHT = 1.0
"""Weight with which the question's terms are added to the whole input's weights."""
SYNONYM_WEIGHT = 0.5
"""Weight of a synonym expansion in a long input (times 1 + log of how often it fires). Short questions
give theirs full weight (``service.analysis.chain.SYNONYM_WEIGHT``); that was measured on short lay
questions only, so long inputs keep the half weight they were tuned with."""
QUESTION_VECTOR_SHARE = 0.0
"""Share of the question's own vector in the query vector; the rest is the mean passage vector. On the
Swiss exam questions the facts carry the embedding: the question alone found half as much (dense
R@10 .049 against .094 for the passage mean), and a share of .25 or .5 did not beat 0 (docs/BENCHMARKS.md).
At 0 the question is not embedded separately, and an input of one passage costs one embedding."""

_SENTENCE_END = re.compile(r"(?<=[.?!:;])\s+(?=[\"'„«(]?[A-ZÄÖÜÀ-Ý])|(?<=[。？！；])")
_ABBREVIATION = re.compile(r"(?:^|[\s(])(?:Art|Abs|Ziff|lit|Bst|Nr|Rz|N|E|S|ff|f|vgl|bzw|resp|ca|Dr|Prof|"
                           r"al|cf|p|pp|No|para|z\.B|u\.a|d\.h|i\.V\.m)\.$")
"""Abbreviations after which a capital letter does not start a new sentence (``Art. X``, ``Dr. Meier``)."""


class QueryEmbedder(Protocol):
    """What :meth:`LongQuery.vector` needs of an embedder (:class:`service.embeddings.base.Embedder`)."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """One vector per text."""


def sentences(text: str) -> list[str]:
    """The input cut after sentence punctuation (``. ? ! : ;`` then a capital letter, or CJK ends),
    not after common legal abbreviations.

    Joining the pieces with single spaces gives the input back up to whitespace.
    """
    out: list[str] = []
    for piece in _SENTENCE_END.split(text):
        piece = piece.strip()
        if not piece:
            continue
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


@dataclass(frozen=True)
class LongQuery:
    """A long input read as passages and the question proper (see the module docstring).

    Attributes:
        text: the whole input.
        question: the trailing sentences that ask the question.
        passages: the input in order, cut at sentence ends; together they hold all of it.
    """

    text: str
    question: str
    passages: tuple[str, ...]

    def term_weights(self, lang: str, idf: Callable[[list[str]], Mapping[str, float]] | None = None,
                     languages: Sequence[str] = ()) -> dict[str, float]:
        """BM25 weights of the analysed terms (see the module docstring).

        Args:
            lang: the analysis chain's language (the input's).
            idf: the index's idf of terms (asked only when the input has more than :data:`MAX_TERMS`
                terms); without it the terms kept are the most frequent ones.
            languages: the index's languages (``SearchBackend.query_languages``). When they lack ``lang`` and a
                glossary leads from it into one of them, the weights are translated as a short question's
                terms are (:func:`~service.analysis.crosslingual.translate_term_weights`): an English case
                file finds the German statutes' words.
        """
        analyzer = analyzer_for(lang)
        tokens = analyzer.query_tokens(self.text)
        weights = _sublinear(Counter(tokens))
        if len(weights) > MAX_TERMS:
            idfs = idf(sorted(weights)) if idf is not None else {}
            kept = sorted(weights, key=lambda t: (-weights[t] * idfs.get(t, 1.0), t))[:MAX_TERMS]
            weights = {t: weights[t] for t in kept}
        for term, weight in _sublinear(Counter(analyzer.query_tokens(self.question))).items():
            weights[term] = weights.get(term, 0.0) + QUESTION_WEIGHT * weight
        words = analyzer.word_stems(self.text)
        reading = analyzer.senses.reading(tokens)
        for term, count in analyzer.synonyms.expand(tokens, words, read=reading.read_terms).items():
            weights[term] = weights.get(term, 0.0) + SYNONYM_WEIGHT * (1.0 + math.log(max(1.0, count)))
        weights = reading.reweigh(weights)
        into = glossary_into(lang, languages) if languages and lang not in languages else None
        if into is None:
            return weights
        target, rules = into
        return translate_term_weights(weights, tokens, words, target, rules,
                                      learned=term_translations(lang, target), synonym_weight=SYNONYM_WEIGHT)

    def vector(self, embedder: QueryEmbedder, question_share: float = QUESTION_VECTOR_SHARE) -> np.ndarray:
        """One query vector: the mean passage vector, mixed with the question's own vector by
        ``question_share``, normalised."""
        if question_share <= 0:
            mixed = embedder.embed_queries(list(self.passages)).mean(axis=0)
        else:
            vectors = embedder.embed_queries([self.question, *self.passages])
            mixed = question_share * vectors[0] + (1 - question_share) * vectors[1:].mean(axis=0)
        norm = float(np.linalg.norm(mixed))
        return np.ascontiguousarray(mixed / norm if norm else mixed, dtype=np.float32)

    def to_trace(self) -> dict[str, object]:
        return {"chars": len(self.text), "question_chars": len(self.question), "passages": len(self.passages)}


def bm25_idf(doc_freqs: Mapping[str, int], documents: int) -> dict[str, float]:
    """BM25's idf, ``ln(1 + (N - n + 0.5) / (n + 0.5))``, of terms with document frequency ``n``."""
    return {t: math.log(1 + (max(documents, n) - n + 0.5) / (n + 0.5)) for t, n in doc_freqs.items()}


def _sublinear(counts: Mapping[str, int]) -> dict[str, float]:
    return {term: 1.0 + math.log(n) for term, n in counts.items()}


def question_of(parts: list[str], max_chars: int = QUESTION_CHARS) -> str:
    """The trailing sentences of ``parts`` that fit into ``max_chars``: the last one always, and of a
    last sentence longer than twice ``max_chars`` (an input without punctuation) its last words."""
    if parts and len(parts[-1]) > 2 * max_chars:
        tail = parts[-1][-max_chars:]
        return tail.split(" ", 1)[1] if " " in tail else tail
    kept: list[str] = []
    size = 0
    for sentence in reversed(parts):
        if kept and size + len(sentence) + 1 > max_chars:
            break
        kept.append(sentence)
        size += len(sentence) + 1
    return " ".join(reversed(kept))


def passages_of(parts: list[str], target: int = PASSAGE_CHARS, most: int = MAX_PASSAGES) -> list[str]:
    """Consecutive sentences joined into passages of about ``target`` characters (at most ``most``
    passages: the target grows for very long inputs, nothing is dropped)."""
    total = sum(len(p) + 1 for p in parts)
    target = max(target, math.ceil(total / most))
    out: list[str] = []
    current: list[str] = []
    size = 0
    for sentence in parts:
        if current and size + len(sentence) > target:
            out.append(" ".join(current))
            current, size = [], 0
        current.append(sentence)
        size += len(sentence) + 1
    if current:
        out.append(" ".join(current))
    return out


def read_long_query(text: str) -> LongQuery:
    """Read an input as the question proper and passages (see the module docstring).

    Example::

        read_long_query("A mietet von B. Er zahlt nicht. Darf B kündigen?").question
        # 'A mietet von B. Er zahlt nicht. Darf B kündigen?'
    """
    parts = sentences(text) or [text.strip()]
    return LongQuery(text=text, question=question_of(parts), passages=tuple(passages_of(parts)))
