"""Options shared by every sub-command, and turning them into Settings."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from service.config import Settings, load_settings
from service.console import info, progress_enabled
from service.plugins import BACKENDS, EMBEDDERS

__all__ = ["add_common_options", "info", "progress_enabled", "settings_from_args"]


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
    group.add_argument("--embedder", choices=EMBEDDERS.choices(),
                       help="embedding model (default: use)")
    group.add_argument("--model-path", help="local model folder for --embedder sentence-transformers")
    group.add_argument("--llm-url", help="OpenAI-compatible LLM base URL (default: offline)")
    group.add_argument("--llm-model", help="LLM model name")
    group.add_argument("--llm-key", help="LLM API key (or LEXSEARCH_LLM_API_KEY)")
    group.add_argument("--model", dest="model_dir", help="folder of trained offline models (lexsearch train --out)")


def add_calibration_options(parser: argparse.ArgumentParser) -> None:
    """What a routing calibration aims at (``train`` and ``calibrate``): ``--recall-target``,
    ``--latency-budget`` and ``--confidence``."""
    group = parser.add_argument_group("routing calibration, relative to always running the top tier")
    group.add_argument("--recall-target", type=float, default=0.95,
                       help="share of its Recall@10 to keep (default 0.95)")
    group.add_argument("--latency-budget", type=float, default=0.5,
                       help="share of its mean latency allowed (default 0.5)")
    group.add_argument("--confidence", type=float, default=0.9,
                       help="confidence of the bootstrap bounds on which the recall floor and the latency "
                            "budget must hold (default 0.9)")


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Settings from the environment and config file, overridden by the command-line options."""
    get = lambda name: getattr(args, name, None)  # noqa: E731
    overrides: dict[str, dict[str, Any]] = {
        "backend": {"kind": get("backend"), "url": get("url"), "username": get("username"),
                    "password": get("password"), "api_key": get("engine_api_key"), "ca_cert": get("ca_cert")},
        "embedder": {"kind": get("embedder"), "model_path": get("model_path")},
        "llm": {"base_url": get("llm_url"), "model": get("llm_model"), "api_key": get("llm_key")},
        "index": {"model_dir": get("model_dir")},
    }
    settings = load_settings(get("config"), overrides=overrides)
    index = get("index")
    if index:
        if settings.backend.kind == "embedded":
            path = Path(index)
            settings = settings.replace(index={"root": str(path.parent), "name": path.name})
        else:
            settings = settings.replace(index={"name": index})
    return settings
