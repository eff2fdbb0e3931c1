"""Training: one command from a dataset split to a ready model folder (``lexsearch train``).

What is learned, all from the split's questions and their gold articles:

1. the hybrid fusion weights (:func:`fit_fusion_weights`), the law/section classifier, the question
   memory, the article classifier, the article prior, the term mapping and the query adapter (fast,
   closed-form or convex fits);
2. the planner policy: which agents bring gold articles the pool lacked, for which questions;
3. the learned rerankers (LightGBM lambdarank, each the mean of :data:`RERANKER_MEMBERS` seeded
   boosters) over agentic pools and over hybrid pools;
4. the routing calibration: thresholds, gamma and the score-cliff cut of the routed pipeline.

Steps 2 and 3 need pools that look like pools at search time. A model fitted on a question would
know its answer, so the split is cut into folds and each fold's pools are built with parts fitted
on the other folds (cross-fitting). The same folds give a cross-validated Recall@10 of the
reranker, written to the manifest. The final parts are then fitted on the whole split. The served
rerankers average boosters trained on the pools of :data:`PARTITIONS` different cuts of the split
into folds: one cut's pools depend on which questions fitted which fold's parts, and averaging over
cuts evens that out (docs/BENCHMARKS.md, "Rerankers averaged over fold partitions").

Step 4 needs every tier's recall on questions the models have not seen, so it reuses the folds:
for each fold, a complete model set of the other folds (that fold's parts, and a planner policy
and rerankers fitted without its questions, with as many trees as the served ones) runs each
tier on the fold's questions (:func:`service.routing.measure.collect_fit_data`): a seeded
sample of :data:`CALIBRATION_QUESTIONS` spread over the folds, or all of them. The grid search
then sees each measured question once, out of sample, measured with models about as strong and
as costly as the served ones. The result goes into the manifest (entry ``routing``),
and the routed pipeline uses it whenever it runs with this model folder.

The work is a sequence of named steps over one :class:`TrainingRun` (:data:`STEPS`); each step
reads what earlier ones left there and is timed in the manifest (``timings_s``). A new learned
part joins as one more step. Inputs are checked before any of it (:func:`check_inputs`).

Example::

    report = train_models(runtime, Dataset("data/stard-split"), "fit", "models/stard")
    report.to_dict()["cv"]        # {'agentic_recall@10': 0.63, 'agentic_rounds': 300, ...}
"""

from __future__ import annotations

import logging
import random
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from tqdm import tqdm

from service.agents.base import PlanView
from service.agents.law_evidence import LawEvidence, LawMixer, top_k_accuracy
from service.agents.planner import POOL_AGENTS, QUESTION_AGENTS, PlannerPolicy, policy_vector
from service.agents.prefilter import LawClassifier
from service.agents.rewriters.terminology import QueryAdapter, TermMapping
from service.agents.vocabulary import Vocabulary
from service.analysis.chain import analyzer_for
from service.analysis.language import detect_language
from service.config import Settings
from service.corpus.datasets import Dataset
from service.corpus.graph import CorpusGraph
from service.corpus.joined import joined_for_training
from service.corpus.model import Query
from service.corpus.views import bm25_text, embedding_text
from service.errors import DataError, InvalidInput
from service.evaluation.dataset_index import ensure_dataset_index
from service.models import (
    MANIFEST,
    ROUTING_ENTRY,
    TrainedModels,
    forget_models,
    read_models,
    reranker_files,
    update_manifest,
)
from service.pipelines.agentic import AgenticPipeline, AgenticState
from service.pipelines.base import Probe, SearchRequest, check_query_lengths
from service.pipelines.build import Runtime
from service.pipelines.hybrid import HybridPipeline
from service.pipelines.issue_pool import RESERVES, balanced_order, issue_of
from service.pipelines.resources import IndexResources
from service.rerank.article_classifier import ArticleClassifier
from service.rerank.citation_count import CitationCounter
from service.rerank.cocitation import CoCitation
from service.rerank.compiled import compile_models
from service.rerank.features import FEATURE_NAMES
from service.rerank.learned import LearnedReranker
from service.rerank.pools import POOLS_FILE, Pools, TrainingPools, load_pools, save_pools
from service.retrieval.weights import FusionFit, fit_weights, with_trained
from service.routing.measure import collect_fit_data
from service.routing.tuning import CalibrationTargets, FitData, fit_calibration

log = logging.getLogger(__name__)
T = TypeVar("T")

FOLDS = 5
SEED = 13
ROUND_GRID = (60, 120, 200, 300)
"""Boosting rounds tried in the cross-validation; the best is used for the final rerankers."""
RERANKER_MEMBERS = 5
"""Boosters (seeds) each learned reranker averages, in the cross-validation and in the served model
(:class:`~service.rerank.learned.LearnedReranker`; docs/BENCHMARKS.md, "Rerankers averaged over seeds")."""

PARTITIONS = 2
"""Cuts of the split into folds whose pools train the served rerankers (``--partitions``). The first
cut (seed :data:`SEED`) also gives the planner policy, the law mixer and the cross-validation (rounds,
balance reserve, citation counter); each further cut (seeds ``SEED + 1``, …) is cross-fitted again and
searched for pools only. The rerankers average :data:`RERANKER_MEMBERS` boosters per cut."""
MAX_PARTITIONS = 5

DEFAULT_TARGETS = CalibrationTargets()
"""Routing calibration targets: 95 % of the top tier's Recall@10 at half its mean latency."""
CALIBRATION_QUESTIONS = 300
"""Questions the routing calibration measures every tier on (a seeded sample spread evenly over the
folds; 0 = all). Measuring was most of the training time (STARD, 1,000 questions: 3,320 of 5,570 s);
on 300 STARD questions the 90 % bootstrap bounds lay 2 to 3 points from the fit's recall and
latency shares (docs/BENCHMARKS.md), and the manifest keeps the bounds of every calibration."""

@dataclass
class TrainingData:
    """A split's questions, prepared once: terms, embeddings, gold articles and their terms/embeddings."""

    queries: list[Query]
    golds: list[set[str]]
    tokens: list[list[str]]
    vectors: np.ndarray
    gold_terms: dict[str, set[str]]
    gold_vectors: dict[str, np.ndarray]
    language: str


