"""Questions asked before 64 shards (ids `q00…`-`q0f…`, keys under `{ag:00}`…`{ag:15}`)
keep working after the upgrade: read, answered, swept, and their events consumed."""

from __future__ import annotations

import pytest
from askgate.domain.models import QuestionCreate
from askgate.runtime.consumer import Event, StreamConsumer
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.store import Store
from askgate_sweeper.__main__ import sweep_once
from redis.asyncio import Redis

from tests.support.asks import Tenant, ask_body

FUTURE_MS = 10**13


async def old_ask(
    store: Store, tenant: str, session: str, monkeypatch: pytest.MonkeyPatch, **extra: object
) -> str:
    """An ask as askgate with 16 shards wrote it: shard 7, `{ag:07}`, id `q07…`."""
    with monkeypatch.context() as m:
        m.setattr(keys, "shard_for", lambda tenant, session: 7)
        rec, _ = await store.create(
            tenant, QuestionCreate.model_validate(ask_body(session, **extra))
        )
    assert rec.id.startswith("q07") and await store.redis.exists(f"askgate:{{ag:07}}:q:{rec.id}")
    return rec.id


async def test_an_old_question_is_answered_swept_and_consumed(
    redis: Redis, settings: Settings, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(redis, settings)
    answered = await old_ask(store, tenant.id, "old-a", monkeypatch)
    expiring = await old_ask(store, tenant.id, "old-b", monkeypatch, timeoutSeconds=1)
    rec = await store.answer(tenant.id, answered, {"deploy_target": ["Production"]})
    assert rec.status == "answered"
    assert await redis.get(f"askgate:{{ag:07}}:result:{answered}") is not None
    assert await sweep_once(store, now=FUTURE_MS) == 1
    rec = await store.get(tenant.id, expiring)
    assert (rec.status, rec.reason) == ("no_answer", "timeout")
    seen: list[Event] = []

    async def handle(event: Event) -> None:
        seen.append(event)

    consumer = StreamConsumer(redis, "web", "c1", handle)
    await consumer.ensure_groups()
    await consumer.process(await consumer.read())
    assert {(e.type, e.question_id) for e in seen} == {
        ("question.created", answered),
        ("question.created", expiring),
        ("question.resolved", answered),
        ("question.resolved", expiring),
    }
