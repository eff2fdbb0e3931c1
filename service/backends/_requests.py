"""Pure builders of Elasticsearch and OpenSearch request bodies: index settings and mappings,
BM25 and kNN searches with filters, msearch bodies, bulk actions and alias swaps.

Nothing here talks to a server, so every body is tested by comparing dicts
(``tests/backends/test_requests.py``) and the JSON under ``mappings/`` is a dump of
:func:`index_body` (``scripts/make_mappings.py``).

Parity with the embedded engine: BM25 runs on the ``bm25`` field, which holds the tokens of
``service.analysis`` (the same tokens tantivy indexes) and is analysed by the engine's
``whitespace`` analyzer, with BM25 k1=1.2, b=0.75 on both sides. The per-language ``body_*``
fields use engine analyzers built from ``analyzers/<lang>.json`` and serve people (Dashboards,
Kibana) and attached indices; ``_source`` stays the human-readable document.

Example::

    body = bm25_body({"kaution": 1.0, "mietvertrag": 2.0}, k=10, filters=Filters.of(law="OR"),
                     fields=FieldMap.lexsearch())
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.backends.fieldmap import ENGINE_ID, FieldMap
from service.corpus.model import DocKind, Filters

FORMAT_VERSION = 1
"""Version of the engine index layout; stored in the index ``_meta``."""

MAX_CLAUSES = 1000
"""Term clauses per BM25 query; engines refuse more than 1024 by default (see :func:`_top_terms`)."""

BM25_FIELD = "bm25"
VECTOR_FIELD = "vector"
BODY_FIELDS: dict[str, str] = {"de": "body_de", "fr": "body_fr", "it": "body_it", "en": "body_en", "zh": "body_zh"}
OTHER_BODY_FIELD = "body_xx"
"""Languages without their own analyzer go into a ``standard``-analysed field."""
HIDDEN_FIELDS: tuple[str, ...] = (BM25_FIELD, "body_*")
"""Indexed but left out of ``_source``, so documents read as the corpus line they came from."""
KEYWORD_FIELDS: tuple[str, ...] = ("id", "citation", "law", "court", "division", "chamber", "case_type", "lang",
                                   "kind", "cites", "versions")
WORK_FIELD = "work"
"""The id of the work a document is a version of (only on documents that have versions)."""
STEMMER_LANGUAGE: dict[str, str] = {"german": "german", "french": "french", "italian": "italian",
                                    "english": "porter2"}
"""PyStemmer (Snowball) algorithm -> ``stemmer`` token-filter language running the same Snowball stemmer."""


LIVE_SETTINGS: dict[str, Any] = {"refresh_interval": "1s", "translog": {"durability": "request"}}
"""Index settings of a live index (what a bulk-loaded version gets when it is published)."""
BULK_LOADING_SETTINGS: dict[str, Any] = {"refresh_interval": "-1", "translog": {"durability": "async"}}
"""Index settings while a new version is filled: nobody searches it yet, so no refreshes or fsyncs per request."""
VECTOR_DECIMALS = 8
"""Vectors are sent rounded to this many decimals: a third less JSON, far below float32 HNSW noise."""


class Engine(enum.StrEnum):
    """Which engine a body is for (they differ in the vector field and the kNN query)."""

    OPENSEARCH = "opensearch"
    ELASTICSEARCH = "elasticsearch"


class CorpusKind(enum.StrEnum):
    """The mapping flavours under ``mappings/<engine>/<kind>.json``.

    All kinds share one field set, so mixed corpora and every filter work on every index; they
    differ in which keyword fields are pre-loaded for facets (``eager_global_ordinals``) and in
    ``_meta.lexsearch.corpus_kind``.
    """

    STATUTES = "statutes"
    LEADING_DECISIONS = "leading_decisions"
    DECISIONS = "decisions"

    @classmethod
    def of(cls, kinds: Iterable[DocKind | str]) -> CorpusKind:
        """The flavour for a corpus holding documents of these kinds (mixed corpora get ``decisions``)."""
        found = {DocKind(k) for k in kinds}
        if not found or found == {DocKind.STATUTE}:
            return cls.STATUTES
        if found == {DocKind.LEADING_DECISION}:
            return cls.LEADING_DECISIONS
        return cls.DECISIONS


_EAGER: dict[CorpusKind, tuple[str, ...]] = {
    CorpusKind.STATUTES: ("law",),
    CorpusKind.LEADING_DECISIONS: ("law", "court", "case_type"),
    CorpusKind.DECISIONS: ("law", "court", "case_type"),
}


@dataclass(frozen=True)
class LanguageAnalysis:
    """One language's engine analyzer, as defined by ``analyzers/<lang>.json``.

    ``synonyms`` holds Solr-format rules used at search time; ``synonyms_path`` instead names a
    file in the engine's config directory (the hook for a maintained legal-synonyms list).
    """

    lang: str
    name: str
    stopwords: tuple[str, ...]
    stemmer: str | None
    synonyms: tuple[str, ...] = ()
    synonyms_path: str = ""


@dataclass(frozen=True)
class HnswParams:
    """Graph parameters of the vector index (Lucene HNSW on both engines)."""

    m: int = 32
    ef_construction: int = 128


# ----- index settings and mappings -------------------------------------------------------------------


def analysis_settings(languages: Sequence[LanguageAnalysis]) -> dict[str, Any]:
    """The ``settings.analysis`` block: per language a stop filter, a Snowball stemmer and optional synonyms.

    Analyzer ``lexsearch_<name>`` indexes; ``lexsearch_<name>_search`` (only when synonyms are
    configured) adds a ``synonym_graph`` filter at search time.
    """
    filters: dict[str, Any] = {}
    analyzers: dict[str, Any] = {}
    for lang in languages:
        chain = ["lowercase"]
        stop = f"lexsearch_{lang.name}_stop"
        filters[stop] = {"type": "stop", "stopwords": sorted(lang.stopwords), "ignore_case": True}
        chain.append(stop)
        if lang.stemmer:
            stem = f"lexsearch_{lang.name}_stemmer"
            filters[stem] = {"type": "stemmer", "language": STEMMER_LANGUAGE.get(lang.stemmer, lang.stemmer)}
            chain.append(stem)
        analyzers[f"lexsearch_{lang.name}"] = {"type": "custom", "tokenizer": "standard", "filter": chain}
        if lang.synonyms or lang.synonyms_path:
            syn = f"lexsearch_{lang.name}_synonyms"
            rule: dict[str, Any] = {"type": "synonym_graph", "lenient": True}
            if lang.synonyms_path:
                rule["synonyms_path"] = lang.synonyms_path
            else:
                rule["synonyms"] = list(lang.synonyms)
            filters[syn] = rule
            analyzers[f"lexsearch_{lang.name}_search"] = {"type": "custom", "tokenizer": "standard",
                                                           "filter": [chain[0], syn, *chain[1:]]}
    return {"filter": filters, "analyzer": analyzers}


def vector_mapping(engine: Engine, dim: int, hnsw: HnswParams) -> dict[str, Any]:
    """The vector field: ``knn_vector`` (Lucene HNSW, cosine) on OpenSearch, ``dense_vector`` on Elasticsearch.

    OpenSearch always gets engine ``lucene``: the k-NN plugin's faiss/nmslib engines need native
    libraries the Maven build of the plugin lacks. Elasticsearch gets plain ``hnsw`` so its
    default int8/bbq quantisation does not change scores away from the embedded engine's.
    """
    if engine is Engine.OPENSEARCH:
        return {"type": "knn_vector", "dimension": dim,
                "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil",
                           "parameters": {"m": hnsw.m, "ef_construction": hnsw.ef_construction}}}
    return {"type": "dense_vector", "dims": dim, "index": True, "similarity": "cosine",
            "index_options": {"type": "hnsw", "m": hnsw.m, "ef_construction": hnsw.ef_construction}}


def index_body(engine: Engine, *, dim: int, embedder: str, language: str, kind: CorpusKind,
               languages: Sequence[LanguageAnalysis], hnsw: HnswParams = HnswParams(), shards: int = 1,
               replicas: int = 0, bulk_loading: bool = False, created: str = "") -> dict[str, Any]:
    """Settings and mappings of a lexsearch index.

    Args:
        engine: the target engine.
        dim: vector dimension of the embedder.
        embedder: embedder name, stored in ``_meta`` and checked when the index is reopened.
        language: the corpus language ('' = mixed), used for documents that name none.
        kind: the mapping flavour.
        languages: analyzers for the per-language ``body_*`` fields (de, fr, it, en).
        hnsw: vector graph parameters.
        shards: primary shards; 1 keeps BM25 statistics global, as in the embedded engine.
        replicas: replica count (0 on a single node).
        bulk_loading: for a new version being filled: no refreshes and an asynchronous translog until
            :data:`LIVE_SETTINGS` are applied when it goes live.
        created: a timestamp for ``_meta``.

    Returns:
        ``{"settings": ..., "mappings": ...}`` for ``indices.create``.
    """
    by_lang = {la.lang: la for la in languages}
    index_settings: dict[str, Any] = {
        "number_of_shards": shards,
        "number_of_replicas": replicas,
        **(BULK_LOADING_SETTINGS if bulk_loading else LIVE_SETTINGS),
        "query": {"default_field": ["citation.text", "law.text", *BODY_FIELDS.values(), OTHER_BODY_FIELD]},
    }
    if engine is Engine.OPENSEARCH:
        index_settings["knn"] = True
    settings = {
        "index": index_settings,
        "similarity": {"lexsearch_bm25": {"type": "BM25", "k1": 1.2, "b": 0.75}},
        "analysis": analysis_settings(languages),
    }
    eager = _EAGER[kind]
    properties: dict[str, Any] = {}
    for name in KEYWORD_FIELDS:
        prop: dict[str, Any] = {"type": "keyword"}
        if name in eager:
            prop["eager_global_ordinals"] = True
        if name in ("citation", "law"):
            prop["fields"] = {"text": {"type": "text", "analyzer": "standard"}}
        properties[name] = prop
    properties.update({
        "title": {"type": "text", "index": False},
        "text": {"type": "text", "index": False},
        "date": {"type": "date", "format": "strict_date"},
        "meta": {"type": "object", "enabled": False},
        WORK_FIELD: {"type": "keyword"},
        VECTOR_FIELD: vector_mapping(engine, dim, hnsw),
        BM25_FIELD: {"type": "text", "analyzer": "whitespace", "similarity": "lexsearch_bm25",
                     "index_options": "freqs"},
    })
    for lang, field_name in BODY_FIELDS.items():
        if lang == "zh":  # segmented by jieba on the client
            properties[field_name] = {"type": "text", "analyzer": "whitespace", "similarity": "lexsearch_bm25"}
            continue
        spec = by_lang.get(lang)
        if spec is None:
            properties[field_name] = {"type": "text", "analyzer": "standard", "similarity": "lexsearch_bm25"}
            continue
        prop = {"type": "text", "analyzer": f"lexsearch_{spec.name}", "similarity": "lexsearch_bm25"}
        if spec.synonyms or spec.synonyms_path:
            prop["search_analyzer"] = f"lexsearch_{spec.name}_search"
        properties[field_name] = prop
    properties[OTHER_BODY_FIELD] = {"type": "text", "analyzer": "standard", "similarity": "lexsearch_bm25"}
    meta = {"lexsearch": {"format": FORMAT_VERSION, "embedder": embedder, "dim": dim, "language": language,
                          "corpus_kind": kind.value, "created": created, "meta": {}}}
    mappings = {"dynamic": "strict", "_meta": meta, "_source": {"excludes": list(HIDDEN_FIELDS)},
                "properties": properties}
    return {"settings": settings, "mappings": mappings}


# ----- documents and bulk actions --------------------------------------------------------------------


def body_field(lang: str) -> str:
    """The per-language text field a document of ``lang`` is indexed into."""
    return BODY_FIELDS.get(lang, OTHER_BODY_FIELD)


def document_source(doc_dict: Mapping[str, Any], *, lang: str, vector: Sequence[float], tokens: Sequence[str],
                    body: str) -> dict[str, Any]:
    """The ``_source`` of one document: the corpus line, its language, vector, BM25 tokens and body text.

    Args:
        doc_dict: ``LegalDoc.to_dict()``; one with ``versions`` also gets the ``work`` field.
        lang: the resolved language (the document's, the index's, or detected).
        vector: the L2-normalised embedding.
        tokens: ``analyzer_for(lang).tokens(bm25_text(doc))``, indexed into the ``bm25`` field.
        body: the text for the per-language field (jieba-segmented and space-joined for ``zh``).
    """
    source = {k: v for k, v in doc_dict.items() if v is not None}
    if doc_dict.get("versions"):
        source[WORK_FIELD] = doc_dict["versions"][0]
    source["lang"] = lang
    source[VECTOR_FIELD] = np.round(np.asarray(vector, dtype=np.float64), VECTOR_DECIMALS).tolist()
    source[BM25_FIELD] = " ".join(tokens)
    source[body_field(lang)] = body
    return source


def index_action(index: str, doc_id: str, source: Mapping[str, Any]) -> dict[str, Any]:
    """A bulk ``index`` action: insert or replace by id, so re-running never duplicates."""
    return {"_op_type": "index", "_index": index, "_id": doc_id, "_source": dict(source)}


def delete_action(index: str, doc_id: str) -> dict[str, Any]:
    """A bulk ``delete`` action."""
    return {"_op_type": "delete", "_index": index, "_id": doc_id}


# ----- searches ---------------------------------------------------------------------------------------


def filter_clauses(filters: Filters | None, fields: FieldMap) -> list[dict[str, Any]]:
    """Filter clauses for ``bool.filter`` (BM25) and for the filter inside kNN.

    A filter on a field the index does not map matches nothing, as in the embedded engine where
    such a document has an empty value.
    """
    if not filters:
        return []
    clauses: list[dict[str, Any]] = []
    for name, values in filters.terms:
        target = fields.filter_field(name)
        if not target:
            clauses.append({"match_none": {}})
            continue
        clauses.append({"terms": {target: list(values)}})
    if filters.date_from or filters.date_to:
        target = fields.filter_field("date")
        if not target:
            clauses.append({"match_none": {}})
        else:
            bounds = {}
            if filters.date_from:
                bounds["gte"] = filters.date_from
            if filters.date_to:
                bounds["lte"] = filters.date_to
            clauses.append({"range": {target: bounds}})
    return clauses


def hit_fields(fields: FieldMap) -> dict[str, Any]:
    """What a search returns per hit: the id (and the work id), at the least cost.

    On lexsearch indices both come from the keyword fields' doc values, and the stored fields
    (``_id`` and ``_source``, which holds the vector) are not read at all: loading them cost most of
    a search's time on the engine. Attached indices return ``_id`` or their id and work source fields.
    """
    if fields.id_docvalue:
        return {"_source": False, "stored_fields": "_none_",
                "docvalue_fields": [f for f in (fields.id_docvalue, fields.work) if f]}
    wanted = [f for f in (fields.id if fields.id != ENGINE_ID else "", fields.work) if f]
    return {"_source": wanted or False}


def _top_terms(weights: Mapping[str, float]) -> list[tuple[str, float]]:
    """The terms of a BM25 query, at most :data:`MAX_CLAUSES`: the heaviest, and among equal weights the
    ones that appear last (``weights`` is in order of first appearance). Long questions put the facts
    first and the question last, so a question over the limit loses facts' terms, not its question."""
    positive = [(t, float(w)) for t, w in weights.items() if w > 0 and t]
    if len(positive) <= MAX_CLAUSES:
        return positive
    order = {t: i for i, (t, _) in enumerate(positive)}
    kept = sorted(positive, key=lambda tw: (-tw[1], -order[tw[0]]))[:MAX_CLAUSES]
    return sorted(kept, key=lambda tw: order[tw[0]])


