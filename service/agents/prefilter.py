"""Law prediction and the recall-safe law prefilter.

:class:`LawClassifier` predicts, from a question, the *section* of the corpus it concerns: a law
plus a block of :data:`~service.corpus.graph.BLOCK_SIZE` consecutive articles (so a single-code
corpus such as the BGB still gets a useful split). A law's probability is the sum over its
blocks. It is a multinomial logistic regression over tf-idf terms of the question and its
embedding, trained on training questions → their gold articles' sections.

The prefilter (:func:`prefilter_laws`) narrows a retrieval pass to the predicted laws. It is
recall-safe: the pass *adds* candidates to the unfiltered pool rather than replacing it, and
when the classifier is unsure it widens to more laws. A second pass narrows to the most likely
sections (:func:`prefilter_sections`): within one large code (the BGB, the Civil Code) the law
pass cannot narrow anything, and the section pass ranks the articles of the predicted blocks.

:class:`LlmLawPredictor` asks the LLM to pick among the classifier's candidate laws, and falls back
to the classifier's ranking.

Example::

    clf = LawClassifier.fit(token_lists, vectors, sections, law_of_section)
    clf.law_probabilities(tokens, vector)[:3]      # [('中华人民共和国民法典', 0.71), ...]
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from service.corpus.graph import CorpusGraph
from service.corpus.model import Filters
from service.llm.budget import CallBudget
from service.llm.client import LlmClient
from service.llm.prompt import quote_json
from service.llm.schemas import OUTPUT_SCHEMAS
from service.retrieval.tfidf import TfidfSpace

log = logging.getLogger(__name__)

VECTOR_WEIGHT = 0.5
"""Scale of the embedding next to the (unit-length) tf-idf row; tuned on STARD fit (CV)."""
PREFILTER_MASS = 0.9
PREFILTER_MAX_LAWS = 3
LOW_CONFIDENCE = 0.35
"""Below this top-law probability the prefilter widens to :data:`WIDE_LAWS` laws."""
WIDE_LAWS = 6
SECTION_MASS = 0.5
SECTION_MAX = 3
"""The section pass covers the most likely sections until their probability reaches
:data:`SECTION_MASS`, at most :data:`SECTION_MAX` of them (up to 120 articles)."""
RECENT_PREDICTIONS = 64
"""How many recent questions' section probabilities a classifier remembers: routing and the strategy
it picks ask about the same question, with the same terms and vector, within milliseconds."""


class LawClassifier:
    """Question → probability of each corpus section (law plus article block), and of each law.

    Args:
        space: the tf-idf space of question terms.
        coef: ``(n_sections, space.dim + vector_dim)`` weights; ``intercept``: one per section.
        sections: section labels (``"<law>#<block>"``), in row order.
        laws: the law of each section.
    """

    def __init__(self, space: TfidfSpace, coef: np.ndarray, intercept: np.ndarray, sections: Sequence[str],
                 laws: Sequence[str]) -> None:
        self.space = space
        self.coef = np.asarray(coef, dtype=np.float32)
        self.intercept = np.asarray(intercept, dtype=np.float32)
        self.sections = list(sections)
        self.laws = list(laws)
        self.vector_dim = self.coef.shape[1] - space.dim
        self._law_names = list(dict.fromkeys(self.laws))
        law_index = {law: i for i, law in enumerate(self._law_names)}
        self._law_of_row = np.array([law_index[law] for law in self.laws], dtype=np.int64)
        # Term-major and vector-part copies, so one question's scores read contiguous memory.
        self._term_coef = np.ascontiguousarray(self.coef[:, : space.dim].T)
        self._vector_coef = np.ascontiguousarray(self.coef[:, space.dim:])
        self._recent: OrderedDict[tuple[tuple[str, ...], bytes], np.ndarray] = OrderedDict()
        self._recent_lock = threading.Lock()

    @classmethod
    def fit(cls, tokens: Sequence[Sequence[str]], vectors: np.ndarray | None, labels: Sequence[Sequence[str]],
            law_of: Mapping[str, str], *, c: float = 10.0) -> LawClassifier:
        """Train on questions (analysed terms and embeddings) and their gold sections.

        A question with several gold sections contributes one weighted sample per section.

        Raises:
            ValueError: when no question has a label.
        """
        from sklearn.linear_model import LogisticRegression

        space = TfidfSpace.fit(tokens)
        rows, ys, weights = [], [], []
        for i, labs in enumerate(labels):
            distinct = sorted(set(labs))
            for lab in distinct:
                rows.append(i)
                ys.append(lab)
                weights.append(1.0 / len(distinct))
        if not rows:
            raise ValueError("no labelled questions to train the law classifier on")
        x = _features(space, tokens, vectors)
        classes = sorted(set(ys))
        if len(classes) == 1:
            coef = np.zeros((1, x.shape[1]), dtype=np.float32)
            return cls(space, coef, np.zeros(1, dtype=np.float32), classes, [law_of[classes[0]]])
        model = LogisticRegression(C=c, max_iter=1000)
        with warnings.catch_warnings():
            # Many sections and few questions per section is what this classifier is for (Swiss
            # acts: hundreds of sections, 100 questions); sklearn's guess that such labels are a
            # regression target would only clutter `lexsearch train`'s output.
            warnings.filterwarnings("ignore", message="The number of unique classes is greater than 50%",
                                    category=UserWarning)
            model.fit(x[rows], ys, sample_weight=np.asarray(weights))
        sections = [str(s) for s in model.classes_]
        return cls(space, model.coef_.astype(np.float32), model.intercept_.astype(np.float32), sections,
                   [law_of[s] for s in sections])

    def forget_recent(self) -> None:
        """Drop the recent predictions (benchmarks and calibration time each search from cold caches)."""
        with self._recent_lock:
            self._recent.clear()

    def section_probabilities(self, tokens: Sequence[str], vector: np.ndarray | None = None) -> np.ndarray:
        """Probabilities over :attr:`sections` (softmax of the linear scores); treat the array as read-only."""
        key = (tuple(tokens), b"" if vector is None else np.ascontiguousarray(vector, dtype=np.float32).tobytes())
        with self._recent_lock:
            cached = self._recent.get(key)
            if cached is not None:
                self._recent.move_to_end(key)
                return cached
        scores = self._linear_scores(tokens, vector)
        scores -= scores.max()
        probs = np.exp(scores)
        probs /= probs.sum()
        probs.flags.writeable = False
        with self._recent_lock:
            self._recent[key] = probs
            while len(self._recent) > RECENT_PREDICTIONS:
                self._recent.popitem(last=False)
        return probs

    def term_evidence(self, tokens: Sequence[str]) -> np.ndarray:
        """What the terms alone say about each section: the term part of the linear scores, without
        the intercept (the section prior) or the embedding. Issue segmentation compares spans of a
        question by it (:mod:`service.agents.issues`)."""
        cols, vals = self.space.row(tokens)
        return vals @ self._term_coef[cols] if len(cols) else np.zeros(len(self.sections), dtype=np.float32)

    def _linear_scores(self, tokens: Sequence[str], vector: np.ndarray | None) -> np.ndarray:
        """``coef @ features + intercept`` for one question, reading only the columns it uses."""
        scores = self.term_evidence(tokens)
        if self.vector_dim and vector is not None:
            scores = scores + self._vector_coef @ (np.asarray(vector, dtype=np.float32) * np.float32(VECTOR_WEIGHT))
        return scores + self.intercept

    def law_probabilities(self, tokens: Sequence[str], vector: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Laws with probabilities, most likely first (only laws seen in training)."""
        return self.laws_from(self.section_probabilities(tokens, vector))

    def laws_from(self, section_probabilities: np.ndarray) -> list[tuple[str, float]]:
        """Laws with probabilities, most likely first, from already computed section probabilities."""
        totals = np.bincount(self._law_of_row, weights=section_probabilities, minlength=len(self._law_names))
        order = np.argsort(-totals, kind="stable")
        return [(self._law_names[i], float(totals[i])) for i in order]

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {**self.space.to_arrays("space_"), "coef": self.coef.astype(np.float16),
                "intercept": self.intercept, "sections": np.asarray(self.sections, dtype=np.str_),
                "laws": np.asarray(self.laws, dtype=np.str_)}

    @classmethod
    def from_arrays(cls, arrays: Any) -> LawClassifier:
        return cls(TfidfSpace.from_arrays(arrays, "space_"), arrays["coef"].astype(np.float32), arrays["intercept"],
                   [str(s) for s in arrays["sections"]], [str(s) for s in arrays["laws"]])