@dataclass
class TrainReport:
    """What training did: sizes, cross-validated scores, the routing calibration and timings."""

    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.info)


def prepare(runtime: Runtime, dataset: Dataset, split: str, index: str, graph: CorpusGraph) -> TrainingData:
    """Read the split and compute everything per question and per gold article once.

    Raises:
        DataError: when the split has no question with a gold article in the corpus.
    """
    qrels = dataset.qrels(split)
    queries, golds = [], []
    for q in dataset.queries(split):
        gold = {d for d in qrels.get(q.qid, set()) if d in graph}
        if gold:
            queries.append(q)
            golds.append(gold)
    if not queries:
        raise DataError(f"{dataset.path}: split {split!r} has no question with a gold article in the index")
    language = dataset.query_language
    tokens = [analyzer_for(q.lang or language or detect_language(q.text)).tokens(q.text) for q in queries]
    # Embedded as the probe embeds them at search time (long questions: the passage mean).
    embedder = runtime.index_embedder(index)
    hybrid = HybridPipeline(runtime.backend, runtime.retrieval, runtime.settings.retrieval)
    vectors = np.asarray([hybrid.query_vector(q.text, index) for q in queries], dtype=np.float32)
    gold_ids = sorted({d for g in golds for d in g})
    docs = runtime.backend.fetch(index, gold_ids)
    gold_terms = {d: set(analyzer_for(doc.lang or language).tokens(bm25_text(doc))) for d, doc in docs.items()}
    doc_vectors = embedder.embed_documents([embedding_text(docs[d]) for d in gold_ids if d in docs])
    gold_vectors = {d: v for d, v in zip([d for d in gold_ids if d in docs], doc_vectors, strict=True)}
    return TrainingData(queries, golds, tokens, vectors, gold_terms, gold_vectors, language)


def fit_fusion_weights(runtime: Runtime, data: TrainingData, index: str) -> FusionFit:
    """The BM25/kNN fusion weights that rank the split's gold best (a step of ``lexsearch train``).

    One weight, fitted on the whole split, also fuses the pools of the cross-fitted folds (one number
    leaks across folds), so that the rerankers learn from pools fused as the served model fuses them.
    """
    cfg = runtime.settings.retrieval
    hybrid = runtime.pipeline("hybrid")
    assert isinstance(hybrid, HybridPipeline)
    # BM25 as the probe runs it (long questions: their weighted key terms), kNN with the probe's vector.
    lists = [(hybrid.bm25(q.text, index, k=cfg.depth, filters=None, lang=q.lang),
              runtime.backend.knn(index, vector, k=cfg.depth))
             for q, vector in zip(data.queries, data.vectors, strict=True)]
    return fit_weights(lists, data.golds, cfg, method="trained", depth=cfg.depth)


def fit_parts(data: TrainingData, rows: Sequence[int], graph: CorpusGraph, vocabulary: Vocabulary | None,
              embedder: str) -> TrainedModels:
    """The question-level parts (classifiers, memory, prior, term mapping, adapter) fitted on ``rows``."""
    tokens = [data.tokens[i] for i in rows]
    vectors = data.vectors[list(rows)]
    golds = [data.golds[i] for i in rows]
    sections = [[graph.info(d).block for d in g] for g in golds]  # type: ignore[union-attr]
    law_of = {s: s.rsplit("#", 1)[0] for labels in sections for s in labels}
    classifier = LawClassifier.fit(tokens, vectors, sections, law_of)
    from service.rerank.priors import ArticlePrior, QuestionMemory

    memory = QuestionMemory.fit(tokens, vectors, golds)
    article_classifier = ArticleClassifier.fit(tokens, golds)
    cocitation = CoCitation.fit(golds)
    prior = ArticlePrior.fit(golds, graph.law_of)
    answers = [set().union(*(data.gold_terms.get(d, set()) for d in g)) for g in golds]
    mapping = TermMapping.fit(tokens, answers)
    targets = []
    keep = []
    for j, g in enumerate(golds):
        vs = [data.gold_vectors[d] for d in sorted(g) if d in data.gold_vectors]  # a set's order varies
        if vs:
            targets.append(np.mean(vs, axis=0))
            keep.append(j)
    adapter = QueryAdapter.fit(vectors[keep], np.asarray(targets)) if keep else None
    return TrainedModels(language=data.language, embedder=embedder, law_classifier=classifier, memory=memory,
                         article_classifier=article_classifier, prior=prior, term_mapping=mapping, adapter=adapter,
                         vocabulary=vocabulary, cocitation=cocitation)


def folds_of(n: int, folds: int = FOLDS, seed: int = SEED) -> list[list[int]]:
    """A seeded split of ``range(n)`` into ``folds`` parts of near-equal size."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [sorted(order[f::folds]) for f in range(folds)]


def rows_except(parts: Sequence[Sequence[int]], f: int) -> list[int]:
    """The rows of every fold of ``parts`` but ``f``."""
    return [i for g, part in enumerate(parts) if g != f for i in part]


def _request(query: Query, index: str, k: int) -> SearchRequest:
    return SearchRequest(query=query.text, index=index, k=k, lang=query.lang, qid=query.qid,
                         options={"reranker": "none"})


def policy_rows(pipe: AgenticPipeline, query: Query, gold: set[str], index: str, k: int
                ) -> dict[str, tuple[np.ndarray, int]]:
    """Run every agent once (question-side agents on the first pool, pool-side agents on the merged
    one) and record, per agent, the planner input and whether it *surfaced* a gold article: put one
    into its top ten that the pool's current top ten lacks (new to the pool or ranked lower there)."""
    state = pipe.start(_request(query, index, k))
    rows: dict[str, tuple[np.ndarray, int]] = {}
    steps = []
    x0 = policy_vector(state.features, _view(state, QUESTION_AGENTS))
    top0 = set(pipe.pool_order(state)[:10])
    for agent in QUESTION_AGENTS:
        if agent == "hyde":
            continue
        step = pipe.rewrite(state, agent)
        found = {h.doc_id for hits in step.hits for h in hits}
        rows[agent] = (x0, int(bool((found - top0) & gold)))
        steps.append(step)
    state = pipe.merge(state, steps)
    x1 = policy_vector(state.features, _view(state, POOL_AGENTS))
    top1 = set(pipe.pool_order(state)[:10])
    for agent in POOL_AGENTS:
        step = pipe.rewrite(state, agent)
        found = {h.doc_id for hits in step.hits for h in hits}
        rows[agent] = (x1, int(bool((found - top1) & gold)))
    return rows


