"""Index lifecycle on an engine: versioned indices ``name-vN`` behind the alias ``name``.

:meth:`IndexLifecycle.create_version` makes the next version (refresh off, asynchronous
translog, for bulk loading); documents are written into it; :meth:`IndexLifecycle.publish`
applies the live settings, refreshes, force-merges, swaps the alias in one atomic request and
deletes the older versions, so searches on ``name`` never see a half-built index.
:meth:`IndexLifecycle.ensure_index` creates ``name-v1`` behind ``name`` for incremental writes.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from service.backends import _requests as req
from service.backends._analyzers import language_analyses
from service.backends._requests import CorpusKind, HnswParams
from service.backends.engine.client import EngineClient
from service.backends.engine.facts import IndexCatalog, check_name
from service.backends.engine.tasks import task_failure, wait_for_task
from service.config import EngineSettings
from service.errors import EngineUnavailable, IndexCorrupt, InvalidInput, LexsearchError

log = logging.getLogger(__name__)


def version_number(physical: str) -> int:
    """N of a physical index ``name-vN``."""
    return int(physical.rsplit("-v", 1)[1])


class IndexLifecycle:
    """Creates, publishes and deletes the versions of lexsearch indices on one cluster.

    Args:
        client: the cluster.
        catalog: the index facts, forgotten whenever an index changes.
        options: index layout (shards, replicas, HNSW, synonyms) and force-merge.
    """

    def __init__(self, client: EngineClient, catalog: IndexCatalog, options: EngineSettings) -> None:
        self.client = client
        self.api = client.api
        self.catalog = catalog
        self.options = options
        self._lock = threading.Lock()
        self._building: set[str] = set()
        self._synonyms_supported: bool | None = None

    def exists(self, name: str) -> bool:
        """Whether an index or alias called ``name`` exists."""
        check_name(name)
        return bool(self.client.call("check the index", self.api.exists, name, index=name))

    def versions(self, name: str) -> list[str]:
        """The physical versions ``name-vN`` that exist, oldest first."""
        pattern = re.compile(re.escape(name) + r"-v(\d+)")
        found = self.client.call("list versions", self.api.get_aliases, f"{name}-v*", index=name)
        numbered = sorted((int(m.group(1)), idx) for idx in found if (m := pattern.fullmatch(idx)))
        return [idx for _, idx in numbered]

    def alias_targets(self, name: str) -> list[str]:
        """The indices the alias ``name`` points at ([] when ``name`` is no alias)."""
        return sorted(self.client.call("read the alias", self.api.alias_targets, name, index=name))

    def is_building(self, physical: str) -> bool:
        """Whether ``physical`` is a version being bulk-loaded (created here, not yet published)."""
        with self._lock:
            return physical in self._building

    def supports_synonyms(self) -> bool:
        """Whether the node has the ``synonym_graph`` token filter (checked once with ``_analyze``)."""
        with self._lock:
            known = self._synonyms_supported
        if known is None:
            probe = {"tokenizer": "standard", "filter": [{"type": "synonym_graph", "synonyms": ["a => b"]}],
                     "text": "a"}
            try:
                self.client.call("check analysis", self.api.analyze, probe)
                known = True
            except EngineUnavailable as exc:
                if "HTTP 400" not in str(exc):
                    raise
                known = False
            with self._lock:
                self._synonyms_supported = known
        return known

    def ensure_index(self, name: str, *, language: str, dim: int, embedder: str,
                     kind: CorpusKind | str = CorpusKind.DECISIONS) -> None:
        """Create ``name`` (as ``name-v1`` behind the alias ``name``), or check that the existing one matches.

        Raises:
            IndexCorrupt: when the existing index has another dimension or embedder.
            InvalidInput: when ``name`` exists but lexsearch did not create it.
        """
        check_name(name)
        if self.exists(name):
            self._check_compatible(name, dim=dim, embedder=embedder)
            return
        physical = self._next_version(name)
        body = self._body(dim=dim, embedder=embedder, language=language, kind=kind, bulk_loading=False)
        body["aliases"] = {name: {}}
        try:
            self.client.call("create the index", self.api.create_index, physical, body, index=physical)
        except EngineUnavailable as exc:
            if "resource_already_exists" not in str(exc):
                raise
        self.catalog.forget(name)
        self._check_compatible(name, dim=dim, embedder=embedder)

    def create_version(self, name: str, *, language: str, dim: int, embedder: str,
                       kind: CorpusKind | str = CorpusKind.DECISIONS) -> str:
        """Create the next version ``name-vN`` (not yet behind the alias; refresh off for bulk loading, and
        ``engine.load_replicas`` replicas).

        Returns:
            The physical index name; write into it, then :meth:`publish` or :meth:`discard`.

        Raises:
            InvalidInput: when ``name`` is a concrete index rather than an alias.
        """
        check_name(name)
        if self.exists(name) and not self.alias_targets(name):
            raise InvalidInput(f"{name!r} on {self.client.url} is an index, not an alias; lexsearch swaps versions "
                               "behind an alias, so rebuild under another name or delete that index")
        physical = self._next_version(name)
        body = self._body(dim=dim, embedder=embedder, language=language, kind=kind, bulk_loading=True)
        self.client.call("create the index", self.api.create_index, physical, body, index=physical)
        with self._lock:
            self._building.add(physical)
        return physical

    def publish(self, name: str, physical: str) -> list[str]:
        """Make ``physical`` live: refresh (and force-merge), add the replicas a load left out
        (``engine.load_replicas``), swap the alias atomically, delete older versions.

        Once the alias points at ``physical`` the new version is live, so a failure to delete the
        older ones does not fail the publish: it is logged, and the next publish of ``name`` deletes
        them (it deletes every older version, not only the one it replaced).

        Returns:
            The indices deleted (empty when their deletion failed).
        """
        call = self.client.call
        call("apply live settings", self.api.put_settings, physical, {"index": req.LIVE_SETTINGS}, index=physical)
        call("refresh", self.api.refresh, physical, index=physical)
        if self.options.force_merge:
            self._force_merge(physical)
        if self.options.replicas_while_loading != self.options.replicas:
            self._add_replicas(physical)
        current = self.alias_targets(name)
        call("swap the alias", self.api.update_aliases, req.alias_swap_actions(name, physical, current), index=name)
        with self._lock:
            self._building.discard(physical)
        new_version = version_number(physical)
        older = {v for v in self.versions(name) if version_number(v) < new_version}
        stale = sorted((set(current) | older) - {physical})
        self.catalog.forget(name, physical)
        if stale:
            try:
                call("delete old versions", self.api.delete_indices, stale, index=name)
            except LexsearchError as exc:
                log.warning("%s now serves %s, but deleting the older versions %s failed (%s); the next "
                            "publish of %s deletes them", name, physical, ", ".join(stale), exc, name)
                return []
        return stale

    def _force_merge(self, physical: str) -> None:
        """Merge ``physical`` to one segment a shard: a task of the cluster, polled until it ends
        (``engine.force_merge_timeout_s``), so that no request is held open for the minutes it takes on
        a large index."""
        call = self.client.call
        task_id = call("start the force-merge", self.api.start_forcemerge, physical, index=physical)
        what = f"the force-merge of {physical} (task {task_id})"
        status = wait_for_task(lambda: call(f"poll {what}", self.api.task, task_id),
                               timeout_s=self.options.force_merge_timeout_s, what=what,
                               advice="Nothing was published. Allow it longer (engine.force_merge_timeout_s) or "
                                      "skip it (engine.force_merge = false), and index again")
        problem = task_failure(status)
        if problem:
            raise EngineUnavailable(f"{what} failed: {problem}; nothing was published")

    def _add_replicas(self, physical: str) -> None:
        """Give a version loaded with ``engine.load_replicas`` its ``engine.replicas`` and wait until they
        are copied (the merged segments are copied, not re-indexed). A cluster that cannot place them
        (fewer nodes than copies) stays yellow: that is logged, and the version goes live as it would
        have been created."""
        call = self.client.call
        call("add replicas", self.api.put_settings, physical,
             {"index": {"number_of_replicas": self.options.replicas}}, index=physical)
        timeout_s = self.options.replica_wait_s
        status = call("wait for the replicas", self.api.wait_for_green, physical, timeout_s, index=physical)
        if status != "green":
            log.warning("%s is %s after %.0f s: not every replica of its shards is allocated yet", physical,
                        status, timeout_s)

    def discard(self, physical: str) -> None:
        """Delete an unpublished version (after a failed build)."""
        with self._lock:
            self._building.discard(physical)
        if self.exists(physical):
            self.client.call("delete the index", self.api.delete_indices, [physical], index=physical)
        self.catalog.forget(physical)

    def drop(self, name: str) -> None:
        """Delete the alias ``name`` with every version behind it (or the plain index ``name``)."""
        targets = set(self.alias_targets(name)) | set(self.versions(name))
        if not targets and self.exists(name):
            targets = {name}
        if targets:
            self.client.call("delete the index", self.api.delete_indices, sorted(targets), index=name)
        self.catalog.forget(name)

    def _next_version(self, name: str) -> str:
        existing = self.versions(name)
        return req.version_name(name, version_number(existing[-1]) + 1 if existing else 1)

    def _body(self, *, dim: int, embedder: str, language: str, kind: CorpusKind | str,
              bulk_loading: bool) -> dict[str, Any]:
        languages = language_analyses(self.options.synonyms_path)
        if any(la.synonyms or la.synonyms_path for la in languages) and not self.supports_synonyms():
            log.warning("%s at %s has no synonym_graph filter (analysis-common module); the body_* fields of "
                        "new indices get no synonyms (query-side synonyms still apply)", self.api.product,
                        self.client.url)
            languages = [replace(la, synonyms=(), synonyms_path="") for la in languages]
        return req.index_body(
            self.api.engine, dim=dim, embedder=embedder, language=language, kind=CorpusKind(kind),
            languages=languages,
            hnsw=HnswParams(self.options.hnsw_m, self.options.hnsw_ef_construction),
            shards=self.options.shards,
            replicas=self.options.replicas_while_loading if bulk_loading else self.options.replicas,
            bulk_loading=bulk_loading,
            created=datetime.now(UTC).isoformat(timespec="seconds"),
        )

    def _check_compatible(self, name: str, *, dim: int, embedder: str) -> None:
        info = self.catalog.info(name, fresh=True)
        if not info.field_map.managed:
            raise InvalidInput(f"index {name!r} exists but lexsearch did not create it; search it through a field "
                               "map, or index into another name")
        meta = info.meta or {}
        if meta.get("dim") != dim or meta.get("embedder") != embedder:
            raise IndexCorrupt(
                f"index {name!r} was built with embedder {meta.get('embedder')} (dim {meta.get('dim')}), but the "
                f"settings use {embedder} (dim {dim}); rebuild it (`lexsearch index`) or change the embedder")
