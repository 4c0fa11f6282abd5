"""The order `make test` hands the tests to its xdist workers: each worker starts with a
share of the e2e tests (the ones that start processes, seconds each), and the tests that
drive Chromium stay together on one worker (one browser and one web service start). An
e2e test that shares no set-up with the rest of its module (no session service, no
fixture made once per module or class) is dealt on its own: the two chaos smokes, ~50 s
each, had made one worker's head 100 s long.

`--dist worksteal` splits the collected list into one contiguous run per worker (a
third each with three) and an idle worker steals from the tail of the busiest one's run,
so whatever heads a run stays on that worker. The e2e tests all at the head of the list
kept one worker busy with them long after the others had run dry; the browser tests
behind the chaos smokes were stolen piecemeal and three workers each started Chromium.
"""

from __future__ import annotations

import pytest

# Fixture scopes whose one set-up the tests using it share.
SHARED_SCOPES = frozenset({"module", "class", "package"})


def shares_setup(item: pytest.Item, services: frozenset[str]) -> bool:
    """Whether `item` uses one of the worker's session `services` or a fixture made once
    for its module or class."""
    if services & set(getattr(item, "fixturenames", ())):
        return True
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs[-1].scope in SHARED_SCOPES for defs in info.name2fixturedefs.values())


def groups(
    items: list[pytest.Item], services: frozenset[str] = frozenset()
) -> tuple[list[list[pytest.Item]], list[pytest.Item]]:
    """The e2e tests in groups that stay together (the browser tests, then one group per
    module, where each test that shares no set-up is a group of its own), and every other
    test in its order."""
    browser: list[pytest.Item] = []
    modules: dict[str, list[pytest.Item]] = {}
    rest: list[pytest.Item] = []
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            browser.append(item)
        elif item.get_closest_marker("e2e") is not None:
            key = str(item.path) if shares_setup(item, services) else item.nodeid
            modules.setdefault(key, []).append(item)
        else:
            rest.append(item)
    return [g for g in [browser, *modules.values()] if g], rest


def lanes(
    items: list[pytest.Item], workers: int, services: frozenset[str] = frozenset()
) -> list[pytest.Item]:
    """`items` reordered so that each of `workers` runs (worksteal's first split: run i
    gets len(pending) // (workers - i) of what is left) begins with a share of the e2e
    groups, dealt round the workers in collection order."""
    if workers < 2:
        return items
    heavy, rest = groups(items, services)
    heads: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for i, group in enumerate(heavy):
        heads[i % workers] += group
    ordered: list[pytest.Item] = []
    left = len(items)
    for i, head in enumerate(heads):
        size = left // (workers - i)
        fill = max(0, size - len(head))
        ordered += head + rest[:fill]
        rest = rest[fill:]
        left -= len(head) + fill
    return ordered + rest
