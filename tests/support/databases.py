"""The Redis servers tests run on, and the databases that keep tests apart: every test
gets a database of its worker's server that no other test of the run uses."""

from __future__ import annotations

import itertools
from typing import Any

from askgate.dev.redis_server import PortTaken, RedisProcess

# Databases per server: one per test of the largest worker's share, with room to spare.
DATABASES = 4096
# The database the session's service processes use (their tests share it, emptied first).
SHARED_DB = 0
_next_db = itertools.count(SHARED_DB + 1)


def start_redis(attempts: int = 3, **options: Any) -> RedisProcess:
    """A redis-server on a free port; another port when a parallel worker took this one
    between the pick and the bind."""
    for attempt in range(attempts):
        try:
            return RedisProcess(**options).start()
        except (PortTaken, RuntimeError):
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def own_database(server: RedisProcess) -> str:
    """REDIS_URL of a database of `server` that no other test of this run uses."""
    db = next(_next_db)
    if db >= DATABASES:
        raise RuntimeError(f"more than {DATABASES - 1} databases used in one worker")
    return f"redis://127.0.0.1:{server.port}/{db}"