def _features(space: TfidfSpace, tokens: Sequence[Sequence[str]], vectors: np.ndarray | None,
              vector_dim: int | None = None) -> sparse.csr_matrix:
    x = space.transform(tokens)
    dim = vectors.shape[1] if vectors is not None else (vector_dim or 0)
    if dim == 0:
        return x
    dense = (vectors * VECTOR_WEIGHT) if vectors is not None else np.zeros((len(tokens), dim), dtype=np.float32)
    return sparse.hstack([x, sparse.csr_matrix(dense.astype(np.float32))], format="csr")


@dataclass
class LawPrediction:
    """Predicted laws for one question, most likely first, and how they were predicted."""

    laws: list[tuple[str, float]]
    mode: str = "offline"
    fallback: str = ""
    llm: dict[str, Any] | None = None

    def probability(self, law: str) -> float:
        for name, p in self.laws:
            if name == law:
                return p
        return 0.0

    def to_trace(self, top: int = 5) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, "laws": [[law, round(p, 4)] for law, p in self.laws[:top]]}
        if self.fallback:
            out["fallback"] = self.fallback
        if self.llm:
            out["llm"] = self.llm
        return out


def prefilter_laws(laws: Sequence[tuple[str, float]], *, mass: float = PREFILTER_MASS,
                   max_laws: int = PREFILTER_MAX_LAWS) -> tuple[list[str], bool]:
    """The laws a filtered retrieval pass should cover, and whether the set was widened.

    Takes laws in order until their probabilities reach ``mass`` (at most ``max_laws``). When the
    top law is below :data:`LOW_CONFIDENCE`, it widens to :data:`WIDE_LAWS` laws instead: the
    broader pass that keeps the filter recall-safe.

    Example::

        prefilter_laws([("A", 0.8), ("B", 0.15), ("C", 0.05)])   # (['A', 'B'], False)
    """
    named = [(law, p) for law, p in laws if law]
    if not named:
        return [], False
    if named[0][1] < LOW_CONFIDENCE:
        return [law for law, _ in named[:WIDE_LAWS]], True
    chosen, total = [], 0.0
    for law, p in named[:max_laws]:
        chosen.append(law)
        total += p
        if total >= mass:
            break
    return chosen, False