def bm25_body(weights: Mapping[str, float], *, k: int, filters: Filters | None, fields: FieldMap) -> dict[str, Any]:
    """BM25 over analysed terms with per-term weights, filters inside the query.

    On lexsearch indices each term is a ``term`` query on the ``bm25`` token field, boosted by its
    weight (its count in the query for plain searches), which scores like the embedded engine's
    tantivy query. On attached indices each term is matched against the ``search`` fields.
    The caller skips the request when no term has a positive weight.
    """
    should: list[dict[str, Any]] = []
    for term, weight in _top_terms(weights):
        if fields.bm25_tokens:
            clause: dict[str, Any] = {"term": {fields.bm25_tokens: {"value": term}}}
            if weight != 1:
                clause["term"][fields.bm25_tokens]["boost"] = weight
        else:
            clause = {"multi_match": {"query": term, "fields": list(fields.search)}}
            if weight != 1:
                clause["multi_match"]["boost"] = weight
        should.append(clause)
    query: dict[str, Any] = {"bool": {"should": should, "minimum_should_match": 1}}
    clauses = filter_clauses(filters, fields)
    if clauses:
        query["bool"]["filter"] = clauses
    return {"size": k, **hit_fields(fields), "track_total_hits": False, "query": query}


def doc_freqs_body(field: str, terms: Sequence[str]) -> dict[str, Any]:
    """Counts of the documents holding each term of the token field ``field``, one bucket per term."""
    filters = {term: {"term": {field: {"value": term}}} for term in dict.fromkeys(terms)}
    return {"size": 0, "track_total_hits": False, "aggs": {"df": {"filters": {"filters": filters}}}}


