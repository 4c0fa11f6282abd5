"""The sweeper's pass over the shards: one failing shard does not stop the others."""

from __future__ import annotations

import pytest
from askgate import keys
from askgate.models import QuestionCreate
from askgate.settings import Settings
from askgate.store import Store
from askgate_sweeper.__main__ import sweep_once
from redis.asyncio import Redis
from redis.exceptions import ConnectionError

from tests.conftest import Tenant, ask_body

FUTURE_MS = 10**13


async def test_a_broken_shard_does_not_stop_the_others(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A shard whose due key has the wrong type is skipped; every other shard is swept."""
    store = Store(redis, settings)
    ids = []
    for i in range(40):
        rec, _ = await store.create(tenant.id, QuestionCreate.model_validate(
            ask_body(session=f"s{i}", timeoutSeconds=1)))
        ids.append(rec.id)
    broken = keys.shard_of(ids[0])
    await redis.delete(keys.due(broken))
    await redis.set(keys.due(broken), "not a sorted set")
    expected = [q for q in ids if keys.shard_of(q) != broken]
    assert await sweep_once(store, now=FUTURE_MS) == len(expected)
    for qid in expected:
        rec = await store.load(qid)
        assert rec is not None and rec.status == "no_answer"


async def test_an_unreachable_redis_is_raised(settings: Settings) -> None:
    """When Redis itself is away the pass raises at once, so the sweeper backs off."""
    from askgate.conn import connect
    from askgate.redis_server import free_port

    down = connect(f"redis://127.0.0.1:{free_port()}/0", connect_timeout_s=0.2)
    try:
        with pytest.raises(ConnectionError):
            await sweep_once(Store(down, settings), now=FUTURE_MS)
    finally:
        await down.aclose()
