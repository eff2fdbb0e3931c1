"""Law prediction from several kinds of evidence, mixed by weights learned on training questions.

The trained :class:`~service.agents.prefilter.LawClassifier` knows only the laws its training
questions cited, and a few hundred questions spread over a large multi-act corpus (the 190 Swiss
federal acts) teach it little. Two signals need no training and cover every law of the index:

- **retrieval**: the laws of the first retrieval's best hits, each hit weighing ``1 / (rank + T)``
  (:data:`RANK_OFFSET`), as shares of the whole;
- **mentions**: laws the question names, by abbreviation (``OR``, ``StGB``, written as a word of
  their own) or by a name that :func:`~service.corpus.citations.law_alias` resolves
  (``Obligationenrechts`` → OR), and laws of the articles it cites (``Art. 725 Abs. 2 OR``).

:class:`LawMixer` scores each law as a weighted sum of these features (:data:`FEATURES`)::

    score(law) = w1·ln(P_classifier + ε) + w2·ln(share_retrieval + ε) + w3·[named] + w4·[article cited]

and turns the scores into probabilities with a softmax over the laws of the index. The weights
are fitted by maximum likelihood of the gold laws of training questions, from classifier
probabilities that did not see the question (cross-fitted, in ``lexsearch train``).

Example::

    evidence = LawEvidence.gather(question, classifier_laws, ranked_laws, corpus_laws)
    mixer.probabilities(evidence)[:3]      # [('OR', 0.62), ('ZGB', 0.18), ('ZPO', 0.05)]
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.corpus.citations import extract, law_alias

FEATURES: tuple[str, ...] = ("classifier", "retrieval", "named", "cited")
RANK_OFFSET = 5.0
"""T in the retrieval share ``1 / (rank + T)``: the best few hits count, but not the first alone."""
RETRIEVAL_DEPTH = 100
EPSILON = 1e-3
L2 = 0.01
"""Ridge penalty on the weights (a few hundred questions fit four weights without it, but noisily)."""
DEFAULT_WEIGHTS = (1.0, 0.0, 0.0, 0.0)
"""Weights before any fit: the classifier alone, as before this module."""

_WORD = re.compile(r"[^\W\d_][\w-]*", re.UNICODE)


def named_laws(text: str, laws: Iterable[str]) -> set[str]:
    """Laws of ``laws`` the text names: their abbreviation as a word of its own (case as written), or
    a name :func:`law_alias` resolves to one of them (a long name, or a short one in capitals: ``CO``
    is the Code of Obligations, ``Co`` in "Meier & Co" is not)."""
    known = laws if isinstance(laws, (set, frozenset)) else set(laws)
    found = set()
    for word in set(_WORD.findall(text)):
        if word in known:
            found.add(word)
            continue
        if len(word) < 5 and not word.isupper():
            continue
        alias = law_alias(word)
        if alias != word and alias in known:
            found.add(alias)
    return found


def mentioned_laws(question: str, corpus_laws: Iterable[str]) -> list[str]:
    """Every name, in each language, of the acts the question names or cites ("nach dem OR", "art. 41
    CO"), in the index's order: the law evidence that needs no training (a French question that names
    the *CO* names the German *OR* documents too).

    Example::

        mentioned_laws("Que dit l'art. 41 CO ?", ("OR", "ZGB", "CO", "CC"))   # ['OR', 'CO']
    """
    table = _law_table(tuple(corpus_laws))
    found = named_laws(question, table.known) | cited_laws(question, table.known, table.aliases)
    acts = {law_alias(law) for law in found}
    return [law for law in table.laws if law_alias(law) in acts]


def cited_laws(text: str, laws: Iterable[str], aliases: Mapping[str, str] | None = None) -> set[str]:
    """Laws of ``laws`` whose articles the text cites (``Art. 41 Abs. 1 OR``, ``art. 41 CO``).

    ``aliases`` (:func:`law_alias` of each law → the law) is computed from ``laws`` when not given.
    """
    citations = extract(text)
    if not citations:
        return set()
    known = laws if isinstance(laws, (set, frozenset)) else set(laws)
    if aliases is None:
        aliases = _aliases(known)
    out = set()
    for citation in citations:
        if citation.law in known:
            out.add(citation.law)
        elif citation.law and law_alias(citation.law) in aliases:
            out.add(aliases[law_alias(citation.law)])
    return out


def retrieval_shares(ranked_laws: Sequence[str], depth: int = RETRIEVAL_DEPTH) -> dict[str, float]:
    """Each law's share of the ranking's weight, a hit at rank ``r`` weighing ``1 / (r + T)``."""
    totals: dict[str, float] = {}
    for rank, law in enumerate(ranked_laws[:depth], start=1):
        if law:
            totals[law] = totals.get(law, 0.0) + 1.0 / (rank + RANK_OFFSET)
    whole = sum(totals.values()) or 1.0
    return {law: v / whole for law, v in totals.items()}


def top_k_accuracy(ranked: Sequence[Sequence[str]], gold: Sequence[set[str]], k: int) -> float:
    """Share of questions with a gold law among the first ``k`` predicted laws."""
    if not ranked:
        return 0.0
    return sum(bool(set(r[:k]) & g) for r, g in zip(ranked, gold, strict=True)) / len(ranked)


@dataclass(frozen=True)
class LawEvidence:
    """The evidence about one question, as a feature row per candidate law (:data:`FEATURES`)."""

    laws: tuple[str, ...]
    rows: np.ndarray

    @classmethod
    def gather(cls, question: str, classifier: Sequence[tuple[str, float]], ranked_laws: Sequence[str],
               corpus_laws: Iterable[str]) -> LawEvidence:
        """Collect the features of every law of the corpus (and of the classifier).

        Args:
            question: the question's text.
            classifier: the classifier's laws with probabilities ([] without a classifier).
            ranked_laws: the law of each hit of the first retrieval, best first.
            corpus_laws: every law of the index.
        """
        table = _law_table(tuple(corpus_laws))
        extra = [law for law, _ in classifier if law and law not in table.position]
        if extra:  # classifier laws the index lacks (a model trained on another corpus) come last
            table = _law_table(table.laws + tuple(extra))
        laws, position = table.laws, table.position
        p = dict(classifier)
        shares = retrieval_shares(ranked_laws)
        named = named_laws(question, table.known)
        cited = cited_laws(question, table.known, table.aliases)
        # Most laws have no evidence at all: fill the few that do (a corpus can hold 1,000+ laws).
        rows = np.zeros((len(laws), len(FEATURES)), dtype=np.float64)
        for column, values in ((0, p), (1, shares)):
            for law, value in values.items():
                if law in position:
                    rows[position[law], column] = value
        np.log(rows[:, :2] + EPSILON, out=rows[:, :2])
        for column, found in ((2, named), (3, cited)):  # both are subsets of ``laws``
            rows[[position[law] for law in found], column] = 1.0
        return cls(laws, rows)

    def to_trace(self) -> dict[str, Any]:
        return {"named": [self.laws[i] for i in np.flatnonzero(self.rows[:, 2] > 0)],
                "cited": [self.laws[i] for i in np.flatnonzero(self.rows[:, 3] > 0)]}


@dataclass(frozen=True)
class _LawTable:
    """The laws of an index without '' (in order), their positions, their set and their aliases: the
    same for every question against one index (1,338 laws for STARD), so built once. Read-only."""

    laws: tuple[str, ...]
    position: Mapping[str, int]
    known: frozenset[str]
    aliases: Mapping[str, str]


@functools.lru_cache(maxsize=8)
def _law_table(corpus_laws: tuple[str, ...]) -> _LawTable:
    laws = tuple(dict.fromkeys(law for law in corpus_laws if law))
    known = frozenset(laws)
    return _LawTable(laws, {law: i for i, law in enumerate(laws)}, known, _aliases(known))


def _aliases(laws: Iterable[str]) -> dict[str, str]:
    """:func:`law_alias` of each law → the law."""
    return {law_alias(law): law for law in laws}


class LawMixer:
    """Weights of the law evidence (see the module docstring).

    Example::

        mixer = LawMixer.fit([evidence_1, evidence_2], [{"OR"}, {"ZGB", "OR"}])
        mixer.probabilities(evidence_3)[0]    # ('OR', 0.71)
    """

    def __init__(self, weights: Sequence[float] = DEFAULT_WEIGHTS) -> None:
        if len(weights) != len(FEATURES):
            raise ValueError(f"a law mixer needs {len(FEATURES)} weights, got {len(weights)}")
        self.weights = np.asarray(weights, dtype=np.float64)

    @classmethod
    def fit(cls, evidence: Sequence[LawEvidence], gold: Sequence[set[str]]) -> LawMixer:
        """Maximum likelihood of the gold laws (mean log-probability per question, ridge-penalised).

        Questions whose gold laws are not among their candidate laws are skipped.

        Raises:
            ValueError: when no question is usable.
        """
        from scipy.optimize import minimize

        data = []
        for ev, laws in zip(evidence, gold, strict=True):
            index = [i for i, law in enumerate(ev.laws) if law in laws]
            if index and len(ev.laws) > 1:
                data.append((ev.rows, index))
        if not data:
            raise ValueError("no training question has its gold law among the candidate laws")

        def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
            value, grad = 0.0, np.zeros_like(w)
            for rows, index in data:
                scores = rows @ w
                scores -= scores.max()
                p = np.exp(scores)
                p /= p.sum()
                value -= float(np.mean(np.log(p[index] + 1e-300)))
                grad -= rows[index].mean(axis=0) - p @ rows
            value, grad = value / len(data), grad / len(data)
            return value + L2 * float(w @ w), grad + 2 * L2 * w

        result = minimize(loss, np.asarray(DEFAULT_WEIGHTS, dtype=np.float64), jac=True, method="L-BFGS-B")
        return cls(result.x)

    def probabilities(self, evidence: LawEvidence) -> list[tuple[str, float]]:
        """Laws with probabilities, most likely first."""
        if not evidence.laws:
            return []
        scores = evidence.rows @ self.weights
        scores -= scores.max()
        p = np.exp(scores)
        p /= p.sum()
        order = np.argsort(-p, kind="stable")
        values = p.tolist()
        return [(evidence.laws[i], values[i]) for i in order.tolist()]

    def to_json(self) -> dict[str, Any]:
        return {"features": list(FEATURES), "weights": [round(float(w), 6) for w in self.weights]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LawMixer:
        if list(data.get("features", [])) != list(FEATURES):
            raise ValueError(f"law mixer features {data.get('features')} differ from {list(FEATURES)}")
        return cls(data["weights"])