def match_body(text: str, *, k: int, filters: Filters | None, fields: FieldMap) -> dict[str, Any]:
    """BM25 for raw text analysed by the engine (attached indices without a token field)."""
    query: dict[str, Any] = {"bool": {"must": [{"multi_match": {"query": text, "fields": list(fields.search),
                                                                "type": "best_fields"}}]}}
    clauses = filter_clauses(filters, fields)
    if clauses:
        query["bool"]["filter"] = clauses
    return {"size": k, **hit_fields(fields), "track_total_hits": False, "query": query}


def knn_body(engine: Engine, vector: Sequence[float], *, k: int, candidates: int, filters: Filters | None,
             fields: FieldMap, only: Sequence[str] = ()) -> dict[str, Any]:
    """Approximate nearest neighbours with the filter *inside* the kNN clause.

    So ``k`` results are the best ``k`` among matching documents (Lucene searches the graph
    restricted to the filter, or scans them exactly when few match), never ``k`` filtered after.

    Args:
        engine: the engine (OpenSearch ``knn`` query vs Elasticsearch ``knn`` section).
        vector: the query vector.
        k: how many hits.
        candidates: the HNSW beam width floor (``num_candidates`` on ES, the Lucene ``k`` on OpenSearch).
        filters: metadata restrictions.
        fields: the field map (vector field, filter fields, id field).
        only: restrict to these document or work ids (with ``k`` at least their versions, Lucene then
            scores every one of them exactly).
    """
    values = np.round(np.asarray(vector, dtype=np.float64), VECTOR_DECIMALS).tolist()
    clauses = filter_clauses(filters, fields)
    if only:
        clauses.append(ids_clause(only, fields))
    beam = max(k, candidates)
    body: dict[str, Any] = {"size": k, **hit_fields(fields), "track_total_hits": False}
    if engine is Engine.OPENSEARCH:
        knn: dict[str, Any] = {"vector": values, "k": beam}
        if clauses:
            knn["filter"] = {"bool": {"filter": clauses}}
        body["query"] = {"knn": {fields.vector: knn}}
    else:
        section: dict[str, Any] = {"field": fields.vector, "query_vector": values, "k": k, "num_candidates": beam}
        if clauses:
            section["filter"] = clauses
        body["knn"] = section
    return body


