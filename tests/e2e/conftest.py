"""Fixtures for tests that run askgate services as real processes (tests/support/processes.py).

`api_server` is one API process shared by the whole session (tests that leave it
running), on the worker's shared database (emptied before each of its tests);
`api_process` is a test's own, on the test's own database, to kill, stop and start again
on its port.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis.asyncio import Redis

from tests.support.processes import ApiProcess


@pytest.fixture(scope="session")
def api_server(shared_redis_url: str) -> Iterator[ApiProcess]:
    """The API as a real uvicorn process on a free port, shared by the session."""
    with ApiProcess(shared_redis_url) as api:
        yield api


@pytest.fixture
def api_process(redis_url: str, redis: Redis, redis_mode: str) -> Iterator[ApiProcess]:
    """This test's own API process (`.url`, `.kill()`, `.stop()`, `.start()`), on the
    cluster when the test runs on it (`both_redis`)."""
    cluster = {"ASKGATE_REDIS_CLUSTER": "true"} if redis_mode == "cluster" else {}
    with ApiProcess(redis_url, None, **cluster) as api:
        yield api
