"""Reranker training pools: written to a model folder, read back exactly, refused when unusable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from service.errors import InvalidInput
from service.rerank.features import FEATURE_NAMES
from service.rerank.pools import POOLS_FILE, Pools, load_pools, save_pools

pytestmark = pytest.mark.unit

WIDTH = len(FEATURE_NAMES)


def _pools(sizes: list[int], seed: int) -> Pools:
    rng = np.random.default_rng(seed)
    features = [rng.normal(size=(n, WIDTH)).astype(np.float32) for n in sizes]
    labels = [(np.arange(n) == 0).astype(np.float32) for n in sizes]
    return Pools.of(features, labels)


def test_pools_round_trip_exactly_and_split_per_question(tmp_path: Path) -> None:
    agentic, hybrid = _pools([3, 5, 2], 1), _pools([4, 1], 2)
    assert save_pools(tmp_path, agentic=agentic, hybrid=hybrid) == tmp_path / POOLS_FILE
    back = load_pools([tmp_path])
    assert back.sources == (str(tmp_path),)
    for kind, original in (("agentic", agentic), ("hybrid", hybrid)):
        got = getattr(back, kind)
        assert np.array_equal(got.features, original.features) and got.features.dtype == np.float32
        assert np.array_equal(got.labels, original.labels) and list(got.sizes) == list(original.sizes)
    groups = back.agentic.groups()
    assert [len(y) for _, y in groups] == [3, 5, 2] and len(back.agentic) == 3
    assert np.array_equal(groups[1][0], agentic.features[3:8]) and groups[1][1].tolist() == [1, 0, 0, 0, 0]


def test_pools_of_several_folders_are_joined_in_order(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for folder, sizes, seed in ((first, [2, 2], 3), (second, [3], 4)):
        folder.mkdir()
        save_pools(folder, agentic=_pools(sizes, seed), hybrid=_pools(sizes, seed + 10))
    joined = load_pools([first, second / POOLS_FILE])  # a folder or the file itself
    assert list(joined.agentic.sizes) == [2, 2, 3] and len(joined.hybrid.features) == 7
    assert np.array_equal(joined.agentic.features[4:], _pools([3], 4).features)


def test_unusable_pools_are_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no reranker pools there"):
        load_pools([tmp_path / "missing"])
    (tmp_path / "junk.npz").write_text("not a zip", encoding="utf-8")
    with pytest.raises(InvalidInput, match="is not a reranker pools file"):
        load_pools([tmp_path / "junk.npz"])
    other = tmp_path / "other.npz"
    with open(other, "wb") as fh:
        arrays = {f"{k}_{a}": np.zeros(1) for k in ("agentic", "hybrid") for a in ("features", "labels", "sizes")}
        np.savez(fh, feature_names=np.asarray(["bm25", "knn"]), **arrays)
    with pytest.raises(InvalidInput, match="other feature columns"):
        load_pools([other])
    save_pools(tmp_path, agentic=_pools([2], 5), hybrid=_pools([2], 6))
    with np.load(tmp_path / POOLS_FILE) as data:
        arrays = dict(data)
    arrays["agentic_sizes"] = np.asarray([5])
    with open(tmp_path / "damaged.npz", "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(InvalidInput, match="damaged"):
        load_pools([tmp_path / "damaged.npz"])