def msearch_body(index: str, bodies: Sequence[Mapping[str, Any]],
                 search_types: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The header/body lines of one ``_msearch`` running ``bodies`` against ``index``.

    ``search_types`` gives each body's search type ('' or missing = the engine's default).
    """
    lines: list[dict[str, Any]] = []
    for position, body in enumerate(bodies):
        header = {"index": index}
        if position < len(search_types) and search_types[position]:
            header["search_type"] = search_types[position]
        lines.append(header)
        lines.append(dict(body))
    return lines


def ids_clause(ids: Sequence[str], fields: FieldMap) -> dict[str, Any]:
    """A filter clause matching the documents with these ids, and the versions of the works with these ids."""
    by_id: dict[str, Any] = ({"ids": {"values": list(ids)}} if fields.id == ENGINE_ID
                             else {"terms": {fields.id: list(ids)}})
    if not fields.work:
        return by_id
    return {"bool": {"should": [by_id, {"terms": {fields.work: list(ids)}}], "minimum_should_match": 1}}


def vectors_body(ids: Sequence[str], fields: FieldMap, *, size: int) -> dict[str, Any]:
    """A search for the documents of ``ids`` (and the versions of the works among them) returning each
    one's id, work id and stored vector, unscored."""
    wanted = [f for f in (fields.vector, fields.id if fields.id != ENGINE_ID else "", fields.work) if f]
    body: dict[str, Any] = {"size": size, "query": {"bool": {"filter": [ids_clause(ids, fields)]}},
                            "_source": {"includes": wanted}}
    if fields.id_docvalue:
        body["docvalue_fields"] = [f for f in (fields.id_docvalue, fields.work) if f]
    return body


