"""The stream consumer on real Redis: entries of different streams are told apart, and a
stopping consumer does not wait out its blocking reads."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from askgate.runtime.consumer import Event, StreamConsumer
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.conn import Client, consumer_client, read_groups
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ResponseError

from tests.support.waiting import eventually

pytestmark = pytest.mark.both_redis


async def test_same_entry_id_on_two_shards_is_handled_twice(redis: Redis) -> None:
    """Two shards' streams may each get `<ms>-0` in one millisecond: both are handled."""
    seen: list[tuple[str, str]] = []

    async def handle(ev: Event) -> None:
        seen.append((ev.stream, ev.question_id))

    consumer = StreamConsumer(redis, "text", "c1", handle, block_ms=10)
    await consumer.ensure_groups()
    a, b = keys.all_events("text")[:2]
    await redis.xadd(a, {"type": "question.created", "id": "q00aaaaaaaaaaaaaaaa"}, id="5-0")
    await redis.xadd(b, {"type": "question.created", "id": "q01bbbbbbbbbbbbbbbb"}, id="5-0")
    events = []
    for group in read_groups(redis, [a, b]):  # one read of both; one each on a cluster
        events += await consumer.read(streams=group)
    await consumer.process(events)
    assert sorted(seen) == [(a, "q00aaaaaaaaaaaaaaaa"), (b, "q01bbbbbbbbbbbbbbbb")]
    assert consumer.in_flight == 0


async def test_entries_handled_together_are_all_acknowledged(redis: Redis) -> None:
    """Entries of several shards finished at once leave nothing pending; a failed one does."""

    async def handle(ev: Event) -> None:
        if ev.question_id.endswith("f"):
            raise RuntimeError("this one fails")

    consumer = StreamConsumer(redis, "text", "c1", handle, block_ms=10)
    await consumer.ensure_groups()
    streams = keys.all_events("text")[:5]
    for n, stream in enumerate(streams):
        for k in range(3):
            last = "f" if (n, k) == (4, 2) else "a"
            qid = f"q{n:02d}{k}{'a' * 15}{last}"
            await redis.xadd(stream, {"type": "question.created", "id": qid})
    events = []
    for group in read_groups(redis, streams):
        events += await consumer.read(streams=group)
    assert len(events) == 15
    await consumer.process(events)
    pending = {s: (await redis.xpending(s, keys.group("text")))["pending"] for s in streams}
    assert pending == {**dict.fromkeys(streams[:4], 0), streams[4]: 1}


async def test_one_reclaim_takes_a_dead_consumers_entries_of_every_stream(redis: Redis) -> None:
    """One reclaim round hands over every entry a dead consumer left pending, on all 64
    shards' streams, a stream with more of them than one XAUTOCLAIM page takes, and
    nothing where another channel's group does not exist yet."""
    dead = StreamConsumer(redis, "text", "dead", lambda ev: asyncio.sleep(0), block_ms=10)
    await dead.ensure_groups()
    streams = keys.all_events("text")
    ids = []
    for n, stream in enumerate(streams):
        for k in range(5 if n == 7 else 1):  # with a count of 2: three pages
            ids.append(f"q{n:02d}{k}{'a' * 16}")
            await redis.xadd(stream, {"type": "question.created", "id": ids[-1]})
    taken = []
    for group in read_groups(redis, streams):
        taken += await dead.read(count=10, streams=group)
    assert len(taken) == len(ids)
    alive = StreamConsumer(
        redis, "text", "alive", dead.handler, block_ms=10, count=2, claim_idle_ms=0
    )
    reclaimed = await alive.reclaim()
    assert sorted(ev.question_id for ev in reclaimed) == sorted(ids)
    assert {ev.stream for ev in reclaimed} == set(streams)
    web = StreamConsumer(redis, "web", "w1", dead.handler, block_ms=10, claim_idle_ms=0)
    assert await web.reclaim() == []  # no group on the web channel's streams yet


