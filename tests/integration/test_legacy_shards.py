"""Questions asked before 64 shards (ids `q00…`-`q0f…`, keys under `{ag:00}`…`{ag:15}`)
keep working after the upgrade: read, answered, swept, and their events consumed."""

from __future__ import annotations

import orjson
import pytest
from askgate.domain.models import QuestionCreate
from askgate.domain.timeutil import now_ms
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


async def test_a_question_that_ended_under_the_previous_layout_reads_the_same(
    redis: Redis, settings: Settings, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written as askgate wrote an ended question before delivery bookkeeping was dropped
    at the end (claim count, reminder claims and the summary mark in its deliveries
    hash) and before the responder was split into short fields (one JSON): it shows its
    responder, deliveries and reminders, and its prompt is not summarised twice."""
    store = Store(redis, settings)
    qid = await old_ask(
        store,
        tenant.id,
        "old-layout",
        monkeypatch,
        targets=[{"channel": "telegram", "chat_id": "7"}],
    )
    dlv = f"askgate:{{ag:07}}:dlv:{qid}"
    ref = {"chat_id": "7", "message_id": 99}
    doc = {"status": "delivered", "error": None, "ref": ref, "at": "2026-11-30T10:00:00Z"}
    await redis.hset(keys.question(qid), "ds:0", "delivered")
    await redis.hset(
        dlv, mapping={"d:0": orjson.dumps(doc), "n:0": 1, "r:0:1": "sent", "s:0": "done"}
    )
    await redis.hset(
        keys.question(qid),
        mapping={
            "status": "no_answer",
            "reason": "skipped",
            "resolved": str(now_ms()),
            "responder": '{"channel":"telegram","user_id":"7","name":"Ada","target":0}',
        },
    )
    rec = await store.get(tenant.id, qid)
    assert (rec.status, rec.reason, rec.result) == ("no_answer", "skipped", {"status": "no_answer"})
    assert rec.public_dict()["responder"] == {"channel": "telegram", "user_id": "7", "name": "Ada"}
    audit = rec.audit_dict()
    assert audit is not None and audit["target"] == 0
    delivery = rec.delivery(0)
    assert (delivery.state, delivery.ref, delivery.summary, delivery.attempts) == (
        "delivered",
        ref,
        "done",
        1,
    )
    assert rec.delivery_dicts()[0]["reminders"] == 1
    assert await store.ledger.mark_summary(rec, 0) is False


async def test_a_run_asked_when_runs_had_their_own_set_is_aborted_and_its_set_emptied(
    redis: Redis, settings: Settings, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question asked when each run kept a zset of its pending ids is aborted with its
    run, and leaves that set as it ends."""
    store = Store(redis, settings)
    qid = await old_ask(store, tenant.id, "old-run-s", monkeypatch, run_id="old-run")
    run_set = keys.run(7, tenant.id, "old-run")
    await redis.zadd(run_set, {qid: now_ms() + 900_000})  # as CREATE wrote it then
    assert await store.abort_run(tenant.id, "old-run") == [qid]
    assert (await store.get(tenant.id, qid)).reason == "run_aborted"
    assert await redis.exists(run_set) == 0
