"""The webhook reaper on real Redis and RQ: an attempt whose worker died is recorded as
interrupted and retried as the next attempt (or dead-lettered when it was the last), a
retry whose job was lost is enqueued again, a job stuck with a dead worker is replaced,
and a live attempt is left alone. Time is given to the reaper, never slept out."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from askgate.domain.timeutil import now_ms
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.webhooks import WebhookState, list_dead, new_lease
from askgate_webhooks import jobs
from askgate_webhooks.config import WebhookSettings
from askgate_webhooks.jobs import attempt_delivery
from askgate_webhooks.reaper import reap_once
from askgate_webhooks.worker import WebhookEnqueuer
from redis import Redis as SyncRedis
from redis.asyncio import Redis
from rq import Queue
from rq.job import Job, JobStatus

from tests.integration.http_receiver import Receiver
from tests.support.asks import Tenant, ask_body, make_settings

LOCAL = "127.0.0.0/8"


@pytest.fixture
def settings(redis_url: str) -> Settings:
    return make_settings(redis_url, outbound_allow=LOCAL)


@pytest.fixture
def sync_redis(redis_url: str) -> Iterator[SyncRedis]:
    client = SyncRedis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


def hook_settings(url: str, **overrides: Any) -> WebhookSettings:
    return WebhookSettings(redis_url=url, outbound_allow=LOCAL, webhook_backoff_s=0, **overrides)


async def final_question(client: httpx.AsyncClient, tenant: Tenant, url: str) -> str:
    r = await client.post("/v1/questions", json=ask_body(callback_url=url), headers=tenant.headers)
    qid = str(r.json()["id"])
    await client.post(f"/v1/questions/{qid}/skip", headers=tenant.headers)
    return qid


async def hook(redis: Redis, qid: str) -> dict[str, Any]:
    return dict(orjson.loads(await redis.hget(keys.question(qid), "webhook")))


def abandon(sync_redis: SyncRedis, qid: str, attempt: int) -> None:
    """What a worker killed mid-POST leaves: attempt n claimed, its lease already over."""
    past = now_ms() - 1
    assert WebhookState(sync_redis).claim(qid, attempt, new_lease(past), past)


def queued_attempts(sync_redis: SyncRedis) -> list[str]:
    queue = Queue(keys.WEBHOOK_QUEUE, connection=sync_redis)
    ids = queue.get_job_ids() + queue.scheduled_job_registry.get_job_ids()
    return sorted(ids)


async def test_interrupted_attempt_is_counted_and_retried(
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    redis: Redis,
    redis_url: str,
    sync_redis: SyncRedis,
    receiver: Receiver,
) -> None:
    """A dead worker's attempt 1 is listed as interrupted, and attempt 2 delivers."""
    s = hook_settings(redis_url)
    qid = await final_question(app_client, tenant, receiver.url)
    WebhookEnqueuer(sync_redis, s).start(qid)
    Queue(keys.WEBHOOK_QUEUE, connection=sync_redis).empty()  # the job died with its worker
    abandon(sync_redis, qid, 1)
    assert await asyncio.to_thread(reap_once, sync_redis, s) == {"interrupted": 1}
    assert queued_attempts(sync_redis) == [f"webhook-{qid}-2"]
    assert await asyncio.to_thread(attempt_delivery, sync_redis, s, qid, 2) == "delivered"
    h = await hook(redis, qid)
    assert h["status"] == "delivered"
    assert [a.get("error") or a.get("status_code") for a in h["attempts"]] == ["interrupted", 200]
    assert [r.headers["x-askgate-attempt"] for r in receiver.received] == ["2"]


async def test_a_late_answers_interrupted_attempt_is_retried_as_its_own_chain(
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    redis: Redis,
    redis_url: str,
    sync_redis: SyncRedis,
    receiver: Receiver,
) -> None:
    """A late answer's delivery is reaped like the result's: interrupted, then attempt 2
    posts it; the result's own delivery is not touched."""
    from askgate.store.webhooks import delivery_key

    s = hook_settings(redis_url)
    qid = await final_question(app_client, tenant, receiver.url)
    r = await app_client.post(
        f"/v1/questions/{qid}/answer",
        headers=tenant.headers,
        json={"answers": {"deploy_target": ["Production"]}},
    )
    assert r.json()["error"]["late_answer_recorded"] is True
    late = delivery_key(qid, 0)
    WebhookEnqueuer(sync_redis, s).start(late)
    Queue(keys.WEBHOOK_QUEUE, connection=sync_redis).empty()
    abandon(sync_redis, late, 1)
    assert await asyncio.to_thread(reap_once, sync_redis, s) == {"interrupted": 1}
    assert queued_attempts(sync_redis) == [f"webhook-{qid}-late0-2"]
    assert await asyncio.to_thread(attempt_delivery, sync_redis, s, late, 2) == "delivered"
    (posted,) = receiver.received
    assert posted.headers["x-askgate-event"] == "question.late_answer"
    q = (await app_client.get(f"/v1/questions/{qid}", headers=tenant.headers)).json()
    assert [
        a.get("error") or a.get("status_code") for a in q["late_answers"][0]["webhook"]["attempts"]
    ] == ["interrupted", 200]
    assert q["webhook"] is None  # the result's chain was never begun here


