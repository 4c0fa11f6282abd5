"""The sweeper's passes over the shards: one failing shard does not stop the others, and a
stop ends a pass between two scripts."""

from __future__ import annotations

import asyncio

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


async def asks_due_in_1_s(store: Store, tenant: Tenant, n: int = 40) -> list[str]:
    """The ids of `n` pending asks, each in a session of its own (so spread over shards)."""
    ids = []
    for i in range(n):
        rec, _ = await store.create(
            tenant.id, QuestionCreate.model_validate(ask_body(session=f"s{i}", timeoutSeconds=1))
        )
        ids.append(rec.id)
    return ids


async def test_a_broken_shard_does_not_stop_the_others(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A shard whose due key has the wrong type is skipped; every other shard is swept."""
    store = Store(redis, settings)
    ids = await asks_due_in_1_s(store, tenant)
    broken = keys.shard_of(ids[0])
    await redis.delete(keys.due(broken))
    await redis.set(keys.due(broken), "not a sorted set")
    expected = [q for q in ids if keys.shard_of(q) != broken]
    assert await sweep_once(store, now=FUTURE_MS) == len(expected)
    for qid in expected:
        swept = await store.load(qid)
        assert swept is not None and swept.status == "no_answer"


async def test_a_stop_ends_the_pass_after_the_script_at_hand(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """SIGTERM (the stop event) during a pass over a backlog: the shard being swept is
    finished, the others stay due and pending, and the next pass ends them."""
    store = Store(redis, settings)
    ids = await asks_due_in_1_s(store, tenant)
    shards = {keys.shard_of(q) for q in ids}
    assert len(shards) > 1
    stop = asyncio.Event()
    sweep_shard = store.sweep_shard
    swept: list[int] = []

    async def then_stop(shard: int, now: int | None = None) -> tuple[int, int]:
        swept.append(shard)
        stop.set()  # the signal arrives while this shard's script runs
        return await sweep_shard(shard, now)

    store.sweep_shard = then_stop  # type: ignore[method-assign]
    ended = await sweep_once(store, now=FUTURE_MS, stop=stop)
    (first,) = swept
    on_first = {q for q in ids if keys.shard_of(q) == first}
    assert ended == len(on_first)
    for qid in ids:
        rec = await store.load(qid)
        assert rec is not None and rec.status == ("no_answer" if qid in on_first else "pending")
    store.sweep_shard = sweep_shard  # type: ignore[method-assign]
    assert await sweep_once(store, now=FUTURE_MS) == len(ids) - ended
    for qid in ids:
        swept_now = await store.load(qid)
        assert swept_now is not None and swept_now.status == "no_answer"


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
