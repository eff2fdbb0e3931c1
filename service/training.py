"""Training the offline models on a dataset split (``lexsearch train``).

What is learned, all from the split's questions and their gold articles:

1. the hybrid fusion weights (:func:`fit_fusion_weights`), the law/section classifier, the question
   memory, the article prior, the term mapping and the query adapter (fast, closed-form or convex fits);
2. the planner policy: which agents bring gold articles the pool lacked, for which questions;
3. the learned rerankers (LightGBM lambdarank) over agentic pools and over hybrid pools.

Steps 2 and 3 need pools that look like pools at search time. A model fitted on a question would
know its answer, so the split is cut into folds and each fold's pools are built with parts fitted
on the other folds (cross-fitting). The same folds give a cross-validated Recall@10 of the
reranker, written to the manifest. The final parts are then fitted on the whole split.

Example::

    report = train_models(runtime, Dataset("data/stard-split"), "fit", "models/stard")
    report.to_dict()["cv"]        # {'recall@10': 0.63, 'rounds': 300, ...}
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from service.corpus.datasets import Dataset
from service.corpus.graph import CorpusGraph
from service.corpus.joined import joined_for_training
from service.corpus.model import Query
from service.corpus.views import bm25_text, embedding_text
from service.errors import DataError
from service.evaluation.dataset_index import ensure_dataset_index
from service.models import TrainedModels, read_models
from service.pipelines.agentic import AgenticPipeline, AgenticState
from service.pipelines.base import Probe, SearchRequest
from service.pipelines.build import Runtime
from service.pipelines.hybrid import HybridPipeline
from service.pipelines.issue_pool import RESERVES, balanced_order, issue_of
from service.pipelines.resources import IndexResources
from service.rerank.citation_count import CitationCounter
from service.rerank.cocitation import CoCitation
from service.rerank.features import FEATURE_NAMES
from service.rerank.learned import LearnedReranker
from service.retrieval.weights import FusionFit, fit_weights, with_trained

log = logging.getLogger(__name__)

FOLDS = 5
SEED = 13
ROUND_GRID = (60, 120, 200, 300)
"""Boosting rounds tried in the cross-validation; the best is used for the final rerankers."""



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
    """What training did: sizes, cross-validated scores and timings."""

    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.info)


def _say(progress: Callable[[str], None] | None, message: str) -> None:
    if progress is not None:
        progress(message)
    log.info(message)


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
    language = dataset.language if dataset.language and "," not in dataset.language else ""
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
    return fit_weights(lists, data.golds, cfg, method="trained")


def fit_parts(data: TrainingData, rows: Sequence[int], graph: CorpusGraph, vocabulary: Vocabulary | None,
              embedder: str) -> TrainedModels:
    """The question-level parts (classifier, memory, prior, term mapping, adapter) fitted on ``rows``."""
    tokens = [data.tokens[i] for i in rows]
    vectors = data.vectors[list(rows)]
    golds = [data.golds[i] for i in rows]
    sections = [[graph.info(d).block for d in g] for g in golds]  # type: ignore[union-attr]
    law_of = {s: s.rsplit("#", 1)[0] for labels in sections for s in labels}
    classifier = LawClassifier.fit(tokens, vectors, sections, law_of)
    from service.rerank.priors import ArticlePrior, QuestionMemory

    memory = QuestionMemory.fit(tokens, vectors, golds)
    cocitation = CoCitation.fit(golds)
    prior = ArticlePrior.fit(golds, graph.law_of)
    answers = [set().union(*(data.gold_terms.get(d, set()) for d in g)) for g in golds]
    mapping = TermMapping.fit(tokens, answers)
    targets = []
    keep = []
    for j, g in enumerate(golds):
        vs = [data.gold_vectors[d] for d in g if d in data.gold_vectors]
        if vs:
            targets.append(np.mean(vs, axis=0))
            keep.append(j)
    adapter = QueryAdapter.fit(vectors[keep], np.asarray(targets)) if keep else None
    return TrainedModels(language=data.language, embedder=embedder, law_classifier=classifier, memory=memory,
                         prior=prior, term_mapping=mapping, adapter=adapter, vocabulary=vocabulary,
                         cocitation=cocitation)


def folds_of(n: int, folds: int = FOLDS, seed: int = SEED) -> list[list[int]]:
    """A seeded split of ``range(n)`` into ``folds`` parts of near-equal size."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [sorted(order[f::folds]) for f in range(folds)]


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
    ranked = [graph.law_of(h.doc_id) for h in hybrid.fuse(Probe(bm25, knn, data.vectors[i], weights))]
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


