"""Fixtures for tests that run askgate services as real processes (tests/support/processes.py).

`api_server` is one API process shared by the whole session (tests that leave it
running), on the worker's shared database (emptied before each of its tests);
`api_process` is a test's own, on the test's own database, to kill, stop and start again
on its port.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis

from tests.support.processes import ApiProcess
from tests.support.waiting import eventually


@pytest.fixture(scope="session")
def api_server(shared_redis_url: str) -> Iterator[ApiProcess]:
    """The API as a real uvicorn process on a free port, shared by the session."""
    with ApiProcess(shared_redis_url) as api:
        yield api


@pytest.fixture
def api_process(redis_url: str, redis: Redis) -> Iterator[ApiProcess]:
    """This test's own API process (`.url`, `.kill()`, `.stop()`, `.start()`)."""
    with ApiProcess(redis_url) as api:
        yield api


async def pending_question(api: ApiProcess, headers: dict[str, str], session: str) -> Any:
    """The session's pending question, once an agent has asked it (polls the list)."""
    async with httpx.AsyncClient(base_url=api.url, headers=headers, timeout=30) as http:

        async def first() -> Any:
            r = await http.get("/v1/questions", params={"session": session, "status": "pending"})
            return (
                r.json()["questions"][0] if r.status_code == 200 and r.json()["questions"] else None
            )

        return await eventually(first, f"a pending question in session {session!r}", 30)


async def answer_production(api: ApiProcess, headers: dict[str, str], question_id: str) -> None:
    """The human picks Production for the README example's deploy_target."""
    async with httpx.AsyncClient(base_url=api.url, headers=headers, timeout=30) as http:
        r = await http.post(
            f"/v1/questions/{question_id}/answer",
            json={"answers": {"deploy_target": ["Production"]}},
        )
        assert r.status_code == 200, r.text
