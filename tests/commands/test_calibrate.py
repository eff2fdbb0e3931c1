"""``lexsearch calibrate`` and the routed ablation flags of ``lexsearch eval``, on the mini fixture."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from service.backends.embedded import EmbeddedBackend
from service.cli import main
from service.commands.calibrate import check_training_split
from service.errors import InvalidInput
from tests.support.corpus import MINI

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def fit_dataset(tmp_path_factory) -> Path:
    """The mini dataset with its queries under a training split name ("fit")."""
    folder = tmp_path_factory.mktemp("mini-fit")
    for path in MINI.iterdir():
        shutil.copy(path, folder / path.name)
    for kind in ("queries", "qrels"):
        shutil.copy(MINI / f"{kind}.dev.tsv", folder / f"{kind}.fit.tsv")
    data = json.loads((folder / "dataset.json").read_text(encoding="utf-8"))
    data["splits"] = {"dev": 8, "fit": 8}
    (folder / "dataset.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


@pytest.fixture
def cli(tmp_path_factory, embedding_cache_dir, monkeypatch, capsys):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.getbasetemp() / "calibrate-indices"
    monkeypatch.setenv("LEXSEARCH_EMBEDDER_CACHE_DIR", str(embedding_cache_dir))
    monkeypatch.setenv("LEXSEARCH_INDEX_ROOT", str(root))
    monkeypatch.setenv("LEXSEARCH_PROGRESS", "0")

    def run(*argv: str) -> tuple[int, str, str, Path]:
        code = main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err, root
    return run


@pytest.mark.parametrize("split", ["dev", "test", "DEV", " eval "])
def test_evaluation_splits_are_refused(split: str) -> None:
    with pytest.raises(InvalidInput, match="training data only"):
        check_training_split(split)
    check_training_split("fit")


def test_cli_refuses_dev(cli, fit_dataset) -> None:  # type: ignore[no-untyped-def]
    code, _, err, _ = cli("calibrate", "--data", str(fit_dataset), "--split", "dev")
    assert code == 2 and "evaluation split" in err


def test_calibrate_stores_thresholds_and_cut_with_the_index(cli, fit_dataset, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out_json = tmp_path / "calibration.json"
    code, out, err, root = cli("calibrate", "--data", str(fit_dataset), "--split", "fit", "--json", str(out_json))
    assert code == 0, err
    assert "thresholds" in out and "set F1" in out and "QSI calibrated" in err
    entry = json.loads(out_json.read_text(encoding="utf-8"))
    assert entry["calibrated_on"]["split"] == "fit" and entry["calibrated_on"]["queries"] == 8
    (name,) = [p.name for p in root.iterdir() if p.name.startswith("eval-") and not p.name.startswith(".")]
    meta = EmbeddedBackend(root).metadata(name)
    assert meta["routing"]["thresholds"] == entry["thresholds"]
    assert {"a", "b", "method"} <= set(meta["qsi"])
    t = entry["thresholds"]
    assert t == sorted(t) and t[0] >= 0.0 and t[-1] <= 1.0
    assert 0.0 < entry["cut"]["sigma"] < 1.0


def test_eval_routed_with_ablation_flags(cli, fit_dataset, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out_json = tmp_path / "eval.json"
    code, out, err, _ = cli("eval", "--data", str(fit_dataset), "--split", "dev", "--pipeline", "routed",
                            "--k", "10", "--no-cliff", "--no-intrinsic", "--json", str(out_json))
    assert code == 0, err
    (result,) = json.loads(out_json.read_text(encoding="utf-8"))
    assert result["pipeline"] == "routed" and set(result["set"]) == {"precision", "recall", "f1"}
    assert "set P/R/F1" in out


def test_models_trained_on_the_calibration_queries_are_refused(fit_dataset, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from service.commands.calibrate import check_models_not_trained_on
    from service.corpus.datasets import Dataset

    models = tmp_path / "models"
    models.mkdir()
    (models / "manifest.json").write_text(json.dumps({"data": str(fit_dataset), "split": "fit"}), encoding="utf-8")
    with pytest.raises(InvalidInput, match="in-sample"):
        check_models_not_trained_on(str(models), Dataset(fit_dataset), "fit")
    check_models_not_trained_on(str(models), Dataset(fit_dataset), "cal_hold")  # another split: fine
    check_models_not_trained_on("", Dataset(fit_dataset), "fit")                # no models: fine


def test_latency_models_may_have_seen_the_calibration_queries(cli, fit_dataset, tmp_path) -> None:  # type: ignore[no-untyped-def]
    serving = tmp_path / "serving"
    code, _, err, _ = cli("train", "--data", str(fit_dataset), "--split", "fit", "--out", str(serving), "--folds", "2")
    assert code == 0, err
    code, _, err, _ = cli("calibrate", "--data", str(fit_dataset), "--split", "fit", "--model", str(serving),
                          "--dry-run")
    assert code == 2 and "in-sample" in err  # recall from them would be in-sample ...
    out_json = tmp_path / "calibration.json"
    code, _, err, _ = cli("calibrate", "--data", str(fit_dataset), "--split", "fit", "--latency-model",
                            str(serving), "--dry-run", "--json", str(out_json))
    assert code == 0, err  # ... their speed is fine
    entry = json.loads(out_json.read_text(encoding="utf-8"))
    assert entry["calibrated_on"]["latency_models"] == str(serving) and entry["calibrated_on"]["models"] is None
    assert entry["fit"]["routing"]["reference_latency_ms"] > 0


def test_missing_latency_models_are_reported(cli, fit_dataset, tmp_path) -> None:  # type: ignore[no-untyped-def]
    code, _, err, _ = cli("calibrate", "--data", str(fit_dataset), "--split", "fit", "--latency-model",
                          str(tmp_path / "nowhere"), "--dry-run")
    assert code == 2 and "no trained models" in err and "Traceback" not in err


def test_new_calibration_reaches_the_serving_pipeline(fit_dataset, tmp_path, embedding_cache_dir) -> None:  # type: ignore[no-untyped-def]
    from service.commands.calibrate import calibrate
    from service.config import load_settings
    from service.corpus.datasets import Dataset
    from service.evaluation.dataset_index import ensure_dataset_index
    from service.pipelines.build import Runtime

    settings = load_settings().replace(index={"root": str(tmp_path / "indices")},
                                       embedder={"cache_dir": str(embedding_cache_dir)})
    runtime = Runtime(settings)
    serving = Runtime(settings, embedder=runtime.embedder)
    dataset = Dataset(fit_dataset)
    index = ensure_dataset_index(runtime, dataset)
    before = serving.pipeline("routed").params(index)  # cached by the serving pipeline
    entry = calibrate(runtime, dataset, "fit", latency_runtime=serving)
    after = serving.pipeline("routed").params(index)
    assert after.sources["thresholds"] == "index" and before.sources["thresholds"] == "settings"
    assert list(after.thresholds) == entry["thresholds"] and after.gamma == entry["gamma"]