def law_evidence(runtime: Runtime, models: TrainedModels, data: TrainingData, i: int, index: str,
                 graph: CorpusGraph, k: int) -> LawEvidence:
    """The law evidence of training question ``i`` as a search sees it, with ``models``' classifier and
    fusion weights."""
    query = data.queries[i]
    hybrid = runtime.pipeline("hybrid")
    assert isinstance(hybrid, HybridPipeline)
    bm25 = hybrid.bm25(query.text, index, k=k, filters=None, lang=query.lang)
    knn = runtime.backend.knn(index, data.vectors[i], k=k)
    weights = with_trained(runtime.retrieval(index).weights, models.fusion, runtime.settings.retrieval)
    probe = Probe(bm25, knn, data.vectors[i], weights, depth=k)
    ranked = [graph.law_of(h.doc_id) for h in hybrid.fuse(probe)]
    clf = models.law_classifier
    laws = clf.law_probabilities(data.tokens[i], data.vectors[i]) if clf is not None else []
    return LawEvidence.gather(query.text, laws, ranked, graph.laws())


def _law_accuracy(evidence: Sequence[LawEvidence], gold: Sequence[set[str]], mixer: LawMixer) -> dict[str, Any]:
    """Top-1 and top-3 accuracy of the classifier alone and of the mixed prediction, and the weights."""
    out: dict[str, Any] = {}
    for name, model in (("classifier", LawMixer()), ("mixed", mixer)):
        ranked = [[law for law, _ in model.probabilities(e)] for e in evidence]
        out[name] = {f"top{k}": round(top_k_accuracy(ranked, gold, k), 4) for k in (1, 3)}
    out["weights"] = mixer.to_json()["weights"]
    return out


def _view(state: AgenticState, allowed: Sequence[str]) -> PlanView:
    return PlanView(question=state.request["query"], language=state.language, round=state.round, max_rounds=4,
                    allowed=list(allowed), used=state.used, new_per_round=state.new_per_round,
                    features=state.features)


@dataclass
class PoolRows:
    """One question's training pool: feature rows and 0/1 labels, the question's number, and per row
    the issue the candidate answers (:func:`~service.pipelines.issue_pool.issue_of`) of ``issues``."""

    features: np.ndarray
    labels: np.ndarray
    number: int
    answers: list[int | None]
    issues: int


def pool_rows(pipe: AgenticPipeline, query: Query, gold: set[str], index: str, k: int, number: int) -> PoolRows:
    """The pool of one question, searched as at query time (no reranking), as training rows."""
    state = pipe.start(_request(query, index, k))
    while True:
        agents = pipe.plan(state)
        if not agents:
            break
        state = pipe.merge(state, [pipe.rewrite(state, a) for a in agents])
    # Every candidate, as at query time: dropping "uninteresting" ones would teach the trees that a
    # deep first-retrieval rank means "found by something else", which is often relevant.
    features = pipe.pool_features(state)
    hits = list(state.pool.values())
    labels = np.asarray([1.0 if h.doc_id in gold else 0.0 for h in hits], dtype=np.float32)
    issues = len(state.issues)
    return PoolRows(features, labels, number, [issue_of(h, issues) for h in hits], issues)


def _pools_of(rows: Sequence[PoolRows]) -> Pools:
    """``rows`` as pools to keep in the model folder (features and labels)."""
    return Pools.of([p.features for p in rows], [p.labels for p in rows])


def _fit(pools: Sequence[PoolRows], rounds: int, threads: int, label: str = "learned") -> LearnedReranker:
    """The reranker of ``pools``, trained on ``threads`` threads (``cpu.threads``: LightGBM's OpenMP
    threads spin while they wait, so two trainings that each take every core stall each other)."""
    return _fit_sets([pools], rounds, threads, label)


def _fit_sets(sets: Sequence[Sequence[PoolRows]], rounds: int, threads: int, label: str = "learned") -> LearnedReranker:
    """The reranker averaging :data:`RERANKER_MEMBERS` boosters per set of pools (one set per cut into folds)."""
    return LearnedReranker.fit_sets([(np.concatenate([p.features for p in pools]),
                                      np.concatenate([p.labels for p in pools]), [len(p.labels) for p in pools])
                                     for pools in sets],
                                    FEATURE_NAMES, rounds=rounds, label=label, members=RERANKER_MEMBERS,
                                    params={"num_threads": threads})


@dataclass
class RerankerCV:
    """What the reranker's cross-validation found: out-of-fold Recall@10 by (boosting rounds, balance
    reserve), over the split's own questions (``singles``), over the questions joined from them
    (``joined``) and over both."""

    singles: dict[tuple[int, int], float]
    joined: dict[tuple[int, int], float]
    both: dict[tuple[int, int], float]
    rankings: dict[int, dict[int, tuple[np.ndarray, np.ndarray]]]
    """By number of rounds, each own question's out-of-fold ranking: its pool's labels and scores, best
    first (unbalanced)."""
    models: dict[int, LearnedReranker]
    """By fold, the model fitted without it (``max(ROUND_GRID)`` rounds)."""

    def best_rounds(self) -> int:
        """The rounds with the best recall on the split's own questions, without balancing."""
        return max(ROUND_GRID, key=lambda n: self.singles[(n, 0)])

    def best_reserve(self, rounds: int) -> int:
        """The reserve with the best recall over all questions (own and joined) at ``rounds``."""
        return max(RESERVES, key=lambda r: (round(self.both[(rounds, r)], 6), -r))


