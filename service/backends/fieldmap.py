"""Which engine field holds what: lexsearch's own layout, or the layout of an index it did not create.

A :class:`FieldMap` tells the engine backends where a document's id, citation, text, filter values
and vector live, and which fields BM25 searches. Indices created by lexsearch use
:meth:`FieldMap.lexsearch`; an existing index is *attached* with a small TOML or JSON file, so it
can be searched without re-indexing (see ``docs/BACKENDS.md``)::

    index = "legacy-decisions"        # the index or alias this map applies to ("" = every index)
    id = "doc_no"                     # source field holding the document id ("_id" = the engine id)
    vector = "embedding"              # dense_vector / knn_vector field ("" = no kNN)
    work = "work_id"                  # keyword field shared by versions of one work ("" = none)
    search = ["headline^2", "body"]   # engine-analysed text fields for BM25, optional ^boost
    language = "de"                   # language of the documents (query analysis fallback)

    [fields]                          # LegalDoc field -> source field (dotted paths allowed)
    citation = "reference"
    text = "body"
    title = "headline"
    date = "decided_on"

    [filters]                         # filter name -> field to filter on (default: the [fields] entry)
    court = "court.keyword"

Example::

    fm = load_field_map("attach.toml")
    fm.filter_field("court")   # 'court.keyword'
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from service.corpus.model import FILTER_FIELDS, LegalDoc
from service.errors import ConfigError

ENGINE_ID = "_id"
"""Marks that the document id is the engine's own ``_id``."""

DOC_FIELDS: tuple[str, ...] = (
    "citation", "title", "text", "lang", "law", "kind", "date", "court", "division", "chamber", "case_type", "cites",
)
"""LegalDoc fields a field map can point at (``id`` and ``meta`` are handled separately)."""

FILTERABLE: tuple[str, ...] = (*FILTER_FIELDS, "date")
"""Names a ``[filters]`` table may use: the keyword filter fields plus ``date`` for date ranges."""

_TOP_LEVEL = frozenset({"index", "id", "vector", "work", "search", "language", "bm25_tokens", "fields", "filters"})


@dataclass(frozen=True)
class FieldMap:
    """Where each part of a document lives in an engine index.

    Attributes:
        index: the index or alias this map applies to; ``""`` means every index.
        id: the source field holding the document id, or ``"_id"`` for the engine id.
        fields: LegalDoc field -> source field; a missing entry means the index lacks that field.
        filters: filter name -> field filtered on; defaults to the ``fields`` entry of the same name.
        vector: the vector field (``""`` = the index has none, kNN is refused).
        work: a keyword field holding the id of the work a document is a version of (``""`` = none);
            searches return one hit per work (see :mod:`service.corpus.works`).
        bm25_tokens: a whitespace-analysed field holding client-analysed tokens (lexsearch indices);
            when empty, BM25 runs on ``search`` with the engine's analyzers.
        search: engine-analysed text fields for BM25 (``"name^boost"`` allowed).
        language: the documents' language when the index has no language field.
        managed: whether lexsearch created the index (only those accept writes).
        id_docvalue: a keyword field holding the document id, which searches read from doc values
            instead of loading each hit's stored fields (lexsearch indices: ``id``; '' = none).
    """

    index: str = ""
    id: str = ENGINE_ID
    fields: Mapping[str, str] = field(default_factory=dict)
    filters: Mapping[str, str] = field(default_factory=dict)
    vector: str = ""
    work: str = ""
    bm25_tokens: str = ""
    search: tuple[str, ...] = ()
    language: str = ""
    managed: bool = False
    id_docvalue: str = ""

    @classmethod
    def lexsearch(cls) -> FieldMap:
        """The layout of indices lexsearch creates (see ``service.backends._requests``)."""
        return cls(
            fields={name: name for name in DOC_FIELDS},
            vector="vector",
            work="work",
            bm25_tokens="bm25",
            search=("body_de", "body_fr", "body_it", "body_en", "body_zh", "body_xx"),
            managed=True,
            id_docvalue="id",
        )

    def applies_to(self, name: str) -> bool:
        """Whether this map describes the index or alias ``name``."""
        return not self.index or self.index == name

    def filter_field(self, name: str) -> str:
        """The field a filter on ``name`` (a filter field or ``date``) restricts; ``""`` when unmapped."""
        return self.filters.get(name) or self.fields.get(name, "")

    def source_fields(self) -> list[str]:
        """Source fields worth fetching to rebuild a LegalDoc (plus the id field)."""
        wanted = [f for f in self.fields.values() if f]
        if self.id != ENGINE_ID:
            wanted.append(self.id)
        return sorted(set(wanted))

    def doc_id(self, hit: Mapping[str, Any]) -> str:
        """The document id of one engine hit (the doc-value field, ``_id`` or a source field)."""
        if self.id_docvalue:
            values = (hit.get("fields") or {}).get(self.id_docvalue)
            if values:
                return str(values[0])
        if self.id == ENGINE_ID:
            return str(hit["_id"])
        value = lookup(hit.get("_source") or {}, self.id)
        return str(value) if value not in (None, "") else str(hit["_id"])

    def work_id(self, hit: Mapping[str, Any]) -> str:
        """The work id of one engine hit ('' when the document is a work of its own)."""
        if not self.work:
            return ""
        values = (hit.get("fields") or {}).get(self.work) if self.id_docvalue else None
        if values:
            return str(values[0])
        value = lookup(hit.get("_source") or {}, self.work)
        return str(value) if value not in (None, "") else ""

    def to_doc(self, hit: Mapping[str, Any]) -> LegalDoc:
        """A LegalDoc from one engine hit; fields the index lacks stay empty.

        Raises:
            ValueError: when the source cannot form a document (e.g. no text).
        """
        source = hit.get("_source") or {}
        if self.managed:
            data = {k: v for k, v in source.items() if k not in (self.vector, self.bm25_tokens, self.work)}
            data.setdefault("id", str(hit["_id"]))
            return LegalDoc.from_dict(data)
        data: dict[str, Any] = {"id": self.doc_id(hit)}
        for name, path in self.fields.items():
            if not path:
                continue
            value = lookup(source, path)
            if value is None:
                continue
            if name == "cites":
                value = [value] if isinstance(value, str) else [str(v) for v in value]
            elif isinstance(value, list):
                value = " ".join(str(v) for v in value)
            elif name == "date" and isinstance(value, str):
                value = value[:10]
            data[name] = value
        data.setdefault("text", "")
        if self.language and not data.get("lang"):
            data["lang"] = self.language
        if data.get("kind") not in (None, "", "statute", "leading_decision", "decision"):
            data["meta"] = {"kind": data.pop("kind")}
        return LegalDoc.from_dict(data)


