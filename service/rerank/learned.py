"""The learned reranker: LightGBM lambdarank over pool features (see :mod:`service.rerank.features`).

Trained by ``lexsearch train`` on the training split's pools (built with cross-fitted models so
the priors never saw the question they score), one query per group, relevance 1 for gold
articles. Stored as LightGBM's text model plus the feature names it was trained with.

A model may average several members that differ only in their seed (each round draws its own
rows and features, ``bagging_fraction`` and ``feature_fraction``): on training splits of a few
hundred questions one seed's draws move Recall@10 by points, and the mean of five is better there
(neutral on 1,000 questions; docs/BENCHMARKS.md, "Rerankers averaged over seeds"). Members may also
be trained on several sets of rows: ``lexsearch train`` builds the pools of the same questions over
more than one cut into folds, and the members of every set are averaged (docs/BENCHMARKS.md,
"Rerankers averaged over fold partitions"). The members are written as one model
(:mod:`service.rerank.tree_average`), so loading and scoring do not change.

Example::

    model = LearnedReranker.fit(features, labels, groups, FEATURE_NAMES, members=5)
    ranked = model.rerank(query, pool, k=10, context=RerankContext(features=matrix, feature_names=FEATURE_NAMES))
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from service.corpus.model import Hit, Query
from service.errors import ConfigError
from service.rerank.base import RerankContext, Reranker, RerankerParts, in_order, ordered
from service.rerank.compiled import TreeScorer
from service.rerank.tree_average import average_boosters

PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "ndcg_eval_at": [10],
    "lambdarank_truncation_level": 20,
    "learning_rate": 0.05,
    "num_leaves": 31,
    "min_data_in_leaf": 20,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
    "num_threads": 2,
    "verbose": -1,
    "seed": 7,
    "deterministic": True,
}
ROUNDS = 300
"""Boosting rounds; chosen by 5-fold cross-validation on STARD fit."""
MEMBER_SEEDS: tuple[int, ...] = (7, 11, 13, 17, 19, 23, 29, 31)
"""The seeds of a model's members, in order (``members=m`` uses the first ``m``)."""


