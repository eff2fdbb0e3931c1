"""The CLI end to end on the mini fixture: happy paths, the --json contract, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from service.cli import main
from tests.support.corpus import MINI, TRILINGUAL, long_question

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def env(tmp_path_factory, embedding_cache_dir) -> dict[str, str]:
    root = tmp_path_factory.mktemp("cli")
    return {"LEXSEARCH_EMBEDDER_CACHE_DIR": str(embedding_cache_dir), "LEXSEARCH_INDEX_ROOT": str(root / "indices"),
            "LEXSEARCH_PROGRESS": "0", "root": str(root)}


@pytest.fixture(scope="module")
def indexed(env) -> str:
    path = str(Path(env["root"]) / "mini-index")
    mp = pytest.MonkeyPatch()
    for key, value in env.items():
        if key.startswith("LEXSEARCH_"):
            mp.setenv(key, value)
    assert main(["index", "--data", str(MINI), "--index", path]) == 0
    yield path
    mp.undo()


def test_search_prints_citations_with_highlighted_snippets(cli, indexed) -> None:
    code, out, _ = cli("search", "Testament unter Drohung errichtet", "--index", indexed, "--top", "3")
    assert code == 0
    assert "Art. 469 ZGB" in out or "5A_666/2012" in out
    assert "«Drohung»" in out


def test_search_json_has_scores_snippets_and_trace(cli, indexed) -> None:
    code, out, _ = cli("search", "用人单位辞退员工未通知工会", "--index", indexed, "--json", "--explain",
                       "--pipeline", "hybrid")
    assert code == 0
    data = json.loads(out)
    assert data["pipeline"] == "hybrid"
    top = data["hits"][0]
    assert {"rank", "doc_id", "citation", "score", "scores", "ranks", "snippet"} <= set(top)
    assert "<em>" in "".join(h["snippet"]["html"] for h in data["hits"])
    assert "timings_ms" in data["trace"]


def test_filter_restricts_results(cli, indexed) -> None:
    code, out, _ = cli("search", "Schaden ersetzen", "--index", indexed, "--json", "--filter", "kind=decision",
                       "--filter", "date_from=2017-01-01")
    assert code == 0
    ids = {h["doc_id"] for h in json.loads(out)["hits"]}
    assert ids and ids <= {"4A_32/2018", "6B_1/2019"}


def test_a_law_filter_ignores_case(cli, indexed) -> None:
    code, out, _ = cli("search", "Schaden ersetzen", "--index", indexed, "--json", "--filter", "law=or")
    assert code == 0
    laws = {h["law"] for h in json.loads(out)["hits"]}
    assert laws == {"OR"}


def test_no_results_within_filters_names_them(cli, indexed) -> None:
    code, out, _ = cli("search", "Schaden ersetzen", "--index", indexed, "--filter", "law=NOPE")
    assert code == 0
    assert "no results within the filters law=NOPE" in out
    assert "the index has no law 'NOPE'" in out
    code, out, _ = cli("search", "Schaden ersetzen", "--index", indexed, "--filter", "law=ZGBB",
                       "--filter", "kind=decision")
    assert "the index has no law 'ZGBB'; close: ZGB" in out


@pytest.mark.parametrize("argv, message", [
    (["search", "   "], "the query is empty"),
    (["search", "x " * 30_000], "the query has 60000 characters; the limit is 50000"),
    (["search", "Kaution", "--filter", "colour=red"], "unknown filter field 'colour'"),
    (["search", "Kaution", "--filter", "law"], "must look like field=value"),
    (["search", "Kaution", "--filter", "date_from=yesterday"], "date_from must be an ISO date"),
    (["search", "Kaution", "--pipeline", "magic"], "unknown pipeline 'magic'"),
    (["search", "Kaution", "--top", "0"], "--top must be between 1 and 1000, got 0"),
    (["search", "Kaution", "--top", "1001"], "--top must be between 1 and 1000, got 1001"),
    (["search", "Kaution", "--lang", "zz"], "unknown question language 'zz'; use one of de, fr, it, en, zh"),
    (["search", "Kaution", "--filter", "lang=de,xx"], "unknown value 'xx' in the lang filter; use one of de, fr"),
    (["search", "Kaution", "--filter", "kind=statue"], "unknown value 'statue' in the kind filter; use one of stat"),
])
def test_bad_search_input_is_a_clear_error(cli, indexed, argv, message) -> None:
    code, _, err = cli(*argv, "--index", indexed)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_missing_index_folder(cli, env) -> None:
    code, _, err = cli("search", "Kaution", "--index", str(Path(env["root"]) / "nowhere"))
    assert code == 2 and "no index named 'nowhere'" in err


def test_corrupt_index_folder(cli, env, indexed) -> None:
    broken = Path(env["root"]) / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text('{"format_version": 1, "state": "ready"')
    code, _, err = cli("search", "Kaution", "--index", str(broken))
    assert code == 2 and "unreadable manifest" in err


def test_missing_data_folder(cli, env) -> None:
    code, _, err = cli("index", "--data", "/no/such/folder", "--index", str(Path(env["root"]) / "x"))
    assert code == 2 and "data folder not found: /no/such/folder" in err


def test_malformed_corpus_lines_are_listed_at_the_end(cli, env, tmp_path) -> None:
    data = tmp_path / "bad"
    data.mkdir()
    good = json.dumps({"id": "a1", "citation": "Art. 1 OR", "text": "Der Vertrag kommt zustande", "lang": "de"})
    (data / "corpus.jsonl").write_text("\n".join([good, "{oops", json.dumps({"id": "b"}), good.replace("a1", "a2")]))
    code, _, err = cli("index", "--data", str(data), "--index", str(tmp_path / "idx"))
    assert code == 0
    assert "skipped 2 malformed line(s)" in err
    assert "corpus.jsonl:2: invalid JSON" in err and "corpus.jsonl:3: missing field 'text'" in err
    assert "indexed 2 of 2 documents" in err


def test_eval_run_files_are_named_after_the_folder_not_the_free_text_name(cli, tmp_path) -> None:
    data = tmp_path / "mini-renamed"
    data.mkdir()
    for source in MINI.iterdir():
        if source.name != "dataset.json":
            (data / source.name).symlink_to(source)
    meta = json.loads((MINI / "dataset.json").read_text())
    meta["name"] = "mini statutes (de/zh/en), dev split"  # a slash would make a folder of the run file
    (data / "dataset.json").write_text(json.dumps(meta))
    code, _, err = cli("eval", "--data", str(data), "--split", "dev", "--pipeline", "bm25", "--sets", "",
                       "--runs", str(tmp_path / "runs"))
    assert code == 0, err
    assert [p.name for p in (tmp_path / "runs").iterdir()] == ["mini-renamed.dev.bm25.run"]


def test_corpus_without_any_valid_document_is_an_error(cli, tmp_path) -> None:
    data = tmp_path / "empty"
    data.mkdir()
    (data / "corpus.jsonl").write_text("{oops\n")
    code, _, err = cli("index", "--data", str(data), "--index", str(tmp_path / "idx"))
    assert code == 2 and "no valid document" in err and "corpus.jsonl:1" in err


def test_eval_prints_a_table_and_writes_the_json_contract(cli, tmp_path) -> None:
    out_file = tmp_path / "results.json"
    code, out, _ = cli("eval", "--data", str(MINI), "--split", "dev", "--pipeline", "bm25,dense,hybrid",
                       "--json", str(out_file), "--runs", str(tmp_path / "runs"))
    assert code == 0
    assert "R@10" in out and "hybrid" in out
    results = json.loads(out_file.read_text())
    assert [r["pipeline"] for r in results] == ["bm25", "dense", "hybrid"]
    for r in results:
        assert {"pipeline", "queries", "recall@10", "recall@100", "mrr@10", "ndcg@10", "latency_ms"} <= set(r)
        assert set(r["latency_ms"]) == {"p50", "p95", "mean"}
        assert r["queries"] == 8 and 0 <= r["recall@10"] <= 1
    assert results[2]["recall@10"] >= 0.5
    assert len(list((tmp_path / "runs").glob("*.run"))) == 3
    assert set(results[0]["sets"]) == {"top1", "top3", "top5", "top10", "cliff"}  # fixed and count need --model
    code, _, err = cli("eval", "--data", str(MINI), "--split", "dev", "--pipeline", "bm25", "--sets", "top3,best")
    assert code == 2 and "unknown set choice 'best'" in err


def test_eval_reuses_the_cached_dataset_index(cli, tmp_path, env) -> None:
    assert cli("eval", "--data", str(MINI), "--split", "dev", "--pipeline", "bm25")[0] == 0
    indices = sorted(p.name for p in Path(env["LEXSEARCH_INDEX_ROOT"]).iterdir() if not p.name.startswith("."))
    assert cli("eval", "--data", str(MINI), "--split", "dev", "--pipeline", "bm25")[0] == 0
    assert sorted(p.name for p in Path(env["LEXSEARCH_INDEX_ROOT"]).iterdir() if not p.name.startswith(".")) \
        == indices
    assert len(indices) == 1 and indices[0].startswith("eval-mini-")


@pytest.mark.parametrize("argv, message", [
    (["eval", "--data", str(MINI), "--split", "test"], "no split 'test'"),
    (["eval", "--data", str(MINI), "--split", "dev", "--pipeline", "bm25,nope"], "unknown pipeline 'nope'"),
    (["eval", "--data", str(MINI), "--split", "dev", "--k", "5"], "--k must be at least 10"),
])
def test_bad_eval_input(cli, argv, message) -> None:
    code, _, err = cli(*argv)
    assert code == 2 and message in err


def test_the_installed_command_never_prints_a_traceback(env) -> None:
    result = subprocess.run([sys.executable, "-m", "service.cli", "search", "", "--index", env["root"] + "/none"],
                            capture_output=True, text=True, timeout=60,
                            env={**{k: v for k, v in env.items() if k.startswith("LEXSEARCH_")}, "PATH": "/usr/bin"})
    assert result.returncode == 2
    assert "the query is empty" in result.stderr and "Traceback" not in result.stderr


def test_delete_removes_documents(cli, env, tmp_path) -> None:
    path = str(tmp_path / "idx")
    assert cli("index", "--data", str(MINI), "--index", path)[0] == 0
    code, _, err = cli("delete", "17086,4958", "nope", "--index", path)
    assert code == 0 and "deleted 2 of 3 documents" in err
    _, out, _ = cli("search", "用人单位辞退员工未通知工会", "--index", path, "--json", "--pipeline", "bm25")
    assert not {"17086", "4958"} & {h["doc_id"] for h in json.loads(out)["hits"]}


def test_a_30000_character_question_is_searched_whole(cli, indexed) -> None:
    question = long_question(30_000)
    assert len(question) == 30_000
    code, out, err = cli("search", question, "--index", indexed, "--json", "--pipeline", "hybrid", "--top", "5")
    assert code == 0, err
    data = json.loads(out)
    assert data["query"] == question and data["hits"]


def test_eval_and_train_refuse_an_overlong_question_before_any_work(cli, tmp_path, env) -> None:
    data = tmp_path / "long"
    data.mkdir()
    for name in ("corpus.jsonl", "qrels.dev.tsv"):
        (data / name).symlink_to(MINI / name)
    (data / "queries.dev.tsv").write_text(f"q3\tKaution\nq4\t{long_question(60_000)}\n")
    root = Path(env["LEXSEARCH_INDEX_ROOT"])
    before = sorted(root.iterdir()) if root.exists() else []
    for argv in (["eval", "--data", str(data), "--split", "dev"],
                 ["train", "--data", str(data), "--split", "dev", "--out", str(tmp_path / "models")]):
        code, _, err = cli(*argv)
        assert code == 2 and "q4 (60000 characters)" in err and "never cut" in err
    assert (sorted(root.iterdir()) if root.exists() else []) == before  # no index was built
    assert not (tmp_path / "models").exists()


@pytest.mark.parametrize("argv, message", [
    (["--json", "/no/such/folder/out.json"], "--json /no/such/folder/out.json: the folder /no/such/folder does not"),
    (["--limit", "-1"], "--limit must be 0"),
    (["--filter", "colour=red"], "unknown filter field 'colour'"),
])
def test_eval_checks_its_options_before_building_anything(cli, argv, message) -> None:
    code, _, err = cli("eval", "--data", str(MINI), "--split", "dev", *argv)
    assert code == 2 and message in err


@pytest.fixture(scope="module")
def trilingual_index(env) -> str:
    path = str(Path(env["root"]) / "trilingual-index")
    mp = pytest.MonkeyPatch()
    for key, value in env.items():
        if key.startswith("LEXSEARCH_"):
            mp.setenv(key, value)
    assert main(["index", "--data", str(TRILINGUAL), "--index", path]) == 0
    yield path
    mp.undo()


def test_one_hit_per_article_shown_in_the_questions_language(cli, trilingual_index) -> None:
    question = "Le bailleur m’a donné mon congé sans raison. Puis-je contester la résiliation?"
    code, out, err = cli("search", question, "--index", trilingual_index, "--json", "--pipeline", "hybrid")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    assert len({h["doc_id"] for h in hits}) == len(hits)
    top = next(h for h in hits if h["doc_id"] == "OR-art271-de")
    assert top["lang"] == "fr" and top["version"] == "OR-art271-fr" and top["citation"] == "art. 271 CO"
    assert [(v["lang"], v["citation"]) for v in top["versions"]] == [
        ("de", "Art. 271 OR"), ("fr", "art. 271 CO"), ("it", "art. 271 CO")]
    assert top["pinpoint"] and top["pinpoint"][0]["citation"].startswith("Art. 271 al. ")
    assert "résiliation" in top["snippet"]["text"] or "congé" in top["snippet"]["text"]


def test_english_questions_see_the_german_version_and_a_language_filter_wins(cli, trilingual_index) -> None:
    code, out, _ = cli("search", "My dog bit a passer-by. Am I liable for the damage?", "--index", trilingual_index,
                       "--json", "--pipeline", "dense", "--top", "3")
    assert code == 0
    assert {h["lang"] for h in json.loads(out)["hits"]} == {"de"}
    code, out, _ = cli("search", "My dog bit a passer-by. Am I liable for the damage?", "--index", trilingual_index,
                       "--json", "--pipeline", "dense", "--top", "3", "--filter", "lang=it")
    assert {h["lang"] for h in json.loads(out)["hits"]} == {"it"}


def test_search_text_names_the_pinpoint_and_the_other_languages(cli, trilingual_index) -> None:
    code, out, _ = cli("search", "Wie viel darf der Vermieter als Sicherheit höchstens verlangen?", "--index",
                       trilingual_index, "--pipeline", "hybrid", "--top", "1")
    assert code == 0
    assert "Art. 257e Abs. 2 OR" in out and "fr: art. 257e CO · it: art. 257e CO" in out


def test_eval_reports_each_question_language_and_matches_gold_by_article(cli, tmp_path) -> None:
    out_file = tmp_path / "results.json"
    code, out, _ = cli("eval", "--data", str(TRILINGUAL), "--split", "dev", "--pipeline", "dense",
                       "--json", str(out_file))
    assert code == 0
    result = json.loads(out_file.read_text())[0]
    assert set(result["by_language"]) == {"de", "en", "fr", "it"}
    assert sum(r["queries"] for r in result["by_language"].values()) == result["queries"] == 4
    # gold names OR-art257e-fr and both OR-art56-de and OR-art56-it: a hit of the work counts, once
    assert result["recall@10"] == 1.0
    assert "  fr " in out and "  it " in out


def test_a_chinese_corpus_gets_its_embedder_and_weights(cli, env, tmp_path, mini_docs, embedding_jar) -> None:
    embedding_jar("bge-small-zh-v15-q")
    corpus = tmp_path / "zh.jsonl"
    corpus.write_text("\n".join(json.dumps(d.to_dict(), ensure_ascii=False) for d in mini_docs if d.lang == "zh"),
                      encoding="utf-8")
    index = str(tmp_path / "zh-index")
    code, _, err = cli("index", "--corpus", str(corpus), "--index", index)
    assert code == 0, err
    assert "with onnx:bge-small-zh-v15-q@512" in err and "fusion weights: bm25 0." in err
    code, out, err = cli("search", "用人单位辞退劳动者应该提前多久告知？", "--index", index, "--pipeline", "hybrid",
                         "--explain", "--json")
    assert code == 0, err
    assert json.loads(out)["trace"]["fusion_weights"]["source"] == "index"
    code, _, err = cli("search", "辞退", "--index", index, "--embedder", "use")
    assert code == 2 and err.count("\n") == 1
    assert "was built with embedder onnx:bge-small-zh-v15-q@512, but the settings configure use-m3" in err
    code, _, err = cli("search", "辞退", "--index", index, "--embedder", "onnx")
    assert code == 2 and "--embedder: embedder onnx needs a model" in err


def test_a_hit_without_a_finite_score_prints_as_n_a() -> None:
    from service.commands.search import _hit_lines

    hit = {"rank": 1, "citation": "Art. 1 ZGB", "title": "", "pinpoint": [], "score": None, "snippet": None}
    assert _hit_lines(hit, cut=False, mark=("«", "»")) == "   1. Art. 1 ZGB  [n/a]"
