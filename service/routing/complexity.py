"""Query complexity after CoAL-RAG: intrinsic complexity, retrieval consistency, and their fusion.

All functions here are pure: they take numbers, token lists or hit-id lists and return numbers in
[0, 1], so each formula can be checked by hand (docs/ROUTING.md lists them).

* Intrinsic complexity ``C_intrinsic = w_base * C_base + (1 - w_base) * C_5D`` (``w_base = 0.3``),
  where ``C_base`` grows with the question's length and ``C_5D`` is the mean of five saturating
  dimensions: reasoning-chain length, knowledge integration, domain span, relational reasoning and
  conditional-constraint density (:func:`dimensions`).
* Query specificity ``QSI = sigmoid(a * (bm25_top1 - b))``: a high top BM25 score means the
  question shares rare words with some document (:func:`qsi`).
* Retrieval divergence ``RDI = 1 - (0.7 * Jaccard(top-K sets) + 0.3 * top-3 overlap)`` between BM25
  and kNN (:func:`rdi`).
* Competitive gating of ``u = 1 - QSI`` and ``v = RDI`` into a retrieval-consistency complexity
  (:func:`consistency`), and the final score ``C = gamma * C_intrinsic + (1 - gamma) * C_consistency``
  (:func:`fuse`).

Example::

    feats = question_features("如果公司不签劳动合同，员工离职能否要求双倍工资？", "zh")
    c_int = intrinsic(base_complexity(feats), dimensions(feats).mean())
    c_con = consistency(qsi(18.2, a=0.4, b=15.0), rdi(bm25_ids, knn_ids))
    score = fuse(c_int, c_con)
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from service.analysis.chain import analyzer_for
from service.analysis.language import detect_language
from service.llm.schemas import COMPLEXITY_DIMENSIONS
from service.routing.markers import count_matches, distinct_matches, markers_for

DIMENSION_NAMES: tuple[str, ...] = COMPLEXITY_DIMENSIONS
"""The five CoAL-RAG dimensions, in this order everywhere: the keys of the ``complexity`` LLM prompt's
output (:data:`service.llm.schemas.COMPLEXITY_DIMENSIONS`, the one list)."""

# Saturation scales: the count at which a dimension reaches 1 - 1/e (about 0.63).
REASONING_SCALE = 4.0
KNOWLEDGE_SCALE = 2.0
DOMAIN_SCALE = 1.5
RELATION_SCALE = 3.0
CONDITION_SCALE = 1.5
LENGTH_SCALE = 40.0
"""Analysed tokens at which ``C_base`` reaches 0.63; a typical one-line lay question has 8-20."""

_CLAUSE_SPLIT = re.compile(r"[，。；;,.!?！？：:、\n]+")
_SENTENCE_SPLIT = re.compile(r"[。！？!?\n]+|(?<=[a-zäöüéèàç0-9])\.\s")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?|[一二三四五六七八九十百千万两]+(?=[元万年月天日岁个周倍小])")


def saturate(x: float, scale: float) -> float:
    """``1 - exp(-x / scale)`` for ``x > 0``, else 0: grows with ``x`` and never exceeds 1.

    Example::

        saturate(2.0, 2.0)   # 0.632...
    """
    if scale <= 0:
        raise ValueError("saturation scale must be positive")
    return 0.0 if x <= 0 else 1.0 - math.exp(-x / scale)


def sigmoid(x: float) -> float:
    """The logistic function, safe for large ``|x|``."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