async def test_interrupted_last_attempt_is_a_dead_letter(
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    redis: Redis,
    redis_url: str,
    sync_redis: SyncRedis,
    receiver: Receiver,
) -> None:
    """When the interrupted attempt was the last one, the delivery ends as a dead letter."""
    s = hook_settings(redis_url, webhook_max_attempts=1)
    qid = await final_question(app_client, tenant, receiver.url)
    WebhookEnqueuer(sync_redis, s).start(qid)
    abandon(sync_redis, qid, 1)
    assert await asyncio.to_thread(reap_once, sync_redis, s) == {"dead": 1}
    h = await hook(redis, qid)
    assert h["status"] == "failed" and [a["error"] for a in h["attempts"]] == ["interrupted"]
    (dead,) = await list_dead(redis, tenant.id)
    assert (dead["question_id"], dead["attempts"]) == (qid, 1)
    assert await redis.zcard(keys.webhook_due(keys.shard_of(qid))) == 0


async def test_lost_retry_job_is_enqueued_again(
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    redis: Redis,
    redis_url: str,
    sync_redis: SyncRedis,
    receiver: Receiver,
) -> None:
    """A retry recorded but never scheduled (the worker died in between) is enqueued."""
    s = hook_settings(redis_url)
    qid = await final_question(app_client, tenant, receiver.url)
    WebhookEnqueuer(sync_redis, s).start(qid)
    Queue(keys.WEBHOOK_QUEUE, connection=sync_redis).empty()
    later = now_ms() + 3_600_000
    assert await asyncio.to_thread(reap_once, sync_redis, s) == {}  # not overdue yet
    assert await asyncio.to_thread(reap_once, sync_redis, s, later) == {"reenqueued": 1}
    assert queued_attempts(sync_redis) == [f"webhook-{qid}-1"]


@pytest.mark.parametrize("status", ["started", "queued"])
async def test_job_stuck_with_a_dead_worker_is_replaced_and_posts_once(
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    redis: Redis,
    redis_url: str,
    sync_redis: SyncRedis,
    receiver: Receiver,
    status: str,
) -> None:
    """A job a dead worker had taken off the queue (started, or still marked queued in its
    intermediate queue) gets a fresh twin; running both posts once."""
    s = hook_settings(redis_url)
    qid = await final_question(app_client, tenant, receiver.url)
    WebhookEnqueuer(sync_redis, s).start(qid)
    job = Job.fetch(f"webhook-{qid}-1", connection=sync_redis)
    job.set_status(JobStatus(status))
    Queue(keys.WEBHOOK_QUEUE, connection=sync_redis).remove(job)
    later = now_ms() + 3_600_000
    assert await asyncio.to_thread(reap_once, sync_redis, s, later) == {"reenqueued": 1}
    (twin,) = queued_attempts(sync_redis)
    assert twin.startswith(f"webhook-{qid}-1-")
    first = await asyncio.to_thread(attempt_delivery, sync_redis, s, qid, 1)
    second = await asyncio.to_thread(attempt_delivery, sync_redis, s, qid, 1)
    assert (first, second) == ("delivered", "skipped") and len(receiver.received) == 1


async def test_live_attempt_is_left_alone(
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    redis: Redis,
    redis_url: str,
    sync_redis: SyncRedis,
    receiver: Receiver,
) -> None:
    """An attempt within its lease is not touched, and its own record still lands."""
    s = hook_settings(redis_url)
    qid = await final_question(app_client, tenant, receiver.url)
    WebhookEnqueuer(sync_redis, s).start(qid)
    until = now_ms() + jobs.lease_ms(s)
    lease = new_lease(until)
    state = WebhookState(sync_redis)
    assert state.claim(qid, 1, lease, until)
    assert await asyncio.to_thread(reap_once, sync_redis, s) == {}
    doc = {
        "status": "delivered",
        "attempts": [{"at": "x", "status_code": 200}],
        "next_attempt_at": None,
    }
    assert state.record(qid, 1, lease, doc, None) == "ok"
    assert await redis.zcard(keys.webhook_due(keys.shard_of(qid))) == 0


async def test_late_record_of_a_reaped_attempt_is_refused(
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    redis: Redis,
    redis_url: str,
    sync_redis: SyncRedis,
    receiver: Receiver,
) -> None:
    """Once the reaper closed attempt n, that attempt's own record cannot overwrite it."""
    s = hook_settings(redis_url)
    qid = await final_question(app_client, tenant, receiver.url)
    WebhookEnqueuer(sync_redis, s).start(qid)
    past = now_ms() - 1
    lease = new_lease(past)
    state = WebhookState(sync_redis)
    assert state.claim(qid, 1, lease, past)
    await asyncio.to_thread(reap_once, sync_redis, s)
    assert state.record(qid, 1, lease, {"status": "delivered"}, None) == "conflict"
    assert (await hook(redis, qid))["status"] == "pending"