async def test_a_stream_that_fails_its_claim_holds_up_no_other(redis: Redis) -> None:
    """A stream whose XAUTOCLAIM fails (its key holds no stream) leaves the other
    streams' reclaim to go on; when every stream fails, the round raises."""
    dead = StreamConsumer(redis, "text", "dead", lambda ev: asyncio.sleep(0), block_ms=10)
    await dead.ensure_groups()
    streams = keys.all_events("text")
    for n in (1, 2):
        await redis.xadd(streams[n], {"type": "question.created", "id": f"q{n:02d}{'a' * 17}"})
        await dead.read(streams=[streams[n]])
    await redis.delete(streams[0])
    await redis.set(streams[0], "not a stream")
    alive = StreamConsumer(redis, "text", "alive", dead.handler, block_ms=10, claim_idle_ms=0)
    reclaimed = await alive.reclaim()
    assert sorted(ev.stream for ev in reclaimed) == [streams[1], streams[2]]
    lone = StreamConsumer(redis, "text", "lone", dead.handler, block_ms=10, claim_idle_ms=0)
    lone.streams = [streams[0]]
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        await lone.reclaim()


async def blocked_reads(redis: Client, name: str) -> int:
    """How many connections named `name` wait in a blocking command, on every master."""
    nodes: list[Any] = redis.get_primaries() if isinstance(redis, RedisCluster) else [None]
    blocked = 0
    for node in nodes:
        target = {} if node is None else {"target_nodes": node}
        for row in await redis.client_list(**target):
            blocked += row.get("name") == name and "b" in row["flags"]
    return blocked


@dataclass
class Running:
    """A text-channel consumer running, and what it handled."""

    consumer: StreamConsumer
    seen: list[str]
    stop: asyncio.Event
    task: asyncio.Task[None]

    async def stopped(self, within_s: float) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, within_s)


@asynccontextmanager
async def running(client: Client, block_ms: int) -> AsyncIterator[Running]:
    """A consumer on `client` (closed afterwards) reading with `block_ms` blocks."""
    seen: list[str] = []

    async def handle(ev: Event) -> None:
        seen.append(ev.question_id)

    consumer = StreamConsumer(client, "text", "c1", handle, block_ms=block_ms)
    stop = asyncio.Event()
    run = Running(consumer, seen, stop, asyncio.create_task(consumer.run(stop)))
    try:
        yield run
    finally:
        await run.stopped(block_ms / 1000 + 10)
        await client.aclose()


async def test_a_stopping_consumer_ends_its_blocking_reads(
    redis: Redis, settings: Settings
) -> None:
    """A consumer whose reads block for a minute stops without waiting them out (its reads
    are ended as if their block had run out), and an entry written after the stop is read
    by the next consumer: no read that was ended took it."""
    client = consumer_client(settings.redis_url, cluster=settings.redis_cluster, block_ms=60_000)
    async with running(client, 60_000) as run:
        name = await client.client_getname()
        readers = len(read_groups(client, run.consumer.streams))

        async def all_blocked() -> bool:
            return await blocked_reads(redis, name) >= readers

        await eventually(all_blocked, f"{readers} blocked reads")
        await run.stopped(10)  # a read left to its block would hold it 60 s
        stream = keys.all_events("text")[0]
        await redis.xadd(stream, {"type": "question.created", "id": "q00aaaaaaaaaaaaaaaa"})
        after = StreamConsumer(redis, "text", "c2", run.consumer.handler, block_ms=10)
        assert [ev.question_id for ev in await after.read(streams=[stream])] == [
            "q00aaaaaaaaaaaaaaaa"
        ]
        assert run.seen == []


async def test_a_consumer_whose_acl_denies_client_unblock_stops_after_its_block(
    redis: Redis, settings: Settings
) -> None:
    """A Redis user without the @admin and @dangerous commands (CLIENT LIST and CLIENT
    UNBLOCK; on Redis 6 CLIENT SETNAME too) still consumes, and a stopping consumer then
    waits its read out."""
    user, password = f"reader-{secrets.token_hex(4)}", secrets.token_hex(8)
    everywhere = {"target_nodes": RedisCluster.ALL_NODES} if settings.redis_cluster else {}
    await redis.acl_setuser(
        user,
        enabled=True,
        passwords=[f"+{password}"],
        keys=["*"],
        channels=["*"],
        commands=["+@all", "-@admin", "-@dangerous"],
        **everywhere,
    )
    url = settings.redis_url.replace("redis://", f"redis://{user}:{password}@", 1)
    try:
        client = consumer_client(url, cluster=settings.redis_cluster, block_ms=300)
        async with running(client, 300) as run:
            stream = keys.all_events("text")[0]
            await redis.xadd(stream, {"type": "question.created", "id": "q00aaaaaaaaaaaaaaaa"})
            await eventually(lambda: run.seen, "the entry handled")
            await run.stopped(10)
            assert run.seen == ["q00aaaaaaaaaaaaaaaa"]
    finally:
        await redis.acl_deluser(user, **everywhere)
