"""The sweeper's passes over the shards: one failing shard does not stop the others."""

from __future__ import annotations

import httpx
import pytest
from askgate.domain.models import QuestionCreate
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.store import Store
from askgate_sweeper.__main__ import sweep_once, watch_once
from redis.asyncio import Redis
from redis.exceptions import ConnectionError, TimeoutError

from tests.support.asks import Tenant, ask_body

pytestmark = pytest.mark.both_redis

FUTURE_MS = 10**13


async def test_a_broken_shard_does_not_stop_the_others(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A shard whose due key has the wrong type is skipped; every other shard is swept."""
    store = Store(redis, settings)
    ids = []
    for i in range(40):
        rec, _ = await store.create(
            tenant.id, QuestionCreate.model_validate(ask_body(session=f"s{i}", timeoutSeconds=1))
        )
        ids.append(rec.id)
    broken = keys.shard_of(ids[0])
    await redis.delete(keys.due(broken))
    await redis.set(keys.due(broken), "not a sorted set")
    expected = [q for q in ids if keys.shard_of(q) != broken]
    assert await sweep_once(store, now=FUTURE_MS) == len(expected)
    for qid in expected:
        swept = await store.load(qid)
        assert swept is not None and swept.status == "no_answer"


async def test_an_unreachable_redis_is_raised(settings: Settings) -> None:
    """When Redis itself is away the pass raises at once, so the sweeper backs off."""
    from askgate.dev.redis_server import free_port
    from askgate.store.conn import connect

    down = connect(f"redis://127.0.0.1:{free_port()}/0", connect_timeout_s=0.2)
    try:
        # Refused, or (on a loaded machine) not even refused within the connect timeout.
        with pytest.raises((ConnectionError, TimeoutError)):
            await sweep_once(Store(down, settings), now=FUTURE_MS)
    finally:
        await down.aclose()


async def test_a_broken_shard_does_not_stop_the_watchdog(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Redis, settings: Settings
) -> None:
    """A shard whose undelivered key has the wrong type is skipped; other shards' targets
    on a dead channel are still failed."""
    slack = {"channel": "slack", "channel_id": "C1"}
    ids = []
    for i in range(40):
        body = ask_body(session=f"w{i}", targets=[slack, {"channel": "web"}])
        ids.append(
            (await app_client.post("/v1/questions", json=body, headers=tenant.headers)).json()["id"]
        )
    broken = keys.shard_of(ids[0])
    await redis.delete(keys.undelivered(broken))
    await redis.set(keys.undelivered(broken), "not a sorted set")
    expected = [q for q in ids if keys.shard_of(q) != broken]
    assert await watch_once(Store(redis, settings)) == len(expected)
