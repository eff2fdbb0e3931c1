"""Options shared by every sub-command, and turning them into Settings."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from service.config import Settings, load_settings, parse_embedder_spec
from service.console import info, progress_enabled
from service.corpus.model import Filters
from service.errors import InvalidInput
from service.plugins import BACKENDS, EMBEDDERS, RERANKERS

__all__ = ["add_common_options", "check_output_path", "info", "progress_enabled", "settings_from_args"]

DATA_HELP = "dataset folder (corpus*.jsonl, queries.<split>.tsv, qrels)"


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """Options every command accepts: config file, backend and its connection, index, embedder, LLM."""
    group = parser.add_argument_group("settings (override LEXSEARCH_* variables and the config file)")
    group.add_argument("--config", help="TOML settings file (default: $LEXSEARCH_CONFIG)")
    group.add_argument("--backend", choices=BACKENDS.choices(),
                       help="search engine (default: embedded)")
    group.add_argument("--url", help="engine URL for opensearch/elasticsearch")
    group.add_argument("--username", help="basic-auth user name for the engine")
    group.add_argument("--password", help="basic-auth password (or LEXSEARCH_BACKEND_PASSWORD)")
    group.add_argument("--api-key", dest="engine_api_key", help="engine API key")
    group.add_argument("--ca-cert", help="CA certificate file for the engine's TLS")
    group.add_argument("--index", help="embedded: index folder; engines: index or alias name")
    group.add_argument("--embedder", metavar="SPEC",
                       help="one embedding model for every corpus language instead of the configured ones: "
                            f"{'|'.join(EMBEDDERS.names())}[:model][@max_tokens], e.g. use or "
                            "onnx:bge-small-zh-v15-q")
    group.add_argument("--model-path", help="--embedder sentence-transformers: model folder; onnx: a jar file")
    group.add_argument("--llm-url", help="OpenAI-compatible LLM base URL (default: offline)")
    group.add_argument("--llm-model", help="LLM model name")
    group.add_argument("--llm-key", help="LLM API key (or LEXSEARCH_LLM_API_KEY)")
    group.add_argument("--model", dest="model_dir", help="folder of trained offline models (lexsearch train --out)")


def add_calibration_options(parser: argparse.ArgumentParser) -> None:
    """What a routing calibration aims at (``train`` and ``calibrate``): ``--recall-target``,
    ``--latency-budget``, ``--confidence`` and ``--min-confidence``."""
    group = parser.add_argument_group("routing calibration, relative to always running the top tier")
    group.add_argument("--recall-target", type=float, default=0.95,
                       help="share of its Recall@10 to keep (default 0.95)")
    group.add_argument("--latency-budget", type=float, default=0.5,
                       help="share of its mean latency allowed (default 0.5)")
    group.add_argument("--confidence", type=float, default=0.9,
                       help="confidence of the bootstrap bounds on which the recall floor and the latency "
                            "budget must hold (default 0.9)")
    group.add_argument("--min-confidence", type=float, default=0.7,
                       help="when no setting meets both at --confidence, lower it in steps of 0.1 down to this "
                            "before giving up the latency budget (default 0.7; equal to --confidence: never)")


def add_split_options(parser: argparse.ArgumentParser, *, split_help: str, data_help: str = DATA_HELP) -> None:
    """``--data`` and ``--split``, both required, of the commands that work on one split of a dataset."""
    parser.add_argument("--data", required=True, help=data_help)
    parser.add_argument("--split", required=True, help=split_help)


def add_reranker_option(parser: argparse.ArgumentParser) -> None:
    """``--reranker``: the reranker of the agentic pipelines (``search`` and ``eval``)."""
    parser.add_argument("--reranker", choices=RERANKERS.choices(),
                        help="reranker of the agentic pipelines (auto: llm when an LLM is configured, else learned)")


def filters_from_args(specs: list[str]) -> Filters | None:
    """The ``--filter FIELD=VALUE`` options as :class:`Filters` (None when there are none).

    Raises:
        InvalidInput: for an unknown field or a malformed option.
    """
    try:
        return Filters.parse(specs) if specs else None
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Settings from the environment and config file, overridden by the command-line options."""
    get = lambda name: getattr(args, name, None)  # noqa: E731
    overrides: dict[str, dict[str, Any]] = {
        "backend": {"kind": get("backend"), "url": get("url"), "username": get("username"),
                    "password": get("password"), "api_key": get("engine_api_key"), "ca_cert": get("ca_cert")},
        "embedder": {"model_path": get("model_path")},
        "llm": {"base_url": get("llm_url"), "model": get("llm_model"), "api_key": get("llm_key")},
        "index": {"model_dir": get("model_dir")},
    }
    spec, model_path = get("embedder"), get("model_path")
    if spec:
        if model_path and ":" not in spec:  # --embedder sentence-transformers --model-path FOLDER
            spec = f"{spec}:{model_path}"
        try:
            overrides["embedder"] = {**parse_embedder_spec(spec), "per_language": ()}
        except ValueError as exc:
            raise InvalidInput(f"--embedder: {exc}") from None
    settings = load_settings(get("config"), overrides=overrides)
    index = get("index")
    if index:
        if settings.backend.kind == "embedded":
            path = Path(index)
            settings = settings.replace(index={"root": str(path.parent), "name": path.name})
        else:
            settings = settings.replace(index={"name": index})
    return settings


def check_output_path(path: str | None, option: str, *, folder: bool = False) -> None:
    """Refuse an output path that cannot be written, before any long work starts.

    Args:
        path: the file (or, with ``folder``, the folder) a command will write; ``None`` = not asked for.
        option: the command-line option that named it, for the message.
        folder: whether ``path`` is a folder (created when missing) rather than a file.

    Raises:
        InvalidInput: when the path is an existing folder/file of the wrong kind, or its folder is missing
            or not writable.
    """
    if not path:
        return
    target = Path(path)
    if folder:
        if target.exists() and not target.is_dir():
            raise InvalidInput(f"{option} {path}: exists and is not a folder")
        parent = target if target.is_dir() else _existing_parent(target)
    else:
        if target.is_dir():
            raise InvalidInput(f"{option} {path}: is a folder; name a file")
        parent = target.parent
        if not parent.is_dir():
            raise InvalidInput(f"{option} {path}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise InvalidInput(f"{option} {path}: cannot write into {parent}")


def _existing_parent(path: Path) -> Path:
    for parent in path.parents:
        if parent.exists():
            return parent
    return Path(".")
