"""Reranker training pools kept in a model folder, so that another training can borrow them.

``lexsearch train`` searches every training question as at query time and trains the learned
rerankers on the resulting pools: one group of feature rows (:data:`~service.rerank.features.FEATURE_NAMES`)
per question, labelled 1 for gold and 0 otherwise. It writes those pools to the model folder
(:data:`POOLS_FILE`; feature rows and labels only: no question text, no document ids). A later
training on a small split can add them to its own (``lexsearch train --borrow FOLDER``): the features
describe how a candidate was found (ranks, z-scores, priors, agents), not what it says, so pools of
another corpus teach the trees the same lessons with more examples (docs/BENCHMARKS.md, "Borrowed
reranker pools").

Example::

    save_pools(folder, agentic=Pools.of(features, labels), hybrid=Pools.of(h_features, h_labels))
    borrowed = load_pools([folder])        # both kinds, checked against FEATURE_NAMES
    borrowed.agentic.groups()              # [(features, labels), ...] one per question
"""

from __future__ import annotations

import itertools
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from service.errors import InvalidInput
from service.rerank.features import FEATURE_NAMES

POOLS_FILE = "reranker_pools.npz"
"""The pools' file name in a model folder."""
_KINDS = ("agentic", "hybrid")


@dataclass(frozen=True)
class Pools:
    """Training pools of one reranker: feature rows, their labels, and how many rows each question has."""

    features: np.ndarray
    """``(rows, len(FEATURE_NAMES))`` float32."""
    labels: np.ndarray
    """``(rows,)`` float32, 1.0 for gold."""
    sizes: np.ndarray
    """Rows per question, in order (int64); they add up to ``rows``."""

    @classmethod
    def of(cls, features: Sequence[np.ndarray], labels: Sequence[np.ndarray]) -> Pools:
        """The pools of per-question feature matrices and label vectors."""
        width = len(FEATURE_NAMES)
        return cls(np.concatenate(list(features)).astype(np.float32) if features else np.zeros((0, width), np.float32),
                   np.concatenate(list(labels)).astype(np.float32) if labels else np.zeros(0, np.float32),
                   np.asarray([len(y) for y in labels], dtype=np.int64))

    @classmethod
    def join(cls, parts: Sequence[Pools]) -> Pools:
        """One set of pools holding every question of ``parts``, in order."""
        return cls(np.concatenate([p.features for p in parts]), np.concatenate([p.labels for p in parts]),
                   np.concatenate([p.sizes for p in parts]))

    def __len__(self) -> int:
        """The number of questions."""
        return len(self.sizes)

    def groups(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each question's ``(features, labels)``."""
        bounds = np.concatenate([[0], np.cumsum(self.sizes)])
        return [(self.features[a:b], self.labels[a:b]) for a, b in itertools.pairwise(bounds)]


@dataclass(frozen=True)
class TrainingPools:
    """The pools of both learned rerankers of a training: the agentic and the hybrid+rerank one."""

    agentic: Pools
    hybrid: Pools
    sources: tuple[str, ...] = ()
    """Where they were read from (for the training report)."""


def save_pools(folder: str | Path, *, agentic: Pools, hybrid: Pools) -> Path:
    """Write both rerankers' pools to ``folder``/:data:`POOLS_FILE` (compressed; replaced if present)."""
    target = Path(folder) / POOLS_FILE
    arrays = {"feature_names": np.asarray(FEATURE_NAMES)}
    for kind, pools in zip(_KINDS, (agentic, hybrid), strict=True):
        arrays.update({f"{kind}_features": pools.features, f"{kind}_labels": pools.labels.astype(np.int8),
                       f"{kind}_sizes": pools.sizes})
    partial = target.with_name(f".{POOLS_FILE}.partial")
    with open(partial, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    partial.replace(target)
    return target


def load_pools(paths: Sequence[str | Path]) -> TrainingPools:
    """The pools of every model folder (or pools file) of ``paths``, joined.

    Raises:
        InvalidInput: for a path without pools, a file that is not a pools file, or pools whose feature
            columns differ from this version's (their folder was trained by another version).
    """
    agentic: list[Pools] = []
    hybrid: list[Pools] = []
    for path in paths:
        file = Path(path) / POOLS_FILE if Path(path).is_dir() else Path(path)
        if not file.is_file():
            raise InvalidInput(f"--borrow {path}: no reranker pools there (a model folder written by lexsearch "
                               f"train holds {POOLS_FILE})")
        try:
            with np.load(file, allow_pickle=False) as data:
                names = tuple(str(n) for n in data["feature_names"])
                kinds = [Pools(data[f"{k}_features"].astype(np.float32, copy=False),
                               data[f"{k}_labels"].astype(np.float32), data[f"{k}_sizes"].astype(np.int64, copy=False))
                         for k in _KINDS]
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise InvalidInput(f"--borrow {path}: {file} is not a reranker pools file ({exc})") from None
        if names != FEATURE_NAMES:
            raise InvalidInput(f"--borrow {path}: its pools have other feature columns than this version's "
                               f"rerankers ({len(names)} against {len(FEATURE_NAMES)}); retrain that folder")
        for pools in kinds:
            if pools.features.shape != (int(pools.sizes.sum()), len(FEATURE_NAMES)) or len(pools.labels) != len(
                    pools.features):
                raise InvalidInput(f"--borrow {path}: {file} is damaged (row counts disagree)")
        agentic.append(kinds[0])
        hybrid.append(kinds[1])
    return TrainingPools(Pools.join(agentic), Pools.join(hybrid), tuple(str(p) for p in paths))