class LearnedReranker:
    """A LightGBM ranking model over named features.

    Args:
        booster: the trained ``lightgbm.Booster``.
        feature_names: the columns it expects, in order.
        label: the key under which scores and ranks are recorded on hits.
        members: the separate boosters ``booster`` averages, when they are known (a model fitted in
            this process); :meth:`first` and :meth:`predict_first` cut each of them. ``None`` for
            a loaded model: its trees can no longer be told apart.
    """

    uses_features = True
    reads_documents = False

    def __init__(self, booster: Any, feature_names: Sequence[str], *, label: str = "learned",
                 scorer: TreeScorer | None = None, members: Sequence[Any] | None = None) -> None:
        self.booster = booster
        self.members = list(members) if members is not None else None
        self.feature_names = list(feature_names)
        self.name = label
        self.scorer = scorer or TreeScorer(booster)

    @classmethod
    def from_parts(cls, parts: RerankerParts) -> Reranker | None:
        """The pipeline's trained model (``None`` without a model folder)."""
        return parts.learned

    @classmethod
    def fit(cls, features: np.ndarray, labels: np.ndarray, groups: Sequence[int], feature_names: Sequence[str], *,
            rounds: int = ROUNDS, params: dict[str, Any] | None = None, label: str = "learned",
            members: int = 1) -> LearnedReranker:
        """Train lambdarank; ``groups`` are the consecutive row counts of each query.

        ``members`` boosters are trained on the same rows with the seeds :data:`MEMBER_SEEDS`, and the
        model scores their mean.

        Raises:
            ValueError: when the rows and the groups disagree, no group has a relevant row, or
                ``members`` is not between 1 and ``len(MEMBER_SEEDS)``.
        """
        return cls.fit_sets([(features, labels, groups)], feature_names, rounds=rounds, params=params, label=label,
                            members=members)

    @classmethod
    def fit_sets(cls, sets: Sequence[tuple[np.ndarray, np.ndarray, Sequence[int]]], feature_names: Sequence[str], *,
                 rounds: int = ROUNDS, params: dict[str, Any] | None = None, label: str = "learned",
                 members: int = 1) -> LearnedReranker:
        """Train ``members`` boosters (the seeds :data:`MEMBER_SEEDS`) on each ``(features, labels,
        groups)`` of ``sets``; the model scores the mean of all of them.

        Raises:
            ValueError: for no set, a set whose rows and groups disagree or without a relevant row, or
                ``members`` not between 1 and ``len(MEMBER_SEEDS)``.
        """
        import lightgbm

        if not sets:
            raise ValueError("a reranker needs at least one set of training rows")
        if not 1 <= members <= len(MEMBER_SEEDS):
            raise ValueError(f"a reranker has 1 to {len(MEMBER_SEEDS)} members, got {members}")
        for features, labels, groups in sets:  # every set checked before any booster is fitted
            if sum(groups) != len(features) or len(labels) != len(features):
                raise ValueError("features, labels and groups do not line up")
            if not np.any(labels > 0):
                raise ValueError("no relevant candidate in the training pools")
        boosters = []
        for features, labels, groups in sets:
            data = lightgbm.Dataset(features, label=labels, group=list(groups), feature_name=list(feature_names),
                                    free_raw_data=False)
            boosters += [lightgbm.train({**PARAMS, **(params or {}), "seed": seed}, data, num_boost_round=rounds)
                         for seed in MEMBER_SEEDS[:members]]
        return cls(average_boosters(boosters), feature_names, label=label, members=boosters)

    @classmethod
    def averaging(cls, models: Sequence[LearnedReranker]) -> LearnedReranker:
        """One model scoring the mean of every member of ``models`` (fitted in this process, on the
        same features), named as the first.

        Raises:
            ValueError: for no model, or a loaded one (its members are not known).
        """
        if not models:
            raise ValueError("averaging needs at least one model")
        members = [b for m in models for b in m._members()]
        return cls(average_boosters(members), models[0].feature_names, label=models[0].name, members=members)

    def first(self, rounds: int) -> LearnedReranker:
        """The model made of each member's first ``rounds`` boosting rounds. Boosting is sequential
        and seeded, so it scores exactly as the model fitted with ``rounds`` rounds on the same data.

        Raises:
            ValueError: for a loaded model (its members are not known).
        """
        import lightgbm

        cut = [lightgbm.Booster(model_str=b.model_to_string(num_iteration=rounds)) for b in self._members()]
        return LearnedReranker(average_boosters(cut), self.feature_names, label=self.name, members=cut)

    def predict_first(self, features: np.ndarray, rounds: int, *, threads: int = 1) -> np.ndarray:
        """The scores of :meth:`first` ``(rounds)`` for rows in the model's own column order, without
        building that model (cross-validation scores every number of rounds this way).

        Raises:
            ValueError: for a loaded model (its members are not known).
        """
        members = self._members()
        scores = sum(np.asarray(b.predict(features, num_iteration=rounds, num_threads=threads)) for b in members)
        return np.asarray(scores, dtype=np.float64) / len(members)

    def _members(self) -> list[Any]:
        if self.members is None:
            raise ValueError("a loaded reranker cannot be cut to fewer rounds: its members are not known")
        return self.members

    def scores(self, features: np.ndarray, feature_names: Sequence[str]) -> np.ndarray:
        """Model scores for rows whose columns are ``feature_names`` (reordered by name as needed).

        Raises:
            ConfigError: when a feature the model needs is missing (a model from another version).
        """
        if list(feature_names) != self.feature_names:
            index = {n: i for i, n in enumerate(feature_names)}
            missing = [n for n in self.feature_names if n not in index]
            if missing:
                raise ConfigError(f"the reranker model needs features this version does not compute: {missing[:5]}; "
                                  "retrain it with `lexsearch train`")
            features = features[:, [index[n] for n in self.feature_names]]
        if len(features) == 0:
            return np.zeros(0)
        return self.scorer.predict(features)

    def rerank(self, query: Query, hits: Sequence[Hit], *, k: int, context: RerankContext | None = None) -> list[Hit]:
        if context is None or context.features is None:
            if context is not None:
                context.notes["fallback"] = "no features; kept the pool order"
            return in_order(hits, context.fallback if context else [], self.name, k)
        return ordered(hits, list(self.scores(context.features, context.feature_names)), self.name, k)

    def save(self, path: Path) -> None:
        self.booster.save_model(str(path))

    @classmethod
    def load(cls, path: Path, feature_names: Sequence[str], *, label: str = "learned",
             compile_trees: bool = True) -> LearnedReranker:
        """Read a saved model; its trees are compiled unless ``compile_trees`` is false (see
        :mod:`service.rerank.compiled`)."""
        import lightgbm

        booster = lightgbm.Booster(model_file=str(path))
        return cls(booster, feature_names, label=label,
                   scorer=TreeScorer.from_file(path, booster, compile_trees=compile_trees))
