"""The model folder: save/load of every component, the manifest, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from service.agents.law_evidence import LawMixer
from service.agents.planner import PlannerPolicy
from service.agents.prefilter import LawClassifier
from service.agents.rewriters.terminology import QueryAdapter, TermMapping
from service.agents.vocabulary import Vocabulary
from service.errors import ConfigError
from service.models import (
    TrainedModels,
    forget_recent_predictions,
    load_models,
    read_models,
    read_trained_fusion,
    reranker_files,
)
from service.rerank.priors import ArticlePrior, QuestionMemory

pytestmark = pytest.mark.unit

TOKENS = [["miete", "kaution"], ["erbe", "testament"], ["miete", "mangel"], ["erbe", "pflichtteil"]]
GOLDS = [{"551"}, {"2078"}, {"536"}, {"2303"}]


def _models() -> TrainedModels:
    vectors = np.eye(4, 6, dtype=np.float32)
    sections = [["BGB#13"], ["BGB#52"], ["BGB#13"], ["BGB#57"]]
    return TrainedModels(
        language="de", embedder="use-m3",
        law_classifier=LawClassifier.fit(TOKENS, vectors, sections, {"BGB#13": "BGB", "BGB#52": "BGB",
                                                                     "BGB#57": "BGB"}),
        memory=QuestionMemory.fit(TOKENS, vectors, GOLDS), prior=ArticlePrior.fit(GOLDS, lambda d: "BGB"),
        term_mapping=TermMapping({"miete": [("mietvertrag", 0.5)]}), adapter=QueryAdapter(np.eye(6)),
        vocabulary=Vocabulary({"miete": 3}, 10), planner=PlannerPolicy({}), law_mixer=LawMixer((0.5, 1.0, 2.0, 0.0)))


def test_save_and_read_round_trip(tmp_path: Path) -> None:
    _models().save(tmp_path / "m", info={"dataset": "toy"})
    again = read_models(tmp_path / "m")
    assert set(again.components()) == {"law_classifier", "law_mixer", "memory", "prior", "term_mapping", "adapter",
                                       "vocabulary", "planner"}
    assert again.law_mixer.weights.tolist() == [0.5, 1.0, 2.0, 0.0]
    assert again.language == "de" and again.embedder == "use-m3" and again.info["dataset"] == "toy"
    assert again.term_mapping.expand(["miete"]) == {"mietvertrag": pytest.approx(0.6)}
    assert again.law_probabilities("Miete und Kaution")[0][0] == "BGB"
    assert again.memory.votes(["erbe"], None)
    assert reranker_files(tmp_path / "m") == []  # no tree models in this folder


def test_absent_components_are_removed_on_save(tmp_path: Path) -> None:
    models = _models()
    models.save(tmp_path / "m")
    models.adapter = None
    models.save(tmp_path / "m")
    assert not (tmp_path / "m" / "adapter.npy").exists() and read_models(tmp_path / "m").adapter is None


def test_load_models_is_cached_and_reloads_on_change(tmp_path: Path) -> None:
    assert load_models("") is None
    _models().save(tmp_path / "m")
    first = load_models(tmp_path / "m")
    assert load_models(str(tmp_path / "m")) is first
    manifest = tmp_path / "m" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["note"] = "changed"
    manifest.write_text(json.dumps(data))
    import os

    os.utime(manifest, (1, 1))
    assert load_models(tmp_path / "m") is not first


def test_loaded_law_classifiers_forget_their_recent_predictions(tmp_path: Path) -> None:
    _models().save(tmp_path / "m")
    classifier = load_models(tmp_path / "m").law_classifier
    first = classifier.section_probabilities(["miete"])
    assert classifier.section_probabilities(["miete"]) is first
    forget_recent_predictions()
    assert classifier.section_probabilities(["miete"]) is not first


def test_clear_errors_for_missing_or_broken_folders(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="lexsearch train"):
        load_models(tmp_path / "nothing")
    folder = tmp_path / "bad"
    _models().save(folder)
    (folder / "prior.json").write_text("{broken")
    with pytest.raises(ConfigError, match=r"prior\.json"):
        read_models(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["format_version"] = 99
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ConfigError, match="format"):
        read_models(folder)


def test_a_manifest_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "latin1"
    _models().save(folder)
    (folder / "manifest.json").write_bytes('{"label": "Gerichtsstand für Klagen"}'.encode("latin-1"))
    with pytest.raises(ConfigError, match="unreadable"):
        read_models(folder)
    assert read_trained_fusion(folder) is None