def _fit(pools: Sequence[PoolRows], rounds: int, label: str = "learned") -> LearnedReranker:
    return LearnedReranker.fit(np.concatenate([p.features for p in pools]), np.concatenate([p.labels for p in pools]),
                               [len(p.labels) for p in pools], FEATURE_NAMES, rounds=rounds, label=label)


@dataclass
class CrossValidation:
    """Out-of-fold Recall@10 by boosting rounds and by balance reserve, over the split's own questions
    (``singles``) and over the questions joined from them (``joined``)."""

    singles: dict[tuple[int, int], float]
    joined: dict[tuple[int, int], float]
    both: dict[tuple[int, int], float]
    rankings: dict[int, dict[int, tuple[np.ndarray, np.ndarray]]]
    """Per number of rounds, each own question's out-of-fold ranking (its pool's labels and scores, best
    first, unbalanced)."""

    def best_rounds(self) -> int:
        """The rounds with the best recall on the split's own questions, without balancing."""
        return max(ROUND_GRID, key=lambda n: self.singles[(n, 0)])

    def best_reserve(self, rounds: int) -> int:
        """The reserve with the best recall over all questions (own and joined) at ``rounds``."""
        return max(RESERVES, key=lambda r: (round(self.both[(rounds, r)], 6), -r))


def _cv_recall(pools: list[PoolRows], folds: list[list[int]], gold_counts: list[int], *,
               singles: int) -> CrossValidation:
    """Out-of-fold Recall@10 of the reranker for each number of boosting rounds in :data:`ROUND_GRID`
    and each balance reserve in :data:`~service.pipelines.issue_pool.RESERVES` (numbers below
    ``singles`` are the split's own questions, the rest joined ones), and each own question's
    out-of-fold ranking for each number of rounds.

    ``gold_counts`` are the full gold-set sizes, so gold articles missing from a pool count as misses.
    """
    own: dict[tuple[int, int], list[float]] = {(n, r): [] for n in ROUND_GRID for r in RESERVES}
    joined: dict[tuple[int, int], list[float]] = {(n, r): [] for n in ROUND_GRID for r in RESERVES}
    rankings: dict[int, dict[int, tuple[np.ndarray, np.ndarray]]] = {n: {} for n in ROUND_GRID}
    for held in folds:
        held_set = set(held)
        train = [p for p in pools if p.number not in held_set]
        test = [p for p in pools if p.number in held_set]
        if not test:
            continue
        model = _fit(train, max(ROUND_GRID))
        matrix = np.concatenate([p.features for p in test])
        bounds = np.cumsum([0] + [len(p.labels) for p in test])
        for n in ROUND_GRID:
            scores = model.booster.predict(matrix, num_iteration=n, num_threads=2)
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
    both = {key: float(np.mean(own[key] + joined[key])) for key in own}
    return CrossValidation({k: float(np.mean(v)) for k, v in own.items()},
                           {k: float(np.mean(v)) for k, v in joined.items() if v}, both, rankings)


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


