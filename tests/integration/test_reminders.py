"""Reminders and escalation steps on real Redis, with the sweeper's pass driven by an
injected clock (no waiting out minutes): planned at the ask, fired once by any number of
sweepers, never after the question ends."""

from __future__ import annotations

import asyncio
from typing import Any

from askgate.domain.events import QuestionEscalate, QuestionRemind, parse_event
from askgate.domain.models import QuestionCreate, Remind
from askgate.domain.timeutil import now_ms
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.conn import connect
from askgate.store.record import Record
from askgate.store.store import Store
from askgate_sweeper.__main__ import timers_once, watch_once
from redis.asyncio import Redis

from tests.support.asks import Tenant, ask_body

TG = {"channel": "telegram", "chat_id": "1"}
SLACK = {"channel": "slack", "channel_id": "C1"}


async def ask(
    store: Store, tenant: Tenant, session: str = "s", default: Remind | None = None, **extra: Any
) -> Record:
    body = QuestionCreate.model_validate(ask_body(session, **extra))
    rec, _ = await store.create(
        tenant.id, body, max_pending=10**6, asks_per_s=10**6, default_remind=default
    )
    return rec


async def events(redis: Redis, rec: Record, channel: str) -> list[Any]:
    rows = await redis.xrange(keys.events(keys.shard_of(rec.id), channel))
    return [parse_event({k.decode(): v.decode() for k, v in fields.items()}) for _, fields in rows]


async def timers(redis: Redis, rec: Record) -> list[tuple[str, int]]:
    rows = await redis.zrange(keys.timers(keys.shard_of(rec.id)), 0, -1, withscores=True)
    return [(m.decode(), int(score)) for m, score in rows]