def _cv_recall(pools: list[PoolRows], folds: list[list[int]], gold_counts: list[int], *, singles: int,
               threads: int, bar: tqdm | None = None, borrowed: Sequence[PoolRows] = ()) -> RerankerCV:
    """Out-of-fold Recall@10 of the reranker for each number of boosting rounds in :data:`ROUND_GRID`
    and each balance reserve in :data:`~service.pipelines.issue_pool.RESERVES` (numbers below
    ``singles`` are the split's own questions, the rest joined ones), each own question's
    out-of-fold ranking, and the model fitted without each fold.

    ``gold_counts`` are the full gold-set sizes, so gold articles missing from a pool count as misses.
    ``borrowed`` pools (another training's, ``--borrow``) join every fold's training and are never scored.
    """
    own: dict[tuple[int, int], list[float]] = {(n, r): [] for n in ROUND_GRID for r in RESERVES}
    joined: dict[tuple[int, int], list[float]] = {(n, r): [] for n in ROUND_GRID for r in RESERVES}
    rankings: dict[int, dict[int, tuple[np.ndarray, np.ndarray]]] = {n: {} for n in ROUND_GRID}
    models: dict[int, LearnedReranker] = {}
    for f, held in enumerate(folds):
        held_set = set(held)
        train = [p for p in pools if p.number not in held_set] + list(borrowed)
        test = [p for p in pools if p.number in held_set]
        if not test:
            continue
        model = models[f] = _fit(train, max(ROUND_GRID), threads)
        matrix = np.concatenate([p.features for p in test])
        bounds = np.cumsum([0] + [len(p.labels) for p in test])
        for n in ROUND_GRID:
            scores = model.predict_first(matrix, n, threads=threads)
            for j, pool in enumerate(test):
                part = scores[bounds[j]:bounds[j + 1]]
                order = np.argsort(-part, kind="stable")
                if pool.number < singles:
                    rankings[n][pool.number] = (pool.labels[order], part[order])
                answers = [pool.answers[i] for i in order]
                for r in RESERVES:
                    top = order[balanced_order(answers, pool.issues, reserve=r)[:10]]
                    recall = float(pool.labels[top].sum()) / gold_counts[pool.number]
                    (own if pool.number < singles else joined)[(n, r)].append(recall)
        if bar is not None:
            bar.update(1)
    both = {key: float(np.mean(own[key] + joined[key])) for key in own}
    return RerankerCV({k: float(np.mean(v)) for k, v in own.items()},
                      {k: float(np.mean(v)) for k, v in joined.items() if v}, both, rankings, models)


def fit_citation_counter(data: TrainingData, parts: list[list[int]],
                         rankings: dict[int, tuple[np.ndarray, np.ndarray]]) -> CitationCounter:
    """The citation counter on the whole split, its multiplier tuned on out-of-fold counts and rankings."""
    texts = [q.text for q in data.queries]
    counts = [len(g) for g in data.golds]
    expected = [0.0] * len(texts)
    for f, held in enumerate(parts):
        rest = [i for g, p in enumerate(parts) if g != f for i in p]
        fold_counter = CitationCounter.fit([texts[i] for i in rest], [counts[i] for i in rest])
        for i in held:
            expected[i] = fold_counter.expected(texts[i])
    usable = [i for i in range(len(texts)) if i in rankings]
    return CitationCounter.fit(texts, counts).tuned([expected[i] for i in usable],
                                                   [rankings[i][0] for i in usable],
                                                   [rankings[i][1] for i in usable], [counts[i] for i in usable])


def check_inputs(settings: Settings, dataset: Dataset, split: str, out: str | Path, *, folds: int = FOLDS,
                 calibration: CalibrationTargets | None = None, calibration_questions: int = 0,
                 partitions: int = PARTITIONS) -> None:
    """Check everything that can be checked before the long work starts.

    ``calibration_questions`` must be 0 (all) or at least ``folds`` (one question per fold). The split
    must exist and hold at least ``folds`` questions with gold articles, none of them
    longer than the query limit (``retrieval.max_query_chars``: training runs each question as a
    search, and a search refuses longer ones); ``out`` must be a new or model folder that can be
    written.

    Raises:
        InvalidInput: naming the first problem found and how to mend it.
    """
    if not 2 <= folds <= 20:
        raise InvalidInput(f"--folds must be between 2 and 20, got {folds}")
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise InvalidInput(f"--partitions must be between 1 and {MAX_PARTITIONS}, got {partitions}")
    if calibration_questions < 0:
        raise InvalidInput(f"--calibration-questions must be 0 (all) or more, got {calibration_questions}")
    if calibration is not None and 0 < calibration_questions < folds:
        # Fewer questions than folds would round every fold's share of the sample to nothing.
        raise InvalidInput(f"--calibration-questions must be 0 (all) or at least --folds ({folds}), "
                           f"got {calibration_questions}")
    if calibration is not None:
        calibration.check()
    if split not in dataset.splits():
        raise InvalidInput(f"{dataset.path} has no split {split!r} (it has: {', '.join(dataset.splits()) or 'none'})")
    qrels = dataset.qrels(split)
    labelled = [q for q in dataset.queries(split) if qrels.get(q.qid)]
    check_query_lengths(labelled, settings.retrieval.max_query_chars)
    if len(labelled) < folds:
        raise InvalidInput(f"split {split!r} of {dataset.path} has {len(labelled)} questions with gold articles; "
                           f"training with {folds} folds needs at least {folds}")
    check_output_folder(out)


def check_output_folder(out: str | Path) -> None:
    """Make sure ``out`` can take a model folder: a new folder, or one with a manifest (a model folder
    trained before, which is replaced), that this process can write (created when missing).

    Raises:
        InvalidInput: for a file, a folder holding other files, or a folder that cannot be written.
    """
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise InvalidInput(f"the model folder {out} is a file")
    if folder.is_dir() and not (folder / MANIFEST).is_file() and any(
            not p.name.startswith(".") for p in folder.iterdir()):
        raise InvalidInput(f"{out} holds files but no trained models ({MANIFEST} missing); "
                           "give a new folder or one written by lexsearch train")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as exc:
        raise InvalidInput(f"cannot write the model folder {out}: {exc.strerror or exc}") from None


