"""The import graph of ``service/`` and ``workers/`` against the layers drawn in docs/ARCHITECTURE.md.

Every import counts: module level, inside functions, and under ``if TYPE_CHECKING``. The plug-in
tables import their implementations by name on use; those names count as imports of the module
that loads them (for the layers; being imported on use, they cannot close an import cycle).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.plugins import BACKENDS, EMBEDDERS, PIPELINES, RERANKERS, REWRITERS, PluginTable

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("service", "workers")
LOADERS: dict[str, tuple[PluginTable, ...]] = {
    "service.pipelines.build": (BACKENDS, EMBEDDERS, PIPELINES),
    "service.rerank.base": (RERANKERS,),
    "service.agents.factory": (REWRITERS,),
}
"""Which module turns the entries of which plug-in tables into objects."""


def modules() -> dict[str, Path]:
    """Every module of the packages by dotted name (a package by its own name)."""
    out = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imported(name: str, path: Path, known: dict[str, Path], *, plugins: bool = True) -> Iterator[str]:
    """The modules of ``known`` that the module ``name`` imports, anywhere in its code; with ``plugins``
    also the implementations it loads from plug-in tables (on use, so they cannot close an import cycle)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            # ``from package import module`` imports the module; ``from module import name`` the module.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target
    for table in LOADERS.get(name, ()) if plugins else ():
        for plugin in table.values():
            for target in filter(None, (plugin.target, plugin.llm)):
                yield target.partition(":")[0]


def import_graph(*, plugins: bool = True) -> dict[str, set[str]]:
    known = modules()
    return {name: set(imported(name, path, known, plugins=plugins)) for name, path in known.items()}


def layers() -> dict[str, int]:
    """Unit (module or package) → layer number, from the table under "## Layers" in docs/ARCHITECTURE.md."""
    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    out: dict[str, int] = {}
    for number, units in re.findall(r"^\|\s*(\d+)\s*\|[^|]*\|([^|]*)\|\s*$", section, flags=re.M):
        for unit in re.findall(r"`([\w.]+)`", units):
            out[unit] = int(number)
    return out


def unit_of(module: str, units: dict[str, int]) -> str | None:
    """The most specific unit that holds ``module``."""
    candidates = [u for u in units if module == u or module.startswith(u + ".")]
    return max(candidates, key=len) if candidates else None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_there_is_no_import_cycle() -> None:
    assert cycles(import_graph(plugins=False)) == []


def test_every_module_sits_in_a_documented_layer() -> None:
    units = layers()
    assert units, "docs/ARCHITECTURE.md has no layer table"
    known = modules()
    assert [m for m in known if unit_of(m, units) is None] == []
    assert [u for u in units if not any(m == u or m.startswith(u + ".") for m in known)] == []


def test_imports_point_down_the_layers() -> None:
    units = layers()
    upward = []
    for module, targets in sorted(import_graph().items()):
        source = unit_of(module, units)
        assert source is not None
        for target in sorted(targets):
            unit = unit_of(target, units)
            assert unit is not None
            if unit != source and units[unit] >= units[source]:
                upward.append(f"{module} (layer {units[source]}) imports {target} (layer {units[unit]})")
    assert upward == []


def test_only_the_command_line_imports_the_workers() -> None:
    importers = defaultdict(list)
    for module, targets in import_graph().items():
        for target in targets:
            if target.split(".")[0] == "workers" and module.split(".")[0] == "service":
                importers[module].append(target)
    assert set(importers) <= {"service.commands.worker"}


def test_the_checks_see_function_level_and_type_only_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import service.config\n"
                      "def f():\n    from service.errors import InvalidInput\n    from service import plugins\n",
                      encoding="utf-8")
    known = {**modules(), "m": module}
    assert set(imported("m", module, known)) == {"service.config", "service.errors", "service.plugins"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
