"""The order `make test` deals the tests to its xdist workers (tests/support/lanes.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from tests.support.lanes import lanes

SERVICES = frozenset({"api_server"})


@dataclass
class Item:
    """What lanes reads of a collected pytest item."""

    nodeid: str
    fixturenames: list[str] = field(default_factory=list)
    scopes: dict[str, str] = field(default_factory=dict)  # fixture name → scope

    @property
    def path(self) -> Path:
        return Path(self.nodeid.split("::")[0])

    @property
    def _fixtureinfo(self) -> Any:
        defs = {name: [SimpleNamespace(scope=s)] for name, s in self.scopes.items()}
        return SimpleNamespace(name2fixturedefs=defs)

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "e2e" and "/e2e/" in f"/{self.nodeid}" else None


def heads(items: list[Item], workers: int) -> list[list[str]]:
    """Each worker's run as worksteal first splits the ordered list."""
    ordered = [cast(Item, i) for i in lanes(cast(list[pytest.Item], items), workers, SERVICES)]
    runs, left = [], list(ordered)
    for i in range(workers):
        size = len(left) // (workers - i)
        runs.append([x.nodeid for x in left[:size]])
        left = left[size:]
    return runs


def test_long_tests_of_one_module_that_share_nothing_start_on_different_workers() -> None:
    unit = [Item(f"tests/unit/test_u.py::t{i}") for i in range(30)]
    chaos = [Item("tests/e2e/test_chaos.py::a"), Item("tests/e2e/test_chaos.py::b")]
    runs = heads([*chaos, *unit], 3)
    assert [run[0] for run in runs[:2]] == [i.nodeid for i in chaos]
    assert sorted(x for run in runs for x in run) == sorted(i.nodeid for i in [*chaos, *unit])


def test_tests_sharing_a_session_service_or_a_module_fixture_stay_together() -> None:
    unit = [Item(f"tests/unit/test_u.py::t{i}") for i in range(30)]
    served = [Item(f"tests/e2e/test_mcp.py::m{i}", ["api_server"]) for i in range(3)]
    module = [
        Item(f"tests/e2e/test_stack.py::s{i}", ["stack"], {"stack": "module"}) for i in range(2)
    ]
    browser = [Item(f"tests/e2e/web/test_web.py::w{i}", ["browser"]) for i in range(4)]
    runs = heads([*browser, *served, *module, *unit], 3)
    for group in (browser, served, module):
        ids = [i.nodeid for i in group]
        (run,) = [r for r in runs if ids[0] in r]
        assert run[run.index(ids[0]) : run.index(ids[0]) + len(ids)] == ids


def test_one_worker_keeps_the_collection_order() -> None:
    items = [Item("tests/e2e/test_chaos.py::a"), Item("tests/unit/test_u.py::t")]
    assert heads(items, 1) == [[i.nodeid for i in items]]
