"""The plug-in tables: every entry loads, and the CLI, the settings and the API read the same names."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.agents.base import REWRITING_AGENTS, AgentName
from service.api.schemas import build_components
from service.commands.search import register as register_search
from service.config import load_settings
from service.errors import ConfigError, InvalidInput
from service.plugins import BACKENDS, EMBEDDERS, PIPELINES, RERANKERS, REWRITERS, resolve_reranker

pytestmark = pytest.mark.unit

TABLES = (BACKENDS, EMBEDDERS, PIPELINES, RERANKERS, REWRITERS)


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.kind)
def test_every_entry_names_an_importable_class(table) -> None:  # type: ignore[no-untyped-def]
    for name, plugin in table.items():
        assert isinstance(plugin.load(), type), name
        if plugin.llm:
            assert isinstance(plugin.load_llm(), type), name


def test_construction_rules_are_implemented_by_every_entry() -> None:
    for table, method in ((BACKENDS, "from_config"), (EMBEDDERS, "from_config"), (PIPELINES, "from_runtime"),
                          (REWRITERS, "from_models")):
        for name, plugin in table.items():
            assert callable(getattr(plugin.load(), method, None)), f"{table.kind} {name} lacks {method}"
    for name, plugin in RERANKERS.items():
        assert callable(getattr(plugin.load(), "rerank", None)), name


def test_the_agents_are_the_rewriter_table() -> None:
    assert set(REWRITERS) == {a.value for a in AgentName}
    assert set(REWRITING_AGENTS) == set(REWRITERS) - {AgentName.HYDE.value}


def test_unknown_names_list_the_table() -> None:
    with pytest.raises(InvalidInput, match="use one of: learned, llm, cross-encoder, none, auto") as caught:
        RERANKERS.entry("bogus")
    assert caught.value.code == "unknown_reranker"
    with pytest.raises(ConfigError, match=r"backend\.kind must be one of embedded, opensearch, elasticsearch"):
        load_settings(environ={"LEXSEARCH_BACKEND_KIND": "solr"})
    with pytest.raises(ConfigError, match=r"agents\.reranker must be one of learned, llm, cross-encoder, none, auto"):
        load_settings(environ={"LEXSEARCH_AGENTS_RERANKER": "bogus"})


def test_auto_resolves_by_the_llm_setting() -> None:
    assert resolve_reranker("auto", llm_enabled=True) == "llm"
    assert resolve_reranker("auto", llm_enabled=False) == "learned"
    assert resolve_reranker("none", llm_enabled=True) == "none"


def test_the_cli_and_the_api_offer_the_table_names() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    register_search(parser.add_subparsers())
    search = parser._subparsers._group_actions[0].choices["search"]  # type: ignore[union-attr]
    choices = {a.dest: a.choices for a in search._actions if a.choices}
    assert tuple(choices["reranker"]) == RERANKERS.choices()
    assert tuple(choices["backend"]) == BACKENDS.choices()
    embedder_help = next(a.help for a in search._actions if a.dest == "embedder")  # a spec: kind[:model][@tokens]
    assert all(name in embedder_help for name in EMBEDDERS.names())
    components = build_components(load_settings(environ={}), pipelines=list(PIPELINES), search_pipeline="hybrid",
                                  job_pipeline="hybrid")
    options = components["SearchRequest"]["properties"]["options"]["properties"]
    assert tuple(options["reranker"]["enum"]) == RERANKERS.choices()
    assert tuple(options["agents"]["items"]["enum"]) == REWRITING_AGENTS


def test_the_architecture_page_shows_the_tables() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for table in TABLES:
        assert table.markdown() in page, f"docs/ARCHITECTURE.md does not show the {table.kind} table as it is"


def test_the_agents_page_lists_the_reranker_and_agent_names_of_the_tables() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "AGENTS.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in page.splitlines() if line.startswith("| `")}
    assert [n for n in RERANKERS.choices() if f"`{n}`" not in rows["`reranker`"]] == []
    assert [a for a in REWRITING_AGENTS if a not in rows["`agents`"]] == []