def prefilter_sections(sections: Mapping[str, float], *, mass: float = SECTION_MASS,
                       max_sections: int = SECTION_MAX) -> list[str]:
    """The most likely sections until their probability reaches ``mass`` (at most ``max_sections``).

    Example::

        prefilter_sections({"BGB#13": 0.4, "BGB#14": 0.3, "BGB#2": 0.1})   # ['BGB#13', 'BGB#14']
    """
    chosen, total = [], 0.0
    for section, p in sorted(sections.items(), key=lambda kv: -kv[1])[:max_sections]:
        chosen.append(section)
        total += p
        if total >= mass:
            break
    return chosen


def section_filter(graph: CorpusGraph, sections: Sequence[str], base: Filters | None) -> Filters | None:
    """``base`` narrowed to the articles of ``sections`` (by citation); ``None`` when they have none."""
    citations = tuple(dict.fromkeys(c for s in sections for d in graph.section_articles(s)
                                    if (c := graph.citation(d))))
    if not citations:
        return None
    return (base or Filters()).narrowed("citation", citations)


class LlmLawPredictor:
    """Asks the LLM which of the candidate laws a question concerns; falls back to the offline ranking.

    The LLM sees codes (``L1``, ``L2`` ...) and law names as quoted data, and must answer with codes
    from that list; its choice re-weights the offline probabilities (an LLM-chosen law gets at least
    ``boost`` of the mass, in the LLM's order).
    """

    def __init__(self, client: LlmClient, *, candidates: int = 15, boost: float = 0.6) -> None:
        self.client = client
        self.candidates = candidates
        self.boost = boost

    def predict(self, question: str, offline: Sequence[tuple[str, float]], extra_laws: Sequence[str],
                budget: CallBudget) -> LawPrediction:
        names = list(dict.fromkeys([law for law, _ in offline[: self.candidates]] + [x for x in extra_laws if x]))
        if not names:
            return LawPrediction(list(offline), fallback="no candidate laws")
        codes = {f"L{i + 1}": law for i, law in enumerate(names)}

        def only_known(value: dict[str, Any]) -> None:
            unknown = [c for c in value["codes"] if c not in codes]
            if unknown:
                raise ValueError(f"codes not among the laws offered: {unknown[:5]}")

        outcome = self.client.complete_json(
            "law_predict",
            {"question": question, "k": "3",
             "laws": quote_json([{"code": c, "name": n} for c, n in codes.items()])},
            OUTPUT_SCHEMAS["law_predict"], budget=budget, validate=only_known)
        if not outcome.ok:
            return LawPrediction(list(offline), fallback=outcome.fallback_reason, llm=outcome.to_trace())
        chosen = [codes[c] for c in outcome.value["codes"]]
        base = dict(offline)
        share = self.boost / max(1, len(chosen))
        merged = {law: (1 - self.boost) * base.get(law, 0.0) for law in names}
        for law in chosen:
            merged[law] = merged.get(law, 0.0) + share
        ranked = sorted(merged.items(), key=lambda kv: -kv[1])
        return LawPrediction(ranked, mode="llm", llm=outcome.to_trace())