@dataclass
class TrainingRun:
    """One training run: its inputs, and what each step of :data:`STEPS` leaves for the next."""

    runtime: Runtime
    dataset: Dataset
    split: str
    out: Path
    folds: int = FOLDS
    partitions: int = PARTITIONS
    """Cuts into folds whose pools train the served rerankers (:data:`PARTITIONS`)."""
    calibration: CalibrationTargets | None = None
    """``None``: no routing calibration (``--no-calibrate``)."""
    calibration_questions: int = CALIBRATION_QUESTIONS
    """How many questions the calibration measures (0 = all; see :data:`CALIBRATION_QUESTIONS`)."""
    progress: Callable[[str], None] | None = None
    show_bars: bool = False
    index: str = ""
    graph: CorpusGraph | None = None
    data: TrainingData | None = None
    vocabulary: Vocabulary | None = None
    fusion: FusionFit | None = None
    """The trained BM25/kNN fusion weights."""
    parts: list[list[int]] = field(default_factory=list)
    """The folds: row numbers of ``data.queries``."""
    fold_models: list[TrainedModels] = field(default_factory=list)
    """Per fold, the question-level parts fitted on the other folds (with the fusion weights and,
    after the ``law_mixer`` step, the law mixer)."""
    law_mixer: LawMixer | None = None
    law_accuracy: dict[str, Any] = field(default_factory=dict)
    """Out-of-fold law prediction accuracy (manifest ``cv.law``)."""
    policy_rows: dict[str, list[tuple[int, np.ndarray, int]]] = field(default_factory=dict)
    """Per agent: (question row, planner input, 1 when the agent surfaced a gold article)."""
    policy: PlannerPolicy | None = None
    agentic_groups: list[PoolRows] = field(default_factory=list)
    """Agentic pools: the split's questions (numbered by row) and, after them, the questions joined
    from each fold's own questions."""
    hybrid_groups: list[PoolRows] = field(default_factory=list)
    more_cuts: list[CutPools] = field(default_factory=list)
    """The pools of each further cut into folds (``partitions`` > 1)."""
    borrowed: TrainingPools | None = None
    """Another training's reranker pools (``--borrow``), added to every reranker fit of this one."""
    gold_counts: list[int] = field(default_factory=list)
    """Gold-set size of each pool's question, by number."""
    cv_folds: list[list[int]] = field(default_factory=list)
    """The folds with the numbers of their joined questions."""
    issue_reserve: int | None = None
    """Places in the first ten each issue's best candidates are sure of, chosen by cross-validation."""
    rounds: int = 0
    """Boosting rounds of the rerankers, chosen by cross-validation."""
    cv_rerankers: dict[int, LearnedReranker] = field(default_factory=dict)
    """Per fold, the agentic reranker the cross-validation fitted without it (``max(ROUND_GRID)`` rounds)."""
    citation_counter: CitationCounter | None = None
    models: TrainedModels | None = None
    """The final models, fitted on the whole split."""
    routing: dict[str, Any] | None = None
    """The routing calibration (manifest entry ``routing``)."""
    info: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)
        log.info(message)

    def bar(self, total: int, desc: str, unit: str = "q") -> tqdm:
        return tqdm(total=total, desc=desc, unit=unit, disable=not self.show_bars, leave=False)

    @property
    def threads(self) -> int:
        """The computing threads of this process (``cpu.threads``, resolved by the runtime)."""
        return max(1, self.runtime.settings.cpu.threads)

    def prepared(self) -> TrainingData:
        assert self.data is not None, "the prepare step runs first"
        return self.data

    def borrowed_rows(self, kind: str) -> list[PoolRows]:
        """The borrowed pools of reranker ``kind`` (``agentic`` or ``hybrid``) as training rows (none
        without ``--borrow``); numbered -1, so no fold holds them and no score counts them."""
        if self.borrowed is None:
            return []
        pools = self.borrowed.agentic if kind == "agentic" else self.borrowed.hybrid
        return [PoolRows(x, y, -1, [], 1) for x, y in pools.groups()]


def step_index(run: TrainingRun) -> None:
    """Build (once) the dataset's index and read its corpus graph."""
    run.index = ensure_dataset_index(run.runtime, run.dataset)
    run.graph = IndexResources.get(run.runtime.backend, run.index, None).graph


def step_prepare(run: TrainingRun) -> None:
    """Read the split, embed its questions and gold articles, and count the corpus terms."""
    assert run.graph is not None
    run.say(f"reading {run.split} and embedding its questions")
    run.data = prepare(run.runtime, run.dataset, run.split, run.index, run.graph)
    backend = run.runtime.backend
    with run.bar(backend.count(run.index), "vocabulary", "doc") as bar:
        run.vocabulary = Vocabulary.build(_counted(backend.scan(run.index), bar), default_lang=run.data.language)


def step_fusion(run: TrainingRun) -> None:
    """The trained fusion weights (:func:`fit_fusion_weights`)."""
    run.fusion = fusion = fit_fusion_weights(run.runtime, run.prepared(), run.index)
    run.info["fusion_fit"] = {k: v for k, v in fusion.to_dict().items() if k not in ("bm25", "knn")}
    run.say(f"fusion weights: bm25 {fusion.bm25:.2f}, knn {fusion.knn:.2f} "
            f"(Recall@10 {fusion.evidence['curve'][f'{fusion.bm25:.2f}'][0]:.4f} on the split)")


def step_fold_parts(run: TrainingRun) -> None:
    """Cut the split into folds and fit the question-level parts of each on the other folds."""
    data = run.prepared()
    run.parts = folds_of(len(data.queries), run.folds)
    run.say(f"fitting the question-level parts of {run.folds} folds")
    run.fold_models = _fold_models(run, run.parts)


def _fold_models(run: TrainingRun, parts: Sequence[Sequence[int]]) -> list[TrainedModels]:
    """Per fold of ``parts``, the question-level parts fitted on the other folds, with the fusion
    weights (and the law mixer, once fitted)."""
    assert run.graph is not None and run.fusion is not None
    data = run.prepared()
    embedder = run.runtime.index_embedder(run.index).name
    out = []
    for f in tqdm(range(len(parts)), desc="fold parts", unit="fold", disable=not run.show_bars, leave=False):
        out.append(replace(fit_parts(data, rows_except(parts, f), run.graph, run.vocabulary, embedder),
                           fusion=run.fusion.weights("model"), law_mixer=run.law_mixer))
    return out


