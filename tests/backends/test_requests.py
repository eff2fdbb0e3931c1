"""The pure builders of engine request bodies, compared as dicts; and mappings/ kept in sync with them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from service.backends import _requests as req
from service.backends._analyzers import language_analyses
from service.backends._requests import CorpusKind, Engine, HnswParams, LanguageAnalysis
from service.backends.fieldmap import FieldMap, field_map_from_dict
from service.corpus.model import DocKind, Filters, LegalDoc

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
LEX = FieldMap.lexsearch()
GERMAN = LanguageAnalysis(lang="de", name="german", stopwords=("und", "der"), stemmer="german")


def test_bm25_body_boosts_repeated_terms_and_filters_inside_the_query() -> None:
    body = req.bm25_body({"kaution": 2, "miet": 1, "leer": 0}, k=7, filters=Filters.of(law=["OR", "ZGB"]),
                         fields=LEX)
    assert body == {
        "size": 7,
        "_source": False,
        "stored_fields": "_none_",
        "docvalue_fields": ["id", "work"],
        "track_total_hits": False,
        "query": {"bool": {
            "should": [{"term": {"bm25": {"value": "kaution", "boost": 2.0}}},
                       {"term": {"bm25": {"value": "miet"}}}],
            "minimum_should_match": 1,
            "filter": [{"terms": {"law": ["OR", "ZGB"]}}],
        }},
    }


def test_bm25_body_without_filters_has_no_filter_clause() -> None:
    body = req.bm25_body({"a": 1}, k=3, filters=None, fields=LEX)
    assert body["query"] == {"bool": {"should": [{"term": {"bm25": {"value": "a"}}}], "minimum_should_match": 1}}


def test_bm25_body_keeps_the_heaviest_terms_under_the_clause_limit() -> None:
    weights = {f"t{i}": 1.0 for i in range(req.MAX_CLAUSES + 50)}
    weights["heavy"] = 5.0
    clauses = req.bm25_body(weights, k=3, filters=None, fields=LEX)["query"]["bool"]["should"]
    assert len(clauses) == req.MAX_CLAUSES
    assert {"term": {"bm25": {"value": "heavy", "boost": 5.0}}} in clauses
    # among equal weights the last terms stay: a long question ends with the question proper
    kept = {c["term"]["bm25"]["value"] for c in clauses}
    assert f"t{req.MAX_CLAUSES + 49}" in kept and "t0" not in kept


def test_filter_clauses_cover_terms_dates_and_unmapped_fields() -> None:
    filters = Filters.of(kind="decision", court="BGer", date_from="2014-01-01", date_to="2018-12-31")
    assert req.filter_clauses(filters, LEX) == [
        {"terms": {"court": ["BGer"]}},
        {"terms": {"kind": ["decision"]}},
        {"range": {"date": {"gte": "2014-01-01", "lte": "2018-12-31"}}},
    ]
    foreign = field_map_from_dict({"search": ["body"], "fields": {"law": "statute"},
                                   "filters": {"law": "statute.keyword"}})
    assert req.filter_clauses(Filters.of(law="OR", court="BGer", date_to="2000-01-01"), foreign) == [
        {"match_none": {}},
        {"terms": {"statute.keyword": ["OR"]}},
        {"match_none": {}},
    ]


def test_opensearch_knn_puts_the_filter_inside_the_knn_clause() -> None:
    body = req.knn_body(Engine.OPENSEARCH, np.array([0.5, -0.25], dtype=np.float32), k=5, candidates=100,
                        filters=Filters.of(lang="zh"), fields=LEX)
    assert body == {
        "size": 5,
        "_source": False,
        "stored_fields": "_none_",
        "docvalue_fields": ["id", "work"],
        "track_total_hits": False,
        "query": {"knn": {"vector": {"vector": [0.5, -0.25], "k": 100,
                                     "filter": {"bool": {"filter": [{"terms": {"lang": ["zh"]}}]}}}}},
    }


def test_elasticsearch_knn_section_has_candidates_and_filter() -> None:
    body = req.knn_body(Engine.ELASTICSEARCH, [1.0, 0.0], k=200, candidates=100, filters=Filters.of(law="OR"),
                        fields=LEX)
    assert body == {
        "size": 200,
        "_source": False,
        "stored_fields": "_none_",
        "docvalue_fields": ["id", "work"],
        "track_total_hits": False,
        "knn": {"field": "vector", "query_vector": [1.0, 0.0], "k": 200, "num_candidates": 200,
                "filter": [{"terms": {"law": ["OR"]}}]},
    }


def test_knn_without_filters_has_no_filter_key() -> None:
    body = req.knn_body(Engine.OPENSEARCH, [1.0], k=3, candidates=10, filters=None, fields=LEX)
    assert body["query"] == {"knn": {"vector": {"vector": [1.0], "k": 10}}}


def test_hits_read_the_id_from_doc_values_on_lexsearch_indices() -> None:
    assert LEX.doc_id({"_score": 1.0, "fields": {"id": ["4A_32/2018"]}}) == "4A_32/2018"
    assert LEX.work_id({"_score": 1.0, "fields": {"id": ["x-de"], "work": ["x"]}}) == "x"
    assert LEX.doc_id({"_id": "x", "_score": 1.0}) == "x"  # e.g. from mget
    assert req.hit_fields(field_map_from_dict({"search": ["body"]})) == {"_source": False}


def test_attached_indices_fetch_their_id_field_and_match_their_text_fields() -> None:
    foreign = field_map_from_dict({"id": "doc_no", "vector": "emb", "search": ["headline^2", "body"]})
    knn = req.knn_body(Engine.ELASTICSEARCH, [1.0], k=3, candidates=3, filters=None, fields=foreign)
    assert knn["_source"] == ["doc_no"] and knn["knn"]["field"] == "emb"
    assert req.match_body("Kaution zurück", k=4, filters=None, fields=foreign) == {
        "size": 4, "_source": ["doc_no"], "track_total_hits": False,
        "query": {"bool": {"must": [{"multi_match": {"query": "Kaution zurück", "fields": ["headline^2", "body"],
                                                     "type": "best_fields"}}]}},
    }
    terms = req.bm25_body({"kaution": 3}, k=2, filters=None, fields=foreign)
    assert terms["query"]["bool"]["should"] == [
        {"multi_match": {"query": "kaution", "fields": ["headline^2", "body"], "boost": 3.0}}]


def test_msearch_body_alternates_headers_and_bodies() -> None:
    assert req.msearch_body("idx", [{"size": 1}, {"size": 2}]) == [
        {"index": "idx"}, {"size": 1}, {"index": "idx"}, {"size": 2}]
    assert req.msearch_body("idx", [{"size": 1}, {"size": 2}], ["dfs_query_then_fetch", ""]) == [
        {"index": "idx", "search_type": "dfs_query_then_fetch"}, {"size": 1}, {"index": "idx"}, {"size": 2}]


def test_hybrid_body_combines_the_bm25_and_knn_queries() -> None:
    bm25 = req.bm25_body({"kaution": 1.0}, k=7, filters=Filters.of(law="OR"), fields=LEX)
    knn = req.knn_body(Engine.OPENSEARCH, [1.0, 0.0], k=7, candidates=50, filters=Filters.of(law="OR"), fields=LEX)
    body = req.hybrid_body(bm25, knn, size=7, fields=LEX)
    assert body == {"size": 7, "_source": False, "stored_fields": "_none_", "docvalue_fields": ["id", "work"],
                    "query": {"hybrid": {"queries": [bm25["query"], knn["query"]]}}}
    assert req.hybrid_body(None, knn, size=7, fields=LEX)["query"]["hybrid"]["queries"][0] == {"match_none": {}}


def test_fusion_pipelines_name_their_parameters() -> None:
    name, body = req.fusion_pipeline("linear", rrf_k=60, weights=(1.0, 3.0))
    assert name == "lexsearch-linear-0.25-0.75"
    assert body["phase_results_processors"] == [{"normalization-processor": {
        "normalization": {"technique": "min_max"},
        "combination": {"technique": "arithmetic_mean", "parameters": {"weights": [0.25, 0.75]}}}}]
    name, body = req.fusion_pipeline("rrf", rrf_k=40, weights=(1.0, 1.0))
    assert name == "lexsearch-rrf-40"
    assert body["phase_results_processors"] == [
        {"score-ranker-processor": {"combination": {"technique": "rrf", "rank_constant": 40}}}]


def test_bulk_actions_use_the_document_id() -> None:
    assert req.index_action("i", "4A_32/2018", {"a": 1}) == {
        "_op_type": "index", "_index": "i", "_id": "4A_32/2018", "_source": {"a": 1}}
    assert req.delete_action("i", "x") == {"_op_type": "delete", "_index": "i", "_id": "x"}


def test_document_source_is_the_corpus_line_plus_search_fields() -> None:
    doc = LegalDoc(id="SR220_Art41_de", citation="Art. 41 OR", text="Wer einem andern Schaden zufügt",
                   lang="de", law="OR")
    source = req.document_source(doc.to_dict(), lang="de", vector=np.array([0.6, 0.8], dtype=np.float32),
                                 tokens=["schad", "zufugt"], body="Art. 41 OR\nWer einem andern Schaden zufügt")
    assert source["vector"] == [0.60000002, 0.80000001]  # float32 values, rounded to VECTOR_DECIMALS
    assert source["bm25"] == "schad zufugt"
    assert source["body_de"].startswith("Art. 41 OR")
    assert "date" not in source  # None values are left out
    assert {k: source[k] for k in ("id", "citation", "law", "kind", "lang")} == {
        "id": "SR220_Art41_de", "citation": "Art. 41 OR", "law": "OR", "kind": "statute", "lang": "de"}
    assert req.body_field("zh") == "body_zh" and req.body_field("ja") == "body_xx"


def test_alias_swap_is_one_request_removing_old_and_adding_new() -> None:
    assert req.alias_swap_actions("lex", "lex-v3", ["lex-v2", "lex-v3"]) == [
        {"remove": {"index": "lex-v2", "alias": "lex"}},
        {"add": {"index": "lex-v3", "alias": "lex"}},
    ]
    assert req.version_name("lexsearch-statutes", 1) == "lexsearch-statutes-v1"


def test_analysis_settings_mirror_the_client_chain() -> None:
    synonyms = LanguageAnalysis(lang="en", name="english", stopwords=("the",), stemmer="english",
                                synonyms=("lease, tenancy",))
    assert req.analysis_settings([GERMAN, synonyms]) == {
        "filter": {
            "lexsearch_german_stop": {"type": "stop", "stopwords": ["der", "und"], "ignore_case": True},
            "lexsearch_german_stemmer": {"type": "stemmer", "language": "german"},
            "lexsearch_english_stop": {"type": "stop", "stopwords": ["the"], "ignore_case": True},
            "lexsearch_english_stemmer": {"type": "stemmer", "language": "porter2"},
            "lexsearch_english_synonyms": {"type": "synonym_graph", "lenient": True, "synonyms": ["lease, tenancy"]},
        },
        "analyzer": {
            "lexsearch_german": {"type": "custom", "tokenizer": "standard",
                                 "filter": ["lowercase", "lexsearch_german_stop", "lexsearch_german_stemmer"]},
            "lexsearch_english": {"type": "custom", "tokenizer": "standard",
                                  "filter": ["lowercase", "lexsearch_english_stop", "lexsearch_english_stemmer"]},
            "lexsearch_english_search": {"type": "custom", "tokenizer": "standard",
                                         "filter": ["lowercase", "lexsearch_english_synonyms",
                                                    "lexsearch_english_stop", "lexsearch_english_stemmer"]},
        },
    }


def test_synonyms_file_hook_points_at_the_node_config() -> None:
    hooked = language_analyses("analysis/legal-synonyms-{lang}.txt")
    assert {la.synonyms_path for la in hooked} == {f"analysis/legal-synonyms-{x}.txt" for x in ("de", "fr", "it", "en")}
    settings = req.analysis_settings(hooked)
    assert settings["filter"]["lexsearch_german_synonyms"] == {
        "type": "synonym_graph", "lenient": True, "synonyms_path": "analysis/legal-synonyms-de.txt"}
    body = req.index_body(Engine.OPENSEARCH, dim=4, embedder="e", language="de", kind=CorpusKind.STATUTES,
                          languages=hooked)
    assert body["mappings"]["properties"]["body_de"]["search_analyzer"] == "lexsearch_german_search"


def test_vector_field_per_engine() -> None:
    assert req.vector_mapping(Engine.OPENSEARCH, 512, HnswParams(16, 100)) == {
        "type": "knn_vector", "dimension": 512,
        "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil",
                   "parameters": {"m": 16, "ef_construction": 100}}}
    assert req.vector_mapping(Engine.ELASTICSEARCH, 512, HnswParams(16, 100)) == {
        "type": "dense_vector", "dims": 512, "index": True, "similarity": "cosine",
        "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100}}


def test_index_body_layout() -> None:
    body = req.index_body(Engine.ELASTICSEARCH, dim=512, embedder="use-m3", language="zh",
                          kind=CorpusKind.STATUTES, languages=[GERMAN], bulk_loading=True, created="now")
    settings, mappings = body["settings"], body["mappings"]
    assert settings["index"]["number_of_shards"] == 1 and settings["index"]["refresh_interval"] == "-1"
    assert settings["index"]["translog"] == {"durability": "async"}
    assert "knn" not in settings["index"]  # an OpenSearch-only setting
    assert settings["similarity"] == {"lexsearch_bm25": {"type": "BM25", "k1": 1.2, "b": 0.75}}
    assert mappings["dynamic"] == "strict"
    assert mappings["_source"] == {"excludes": ["bm25", "body_*"]}
    assert mappings["_meta"] == {"lexsearch": {"format": req.FORMAT_VERSION, "embedder": "use-m3", "dim": 512,
                                               "language": "zh", "corpus_kind": "statutes", "created": "now",
                                               "meta": {}}}
    props = mappings["properties"]
    for name in ("citation", "law", "court", "division", "chamber", "case_type", "lang", "kind", "cites"):
        assert props[name]["type"] == "keyword", name
    assert props["date"] == {"type": "date", "format": "strict_date"}
    assert props["bm25"] == {"type": "text", "analyzer": "whitespace", "similarity": "lexsearch_bm25",
                             "index_options": "freqs"}
    assert props["body_de"]["analyzer"] == "lexsearch_german"
    assert props["body_zh"]["analyzer"] == "whitespace"
    assert props["body_fr"]["analyzer"] == "standard"  # no French analysis was given
    assert props["law"]["eager_global_ordinals"] is True and "eager_global_ordinals" not in props["court"]
    decisions = req.index_body(Engine.OPENSEARCH, dim=8, embedder="e", language="", kind=CorpusKind.DECISIONS,
                               languages=[GERMAN])
    assert decisions["settings"]["index"]["knn"] is True
    assert decisions["settings"]["index"]["refresh_interval"] == "1s"  # a live index
    assert decisions["mappings"]["properties"]["court"]["eager_global_ordinals"] is True


def test_corpus_kind_of_documents() -> None:
    assert CorpusKind.of([DocKind.STATUTE, "statute"]) == CorpusKind.STATUTES
    assert CorpusKind.of([]) == CorpusKind.STATUTES
    assert CorpusKind.of(["leading_decision"]) == CorpusKind.LEADING_DECISIONS
    assert CorpusKind.of(["statute", "decision"]) == CorpusKind.DECISIONS


def test_stats_body_counts_languages_and_non_empty_laws() -> None:
    assert req.stats_body(LEX) == {
        "size": 0, "track_total_hits": True,
        "aggs": {"languages": {"terms": {"field": "lang", "size": 100}},
                 "laws": {"filter": {"bool": {"must_not": [{"term": {"law": ""}}]}},
                          "aggs": {"distinct": {"cardinality": {"field": "law", "precision_threshold": 40000}}}}},
    }


def test_mapping_files_match_the_builder() -> None:
    spec = importlib.util.spec_from_file_location("make_mappings", ROOT / "scripts" / "make_mappings.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    expected = module.rendered()
    assert len(expected) == 6
    for rel, text in expected.items():
        path = ROOT / rel
        assert path.is_file(), f"{rel} is missing; run python scripts/make_mappings.py"
        assert json.loads(path.read_text(encoding="utf-8")) == json.loads(text), \
            f"{rel} is stale; run python scripts/make_mappings.py"
