"""The stream consumer on real Redis: entries of different streams are told apart."""

from __future__ import annotations

import pytest
from askgate.runtime.consumer import Event, StreamConsumer
from askgate.store import keys
from askgate.store.conn import read_groups
from redis.asyncio import Redis

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