def step_law_mixer(run: TrainingRun) -> None:
    """The law mixer, from classifier probabilities that did not see the question. A corpus of one law
    (the BGB of GerLayQA, the Civil Code of COLIEE) has nothing to mix: no mixer, and no retrieval
    per question to find that out."""
    assert run.graph is not None
    if len(run.graph.laws()) < 2:
        run.say("no law mixer: the corpus has one law")
        run.law_accuracy = {"skipped": "the corpus has one law"}
        return
    data = run.prepared()
    run.say("fitting the law mixer (classifier, retrieval and mention evidence)")
    fold_of = {i: f for f, held in enumerate(run.parts) for i in held}
    evidence = [law_evidence(run.runtime, run.fold_models[fold_of[i]], data, i, run.index, run.graph, _depth(run))
                for i in range(len(data.queries))]
    gold_laws = [{run.graph.law_of(d) for d in g} for g in data.golds]
    try:
        mixer = LawMixer.fit(evidence, gold_laws)
    except ValueError as exc:  # e.g. a corpus of one law: nothing to mix, the classifier alone decides
        run.say(f"no law mixer: {exc}; law prediction uses the classifier alone")
        run.law_accuracy = {"skipped": str(exc)}
        return
    run.law_mixer = mixer
    run.fold_models = [replace(models, law_mixer=mixer) for models in run.fold_models]
    report = run.law_accuracy = _law_accuracy(evidence, gold_laws, mixer)
    run.say(f"law prediction (out of fold): top-1 {report['mixed']['top1']:.3f}, top-3 "
            f"{report['mixed']['top3']:.3f} (classifier alone {report['classifier']['top1']:.3f} / "
            f"{report['classifier']['top3']:.3f})")


def step_policy(run: TrainingRun) -> None:
    """The planner policy, from every agent's gains on cross-fitted pools."""
    data = run.prepared()
    run.say("running every agent on every question (planner policy)")
    with run.bar(len(data.queries), "planner policy") as bar:
        for f, held in enumerate(run.parts):
            pipe = AgenticPipeline.from_runtime(run.runtime, models=run.fold_models[f])
            for i in held:
                for agent, (x, gain) in policy_rows(pipe, data.queries[i], data.golds[i], run.index,
                                                    _depth(run)).items():
                    run.policy_rows.setdefault(agent, []).append((i, x, gain))
                bar.update(1)
    run.policy = _fit_policy(run.policy_rows)
    run.say("planner policy: " + ", ".join(
        f"{a} gains {m['base_rate']:.2f}, runs {m.get('run_rate', 0.0):.2f}" for a, m in run.policy.models.items()))


def step_pools(run: TrainingRun) -> None:
    """Reranker pools of every question, searched as at query time with its fold's parts and the policy.

    Each fold also gets questions joined from its own held-out questions (multi-issue pools; their
    parts never leave the fold), numbered after the split's questions, in the fold they came from.
    """
    data = run.prepared()
    run.say("searching every question as at query time (reranker pools)")
    cut = search_pools(run, run.parts, run.fold_models, SEED)
    run.agentic_groups, run.hybrid_groups = cut.agentic, cut.hybrid
    run.gold_counts = [len(g) for g in data.golds] + cut.joined_gold_counts
    run.cv_folds = [list(p) + joined for p, joined in zip(run.parts, cut.joined_by_fold, strict=True)]


@dataclass
class CutPools:
    """The pools of one cut of the split into folds (:func:`search_pools`)."""

    agentic: list[PoolRows]
    """The split's questions (numbered by row) and the questions joined in each fold, fold by fold."""
    hybrid: list[PoolRows]
    joined_gold_counts: list[int]
    """Gold-set size of each joined question, in the order of their numbers."""
    joined_by_fold: list[list[int]]
    """Per fold, the numbers of the questions joined from its questions."""
    sources: list[frozenset[int]]
    """Per agentic pool, the rows of the split its question is made of (one row, or a joined question's parts)."""

    def without(self, rows: set[int]) -> tuple[list[PoolRows], list[PoolRows]]:
        """The agentic and hybrid pools whose questions use none of ``rows``."""
        return ([p for p, used in zip(self.agentic, self.sources, strict=True) if not used & rows],
                [p for p in self.hybrid if p.number not in rows])


def search_pools(run: TrainingRun, parts: Sequence[Sequence[int]], fold_models: Sequence[TrainedModels],
                 seed: int) -> CutPools:
    """Every question of ``parts`` searched as at query time with its fold's models and the planner
    policy, plus the questions joined from each fold's questions (seeded ``seed`` + fold); joined
    questions are numbered from the number of the split's questions up."""
    assert run.graph is not None
    data = run.prepared()
    cut = CutPools([], [], [], [], [])
    row_of = {q.qid: i for i, q in enumerate(data.queries)}
    with run.bar(len(data.queries), "reranker pools") as bar:
        for f, held in enumerate(parts):
            models = replace(fold_models[f], planner=run.policy)
            agentic = AgenticPipeline.from_runtime(run.runtime, models=models)
            hybrid = AgenticPipeline.from_runtime(run.runtime, name="hybrid+rerank", rounds=False, models=models)
            for i in held:
                cut.agentic.append(pool_rows(agentic, data.queries[i], data.golds[i], run.index, _depth(run), i))
                cut.sources.append(frozenset([i]))
                cut.hybrid.append(pool_rows(hybrid, data.queries[i], data.golds[i], run.index, _depth(run), i))
                bar.update(1)
            joined = joined_for_training([data.queries[i].qid for i in held], [data.queries[i].text for i in held],
                                         [data.golds[i] for i in held], run.graph, language=data.language,
                                         seed=seed + f)
            numbers = []
            for j in joined:
                number = len(data.queries) + len(cut.joined_gold_counts)
                query = Query(text=j.text, qid=j.qid, lang=data.queries[held[0]].lang)
                cut.agentic.append(pool_rows(agentic, query, set(j.gold), run.index, _depth(run), number))
                cut.sources.append(frozenset(row_of[q] for q in j.parts))
                cut.joined_gold_counts.append(len(j.gold))
                numbers.append(number)
            cut.joined_by_fold.append(numbers)
    return cut


def step_more_cuts(run: TrainingRun) -> None:
    """The pools of the split cut into folds again (``partitions`` − 1 times, seeds ``SEED + 1``, …):
    the folds' parts are fitted anew, the planner policy and the law mixer are the first cut's."""
    data = run.prepared()
    for p in range(1, run.partitions):
        run.say(f"cutting the split into folds again ({p + 1} of {run.partitions}) for more reranker pools")
        parts = folds_of(len(data.queries), run.folds, seed=SEED + p)
        run.more_cuts.append(search_pools(run, parts, _fold_models(run, parts), SEED + p))