async def test_reminders_are_planned_at_the_ask(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """Every reminder and the final warning are in the shard's timers, before the deadline."""
    rec = await ask(
        Store(redis, settings),
        tenant,
        targets=[TG],
        timeoutSeconds=900,
        remind={"every_s": 300, "max": 5, "final_warning_s": 120},
    )
    c, q = rec.created_ms, rec.id
    # 300 s and 600 s; 900 s is the deadline, and the final warning comes at 780 s.
    assert await timers(redis, rec) == [
        (f"remind|{q}|1", c + 300_000),
        (f"remind|{q}|2", c + 600_000),
        (f"warn|{q}|3", c + 780_000),
    ]


async def test_a_due_reminder_goes_to_the_chat_channels_once(
    redis: Redis, redis_url: str, settings: Settings, tenant: Tenant
) -> None:
    """Three sweepers at once fire reminder 1 once, to each chat channel of the ask."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, targets=[TG, SLACK, {"channel": "web"}], remind={"every_s": 300})
    at = rec.created_ms + 300_000
    replicas = [Store(connect(redis_url), settings) for _ in range(3)]
    fired = await asyncio.gather(*(timers_once(r, at) for r in replicas))
    assert sum(fired) == 1
    for channel in ("telegram", "slack"):
        (event,) = [e for e in await events(redis, rec, channel) if isinstance(e, QuestionRemind)]
        assert (event.question_id, event.n, event.final) == (rec.id, 1, False)
        assert event.left_ms == rec.expires_ms - at
    assert not [e for e in await events(redis, rec, "web") if isinstance(e, QuestionRemind)]
    for r in replicas:
        await r.redis.aclose()


async def test_the_final_warning_says_so(redis: Redis, settings: Settings, tenant: Tenant) -> None:
    """The final warning is a reminder marked final, with the time left."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, targets=[TG], remind={"max": 0, "final_warning_s": 60})
    assert await timers_once(store, rec.expires_ms - 60_000) == 1
    (event,) = [e for e in await events(redis, rec, "telegram") if isinstance(e, QuestionRemind)]
    assert (event.n, event.final, event.left_ms) == (1, True, 60_000)


async def test_no_reminder_after_the_question_ends(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """An answered question's due reminders are dropped, not sent."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, targets=[TG], remind={"every_s": 60, "max": 3})
    await store.answer(tenant.id, rec.id, {"deploy_target": ["Production"]})
    assert await timers_once(store, rec.created_ms + 200_000) == 0
    assert not [e for e in await events(redis, rec, "telegram") if isinstance(e, QuestionRemind)]
    assert await timers(redis, rec) == []


async def test_the_tenant_default_applies_unless_the_ask_says(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """An ask without `remind` gets the tenant's; `{"max": 0}` turns reminders off."""
    store = Store(redis, settings)
    default = Remind(every_s=120, max=1)
    plain = await ask(store, tenant, "a", default, targets=[TG])
    assert plain.remind == default
    off = await ask(store, tenant, "b", default, targets=[TG], remind={"max": 0})
    assert off.remind is None
    assert [m for m, _ in await timers(redis, plain)] == [f"remind|{plain.id}|1"]


async def test_question_created_goes_only_to_the_first_targets(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """A channel with only an escalation step's targets hears nothing until the step."""
    rec = await ask(
        Store(redis, settings),
        tenant,
        targets=[TG],
        escalate=[{"after_s": 600, "targets": [SLACK]}],
    )
    assert await events(redis, rec, "slack") == []
    assert len(await events(redis, rec, "telegram")) == 1
    assert [(d["target"], d["step"]) for d in rec.delivery_dicts()] == [(TG, 0), (SLACK, 1)]


async def test_an_escalation_step_starts_once_at_its_time(
    redis: Redis, redis_url: str, settings: Settings, tenant: Tenant
) -> None:
    """Step 1 starts at after_s: recorded on the resource, announced once to its channel."""
    store = Store(redis, settings)
    rec = await ask(
        store,
        tenant,
        targets=[TG],
        escalate=[{"after_s": 600, "targets": [SLACK]}, {"after_s": 800, "targets": [TG]}],
    )
    assert await timers_once(store, rec.created_ms + 599_000) == 0
    at = rec.created_ms + 600_000
    replicas = [Store(connect(redis_url), settings) for _ in range(2)]
    assert sum(await asyncio.gather(*(timers_once(r, at) for r in replicas))) == 1
    (event,) = [e for e in await events(redis, rec, "slack") if isinstance(e, QuestionEscalate)]
    assert (event.question_id, event.step) == (rec.id, 1)
    now = await store.load(rec.id)
    assert now is not None
    steps = now.escalation_dicts()
    assert [s["started_at"] is not None for s in steps] == [True, False]
    assert (steps[0]["targets"], steps[1]["targets"]) == ([1], [2])
    for r in replicas:
        await r.redis.aclose()


async def test_a_step_target_gets_its_show_by_time_when_its_step_starts(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """No live worker: the first target fails after the grace, the step's only after its
    step started and the grace passed, and then the question ends delivery_failed."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, targets=[TG], escalate=[{"after_s": 600, "targets": [SLACK]}])
    grace = settings.channel_grace_s * 1000
    await watch_once(store, rec.created_ms + grace + 1)
    first = await store.load(rec.id)
    assert first is not None and first.delivery(0).state == "failed"
    assert first.pending, "a step is still to run"
    await timers_once(store, rec.created_ms + 600_000)
    await watch_once(store, rec.created_ms + 600_000 + grace - 1)
    still = await store.load(rec.id)
    assert still is not None and still.pending and still.delivery(1).state == "pending"
    await watch_once(store, rec.created_ms + 600_000 + grace + 1)
    done = await store.load(rec.id)
    assert done is not None and (done.status, done.reason) == ("no_answer", "delivery_failed")


async def test_a_step_of_an_ended_question_never_starts(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """Answered before its time: the step is dropped, its channel hears only the end."""
    store = Store(redis, settings)
    rec = await ask(store, tenant, targets=[TG], escalate=[{"after_s": 600, "targets": [SLACK]}])
    await store.answer(tenant.id, rec.id, {"deploy_target": ["Production"]})
    assert await timers_once(store, rec.created_ms + 600_000) == 0
    kinds = [type(e).__name__ for e in await events(redis, rec, "slack")]
    assert kinds == ["QuestionResolved"]


async def test_timers_of_every_shard_are_fired(
    redis: Redis, settings: Settings, tenant: Tenant
) -> None:
    """One pass fires the due timers of questions in many shards, and leaves later ones."""
    store = Store(redis, settings)
    recs = [
        await ask(store, tenant, f"s{i}", targets=[TG], remind={"every_s": 60, "max": 2})
        for i in range(20)
    ]
    assert len({keys.shard_of(r.id) for r in recs}) > 1
    latest = max(r.created_ms for r in recs)
    assert await timers_once(store, latest + 60_000) == 20
    assert await timers_once(store, latest + 60_000) == 0
    assert await timers_once(store, now_ms() + 120_000) == 20