def train_models(runtime: Runtime, dataset: Dataset, split: str, out: str | Path, *, folds: int = FOLDS,
                 progress: Callable[[str], None] | None = None, show_bars: bool = False) -> TrainReport:
    """Fit every learned part on ``split`` of ``dataset`` and write the model folder ``out``.

    Raises:
        DataError: for a split without usable questions.
        LexsearchError: from the engine.
    """
    started = time.perf_counter()
    timings: dict[str, float] = {}

    def lap(name: str, since: float) -> float:
        now = time.perf_counter()
        timings[name] = round(now - since, 1)
        return now

    index = ensure_dataset_index(runtime, dataset)
    graph = IndexResources.get(runtime.backend, index, None).graph
    t = time.perf_counter()
    _say(progress, f"reading {split} and embedding its questions")
    data = prepare(runtime, dataset, split, index, graph)
    t = lap("prepare", t)
    fusion = fit_fusion_weights(runtime, data, index)
    _say(progress, f"fusion weights: bm25 {fusion.bm25:.2f}, knn {fusion.knn:.2f} "
                   f"(Recall@10 {fusion.evidence['curve'][f'{fusion.bm25:.2f}'][0]:.4f} on the split)")
    t = lap("fusion", t)
    _say(progress, "building the corpus vocabulary")
    vocabulary = Vocabulary.build(runtime.backend.scan(index), default_lang=data.language)
    t = lap("vocabulary", t)
    embedder = runtime.index_embedder(index).name
    parts = folds_of(len(data.queries), folds)
    k = max(100, runtime.settings.retrieval.depth)
    fold_models = []
    for f in range(len(parts)):
        _say(progress, f"fold {f + 1}/{folds}: fitting the question-level parts")
        rest = [i for g, p in enumerate(parts) if g != f for i in p]
        fold_models.append(fit_parts(data, rest, graph, vocabulary, embedder))
        fold_models[-1].fusion = fusion.weights("model")
    t = lap("fold_parts", t)

    # The law mixer, from classifier probabilities that did not see the question. A corpus of one law
    # (the BGB of GerLayQA, the Civil Code of COLIEE) has nothing to mix: no mixer, no law report.
    mixer: LawMixer | None = None
    law_report: dict[str, Any] | None = None
    if len(graph.laws()) > 1:
        _say(progress, "fitting the law mixer (classifier, retrieval and mention evidence)")
        evidence: list[LawEvidence | None] = [None] * len(data.queries)
        for f, held in enumerate(parts):
            for i in held:
                evidence[i] = law_evidence(runtime, fold_models[f], data, i, index, graph, k)
        gold_laws = [{graph.law_of(d) for d in g} for g in data.golds]
        mixer = LawMixer.fit([e for e in evidence if e is not None], gold_laws)
        for models in fold_models:
            models.law_mixer = mixer
        law_report = _law_accuracy([e for e in evidence if e is not None], gold_laws, mixer)
        _say(progress, f"law prediction (out of fold): top-1 {law_report['mixed']['top1']:.3f}, top-3 "
                       f"{law_report['mixed']['top3']:.3f} (classifier alone "
                       f"{law_report['classifier']['top1']:.3f} / {law_report['classifier']['top3']:.3f})")
    t = lap("law_mixer", t)

    # The planner policy, from every agent's gains on cross-fitted pools.
    agent_rows: dict[str, tuple[list[np.ndarray], list[int]]] = {}
    for f, held in enumerate(parts):
        pipe = AgenticPipeline.from_runtime(runtime, models=fold_models[f])
        for i in tqdm(held, desc=f"policy fold {f + 1}", disable=not show_bars, leave=False):
            for agent, (x, gain) in policy_rows(pipe, data.queries[i], data.golds[i], index, k).items():
                xs, ys = agent_rows.setdefault(agent, ([], []))
                xs.append(x)
                ys.append(gain)
    policy = PlannerPolicy.fit({a: (np.asarray(xs), np.asarray(ys)) for a, (xs, ys) in agent_rows.items()})
    t = lap("policy", t)
    _say(progress, "planner policy: " + ", ".join(
        f"{a} gains {m['base_rate']:.2f}, runs {m.get('run_rate', 0.0):.2f}" for a, m in policy.models.items()))

    # Reranker pools, searched as at query time with the fold's parts and the policy. Each fold also
    # gets questions joined from its own held-out questions (multi-issue pools; their parts never
    # leave the fold). They are numbered after the split's questions, in the fold they came from.
    agentic_groups: list[PoolRows] = []
    hybrid_groups: list[PoolRows] = []
    gold_counts = [len(g) for g in data.golds]
    cv_folds = [list(p) for p in parts]
    for f, held in enumerate(parts):
        models = fold_models[f]
        models.planner = policy
        agentic = AgenticPipeline.from_runtime(runtime, models=models)
        hybrid = AgenticPipeline.from_runtime(runtime, name="hybrid+rerank", rounds=False, models=models)
        for i in tqdm(held, desc=f"pools fold {f + 1}", disable=not show_bars, leave=False):
            agentic_groups.append(pool_rows(agentic, data.queries[i], data.golds[i], index, k, i))
            hybrid_groups.append(pool_rows(hybrid, data.queries[i], data.golds[i], index, k, i))
        joined = joined_for_training([data.queries[i].qid for i in held], [data.queries[i].text for i in held],
                                     [data.golds[i] for i in held], graph, language=data.language, seed=SEED + f)
        for j in tqdm(joined, desc=f"joined pools fold {f + 1}", disable=not show_bars, leave=False):
            number = len(gold_counts)
            query = Query(text=j.text, qid=j.qid, lang=data.queries[held[0]].lang)
            agentic_groups.append(pool_rows(agentic, query, set(j.gold), index, k, number))
            gold_counts.append(len(j.gold))
            cv_folds[f].append(number)
    t = lap("pools", t)
    _say(progress, "cross-validating the rerankers")
    cv = _cv_recall(agentic_groups, cv_folds, gold_counts, singles=len(data.queries))
    best_agentic = cv.best_rounds()
    reserve = cv.best_reserve(best_agentic)
    counter = fit_citation_counter(data, parts, cv.rankings[best_agentic])
    single_groups = [p for p in agentic_groups if p.number < len(data.queries)]
    pool_recall = float(np.mean([p.labels.sum() / gold_counts[p.number] for p in single_groups]))
    t = lap("cv", t)

    _say(progress, "fitting the final models on the whole split")
    final = fit_parts(data, list(range(len(data.queries))), graph, vocabulary, embedder)
    final.fusion = fusion.weights("model")
    final.planner = policy
    final.law_mixer = mixer
    final.citation_counter = counter
    final.issue_reserve = reserve
    final.reranker_agentic = _fit(agentic_groups, best_agentic)
    final.reranker_hybrid = _fit(hybrid_groups, best_agentic, label="learned_hybrid")
    lap("final", t)
    info = {
        "dataset": dataset.name, "data": str(dataset.path), "split": split, "questions": len(data.queries),
        "corpus_documents": len(graph), "index": index, "folds": folds,
        "fusion_fit": {k: v for k, v in fusion.to_dict().items() if k not in ("bm25", "knn")},
        "cv": {"agentic_recall@10": round(cv.singles[(best_agentic, reserve)], 4), "agentic_rounds": best_agentic,
               "agentic_by_rounds": {str(n): round(cv.singles[(n, 0)], 4) for n in ROUND_GRID},
               "pool_recall": round(pool_recall, 4),
               "mean_pool": round(float(np.mean([len(p.labels) for p in single_groups])), 1),
               "joined_questions": len(agentic_groups) - len(single_groups),
               "joined_recall@10": round(cv.joined[(best_agentic, reserve)], 4) if cv.joined else None,
               "issue_reserve": reserve,
               "by_reserve": {str(r): {"own": round(cv.singles[(best_agentic, r)], 4),
                                       "joined": (round(cv.joined[(best_agentic, r)], 4)
                                                  if (best_agentic, r) in cv.joined else None)}
                              for r in RESERVES},
               "law": law_report,
               "citation_count": {"multiplier": counter.multiplier, "cliff": counter.cliff,
                                  "fixed_k": counter.fixed_k}},
        "timings_s": {**timings, "total": round(time.perf_counter() - started, 1)},
    }
    final.info = info
    final.save(out)
    if runtime.settings.agents.compiled_trees:
        _say(progress, "compiling the reranker trees (once per model and CPU)")
        compile_started = time.perf_counter()
        read_models(out, compile_trees=True)
        info["timings_s"]["compile"] = round(time.perf_counter() - compile_started, 1)
    return TrainReport(info)
