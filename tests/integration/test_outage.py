"""Redis going away under the API: 503 with Retry-After, then recovery with nothing lost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from askgate.dev.redis_server import RedisProcess
from askgate.store.conn import connect
from askgate.store.tenants import create_tenant

from tests.support.asks import ask_body, make_settings
from tests.support.waiting import eventually


@pytest.fixture
async def outage_stack() -> AsyncIterator[tuple[RedisProcess, httpx.AsyncClient, dict[str, str]]]:
    """An API on its own Redis (AOF, fsync always) that the test may kill and restart."""
    from askgate_api.app import create_app

    server = RedisProcess(persist=True, fsync="always").start()
    admin = connect(server.url)
    _, key = await create_tenant(admin, "outage")
    await admin.aclose()
    app = create_app(make_settings(server.url))
    try:
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://a", timeout=30
            ) as client:
                client.app = app  # type: ignore[attr-defined]
                yield server, client, {"Authorization": f"Bearer {key}"}
    finally:
        server.stop()


async def test_redis_down_is_503_then_recovers(outage_stack: Any) -> None:
    """While Redis is down every call is a 503 with Retry-After; afterwards all is intact."""
    server, client, h = outage_stack
    q = (await client.post("/v1/questions", json=ask_body(session="o1"), headers=h)).json()
    server.stop()  # SIGKILL: a crash, not a clean shutdown

    r = await client.post("/v1/questions", json=ask_body(session="o2"), headers=h)
    assert r.status_code == 503 and r.headers["Retry-After"] == "1"
    assert r.json()["error"]["code"] == "unavailable"
    r = await client.post(
        f"/v1/questions/{q['id']}/answer",
        json={"answers": {"deploy_target": ["Production"]}},
        headers=h,
    )
    assert r.status_code == 503
    assert (await client.get("/readyz")).status_code == 503

    server.start()
    got = await client.get(f"/v1/questions/{q['id']}", headers=h)
    assert got.status_code == 200 and got.json()["status"] == "pending"
    listed = await client.get("/v1/questions", params={"session": "o2"}, headers=h)
    assert listed.json()["questions"] == []  # the refused ask left nothing behind
    r = await client.post("/v1/questions", json=ask_body(session="o2"), headers=h)
    assert r.status_code == 201


async def test_waiter_survives_redis_restart(outage_stack: Any) -> None:
    """A long-poll waiting across a Redis restart still gets the answer given after it."""
    server, client, h = outage_stack
    q = (await client.post("/v1/questions", json=ask_body(session="o3"), headers=h)).json()
    waiter = asyncio.create_task(
        # The longest window (60 s): a loaded machine may take most of it to restart
        # Redis and get the reply through, and the answer must come in this one wait.
        client.get(f"/v1/questions/{q['id']}/wait?timeout_s=60", headers=h)
    )
    waiters = client.app.state.waiters
    await eventually(lambda: waiters.count, "the waiter to park")
    server.stop()
    await eventually(lambda: not waiters.ready.is_set(), "the waiters to see Redis gone")
    server.start()

    async def replied() -> httpx.Response | None:
        r = await client.post(f"/v1/questions/{q['id']}/reply", json={"text": "2"}, headers=h)
        return None if r.status_code == 503 else r

    r = await eventually(replied, "a reply accepted once Redis is back", 30)
    assert r.status_code == 200
    result = (await asyncio.wait_for(waiter, 60)).json()
    assert result["result"] == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }
