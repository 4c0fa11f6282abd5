"""The shared library's layers point one way: domain ← store ← runtime ← channels, with
settings beside the domain and the dev tools (CLI, `make run`, embedded Redis) on top;
no service imports the dev tools, and the client needs none of it."""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "shared" / "src" / "askgate"
# What each part of the library may import from askgate (besides itself).
MAY_IMPORT = {
    "domain": {"domain"},
    "settings": {"domain"},
    "store": {"domain", "settings"},
    "runtime": {"domain", "settings", "store"},
    "channels": {"domain", "settings", "store", "runtime"},
    "dev": {"domain", "settings", "store", "runtime", "channels"},
}


def askgate_imports(path: pathlib.Path) -> set[str]:
    """The askgate parts a module imports: `askgate.store.keys` → "store"."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = (
                [node.module]
                if node.module != "askgate"
                else [f"askgate.{alias.name}" for alias in node.names]
            )
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "askgate" and len(parts) > 1:
                found.add(parts[1])
    return found


def part_of(path: pathlib.Path) -> str:
    rel = path.relative_to(LIBRARY)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


@pytest.mark.parametrize(
    "path", sorted(LIBRARY.rglob("*.py")), ids=lambda p: str(p.relative_to(LIBRARY))
)
def test_library_module_imports_only_layers_below(path: pathlib.Path) -> None:
    part = part_of(path)
    if part == "__init__":
        return
    allowed = MAY_IMPORT[part] | {part}
    assert askgate_imports(path) <= allowed, (
        f"{path.relative_to(ROOT)} ({part}) imports {askgate_imports(path) - allowed}"
    )


def test_no_service_imports_the_dev_tools() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "services").rglob("src/**/*.py")
        if "dev" in askgate_imports(p)
    ]
    assert offenders == []


def test_every_library_module_belongs_to_a_layer() -> None:
    loose = {p.stem for p in LIBRARY.glob("*.py")} - {"__init__", "settings"}
    assert loose == set(), f"modules outside a layer: {sorted(loose)}"


def test_services_read_questions_through_the_store() -> None:
    """Every hash field has one owner (askgate.store): a service uses Record's accessors
    and the store's methods, never a raw field (`rec.f[...]`) or a hash command."""
    raw = re.compile(r"\.f\[|\.f\.get\(|\.(hget|hgetall|hmget|hset)\(")
    offenders = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in (ROOT / "services").rglob("src/**/*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if raw.search(line)
    ]
    assert offenders == []