def ids_body(ids: Sequence[str], fields: FieldMap, *, excludes: Sequence[str] = ()) -> dict[str, Any]:
    """A search for documents by a source id field (attached indices whose id is not ``_id``)."""
    body: dict[str, Any] = {"size": len(ids), "query": {"terms": {fields.id: list(ids)}}}
    if excludes:
        body["_source"] = {"excludes": list(excludes)}
    return body


FIELD_VALUES_PAGE = 1000
"""Distinct values read per request by :func:`field_values_body`'s composite aggregation."""


def field_values_body(field: str, after: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One page of the distinct values of keyword ``field`` (a composite aggregation named ``values``,
    its source ``value``, resumed ``after``)."""
    composite: dict[str, Any] = {"size": FIELD_VALUES_PAGE, "sources": [{"value": {"terms": {"field": field}}}]}
    if after:
        composite["after"] = dict(after)
    return {"size": 0, "aggs": {"values": {"composite": composite}}}


def stats_body(fields: FieldMap) -> dict[str, Any]:
    """Aggregations for :meth:`stats`: the languages present and the number of distinct laws."""
    aggs: dict[str, Any] = {}
    lang = fields.filter_field("lang")
    law = fields.filter_field("law")
    if lang:
        aggs["languages"] = {"terms": {"field": lang, "size": 100}}
    if law:
        aggs["laws"] = {"filter": {"bool": {"must_not": [{"term": {law: ""}}]}},
                        "aggs": {"distinct": {"cardinality": {"field": law, "precision_threshold": 40000}}}}
    return {"size": 0, "track_total_hits": True, "aggs": aggs}


# ----- native hybrid (OpenSearch neural-search plugin) ------------------------------------------------


def hybrid_body(bm25: Mapping[str, Any] | None, knn: Mapping[str, Any], *, size: int,
                fields: FieldMap) -> dict[str, Any]:
    """One ``hybrid`` query of a BM25 and a kNN body (as built by :func:`bm25_body` and :func:`knn_body`).

    A search pipeline (:func:`fusion_pipeline`) normalises and combines the two result lists on the
    engine. A missing BM25 query (no term) becomes ``match_none``, so the weights stay in place.
    """
    queries = [dict(bm25["query"]) if bm25 is not None else {"match_none": {}}, dict(knn["query"])]
    return {"size": size, **hit_fields(fields), "query": {"hybrid": {"queries": queries}}}


def fusion_pipeline(fusion: str, *, rrf_k: int, weights: tuple[float, float]) -> tuple[str, dict[str, Any]]:
    """The search pipeline that fuses a :func:`hybrid_body`: its name and body.

    ``linear``: min-max normalisation and the weighted arithmetic mean (the client's linear fusion
    with ``normalization=minmax``); ``rrf``: reciprocal rank fusion with constant ``rrf_k``. The
    name encodes the parameters, so each fusion has its own pipeline.
    """
    if fusion == "rrf":
        processor = {"score-ranker-processor": {"combination": {"technique": "rrf", "rank_constant": rrf_k}}}
        name = f"lexsearch-rrf-{rrf_k}"
    else:
        total = sum(weights) or 1.0
        shares = [round(w / total, 6) for w in weights]
        processor = {"normalization-processor": {
            "normalization": {"technique": "min_max"},
            "combination": {"technique": "arithmetic_mean", "parameters": {"weights": shares}}}}
        name = f"lexsearch-linear-{shares[0]:g}-{shares[1]:g}"
    return name, {"description": "lexsearch hybrid fusion (BM25, kNN)", "phase_results_processors": [processor]}


# ----- aliases ----------------------------------------------------------------------------------------


def alias_swap_actions(alias: str, new_index: str, old_indices: Sequence[str]) -> list[dict[str, Any]]:
    """One atomic ``_aliases`` request pointing ``alias`` at ``new_index`` only."""
    actions: list[dict[str, Any]] = [{"remove": {"index": old, "alias": alias}} for old in old_indices
                                     if old != new_index]
    actions.append({"add": {"index": new_index, "alias": alias}})
    return actions


def version_name(alias: str, version: int) -> str:
    """The physical index of one version: ``name-vN``."""
    return f"{alias}-v{version}"