def step_rerankers(run: TrainingRun) -> None:
    """Cross-validate the boosting rounds and the balance reserve, then the citation counter."""
    data = run.prepared()
    singles = len(data.queries)
    run.say("cross-validating the rerankers")
    with run.bar(len(run.parts), "reranker cv", "fold") as bar:
        cv = _cv_recall(run.agentic_groups, run.cv_folds, run.gold_counts, singles=singles, threads=run.threads,
                        bar=bar, borrowed=run.borrowed_rows("agentic"))
    run.cv_rerankers = cv.models
    run.rounds = rounds = cv.best_rounds()
    run.issue_reserve = reserve = cv.best_reserve(rounds)
    run.citation_counter = counter = fit_citation_counter(data, run.parts, cv.rankings[rounds])
    own = [p for p in run.agentic_groups if p.number < singles]
    pool_recall = float(np.mean([p.labels.sum() / run.gold_counts[p.number] for p in own]))
    run.info["cv"] = {"agentic_recall@10": round(cv.singles[(rounds, reserve)], 4), "agentic_rounds": rounds,
                      "reranker_members": RERANKER_MEMBERS,
                      "agentic_by_rounds": {str(n): round(cv.singles[(n, 0)], 4) for n in ROUND_GRID},
                      "pool_recall": round(pool_recall, 4),
                      "mean_pool": round(float(np.mean([len(p.labels) for p in own])), 1),
                      "joined_questions": len(run.agentic_groups) - len(own),
                      "joined_recall@10": round(cv.joined[(rounds, reserve)], 4) if cv.joined else None,
                      "issue_reserve": reserve,
                      "by_reserve": {str(r): {"own": round(cv.singles[(rounds, r)], 4),
                                              "joined": (round(cv.joined[(rounds, r)], 4)
                                                         if (rounds, r) in cv.joined else None)}
                                     for r in RESERVES},
                      "law": run.law_accuracy,
                      **({"borrowed": {"from": list(run.borrowed.sources),
                                       "questions": len(run.borrowed.agentic)}} if run.borrowed else {}),
                      "citation_count": {"multiplier": counter.multiplier, "cliff": counter.cliff,
                                         "fixed_k": counter.fixed_k}}


def step_final(run: TrainingRun) -> None:
    """Fit the final models on the whole split and write the model folder."""
    assert run.graph is not None and run.fusion is not None
    data = run.prepared()
    run.say("fitting the final models on the whole split")
    every = list(range(len(data.queries)))
    final = fit_parts(data, every, run.graph, run.vocabulary, run.runtime.index_embedder(run.index).name)
    # per cut into folds: the split's questions, the ones joined from them, and any borrowed pools
    cuts = [(run.agentic_groups, run.hybrid_groups), *((c.agentic, c.hybrid) for c in run.more_cuts)]
    lent_agentic, lent_hybrid = run.borrowed_rows("agentic"), run.borrowed_rows("hybrid")
    agentic = _fit_sets([a + lent_agentic for a, _ in cuts], run.rounds, run.threads)
    hybrid = _fit_sets([h + lent_hybrid for _, h in cuts], run.rounds, run.threads, label="learned_hybrid")
    run.models = replace(final, fusion=run.fusion.weights("model"), planner=run.policy, law_mixer=run.law_mixer,
                         citation_counter=run.citation_counter, issue_reserve=run.issue_reserve,
                         reranker_agentic=agentic, reranker_hybrid=hybrid)
    run.info = {"dataset": run.dataset.name, "data": str(run.dataset.path), "split": run.split,
                "questions": len(data.queries), "corpus_documents": len(run.graph), "index": run.index,
                "folds": run.folds, "partitions": run.partitions, **run.info, "timings_s": dict(run.timings)}
    run.models.info = run.info
    run.models.save(run.out)
    # the first cut's only: a borrower would otherwise weigh these questions once per cut
    save_pools(run.out, agentic=_pools_of(run.agentic_groups), hybrid=_pools_of(run.hybrid_groups))


def step_compile(run: TrainingRun) -> None:
    """Compile the reranker trees into the model folder (once per model and CPU), unless switched off."""
    if run.runtime.settings.agents.compiled_trees:
        run.say("compiling the reranker trees (once per model and CPU)")
        compile_models(reranker_files(run.out), workers=run.threads)
        read_models(run.out, compile_trees=True)


def step_calibrate(run: TrainingRun) -> None:
    """Calibrate routing on cross-fitted folds (see the module docstring), unless switched off."""
    if run.calibration is None:
        return
    data = run.prepared()
    qrels = {q.qid: gold for q, gold in zip(data.queries, data.golds, strict=True)}
    settings = run.runtime.settings
    measured: list[FitData] = []
    sample = calibration_sample(run.parts, run.calibration_questions)
    run.say(f"calibrating routing: every tier on {sum(map(len, sample))} questions, each with the models of the "
            f"other {run.folds - 1} folds")
    with tempfile.TemporaryDirectory(prefix=".calibration-", dir=run.out) as scratch:
        folders = {f: _held_out_models(run, f).save(Path(scratch) / f"fold-{f + 1}")
                   for f, held in enumerate(sample) if held}
        if settings.agents.compiled_trees:  # every fold's trees before any timing, one process per core
            run.say(f"compiling the reranker trees of the {len(folders)} calibration folds")
            compile_models([file for folder in folders.values() for file in reranker_files(folder)],
                           workers=run.threads)
        with run.bar(sum(map(len, sample)), "calibrate routing") as bar:
            for f, folder in folders.items():
                runtime = Runtime(settings.replace(index={"model_dir": str(folder)}), backend=run.runtime.backend,
                                  embedder=run.runtime.index_embedder(run.index))
                try:
                    measured.append(collect_fit_data(runtime.pipeline("routed"), [data.queries[i] for i in sample[f]],
                                                     qrels, index=run.index,
                                                     forget_caches=runtime.forget_query_caches, progress=bar))
                finally:
                    forget_models(folder)
    run.routing = fit_calibration(FitData.concat(measured), run.calibration, calibrated_on={
        "dataset": run.dataset.name, "data": str(run.dataset.path), "split": run.split,
        "method": "cross-fitted", "folds": run.folds})
    fit = run.routing["fit"]["routing"]
    run.say(f"routing: thresholds {run.routing['thresholds']}, gamma {run.routing['gamma']}, tier shares "
            f"{fit['tier_shares']} ({fit['rule']}); Recall@10 kept >= {fit['kept_share_lower_bound']:.3f}, "
            f"latency share <= {fit['latency_share_upper_bound']:.3f}")