@dataclass(frozen=True)
class QuestionFeatures:
    """Counts taken from one question, the raw material of the intrinsic dimensions.

    Attributes:
        lang: the language the counts were taken in.
        tokens: analysed index terms (after stopwords), the length measure.
        clauses: segments between clause punctuation (at least 1).
        sentences: segments between sentence punctuation (at least 1).
        conditionals: conditional and exception markers (if, unless, 如果, sofern ...).
        connectives: reasoning connectives (because, then, but ...).
        negations: negations and refusals.
        numbers: numeric constraints (numbers, amounts, durations).
        questions: distinct questions asked (question marks, else question words; at least 1).
        parties: distinct persons, roles and organisations named.
        relations: relation words between parties (between, against, 与 ...).
        domains: distinct legal domains whose cue words occur.
        citations: laws or articles the question cites explicitly.
        laws: how many laws the law classifier predicts (``None`` without a trained model).
    """

    lang: str
    tokens: int
    clauses: int
    sentences: int
    conditionals: int
    connectives: int
    negations: int
    numbers: int
    questions: int
    parties: int
    relations: int
    domains: int
    citations: int = 0
    laws: int | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def question_features(text: str, lang: str = "", *, laws: int | None = None) -> QuestionFeatures:
    """Count the structural signals of a question (see :class:`QuestionFeatures`).

    Args:
        text: the question.
        lang: its language ('' = detect).
        laws: the number of laws a law classifier predicts for it, when a model is loaded.

    Example::

        question_features("Mein Vermieter gibt die Kaution nicht zurück, obwohl ich ausgezogen bin. Was tun?")
    """
    lang = lang or detect_language(text)
    analyzer = analyzer_for(lang)
    raw = analyzer.raw_tokens(text)
    markers = markers_for(lang)
    clauses = max(1, sum(1 for part in _CLAUSE_SPLIT.split(text) if part.strip()))
    sentences = max(1, sum(1 for part in _SENTENCE_SPLIT.split(text) if part.strip()))
    marks = text.count("?") + text.count("？")
    question_words = count_matches(raw, markers.question)
    # A question mark closes one question however many question words it holds; without any
    # (STARD and forum questions often lack them) two question words count as one more issue.
    questions = max(1, marks if marks else 1 + question_words // 3)
    domains = sum(1 for cues in markers.domains.values() if distinct_matches(raw, cues))
    return QuestionFeatures(
        lang=lang,
        tokens=len(analyzer.terms(raw)),
        clauses=clauses,
        sentences=sentences,
        conditionals=count_matches(raw, markers.conditional),
        connectives=count_matches(raw, markers.connective),
        negations=markers.negations(raw),
        numbers=len(_NUMBER.findall(text)) + count_matches(raw, markers.quantity) // 2,
        questions=questions,
        parties=len(distinct_matches(raw, markers.party)),
        relations=count_matches(raw, markers.relation),
        domains=domains,
        citations=_citation_count(text, lang),
        laws=laws,
    )


def _citation_count(text: str, lang: str) -> int:
    from service.corpus.citations import extract

    try:
        return len({c.key for c in extract(text, lang=lang)})
    except Exception:  # citation parsing is best effort here; a parser bug must not break routing
        return 0


@dataclass(frozen=True)
class Dimensions:
    """The five CoAL-RAG dimensions of one question, each in [0, 1]."""

    reasoning_chain: float
    knowledge_integration: float
    domain_span: float
    relational_reasoning: float
    conditional_density: float

    def mean(self) -> float:
        """``C_5D``: the unweighted mean of the five dimensions."""
        return sum(self.to_dict().values()) / len(DIMENSION_NAMES)

    def to_dict(self) -> dict[str, float]:
        return {name: round(getattr(self, name), 6) for name in DIMENSION_NAMES}

    @classmethod
    def from_dict(cls, values: dict[str, float]) -> Dimensions:
        """From a mapping with exactly the five names (e.g. a validated LLM answer); values are clipped to [0, 1].

        Raises:
            ValueError: when a name is missing or a value is not a finite number.
        """
        missing = [n for n in DIMENSION_NAMES if n not in values]
        if missing:
            raise ValueError(f"missing complexity dimensions {missing}")
        out = {}
        for name in DIMENSION_NAMES:
            value = float(values[name])
            if not math.isfinite(value):
                raise ValueError(f"complexity dimension {name} is not finite")
            out[name] = min(1.0, max(0.0, value))
        return cls(**out)


def dimensions(f: QuestionFeatures) -> Dimensions:
    """The five dimensions from the counts, each a saturating function of one count.

    * reasoning chain: extra clauses plus reasoning connectives, ``sat(clauses - 1 + connectives, 4)``;
    * knowledge integration: sources to combine beyond one, ``sat(laws - 1 + citations + questions - 1, 2)``
      (``laws`` = 1 without a classifier);
    * domain span: legal domains beyond the first, ``sat(domains - 1, 1.5)``;
    * relational reasoning: parties beyond the first plus half the relation words,
      ``sat(parties - 1 + relations / 2, 3)``;
    * conditional-constraint density: conditions plus half the negations and numeric constraints,
      per sentence, ``sat((conditionals + (negations + numbers) / 2) / sentences, 1.5)``.

    Example::

        dimensions(question_features("如果公司不签劳动合同，员工能否要求双倍工资？", "zh")).to_dict()
    """
    laws = f.laws if f.laws is not None else 1
    constraint = (f.conditionals + 0.5 * (f.negations + f.numbers)) / max(1, f.sentences)
    return Dimensions(
        reasoning_chain=saturate(f.clauses - 1 + f.connectives, REASONING_SCALE),
        knowledge_integration=saturate(max(0, laws - 1) + f.citations + (f.questions - 1), KNOWLEDGE_SCALE),
        domain_span=saturate(f.domains - 1, DOMAIN_SCALE),
        relational_reasoning=saturate(f.parties - 1 + 0.5 * f.relations, RELATION_SCALE),
        conditional_density=saturate(constraint, CONDITION_SCALE),
    )


def base_complexity(f: QuestionFeatures) -> float:
    """``C_base = sat(tokens, 40)``: longer questions carry more facts to match."""
    return saturate(f.tokens, LENGTH_SCALE)


def intrinsic(c_base: float, c_5d: float, *, base_weight: float = 0.3) -> float:
    """``C_intrinsic = base_weight * C_base + (1 - base_weight) * C_5D``.

    Example::

        intrinsic(0.5, 0.2)   # 0.3 * 0.5 + 0.7 * 0.2 = 0.29
    """
    _check_unit("base_weight", base_weight)
    return base_weight * c_base + (1.0 - base_weight) * c_5d


def qsi(bm25_top1: float | None, *, a: float, b: float) -> float:
    """Query specificity ``sigmoid(a * (bm25_top1 - b))``; 0 when BM25 found nothing.

    ``a`` and ``b`` are calibrated per index (see :mod:`service.routing.calibration`); the paper's
    own corpus gave ``a = 0.5, b = 12.5``.

    Example::

        qsi(12.5, a=0.5, b=12.5)   # 0.5
    """
    if bm25_top1 is None or not math.isfinite(bm25_top1):
        return 0.0
    return sigmoid(a * (bm25_top1 - b))


def rdi(bm25_ids: Sequence[str], knn_ids: Sequence[str], *, k: int = 10, top: int = 3,
        jaccard_weight: float = 0.7) -> float:
    """Retrieval divergence ``1 - (w * Jaccard(top-k sets) + (1 - w) * |top-3 ∩ top-3| / 3)``.

    Empty inputs diverge completely (1.0): with one retriever silent there is no agreement to rely on.

    Example::

        rdi(["a", "b", "c", "d"], ["b", "a", "e", "f"], k=4)   # 1 - (0.7 * 2/6 + 0.3 * 2/3) = 0.5667
    """
    if k < 1 or top < 1:
        raise ValueError("rdi needs k >= 1 and top >= 1")
    _check_unit("jaccard_weight", jaccard_weight)
    a, b = set(bm25_ids[:k]), set(knn_ids[:k])
    if not a or not b:
        return 1.0
    jaccard = len(a & b) / len(a | b)
    overlap = len(set(bm25_ids[:top]) & set(knn_ids[:top])) / top
    return 1.0 - (jaccard_weight * jaccard + (1.0 - jaccard_weight) * overlap)


def consistency(qsi_value: float, rdi_value: float, *, p: float = 1.5, q: float = 0.3) -> float:
    """Retrieval-consistency complexity by competitive gating of ``u = 1 - QSI`` and ``v = RDI``.

    Both signals say "hard" when high. The gate lets the stronger one win: each signal's weight is
    its own value to the power ``p`` (``w_u = u^p / (u^p + v^p)``), so with ``p = 1.5`` the larger
    signal takes most of the weight; ``q`` keeps a share of the plain average so that the weaker
    signal still counts::

        G = (u^(p+1) + v^(p+1)) / (u^p + v^p)        (0 when u = v = 0)
        C_consistency = (1 - q) * G + q * (u + v) / 2

    Example::

        consistency(0.0, 1.0)   # u = v = 1: G = 1, C = 1.0
        consistency(1.0, 1.0)   # u = 0, v = 1: G = 1, C = 0.7 + 0.3 * 0.5 = 0.85
    """
    if p <= 0:
        raise ValueError("gating exponent p must be positive")
    _check_unit("q", q)
    u, v = 1.0 - _clip(qsi_value), _clip(rdi_value)
    denominator = u**p + v**p
    gated = 0.0 if denominator == 0 else (u ** (p + 1) + v ** (p + 1)) / denominator
    return (1.0 - q) * gated + q * (u + v) / 2.0


def fuse(c_intrinsic: float | None, c_consistency: float | None, *, gamma: float = 0.5) -> float:
    """``C = gamma * C_intrinsic + (1 - gamma) * C_consistency``; a missing part leaves the other alone.

    The ablations "without intrinsic" and "without consistency" pass ``None`` for that part.

    Raises:
        ValueError: when both parts are missing.
    """
    _check_unit("gamma", gamma)
    if c_intrinsic is None and c_consistency is None:
        raise ValueError("complexity needs at least one of the intrinsic and consistency parts")
    if c_intrinsic is None:
        return float(c_consistency)  # type: ignore[arg-type]
    if c_consistency is None:
        return float(c_intrinsic)
    return gamma * c_intrinsic + (1.0 - gamma) * c_consistency


def _clip(x: float) -> float:
    return min(1.0, max(0.0, float(x)))


def _check_unit(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, got {value}")
