"""Reminders and escalation through the plain-text channel: the real `askgate-text`
worker POSTs to local receivers; the sweeper's timer pass runs at chosen times."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from askgate.settings import Settings
from askgate.store import keys
from redis.asyncio import Redis

from tests.integration.http_receiver import Receiver, Reply
from tests.support.asks import Tenant, ask_body, make_settings, question
from tests.support.text import LOCAL, StartWorker
from tests.support.timers import created_ms, fire_timers
from tests.support.waiting import eventually


@pytest.fixture
def settings(redis_url: str) -> Settings:
    """The API's settings with the local receivers' range opened."""
    return make_settings(redis_url, outbound_allow=LOCAL)


async def asked(client: httpx.AsyncClient, tenant: Tenant, **extra: Any) -> dict[str, Any]:
    r = await client.post("/v1/questions", json=ask_body(**extra), headers=tenant.headers)
    assert r.status_code == 201, r.text
    return dict(r.json())


async def delivered(client: httpx.AsyncClient, tenant: Tenant, qid: str, i: int = 0) -> bool:
    return bool((await question(client, tenant, qid))["deliveries"][i]["status"] == "delivered")


async def test_a_reminder_is_posted_once_per_number(
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    receiver: Receiver,
    redis: Redis,
    text_worker: StartWorker,
) -> None:
    """Reminder 1 is POSTed with its number and headers; a replayed entry sends nothing."""
    await text_worker()
    q = await asked(
        app_client,
        tenant,
        targets=[{"channel": "text", "url": receiver.url}],
        timeoutSeconds=900,
        remind={"every_s": 300, "max": 2},
    )
    await eventually(lambda: delivered(app_client, tenant, q["id"]), "delivered", 30)
    await fire_timers(redis, created_ms(q) + 300_000)
    _, reminder = await receiver.wait_for(2)
    assert reminder.json() == {
        "type": "reminder",
        "question_id": q["id"],
        "session": "s1",
        "n": 1,
        "locale": "en",
        "text": "[Deploy] Still waiting for your answer — 10 min left.",
        "expires_at": q["expires_at"],
    }
    assert reminder.headers["x-askgate-delivery"] == f"{q['id']}:0:reminder:1"
    stream = keys.events(keys.shard_of(q["id"]), "text")
    again = (
        await redis.xadd(
            stream,
            {
                "type": "question.remind",
                "id": q["id"],
                "tenant": tenant.id,
                "session": "s1",
                "n": "1",
                "final": "0",
                "left_ms": "600000",
            },
        )
    ).decode()

    async def handled() -> bool:
        groups = {g["name"].decode(): g for g in await redis.xinfo_groups(stream)}
        group = groups[keys.group("text")]
        return bool(group["last-delivered-id"].decode() == again and group["pending"] == 0)

    await eventually(handled, "the replayed entry", 30)
    assert len(receiver.received) == 2
    assert (await question(app_client, tenant, q["id"]))["remind"]["sent"] == 1
    metrics = (await app_client.get("/metrics")).text
    assert 'askgate_reminders_sent_total{channel="text"} 1' in metrics


async def test_a_failed_target_gets_no_reminder(
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    receiver: Receiver,
    redis: Redis,
    text_worker: StartWorker,
) -> None:
    """Only a target whose prompt is shown is reminded."""
    await text_worker()
    with Receiver(default=Reply(404)) as gone:
        q = await asked(
            app_client,
            tenant,
            remind={"every_s": 60},
            targets=[
                {"channel": "text", "url": gone.url},
                {"channel": "text", "url": receiver.url},
            ],
        )
        await eventually(lambda: delivered(app_client, tenant, q["id"], 1), "delivered", 30)
        await fire_timers(redis, created_ms(q) + 60_000)
        await receiver.wait_for(2)
        assert len(gone.received) == 1


async def test_a_step_shows_the_question_and_its_end(
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    receiver: Receiver,
    redis: Redis,
    text_worker: StartWorker,
) -> None:
    """The step's target gets the prompt when the step starts and the summary at the end."""
    await text_worker()
    with Receiver() as on_call:
        q = await asked(
            app_client,
            tenant,
            targets=[{"channel": "text", "url": receiver.url}],
            escalate=[{"after_s": 300, "targets": [{"channel": "text", "url": on_call.url}]}],
        )
        await receiver.wait_for(1)
        assert on_call.received == []
        await fire_timers(redis, created_ms(q) + 300_000)
        (prompt,) = await on_call.wait_for(1)
        assert prompt.json()["type"] == "question"
        assert prompt.headers["x-askgate-delivery"] == f"{q['id']}:1:question"
        await eventually(lambda: delivered(app_client, tenant, q["id"], 1), "delivered", 30)
        await app_client.post(
            "/v1/sessions/s1/messages", json={"text": "2"}, headers=tenant.headers
        )
        _, summary = await on_call.wait_for(2)
        assert summary.json()["text"] == "Answered: Production"
        _, first_summary = await receiver.wait_for(2)
        assert first_summary.json()["type"] == "summary"


async def test_a_step_that_fails_is_recorded_and_the_next_runs(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Redis, text_worker: StartWorker
) -> None:
    """The ask's own target and step 1's both refuse: the step is recorded as started,
    the question still waits, and step 2's target shows it."""
    await text_worker()
    with (
        Receiver(default=Reply(410)) as first,
        Receiver(default=Reply(404)) as second,
        Receiver() as third,
    ):
        q = await asked(
            app_client,
            tenant,
            targets=[{"channel": "text", "url": first.url}],
            escalate=[
                {"after_s": 300, "targets": [{"channel": "text", "url": second.url}]},
                {"after_s": 600, "targets": [{"channel": "text", "url": third.url}]},
            ],
        )
        await first.wait_for(1)
        await fire_timers(redis, created_ms(q) + 300_000)
        await second.wait_for(1)

        async def failed(i: int) -> bool:
            d = (await question(app_client, tenant, q["id"]))["deliveries"][i]
            return bool(d["status"] == "failed")

        await eventually(lambda: failed(1), "step 1's target failed", 30)
        res = await question(app_client, tenant, q["id"])
        assert res["status"] == "pending"
        assert [s["started_at"] is not None for s in res["escalation"]] == [True, False]
        await fire_timers(redis, created_ms(q) + 600_000)
        await third.wait_for(1)
        await eventually(lambda: delivered(app_client, tenant, q["id"], 2), "step 2 shown", 30)
        assert (await question(app_client, tenant, q["id"]))["status"] == "pending"
