"""``lexsearch train`` and the agentic pipelines through the CLI (eval and search with --model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.cli import main
from tests.support.corpus import MINI

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def env(tmp_path_factory, embedding_cache_dir) -> dict[str, str]:
    root = tmp_path_factory.mktemp("train-cli")
    return {"LEXSEARCH_EMBEDDER_CACHE_DIR": str(embedding_cache_dir), "LEXSEARCH_INDEX_ROOT": str(root / "indices"),
            "LEXSEARCH_PROGRESS": "0", "root": str(root)}


@pytest.fixture(scope="module")
def model_dir(env) -> str:
    out = str(Path(env["root"]) / "model")
    mp = pytest.MonkeyPatch()
    for key, value in env.items():
        if key.startswith("LEXSEARCH_"):
            mp.setenv(key, value)
    assert main(["train", "--data", str(MINI), "--split", "dev", "--out", out, "--folds", "2", "--no-calibrate",
                 "--json", str(Path(env["root"]) / "report.json")]) == 0
    mp.undo()
    return out


def test_train_writes_a_model_folder_and_a_report(model_dir, env) -> None:
    manifest = json.loads((Path(model_dir) / "manifest.json").read_text())
    report = json.loads((Path(env["root"]) / "report.json").read_text())
    assert report["questions"] == 8 and "agentic_recall@10" in report["cv"]
    assert "routing" not in manifest and manifest["timings_s"]["calibrate"] == 0.0  # --no-calibrate


def test_routed_search_without_a_model_calibration_says_where_its_thresholds_came_from(cli, model_dir) -> None:
    index = str(Path(model_dir).parent / "indices" / json.loads((Path(model_dir) / "manifest.json").read_text())[
        "index"])
    code, out, _ = cli("search", "用人单位辞退员工未通知工会", "--index", index, "--model", model_dir, "--json",
                       "--explain", "--one-ranking")
    assert code == 0
    assert json.loads(out)["trace"]["routing"]["params"]["sources"]["thresholds"] in ("index", "settings")


def test_eval_runs_agentic_pipelines_with_the_model(cli, model_dir, env) -> None:
    out_json = str(Path(env["root"]) / "eval.json")
    code, out, _ = cli("eval", "--data", str(MINI), "--split", "dev", "--pipeline", "hybrid,hybrid+rerank,agentic",
                       "--model", model_dir, "--reranker", "learned", "--option", "max_rounds=2",
                       "--option", "agents=terminology,decompose,conditions", "--json", out_json)
    assert code == 0 and "agentic" in out
    results = {r["pipeline"]: r for r in json.loads(Path(out_json).read_text())}
    assert set(results) == {"hybrid", "hybrid+rerank", "agentic"}
    assert all(0.0 <= r["recall@10"] <= 1.0 for r in results.values())
    for r in results.values():  # every citation-set choice, for every pipeline
        assert set(r["sets"]) == {"top1", "top3", "top5", "top10", "cliff", "fixed", "count"}
        assert r["sets"]["top1"]["size"] == 1 and 0.0 <= r["sets"]["count"]["f1"] <= 1.0
    assert "set F1" in out


def test_search_explains_agents_and_reranker(cli, model_dir) -> None:
    index = str(Path(model_dir).parent / "indices" / json.loads((Path(model_dir) / "manifest.json").read_text())[
        "index"])
    code, out, _ = cli("search", "用人单位辞退员工未通知工会", "--index", index, "--pipeline", "agentic",
                       "--model", model_dir, "--json", "--explain", "--reranker", "learned", "--filter", "kind=statute")
    assert code == 0
    body = json.loads(out)
    assert body["hits"] and body["trace"]["reranker"]["name"] == "learned" and "rounds" in body["trace"]


def test_bad_split_and_bad_option_are_clear_errors(cli, model_dir, tmp_path) -> None:
    code, _, err = cli("train", "--data", str(MINI), "--split", "nope", "--out", str(tmp_path / "never"))
    assert code == 2 and "no split 'nope'" in err and not (tmp_path / "never").exists()
    (tmp_path / "taken").write_text("x", encoding="utf-8")
    code, _, err = cli("train", "--data", str(MINI), "--split", "dev", "--out", str(tmp_path / "taken"))
    assert code == 2 and err.startswith("lexsearch: error:") and "is a file" in err and "Traceback" not in err
    code, _, err = cli("train", "--data", str(MINI), "--split", "dev", "--out", str(tmp_path / "m"),
                       "--latency-budget", "0")
    assert code == 2 and "--latency-budget" in err
    code, _, err = cli("train", "--data", str(MINI), "--split", "dev", "--out", str(tmp_path / "m"),
                       "--confidence", "0.8", "--min-confidence", "0.9")
    assert code == 2 and "minimum confidence" in err and not (tmp_path / "m").exists()
    code, _, err = cli("eval", "--data", str(MINI), "--split", "dev", "--pipeline", "agentic", "--model", model_dir,
                       "--option", "max_rounds=7")
    assert code == 2 and "max_rounds" in err
    code, _, err = cli("eval", "--data", str(MINI), "--split", "dev", "--pipeline", "agentic", "--model",
                       "/nonexistent/model")
    assert code == 2 and "lexsearch train" in err


def test_training_writes_the_same_models_under_any_string_hash_seed(model_dir, env, tmp_path: Path) -> None:
    """Python randomises string hashes per process; the models must not follow a set's order.

    (``model_dir`` has built the module's index, which both trainings then share.)"""
    folders = []
    for seed in ("1", "2"):
        out = tmp_path / f"seed-{seed}"
        child_env = {**os.environ, **{k: v for k, v in env.items() if k.startswith("LEXSEARCH_")},
                     "PYTHONHASHSEED": seed}
        result = subprocess.run([sys.executable, "-m", "service.cli", "train", "--data", str(MINI), "--split", "dev",
                                 "--out", str(out), "--folds", "2", "--no-calibrate"],
                                capture_output=True, text=True, timeout=300, env=child_env)
        assert result.returncode == 0, result.stderr
        folders.append(out)
    first, second = (sorted(p.relative_to(f) for p in f.rglob("*") if p.is_file()) for f in folders)
    assert first == second and len(first) >= 8
    for name in first:
        a, b = (folder / name for folder in folders)
        if name == Path("manifest.json"):
            manifests = [json.loads(p.read_text()) for p in (a, b)]
            for manifest in manifests:
                del manifest["created"], manifest["timings_s"]
            assert manifests[0] == manifests[1]
        else:
            assert a.read_bytes() == b.read_bytes(), f"{name} differs between the two trainings"
