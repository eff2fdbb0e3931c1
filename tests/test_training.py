"""Training on the mini fixture: cross-fitted folds, the model folder with its routing calibration, the
input checks, and pipelines that use the models."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from service import training
from service.config import load_settings
from service.corpus.datasets import Dataset
from service.errors import ConfigError, DataError, EngineUnavailable, InvalidInput
from service.models import TrainedModels, load_models, read_models, stored_routing
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime
from service.rerank.features import FEATURE_NAMES
from service.rerank.pools import load_pools
from service.routing.measure import collect_fit_data
from service.routing.tuning import CalibrationTargets
from service.training import DEFAULT_TARGETS, calibration_sample, folds_of, train_models
from tests.support.corpus import MINI

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def trained(tmp_path_factory, use_embedder) -> tuple[Runtime, Path, dict, list[tuple[list[str], TrainedModels]]]:
    """Trains (and calibrates) on the mini fixture once, recording which questions each calibration
    fold measured and the models it measured them with."""
    root = tmp_path_factory.mktemp("training")
    settings = load_settings(environ={}, overrides={"index": {"root": str(root / "indices")}})
    runtime = Runtime(settings, embedder=use_embedder)
    out = root / "model"
    measured: list[tuple[list[str], TrainedModels]] = []

    def recording(pipe, queries, qrels, **kwargs):  # type: ignore[no-untyped-def]
        measured.append(([q.qid for q in queries], read_models(pipe.settings.index.model_dir, compile_trees=False)))
        return collect_fit_data(pipe, queries, qrels, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(training, "collect_fit_data", recording)
        report = train_models(runtime, Dataset(MINI), "dev", out, folds=2)
    return runtime, out, report.to_dict(), measured


def test_folds_partition_the_questions() -> None:
    folds = folds_of(11, 3)
    assert sorted(i for f in folds for i in f) == list(range(11)) and {len(f) for f in folds} <= {3, 4}
    assert folds == folds_of(11, 3)


def test_the_calibration_sample_is_spread_over_the_folds() -> None:
    folds = folds_of(1000, 5)
    sample = calibration_sample(folds, 300)
    assert [len(s) for s in sample] == [60] * 5 and all(set(s) <= set(f) for s, f in zip(sample, folds, strict=True))
    assert sample == calibration_sample(folds, 300) and sample != calibration_sample(folds, 300, seed=1)
    assert calibration_sample(folds, 0) == folds and calibration_sample(folds, 5000) == folds


def test_training_writes_every_component(trained) -> None:
    runtime, out, report, _ = trained
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["components"]) == {"law_classifier", "law_mixer", "memory", "article_classifier", "prior",
                                           "term_mapping", "adapter", "vocabulary", "planner", "cocitation",
                                           "citation_counter", "reranker_agentic", "reranker_hybrid"}
    assert 1 <= report["cv"]["citation_count"]["fixed_k"] <= 10
    law = report["cv"]["law"]
    assert 0.0 <= law["mixed"]["top1"] <= law["mixed"]["top3"] <= 1.0 and len(law["weights"]) == 4
    assert manifest["questions"] == 8 and manifest["split"] == "dev" and manifest["embedder"] == "use-m3"
    assert 0.0 <= report["cv"]["agentic_recall@10"] <= 1.0 and report["timings_s"]["total"] > 0
    assert report["cv"]["joined_questions"] >= 0 and report["cv"]["issue_reserve"] in (0, 1, 2, 3)
    assert set(report["cv"]["by_reserve"]) == {"0", "1", "2", "3"}
    models = load_models(out)
    assert models is load_models(out)  # cached per process
    assert models.memory is not None and len(models.memory) == 8
    assert models.issue_reserve == report["cv"]["issue_reserve"] and models.cocitation is not None
    # each reranker averages RERANKER_MEMBERS seeded boosters per cut of the split into folds (PARTITIONS
    # cuts), stored as one model of all their trees
    assert report["cv"]["reranker_members"] == training.RERANKER_MEMBERS == 5
    assert manifest["partitions"] == training.PARTITIONS == 2 and "more_cuts" in report["timings_s"]
    assert models.reranker_agentic.booster.num_trees() == 2 * 5 * report["cv"]["agentic_rounds"]
    assert models.reranker_hybrid.booster.num_trees() == 2 * 5 * report["cv"]["agentic_rounds"]
    # trained on the process's computing threads (cpu.threads), not on a fixed count
    assert f"[num_threads: {runtime.settings.cpu.threads}]" in (out / "reranker_agentic.txt").read_text()
    assert models.law_probabilities("用人单位辞退劳动者") and models.prior.count("17083") == 1
    # The fusion weights fitted on the split's labels, with the curve that chose them.
    assert manifest["fusion"]["source"] == "model" and manifest["fusion"]["fusion"] == "linear-zscore"
    assert models.fusion is not None and models.fusion.bm25 + models.fusion.knn == pytest.approx(1.0)
    assert manifest["fusion_fit"]["method"] == "trained" and len(manifest["fusion_fit"]["curve"]) == 21


def test_training_keeps_its_reranker_pools_and_another_training_borrows_them(trained, tmp_path: Path) -> None:
    runtime, out, report, _ = trained
    own = load_pools([out])
    # every question of the split is one hybrid pool; the agentic pools add the questions joined from them
    assert len(own.hybrid) == 8 and len(own.agentic) == 8 + report["cv"]["joined_questions"]
    assert own.agentic.features.shape[1] == len(FEATURE_NAMES) and own.agentic.labels.sum() >= 8
    assert "borrowed" not in report["cv"]
    borrower = tmp_path / "borrower"
    got = train_models(runtime, Dataset(MINI), "dev", borrower, folds=2, calibration=None, borrow=[out]).to_dict()
    assert got["cv"]["borrowed"] == {"from": [str(out)], "questions": len(own.agentic)}
    assert json.loads((borrower / "manifest.json").read_text())["cv"]["borrowed"]["questions"] == len(own.agentic)
    # the borrower keeps only its own pools, so borrowing from it does not count the lender twice
    assert list(load_pools([borrower]).agentic.sizes) == list(own.agentic.sizes)
    # its rerankers trained on twice the rows: the same features score differently
    plain, lent = read_models(out, compile_trees=False), read_models(borrower, compile_trees=False)
    rows = own.agentic.features[:50]
    assert not np.allclose(plain.reranker_agentic.scores(rows, FEATURE_NAMES),
                           lent.reranker_agentic.scores(rows, FEATURE_NAMES))


def test_one_cut_into_folds_trains_the_rerankers_on_the_first_cuts_pools_alone(trained, tmp_path: Path) -> None:
    runtime, out, report, _ = trained
    single = tmp_path / "one-cut"
    got = train_models(runtime, Dataset(MINI), "dev", single, folds=2, partitions=1, calibration=None).to_dict()
    assert got["partitions"] == 1 and got["cv"] == {**report["cv"], "law": got["cv"]["law"]}
    one, two = read_models(single, compile_trees=False), read_models(out, compile_trees=False)
    assert one.reranker_agentic.booster.num_trees() == 5 * got["cv"]["agentic_rounds"]
    # the first cut is the same either way: so are its pools (the ones a borrower gets) and the cross-validation
    assert np.array_equal(load_pools([single]).agentic.features, load_pools([out]).agentic.features)
    # the second cut's pools (other folds, other joined questions) make the averaged model score otherwise
    rows = load_pools([out]).agentic.features
    assert not np.allclose(one.reranker_agentic.scores(rows, FEATURE_NAMES),
                           two.reranker_agentic.scores(rows, FEATURE_NAMES))


def test_a_cuts_pools_without_some_questions_drop_every_pool_made_of_one() -> None:
    def pool(number: int) -> training.PoolRows:
        return training.PoolRows(np.zeros((1, len(FEATURE_NAMES)), np.float32), np.ones(1, np.float32), number,
                                 [None], 1)

    # rows 0-2 of the split, and a question joined from rows 0 and 2 (number 3)
    cut = training.CutPools([pool(0), pool(1), pool(2), pool(3)], [pool(0), pool(1), pool(2)], [2], [[3]],
                            [frozenset({0}), frozenset({1}), frozenset({2}), frozenset({0, 2})])
    agentic, hybrid = cut.without({2})
    assert [p.number for p in agentic] == [0, 1] and [p.number for p in hybrid] == [0, 1]
    assert [p.number for p in cut.without({1})[0]] == [0, 2, 3]


def test_the_cli_default_of_partitions_is_the_trainings() -> None:
    from service.cli import build_parser

    args = build_parser().parse_args(["train", "--data", "d", "--split", "s", "--out", "o"])
    assert args.partitions == training.PARTITIONS and args.folds == training.FOLDS


def test_the_article_classifier_adds_its_best_articles_to_the_pool(trained) -> None:
    runtime, out, report, _ = trained
    classifier = load_models(out).article_classifier
    assert classifier is not None and len(classifier) >= 2
    for n in (20, 1, 0):
        settings = runtime.settings.replace(index={"model_dir": str(out)}, agents={"classifier_candidates": n})
        pipe = Runtime(settings, backend=runtime.backend, embedder=runtime.embedder).pipeline("agentic")
        state = pipe.start(SearchRequest("用人单位辞退劳动者应该提前多久告知？", index=report["index"], k=10))
        joined = [d for _, d in sorted((h.ranks["classifier"], h.doc_id) for h in state.pool.values()
                                       if "classifier" in h.ranks)]
        assert joined == classifier.top(classifier.scores(state.terms), n)


def test_pipelines_use_the_trained_models(trained) -> None:
    runtime, out, report, _ = trained
    settings = runtime.settings.replace(index={"model_dir": str(out)})
    rt = Runtime(settings, backend=runtime.backend, embedder=runtime.embedder)
    request = SearchRequest("用人单位辞退劳动者应该提前多久告知？", index=report["index"], k=10)
    agentic = rt.pipeline("agentic").run(request)
    assert agentic.trace["reranker"]["name"] == "learned" and agentic.trace["models"]["path"] == str(out.resolve())
    assert agentic.trace["law_prediction"]["laws"] and agentic.trace["memory_candidates"] >= 1
    assert agentic.trace["classifier_candidates"] >= 1
    assert set(agentic.trace["law_prediction"]["evidence"]) == {"named", "cited"}
    assert "17083" in [h.doc_id for h in agentic.hits]
    assert agentic.trace["fusion_weights"]["source"] == "model"
    hybrid = rt.pipeline("hybrid+rerank").run(request)
    assert hybrid.trace["reranker"]["name"] == "learned_hybrid" and hybrid.trace["rounds"] == 0
    plain = rt.pipeline("hybrid").run(request)  # reads the weights from the model folder's manifest alone
    assert plain.trace["fusion_weights"] == {**load_models(out).fusion.to_dict(), "source": "model"}
    assert all(np.isfinite(h.score) for h in hybrid.hits)


def test_rerank_depth_scores_the_head_and_keeps_the_rest_in_fusion_order(trained) -> None:
    """``rerank_depth`` (routing tier 1): the reranker orders the fusion's first N and the other sources'
    finds as it would in the whole pool; the rest follow in fusion order, scored below them."""
    runtime, out, report, _ = trained
    rt = Runtime(runtime.settings.replace(index={"model_dir": str(out)}), backend=runtime.backend,
                 embedder=runtime.embedder)
    pipe = rt.pipeline("hybrid+rerank")
    query = "用人单位辞退劳动者应该提前多久告知？"
    whole = pipe.run(SearchRequest(query, index=report["index"], k=500, options={"rerank_depth": 0})).hits
    cut = pipe.run(SearchRequest(query, index=report["index"], k=30, options={"rerank_depth": 5})).hits
    assert len(cut) == 30 and len(whole) > 30
    head = [h for h in cut if h.ranks.get("hybrid", 0) <= 5]
    tail = [h for h in cut if h.ranks.get("hybrid", 0) > 5]
    assert cut == head + tail and len(head) >= 5
    assert [h.ranks["hybrid"] for h in tail] == sorted(h.ranks["hybrid"] for h in tail)
    head_ids = {h.doc_id for h in head}
    assert [h.doc_id for h in head] == [h.doc_id for h in whole if h.doc_id in head_ids]
    assert all(a.score > b.score for a, b in itertools.pairwise(cut))


def test_a_model_trained_with_another_embedder_is_refused(trained) -> None:
    _, out, _, _ = trained
    models = load_models(out)
    with pytest.raises(ConfigError, match="embedder"):
        models.check_embedder("e5-small")


def _dataset_with(folder: Path, queries: str, qrels: str) -> Dataset:
    """The mini corpus with one split ``x`` of the given queries and qrels."""
    folder.mkdir()
    for name in ("corpus.jsonl", "corpus_decisions.jsonl", "dataset.json"):
        (folder / name).write_text((MINI / name).read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "queries.x.tsv").write_text(queries, encoding="utf-8")
    (folder / "qrels.x.tsv").write_text(qrels, encoding="utf-8")
    return Dataset(folder)


def test_split_without_usable_questions_is_a_data_error(trained, tmp_path: Path) -> None:
    runtime, _, _, _ = trained
    dataset = _dataset_with(tmp_path / "empty", "a\tfrage\nb\tnoch eine\n",
                            "a\t0\tnot-a-doc\t1\nb\t0\tnot-a-doc\t1\n")
    with pytest.raises(DataError, match="no question"):
        train_models(runtime, dataset, "x", tmp_path / "m", folds=2)


def test_the_calibration_folds_are_disjoint_and_cross_fitted(trained) -> None:
    _, out, _, measured = trained
    folds = [set(qids) for qids, _ in measured]
    assert len(folds) == 2 and not folds[0] & folds[1]
    assert folds[0] | folds[1] == {q.qid for q in Dataset(MINI).queries("dev")}
    final = load_models(out)
    vectors = {q: v for q, v in zip([q.qid for q in Dataset(MINI).queries("dev")], final.memory.vectors, strict=True)}
    for qids, models in measured:
        # the question memory of the models that measured a fold holds every other question, none of the fold's
        assert len(models.memory) == len(vectors) - len(qids)
        remembered = {tuple(np.round(v, 5)) for v in models.memory.vectors}
        assert not any(tuple(np.round(vectors[q], 5)) in remembered for q in qids)
        # as strong as the served models: the same number of trees
        assert models.reranker_agentic.booster.num_trees() == final.reranker_agentic.booster.num_trees()
        assert models.reranker_hybrid.booster.num_trees() == final.reranker_hybrid.booster.num_trees()
        assert models.planner is not None and models.planner.models.keys() == final.planner.models.keys()
    assert not [p for p in out.iterdir() if p.name.startswith(".calibration-")]  # scratch folders removed


def test_the_calibration_is_stored_with_the_model(trained) -> None:
    _, out, report, _ = trained
    manifest = json.loads((out / "manifest.json").read_text())
    routing = manifest["routing"]
    assert routing == report["routing"]
    assert routing["calibrated_on"] | {"date": ""} == {
        "dataset": Dataset(MINI).name, "data": str(MINI), "split": "dev", "method": "cross-fitted", "folds": 2,
        "queries": 8, "date": ""}
    assert len(routing["thresholds"]) == 3 and 0.0 <= routing["gamma"] <= 1.0 and routing["fit"]["routing"]["rule"]
    timings = manifest["timings_s"]
    assert [name for name in timings if name != "total"] == [step.name for step in training.STEPS]
    assert timings["compile"] >= 0 and timings["calibrate"] > 0


def test_routed_search_with_the_model_uses_its_calibration(trained) -> None:
    runtime, out, report, _ = trained
    routing = report["routing"]
    # the index's own calibration (lexsearch calibrate) differs; the model's comes first
    runtime.backend.update_metadata(report["index"], routing={"thresholds": [0.0, 0.0, 0.0], "gamma": 0.5})
    try:
        served = Runtime(runtime.settings.replace(index={"model_dir": str(out)}), backend=runtime.backend,
                         embedder=runtime.embedder)
        params = served.pipeline("routed").run(SearchRequest("用人单位辞退劳动者应该提前多久告知？",
                                                             index=report["index"], k=10)).trace["routing"]["params"]
        assert params["sources"]["thresholds"] == "model" and params["sources"]["cut"] == "model"
        assert params["thresholds"] == routing["thresholds"] and params["gamma"] == routing["gamma"]
        assert params["cut_sigma"] == routing["cut"]["sigma"] and params["cut_max_k"] == routing["cut"]["max_k"]
        plain = Runtime(runtime.settings, backend=runtime.backend, embedder=runtime.embedder)
        without = plain.pipeline("routed").params(report["index"])
        assert without.sources["thresholds"] == "index" and without.thresholds == (0.0, 0.0, 0.0)
    finally:
        runtime.backend.update_metadata(report["index"], routing={})


def test_the_calibration_measures_a_sample_when_asked(trained, tmp_path: Path) -> None:
    runtime, _, _, _ = trained
    measured: list[str] = []

    def recording(pipe, queries, qrels, **kwargs):  # type: ignore[no-untyped-def]
        measured.extend(q.qid for q in queries)
        return collect_fit_data(pipe, queries, qrels, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(training, "collect_fit_data", recording)
        report = train_models(runtime, Dataset(MINI), "dev", tmp_path / "sampled", folds=2, calibration_questions=4)
    assert len(measured) == len(set(measured)) == 4 and report.to_dict()["routing"]["calibrated_on"]["queries"] == 4


def test_a_split_without_a_law_to_mix_trains_without_the_law_mixer(trained, tmp_path: Path) -> None:
    runtime, _, _, _ = trained

    def nothing_to_mix(evidence, gold):  # type: ignore[no-untyped-def]
        raise ValueError("no training question has its gold law among the candidate laws")

    with pytest.MonkeyPatch.context() as mp:  # as on a corpus of one law
        mp.setattr(training.LawMixer, "fit", nothing_to_mix)
        report = train_models(runtime, Dataset(MINI), "dev", tmp_path / "one-law", folds=2, calibration=None)
    assert "law_mixer" not in json.loads((tmp_path / "one-law" / "manifest.json").read_text())["components"]
    assert report.to_dict()["cv"]["law"] == {
        "skipped": "no training question has its gold law among the candidate laws"}
    assert load_models(tmp_path / "one-law").law_mixer is None


def test_no_calibrate_stores_no_routing(trained, tmp_path: Path) -> None:
    runtime, _, _, _ = trained
    out = tmp_path / "plain"
    report = train_models(runtime, Dataset(MINI), "dev", out, folds=2, calibration=None)
    manifest = json.loads((out / "manifest.json").read_text())
    assert "routing" not in manifest and "routing" not in report.to_dict()
    assert manifest["timings_s"]["calibrate"] == 0.0 and "compile" in manifest["timings_s"]
    assert stored_routing(out) is None


@pytest.mark.parametrize(("case", "message"), [
    ("long", "exceed the limit of 40 characters"),
    ("few", "needs at least 5"),
    ("split", "no split 'nope'"),
    ("out-file", "is a file"),
    ("out-other", "holds files but no trained models"),
    ("out-unwritable", "cannot write the model folder"),
    ("folds", "--folds must be between 2 and 20"),
    ("partitions", "--partitions must be between 1 and 5"),
    ("targets", "latency budget"),
    ("questions", "--calibration-questions must be 0"),
    ("sample", r"at least --folds \(2\), got 1"),
    ("borrow", "no reranker pools there"),
    ("borrow-self", "that is the folder this training writes"),
])
def test_inputs_are_checked_before_any_long_work(tmp_path: Path, case: str, message: str) -> None:
    limit = 40 if case == "long" else 8000
    settings = load_settings(environ={}, overrides={"index": {"root": str(tmp_path / "indices")},
                                                    "retrieval": {"max_query_chars": limit}})
    out = tmp_path / "model"
    folds, split, targets = (5 if case == "few" else 2), ("nope" if case == "split" else "x"), DEFAULT_TARGETS
    if case == "out-file":
        out.write_text("x", encoding="utf-8")
    elif case == "out-other":
        out.mkdir()
        (out / "notes.txt").write_text("mine", encoding="utf-8")
    elif case == "out-unwritable":
        (tmp_path / "file").write_text("x", encoding="utf-8")
        out = tmp_path / "file" / "model"
    elif case == "folds":
        folds = 1
    elif case == "targets":
        targets = CalibrationTargets(latency_budget=1.5)
    dataset = _dataset_with(tmp_path / "data", "".join(f"q{i}\t{'Frage ' * (4 * i + 1)}\n" for i in range(4)),
                            "".join(f"q{i}\t0\t17083\t1\n" for i in range(4)))
    runtime = Runtime(settings)  # no embedder or backend is built before the checks pass
    borrow = {"borrow": [tmp_path / "no-model"], "borrow-self": [out]}.get(case, [])
    with pytest.raises(InvalidInput, match=message):
        train_models(runtime, dataset, split, out, folds=folds, calibration=targets,
                     calibration_questions={"questions": -1, "sample": 1}.get(case, 300), borrow=borrow,
                     partitions=0 if case == "partitions" else 2)
    assert not (tmp_path / "indices").exists() and not runtime._embedders and runtime._backend is None


def test_a_failed_calibration_leaves_working_models(trained, tmp_path: Path) -> None:
    runtime, _, _, _ = trained
    out = tmp_path / "half"
    said: list[str] = []

    def unreachable(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise EngineUnavailable("the engine went away")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(training, "collect_fit_data", unreachable)
        with pytest.raises(EngineUnavailable):
            train_models(runtime, Dataset(MINI), "dev", out, folds=2, progress=said.append)
    assert any("calibrate failed" in line and str(out) in line for line in said)
    models = load_models(out)
    assert models is not None and models.reranker_agentic is not None and stored_routing(out) is None
    assert not [p for p in out.iterdir() if p.name.startswith(".calibration-")]


def test_a_corpus_of_one_law_gets_no_law_mixer(tmp_path) -> None:
    # GerLayQA (the BGB) and COLIEE (the Civil Code): every question's gold law is the only one, so the
    # step leaves the classifier's prediction alone instead of failing to fit.
    from service.corpus.graph import CorpusGraph
    from service.corpus.model import LegalDoc

    graph = CorpusGraph.build([LegalDoc(id=f"bgb{n}", citation=f"§ {n} BGB", text="t", law="BGB") for n in (1, 2)])
    run = training.TrainingRun(None, None, "fit", tmp_path / "out", graph=graph)  # type: ignore[arg-type]
    training.step_law_mixer(run)
    assert run.law_mixer is None and run.law_accuracy == {"skipped": "the corpus has one law"}


def test_questions_of_a_multilingual_corpus_are_analysed_in_their_own_language(tmp_path: Path) -> None:
    fixtures = Path(__file__).parent / "fixtures"
    assert Dataset(fixtures / "trilingual").query_language == ""
    (tmp_path / "dataset.json").write_text('{"name": "zh", "language": "zh"}', encoding="utf-8")
    (tmp_path / "corpus.jsonl").write_text("", encoding="utf-8")
    assert Dataset(tmp_path).query_language == "zh"
