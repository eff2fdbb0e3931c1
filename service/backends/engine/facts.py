"""What lexsearch knows about an engine index: its field map, ``_meta``, vector field and languages.

:class:`IndexCatalog` reads these facts from the mapping once and reuses them for a minute
(:data:`INFO_TTL_S`), so a search costs one request, not three. Writers call
:meth:`IndexCatalog.forget` after changing an index.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from service.backends import _requests as req
from service.backends.engine.client import EngineClient
from service.backends.fieldmap import FieldMap
from service.errors import IndexCorrupt, InvalidInput

INFO_TTL_S = 60.0
"""How long the mapping facts and the language list of an index are reused before being read again."""
_BAD_NAME = re.compile(r'[\\/*?"<>| ,#:A-Z]')


def check_name(name: str) -> None:
    """Refuse names the engines cannot use as index or alias names.

    Raises:
        InvalidInput: naming the rule that was broken.
    """
    if not name or name[0] in "-_+." or _BAD_NAME.search(name) or len(name) > 200:
        raise InvalidInput(f"invalid engine index name {name!r}: use lowercase letters, digits, '-' and '_', "
                           "not starting with '-', '_', '+' or '.' (dot names belong to the engine)")


@dataclass(frozen=True)
class IndexInfo:
    """Facts read from an index mapping: which field map applies, lexsearch's ``_meta``, the vector field."""

    field_map: FieldMap
    meta: Mapping[str, Any] | None
    dim: int
    similarity: str
    indices: tuple[str, ...]
    shards: int = 1
    """Primary shards (the most among ``indices``)."""

    def score_to_similarity(self, score: float) -> float:
        """Turn an engine kNN score back into the cosine the embedded engine reports.

        Both engines report ``(1 + cos) / 2`` for cosine fields; other similarities stay as scored.
        """
        if self.similarity in ("cosine", "cosinesimil"):
            return 2.0 * score - 1.0
        return score


class IndexCatalog:
    """Index facts (mapping, languages) of one cluster, cached for :data:`INFO_TTL_S`.

    Args:
        client: the cluster.
        field_maps: attach maps for indices lexsearch did not create.
    """

    def __init__(self, client: EngineClient, field_maps: Sequence[FieldMap] = ()) -> None:
        self.client = client
        self.field_maps = tuple(field_maps)
        self._lock = threading.Lock()
        self._infos: dict[str, tuple[float, IndexInfo]] = {}
        self._languages: dict[str, tuple[float, tuple[str, ...]]] = {}

    def field_map_for(self, name: str, meta: Mapping[str, Any] | None) -> FieldMap:
        """The field map of index ``name``: an attach map naming it, lexsearch's layout, or a catch-all attach map.

        Raises:
            IndexCorrupt: for an index lexsearch did not create and no field map describes.
        """
        explicit = [fm for fm in self.field_maps if fm.index == name]
        if explicit:
            return explicit[0]
        if meta is not None:
            return FieldMap.lexsearch()
        catch_all = [fm for fm in self.field_maps if not fm.index]
        if catch_all:
            return catch_all[0]
        raise IndexCorrupt(f"index {name!r} on {self.client.url} was not created by lexsearch (its mapping has no "
                           "_meta.lexsearch); describe its fields in a field map (engine.field_map, see "
                           "docs/BACKENDS.md) to search it without re-indexing")

    def info(self, name: str, *, fresh: bool = False) -> IndexInfo:
        """Mapping facts of ``name`` (cached for a minute).

        Raises:
            IndexNotFound: when no index or alias has that name.
            IndexCorrupt: when the index has an unknown lexsearch format or no usable field map.
        """
        now = time.monotonic()
        with self._lock:
            cached = self._infos.get(name)
        if cached and not fresh and now - cached[0] < INFO_TTL_S:
            return cached[1]
        check_name(name)
        mappings = self.client.call("read the mapping", self.client.api.get_mapping, name, index=name)
        if not mappings:
            raise self.client.errors.not_found(name)
        indices = tuple(sorted(mappings))
        mapping = mappings[indices[0]].get("mappings") or {}
        meta = (mapping.get("_meta") or {}).get("lexsearch")
        if meta is not None and meta.get("format") != req.FORMAT_VERSION:
            raise IndexCorrupt(f"index {name!r} has lexsearch format {meta.get('format')!r}; this lexsearch "
                               f"reads format {req.FORMAT_VERSION}. Rebuild it with `lexsearch index`.")
        fm = self.field_map_for(name, meta)
        if fm.managed and fm.work and not _property(mapping, fm.work):
            fm = replace(fm, work="")  # created before lexsearch kept versions of a work together
        vector_prop = _property(mapping, fm.vector) if fm.vector else {}
        dim = int(vector_prop.get("dimension") or vector_prop.get("dims") or (meta or {}).get("dim") or 0)
        method = vector_prop.get("method") or {}
        similarity = str(vector_prop.get("similarity") or method.get("space_type") or vector_prop.get("space_type")
                         or "")
        shards = self.client.call("read the settings", self.client.api.shard_count, name, index=name)
        info = IndexInfo(field_map=fm, meta=meta, dim=dim, similarity=similarity, indices=indices, shards=shards)
        with self._lock:
            self._infos[name] = (now, info)
        return info

    def managed(self, name: str, action: str) -> IndexInfo:
        """The facts of an index lexsearch created (and may write to).

        Raises:
            InvalidInput: for an attached (read-only) index, naming ``action``.
        """
        info = self.info(name)
        if not info.field_map.managed:
            raise InvalidInput(f"index {name!r} is attached read-only (lexsearch did not create it); cannot {action}")
        return info

    def forget(self, *names: str) -> None:
        """Drop the cached facts of ``names`` (after they were changed)."""
        with self._lock:
            for name in names:
                self._infos.pop(name, None)
                self._languages.pop(name, None)

    def forget_languages(self, name: str) -> None:
        """Drop the cached language list of ``name`` (after documents were written)."""
        with self._lock:
            self._languages.pop(name, None)

    def languages(self, name: str) -> tuple[str, ...]:
        """The document languages present in the index (sorted), cached for a minute."""
        now = time.monotonic()
        with self._lock:
            cached = self._languages.get(name)
        if cached and now - cached[0] < INFO_TTL_S:
            return cached[1]
        info = self.info(name)
        field_name = info.field_map.filter_field("lang")
        found: tuple[str, ...] = ()
        if field_name:
            body = {"size": 0, "aggs": {"languages": {"terms": {"field": field_name, "size": 100}}}}
            resp = self.client.call("list languages", self.client.api.search, name, body, index=name)
            found = tuple(sorted(b["key"] for b in resp["aggregations"]["languages"]["buckets"] if b["key"]))
        with self._lock:
            self._languages[name] = (now, found)
        return found

    def query_languages(self, name: str) -> tuple[str, ...]:
        """The languages a query's terms may be analysed in: the index's (sorted), else its declared one."""
        info = self.info(name)
        default = (info.meta or {}).get("language") or info.field_map.language or "en"
        return tuple(self.languages(name) or (default,))


def _property(mapping: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """The mapping of a (dotted) field, or {}."""
    props: Any = mapping.get("properties") or {}
    parts = path.split(".")
    for i, part in enumerate(parts):
        prop = props.get(part) if isinstance(props, Mapping) else None
        if prop is None:
            return {}
        if i == len(parts) - 1:
            return prop
        props = prop.get("properties") or {}
    return {}
