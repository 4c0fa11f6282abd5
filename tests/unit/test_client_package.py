"""askgate-client is a distribution an agent installs alone, and the MCP server is built
on it: what they install (read from the installed packages' metadata) never reaches the
server library or Redis, and their code imports nothing they do not declare (that both
start with the server library made unimportable: tests/integration/test_client_alone.py)."""

from __future__ import annotations

import ast
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.packages import SERVER_SIDE

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {
    "askgate-client": ROOT / "shared/client/src/askgate_client",
    "askgate-mcp": ROOT / "services/mcp/src/askgate_mcp",
}


def installs(dist: str) -> set[str]:
    """Every distribution that installing `dist` brings, `dist` included (markers
    evaluated for this Python, extras followed)."""
    seen: set[tuple[str, frozenset[str]]] = set()
    todo: list[tuple[str, frozenset[str]]] = [(dist, frozenset())]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if (key, extras) in seen:
            continue
        seen.add((key, extras))
        for line in metadata.requires(key) or []:
            req = Requirement(line)
            wanted = {""} | set(extras)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in wanted):
                todo.append((req.name, frozenset(req.extras)))
    return {name for name, _ in seen}


def imported_top_levels(package: Path) -> set[str]:
    """The top-level module of every absolute import in the package, at any depth (an
    import inside a function counts too)."""
    names: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def test_client_installs_only_httpx_and_pydantic() -> None:
    """askgate-client brings nothing beyond what httpx and pydantic bring themselves, and
    sniffio (httpcore's optional import, tried on every request: see its pyproject)."""
    assert installs("askgate-client") - {"askgate-client", "sniffio"} <= installs(
        "httpx"
    ) | installs("pydantic")


@pytest.mark.parametrize("dist", sorted(SOURCES))
def test_installs_no_server_code(dist: str) -> None:
    """Neither the client nor the MCP server installs the server library or Redis."""
    assert not installs(dist) & SERVER_SIDE


def test_mcp_server_is_built_on_the_client() -> None:
    """The MCP server depends on askgate-client."""
    assert "askgate-client" in installs("askgate-mcp")


@pytest.mark.parametrize("dist", sorted(SOURCES))
def test_imports_only_what_it_installs(dist: str) -> None:
    """Every import in the code is the standard library, the package itself, or a module
    of a distribution that installing the package brings."""
    # Editable installs of the workspace list no modules in their metadata: name ours.
    provided = {
        **metadata.packages_distributions(),
        **{path.name: [name] for name, path in SOURCES.items()},
    }
    own = SOURCES[dist].name
    brought = installs(dist)
    strays = {
        name
        for name in imported_top_levels(SOURCES[dist])
        if name not in sys.stdlib_module_names
        and name != own
        and not {canonicalize_name(d) for d in provided.get(name, [])} & brought
    }
    assert not strays, f"{dist} imports {sorted(strays)} without depending on them"
