"""One name → implementation table per plug-in kind: backends, embedders, pipelines, rerankers, rewriters.

Each entry names its implementation as a ``"module:Attribute"`` string, imported on first use, so
reading a table (CLI choices, settings validation, docs) never loads tantivy, faiss, torch or an
HTTP client. Only :class:`service.pipelines.build.Runtime` turns an entry into an object, by the
construction rule of its kind:

=========== ============================================================ ===================================
table       built by the runtime as                                      chosen by
=========== ============================================================ ===================================
BACKENDS    ``Class.from_config(settings)``                              ``backend.kind``, ``--backend``
EMBEDDERS   ``Class.from_config(settings.embedder)``, in the disk cache  ``embedder.kind``, ``--embedder``
PIPELINES   ``Class.from_runtime(runtime, name=name, **options)``        request ``pipeline``, ``--pipeline``
RERANKERS   ``Runtime.reranker(name, ...)`` (model folder, LLM, path)    ``agents.reranker``, ``reranker``
REWRITERS   ``Offline.from_models(models)``, with an LLM ``Llm(client,   request option ``agents``
            offline)``
=========== ============================================================ ===================================

Example::

    BACKENDS.names()                    # ('embedded', 'opensearch', 'elasticsearch')
    RERANKERS.choices()                 # (..., 'auto'): the names plus their aliases
    PIPELINES.get("bm25").options       # {'mode': 'bm25'}
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from service.errors import InvalidInput


@dataclass(frozen=True)
class Plugin:
    """One implementation of a plug-in kind.

    Attributes:
        target: ``"module:Attribute"`` of the implementation (a class), imported by :meth:`load`.
        summary: one line for help texts and docs.
        options: keyword arguments the implementation is built with (e.g. a pipeline's ``mode``).
        llm: ``"module:Attribute"`` of the LLM counterpart, used when an LLM is configured ('' = none).
    """

    target: str
    summary: str
    options: Mapping[str, Any] = field(default_factory=dict)
    llm: str = ""

    def load(self) -> Any:
        """The implementation named by ``target``."""
        return _resolve(self.target)

    def load_llm(self) -> Any:
        """The LLM counterpart named by ``llm`` (``None`` when there is none)."""
        return _resolve(self.llm) if self.llm else None


def _llm_cell(plugin: Plugin) -> str:
    """`` / `LlmClass` `` (the module shown only when it differs from the offline one's)."""
    if not plugin.llm:
        return ""
    same_module = plugin.llm.partition(":")[0] == plugin.target.partition(":")[0]
    return f" / `{plugin.llm.partition(':')[2] if same_module else plugin.llm}`"


def _resolve(target: str) -> Any:
    module, _, attribute = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


class PluginTable(Mapping[str, Plugin]):
    """The implementations of one kind by name, plus aliases (names resolved by the caller, like ``auto``).

    Args:
        kind: what the names name (``backend``, ``reranker``...), for messages and error codes.
        entries: name → :class:`Plugin`, in the order help texts list them.
        aliases: name → what it means, for names that pick an entry at run time.
    """

    def __init__(self, kind: str, entries: Mapping[str, Plugin], aliases: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self._entries = dict(entries)
        self.aliases = dict(aliases or {})

    def __getitem__(self, name: str) -> Plugin:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> tuple[str, ...]:
        """The implemented names, in table order."""
        return tuple(self._entries)

    def choices(self) -> tuple[str, ...]:
        """What a user may write: the names, then the aliases."""
        return (*self._entries, *self.aliases)

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return self._entries.get(name, default)

    def entry(self, name: str) -> Plugin:
        """The entry called ``name``.

        Raises:
            InvalidInput: for an unknown name (code ``unknown_<kind>``; the message lists the known ones).
        """
        plugin = self._entries.get(name)
        if plugin is None:
            raise InvalidInput(self.unknown(name), code=f"unknown_{self.kind.replace('-', '_')}")
        return plugin

    def unknown(self, name: str) -> str:
        """The message for an unknown name."""
        return f"unknown {self.kind} {name!r}; use one of: {', '.join(self.choices())}"

    def markdown(self) -> str:
        """The table as Markdown rows ``| name | implementation | summary |`` (aliases last)."""
        rows = [f"| `{name}` | `{p.target}`{_llm_cell(p)} | {p.summary} |" for name, p in self._entries.items()]
        rows += [f"| `{name}` | alias | {meaning} |" for name, meaning in self.aliases.items()]
        return "\n".join(rows)


BACKENDS = PluginTable("backend", {
    "embedded": Plugin("service.backends.embedded:EmbeddedBackend",
                       "tantivy (BM25) + faiss (vectors) + SQLite (documents) in one folder per index"),
    "opensearch": Plugin("service.backends.opensearch:OpenSearchBackend", "an OpenSearch cluster (`backend.url`)"),
    "elasticsearch": Plugin("service.backends.elasticsearch:ElasticsearchBackend",
                            "an Elasticsearch cluster (`backend.url`)"),
})

EMBEDDERS = PluginTable("embedder", {
    "use": Plugin("service.embeddings.use:UseEmbedder", "multilingual Universal Sentence Encoder v3 (default)"),
    "e5": Plugin("service.embeddings.e5:E5Embedder", "multilingual-e5-small"),
    "onnx": Plugin("service.embeddings.onnx:OnnxEmbedder",
                   "a langchain4j embedding jar from Maven Central run with onnxruntime (`embedder.model`)"),
    "sentence-transformers": Plugin("service.embeddings.sentence_transformer:SentenceTransformerEmbedder",
                                    "any local sentence-transformers model (`embedder.model_path`)"),
    "openai": Plugin("service.embeddings.openai_embedder:OpenAIEmbedder",
                     "an OpenAI-compatible embeddings endpoint (`embedder.url`, `embedder.model`)"),
})

PIPELINES = PluginTable("pipeline", {
    "bm25": Plugin("service.pipelines.hybrid:HybridPipeline", "BM25 only", {"mode": "bm25"}),
    "dense": Plugin("service.pipelines.hybrid:HybridPipeline", "kNN only", {"mode": "dense"}),
    "hybrid": Plugin("service.pipelines.hybrid:HybridPipeline", "BM25 and kNN side by side, fused client-side",
                     {"mode": "hybrid"}),
    "hybrid+rerank": Plugin("service.pipelines.agentic:AgenticPipeline",
                            "the hybrid pool plus memory candidates, reranked (routing tier 1)", {"rounds": False}),
    "agentic": Plugin("service.pipelines.agentic:AgenticPipeline",
                      "planner, rewriting agents, pool with provenance, reranker (tiers 2 and 3)", {"rounds": True}),
    "routed": Plugin("service.pipelines.routed:RoutedPipeline",
                     "complexity routing over the tiers, score-cliff cut (the default)"),
})

RERANKERS = PluginTable("reranker", {
    "learned": Plugin("service.rerank.learned:LearnedReranker",
                      "LightGBM lambdarank over pool features (needs a model folder)",
                      {"fallback": "none", "unavailable": "no trained reranker (no model folder); kept the heuristic "
                                                          "pool order"}),
    "llm": Plugin("service.rerank.llm:LlmReranker", "the LLM orders the best 20 of the learned order",
                  {"fallback": "learned", "unavailable": "no LLM configured; used the learned reranker"}),
    "cross-encoder": Plugin("service.rerank.cross_encoder:CrossEncoderReranker",
                            "a local CrossEncoder scores the best 50 (`agents.cross_encoder_path`)"),
    "none": Plugin("service.rerank.base:PoolOrderReranker", "the pool's heuristic order"),
}, aliases={"auto": "llm when an LLM is configured, else learned"})

def _agent(module: str, role: str, summary: str) -> Plugin:
    """An agent whose ``module`` holds ``Offline<role>Rewriter`` and ``Llm<role>Rewriter``."""
    return Plugin(f"{module}:Offline{role}Rewriter", summary, llm=f"{module}:Llm{role}Rewriter")


REWRITERS = PluginTable("agent", {
    "terminology": _agent("service.agents.rewriters.terminology", "Terminology",
                          "everyday words to legal terms (term mapping, query adapter)"),
    "conditions": _agent("service.agents.rewriters.conditions", "Conditions",
                         "implicit legal conditions, from the pool's distinctive terms"),
    "decompose": _agent("service.agents.rewriters.decompose", "Decompose", "one query per legal issue of the question"),
    "supportive": _agent("service.agents.rewriters.supportive", "Supportive",
                         "related articles along the citation graph"),
    "repair": _agent("service.agents.rewriters.repair", "Repair",
                     "terms the corpus does not know, replaced by known neighbours"),
    "hyde": _agent("service.agents.hyde", "Hyde", "hypothetical statute passages (LLM only)"),
})
"""The rewriting agents; a request may allow the first five (``hyde`` runs only with an LLM)."""


def resolve_reranker(name: str, *, llm_enabled: bool) -> str:
    """``name`` with the alias ``auto`` resolved: ``llm`` when an LLM is configured, else ``learned``."""
    if name == "auto":
        return "llm" if llm_enabled else "learned"
    return name