def lookup(source: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` of a ``_source`` dict, or ``None``."""
    if path in source:
        return source[path]
    value: Any = source
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def field_map_from_dict(data: Mapping[str, Any], *, where: str = "field map") -> FieldMap:
    """Build and validate a :class:`FieldMap` for an attached index from a parsed TOML/JSON table.

    Raises:
        ConfigError: listing every unknown key or malformed value.
    """
    problems: list[str] = []
    for key in data:
        if key not in _TOP_LEVEL:
            problems.append(f"unknown key {key!r} (known: {', '.join(sorted(_TOP_LEVEL))})")

    def text(key: str, default: str = "") -> str:
        value = data.get(key, default)
        if not isinstance(value, str):
            problems.append(f"{key} must be a string")
            return default
        return value.strip()

    def table(key: str, known: tuple[str, ...]) -> dict[str, str]:
        raw = data.get(key, {})
        if not isinstance(raw, Mapping):
            problems.append(f"[{key}] must be a table of name = field")
            return {}
        out = {}
        for name, value in raw.items():
            if name not in known:
                problems.append(f"[{key}] names unknown field {name!r} (known: {', '.join(known)})")
            elif not isinstance(value, str):
                problems.append(f"[{key}].{name} must be a string")
            else:
                out[name] = value.strip()
        return out

    fields = table("fields", DOC_FIELDS)
    filters = table("filters", FILTERABLE)
    search = data.get("search", [])
    if isinstance(search, str):
        search = [search]
    if not isinstance(search, list) or not all(isinstance(s, str) and s.strip() for s in search):
        problems.append("search must be a list of field names")
        search = []
    fm = FieldMap(index=text("index"), id=text("id", ENGINE_ID) or ENGINE_ID, fields=fields, filters=filters,
                  vector=text("vector"), work=text("work"), bm25_tokens=text("bm25_tokens"),
                  search=tuple(s.strip() for s in search), language=text("language"), managed=False)
    if not fm.search and not fm.bm25_tokens:
        problems.append("name at least one BM25 field in search (e.g. search = [\"body\"])")
    if not fm.fields.get("text") and fm.search:
        fm = replace(fm, fields={**fm.fields, "text": fm.search[0].split("^")[0]})
    if problems:
        raise ConfigError(f"{where}: " + "; ".join(problems))
    return fm


def load_field_map(path: str | os.PathLike[str]) -> FieldMap:
    """Read an attach field map from a ``.toml`` or ``.json`` file.

    Raises:
        ConfigError: when the file is missing, unparsable or invalid.
    """
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"field map file {file} cannot be read: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw) if file.suffix.lower() == ".json" else tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        kind = "JSON" if file.suffix.lower() == ".json" else "TOML"
        raise ConfigError(f"field map file {file} is not valid {kind}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"field map file {file} must hold a table/object")
    return field_map_from_dict(data, where=f"field map file {file}")