@dataclass(frozen=True)
class Step:
    """A named step of training; its time is recorded in the manifest under ``timings_s[name]``."""

    name: str
    run: Callable[[TrainingRun], None]


STEPS: tuple[Step, ...] = (
    Step("index", step_index),
    Step("prepare", step_prepare),
    Step("fusion", step_fusion),
    Step("fold_parts", step_fold_parts),
    Step("law_mixer", step_law_mixer),
    Step("policy", step_policy),
    Step("pools", step_pools),
    Step("cv", step_rerankers),
    Step("more_cuts", step_more_cuts),
    Step("final", step_final),
    Step("compile", step_compile),
    Step("calibrate", step_calibrate),
)
"""The steps of :func:`train_models`, in order. ``final`` writes the model folder, so a failure in a
later step leaves working (uncalibrated) models behind."""


def train_models(runtime: Runtime, dataset: Dataset, split: str, out: str | Path, *, folds: int = FOLDS,
                 partitions: int = PARTITIONS, calibration: CalibrationTargets | None = DEFAULT_TARGETS,
                 calibration_questions: int = CALIBRATION_QUESTIONS, borrow: Sequence[str | Path] = (),
                 progress: Callable[[str], None] | None = None, show_bars: bool = False) -> TrainReport:
    """Fit every learned part on ``split`` of ``dataset``, calibrate routing (unless ``calibration``
    is ``None``) and write the model folder ``out``, with the rerankers' training pools
    (:mod:`service.rerank.pools`). The rerankers also train on the pools of the model folders (or
    pools files) in ``borrow``, and average boosters over ``partitions`` cuts of the split into folds
    (:data:`PARTITIONS`).

    Raises:
        InvalidInput: for inputs :func:`check_inputs` refuses (before any long work).
        DataError: for a split without usable questions.
        LexsearchError: from the engine.
    """
    check_inputs(runtime.settings, dataset, split, out, folds=folds, calibration=calibration,
                 calibration_questions=calibration_questions, partitions=partitions)
    if any(Path(b).resolve() in (Path(out).resolve(), (Path(out) / POOLS_FILE).resolve()) for b in borrow):
        raise InvalidInput(f"--borrow {out}: that is the folder this training writes; borrow another one")
    run = TrainingRun(runtime, dataset, split, Path(out), folds=folds, partitions=partitions, calibration=calibration,
                      calibration_questions=calibration_questions, progress=progress,
                      show_bars=show_bars, borrowed=load_pools(borrow) if borrow else None)
    started = time.perf_counter()
    for step in STEPS:
        begin = time.perf_counter()
        try:
            step.run(run)
        except Exception:
            if run.models is not None:
                run.say(f"training step {step.name} failed; the models written to {run.out} work without it")
            raise
        run.timings[step.name] = round(time.perf_counter() - begin, 1)
    run.timings["total"] = round(time.perf_counter() - started, 1)
    run.info["timings_s"] = dict(run.timings)
    entries: dict[str, Any] = {"timings_s": run.info["timings_s"]}
    if run.routing is not None:
        run.info[ROUTING_ENTRY] = entries[ROUTING_ENTRY] = run.routing
    update_manifest(run.out, **entries)
    return TrainReport(run.info)


def calibration_sample(parts: Sequence[Sequence[int]], questions: int, seed: int = SEED) -> list[list[int]]:
    """At most ``questions`` rows (0 = all), drawn from each fold in proportion to its size (seeded)."""
    total = sum(map(len, parts))
    if not questions or questions >= total:
        return [list(p) for p in parts]
    rng = random.Random(seed)
    return [sorted(rng.sample(list(p), round(questions * len(p) / total))) for p in parts]


def _counted(items: Iterable[T], bar: tqdm) -> Iterator[T]:
    """``items``, advancing ``bar`` by one for each."""
    for item in items:
        yield item
        bar.update(1)


def _depth(run: TrainingRun) -> int:
    return max(100, run.runtime.settings.retrieval.depth)


def _fit_policy(rows: dict[str, list[tuple[int, np.ndarray, int]]], skip: frozenset[int] = frozenset()
                ) -> PlannerPolicy:
    """The planner policy from the agents' rows, leaving out the questions in ``skip``."""
    kept = {agent: [(x, gain) for i, x, gain in agent_rows if i not in skip] for agent, agent_rows in rows.items()}
    return PlannerPolicy.fit({agent: (np.asarray([x for x, _ in r]), np.asarray([g for _, g in r]))
                              for agent, r in kept.items()})


def _held_out_models(run: TrainingRun, f: int) -> TrainedModels:
    """A complete model set that never saw fold ``f``'s questions: the fold's parts, and a planner
    policy and rerankers (as many trees as the final ones) fitted on the other folds. The agentic
    reranker is the cross-validation's model of the fold, cut to the chosen rounds (the same model as
    a fit with those rounds, without fitting it again), averaged with boosters fitted on the further
    cuts' pools of questions that use none of the fold's."""
    held = set(run.parts[f])
    others = [cut.without(held) for cut in run.more_cuts]
    lent_agentic, lent_hybrid = run.borrowed_rows("agentic"), run.borrowed_rows("hybrid")
    agentic = run.cv_rerankers[f].first(run.rounds)
    if others:
        agentic = LearnedReranker.averaging(
            [agentic, _fit_sets([a + lent_agentic for a, _ in others], run.rounds, run.threads)])
    first_hybrid = [p for p in run.hybrid_groups if p.number not in held]  # hybrid pools are the split's rows
    hybrid = _fit_sets([first_hybrid + lent_hybrid, *(h + lent_hybrid for _, h in others)],
                       run.rounds, run.threads, label="learned_hybrid")
    return replace(run.fold_models[f], planner=_fit_policy(run.policy_rows, frozenset(held)),
                   issue_reserve=run.issue_reserve, reranker_agentic=agentic, reranker_hybrid=hybrid,
                   info={"data": str(run.dataset.path), "split": f"{run.split} without calibration fold {f + 1}"})
