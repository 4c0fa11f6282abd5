"""Three-way races on real Redis, driven through the Store concurrently: for every
question an answer from the API, a reply from a second channel and the sweeper's timeout
arrive together. Each question ends in exactly one final state, the one its winner wrote;
every loser is told; the result is published once and its resolved event written once.

`make test` runs 1,000 races; `make chaos` runs 10,000 (ASKGATE_RACES=10000)."""

from __future__ import annotations

import asyncio
import functools
import os
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from askgate.domain.errors import AlreadyFinal
from askgate.domain.models import QuestionCreate, Responder
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.conn import connect
from askgate.store.store import Store
from redis.asyncio import Redis

from tests.support.asks import Tenant, ask_body
from tests.support.notices import Notifications

N = int(os.environ.get("ASKGATE_RACES", "1000"))
CHUNK = 250  # concurrent operations in flight per step
STAGING = "Staging (Recommended)"


async def in_chunks(calls: list[Callable[[], Awaitable[Any]]]) -> list[Any]:
    out: list[Any] = []
    for start in range(0, len(calls), CHUNK):
        out += await asyncio.gather(*(c() for c in calls[start : start + CHUNK]))
    return out


# A sweep of all 64 shards races each answer: slow on a loaded 2-core machine, so the
# hang guard is longer than the suite's 120 s.
@pytest.mark.timeout(360)
async def test_three_way_races_end_once(
    redis: Redis, redis_url: str, settings: Settings, tenant: Tenant
) -> None:
    """Answer vs reply vs timeout, N times: one final state and one notice each."""
    store = Store(redis, settings)

    async def create(i: int) -> tuple[str, int]:
        rec, created = await store.create(
            tenant.id,
            QuestionCreate.model_validate(ask_body(session=f"r{i}")),
            max_pending=10**6,
            asks_per_s=10**6,
        )
        assert created
        return rec.id, int(rec.f["expires"])

    made: list[tuple[str, int]] = await in_chunks([functools.partial(create, i) for i in range(N)])
    ids = [qid for qid, _ in made]
    won: dict[str, list[str]] = {qid: [] for qid in ids}
    told: Counter[str] = Counter()

    async def by_api(qid: str) -> None:
        try:
            await store.answer(
                tenant.id, qid, {"deploy_target": ["Production"]}, Responder(channel="api")
            )
            won[qid].append("api")
        except AlreadyFinal:
            told[qid] += 1

    async def by_text(qid: str, replica: Store) -> None:
        try:
            rec = await replica.load(qid)
            assert rec is not None
            rec, parsed = await replica.apply_reply(rec, "1", Responder(channel="text"))
            assert parsed.kind == "answers"
            won[qid].append("text")
        except AlreadyFinal:
            told[qid] += 1

    async def timeout(replica: Store, until_ms: int) -> None:
        """The sweeper ending every question due by until_ms (as if that time had come)."""
        await asyncio.sleep(0.002)  # lands among the answers, not ahead of them
        for shard in range(keys.SHARDS):
            await replica.sweep_shard(shard, now=until_ms)

    # Generous connect timeouts: hundreds of connections open at once on a loaded machine.
    text_side = Store(connect(redis_url, max_connections=64, connect_timeout_s=10), settings)
    sweep_side = Store(connect(redis_url, connect_timeout_s=10), settings)
    async with Notifications(connect(redis_url, connect_timeout_s=10)) as notes:
        # Each step races one chunk's answers and replies against the timeout of exactly
        # that chunk's questions (deadlines grow with creation order).
        step = CHUNK // 2
        for start in range(0, N, step):
            chunk = made[start : start + step]
            racers = [by_api(q) for q, _ in chunk] + [by_text(q, text_side) for q, _ in chunk]
            racers.insert(len(racers) // 2, timeout(sweep_side, chunk[-1][1]))
            await asyncio.gather(*racers)
        await notes.settle(N)
    await text_side.redis.aclose()
    await sweep_side.redis.aclose()

    assert set(notes.counts) == set(ids) and set(notes.counts.values()) == {1}
    outcomes: Counter[str] = Counter()
    for start in range(0, N, 1000):
        batch = ids[start : start + 1000]
        records = await asyncio.gather(*(store.load(q) for q in batch))
        for qid, rec in zip(batch, records, strict=True):
            assert rec is not None
            winners = won[qid]
            assert len(winners) <= 1, f"{qid} answered twice: {winners}"
            if winners == ["api"]:
                assert rec.result == {
                    "status": "answered",
                    "answers": {"answers": {"deploy_target": ["Production"]}},
                }
            elif winners == ["text"]:
                assert rec.result == {
                    "status": "answered",
                    "answers": {"answers": {"deploy_target": [STAGING]}},
                }
            else:
                assert (rec.status, rec.reason) == ("no_answer", "timeout")
            # Both answerers tried; whoever did not win was told it had already ended.
            assert told[qid] == 2 - len(winners)
            outcomes[winners[0] if winners else "timeout"] += 1
    resolved: Counter[str] = Counter()
    for stream in keys.all_events("web"):
        for _, fields in await redis.xrange(stream):
            if fields[b"type"] == b"question.resolved":
                resolved[fields[b"id"].decode()] += 1
    assert resolved == Counter(dict.fromkeys(ids, 1))
    assert sum(outcomes.values()) == N
    assert min(outcomes[w] for w in ("api", "text", "timeout")) > 0, outcomes
