"""Webhooks: the real `askgate-webhooks` service (stream consumer + RQ worker processes)
POSTs final results to a local receiver, signed, with retries and dead letters."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import orjson
import pytest
from askgate.dev.redis_server import RedisProcess
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.conn import connect
from askgate.store.webhooks import list_dead
from askgate_webhooks.config import WebhookSettings
from askgate_webhooks.jobs import attempt_delivery
from askgate_webhooks.worker import WebhookEnqueuer
from redis import Redis as SyncRedis
from redis.asyncio import Redis
from rq import Queue

from tests.integration.http_receiver import Receiver, Reply
from tests.support.asks import Tenant, ask_body, make_settings
from tests.support.databases import own_database
from tests.support.waiting import eventually

# The receivers listen on 127.0.0.1, which the outbound policy refuses unless opened.
LOCAL = "127.0.0.0/8"
SERVICE_ENV = {
    "ASKGATE_OUTBOUND_ALLOW": LOCAL,
    "ASKGATE_WEBHOOK_MAX_ATTEMPTS": "3",
    "ASKGATE_WEBHOOK_BACKOFF_S": "0.01",
    "ASKGATE_WEBHOOK_TIMEOUT_S": "5",
    "ASKGATE_WEBHOOK_WORKERS": "1",
    "ASKGATE_CONSUMER_BLOCK_MS": "100",
    "ASKGATE_LOG_LEVEL": "warning",
}


@pytest.fixture
def settings(redis_url: str) -> Settings:
    """The API's settings with the local receivers' range opened."""
    return make_settings(redis_url, outbound_allow=LOCAL)


@pytest.fixture(scope="module")
def webhooks_url(redis_server: RedisProcess) -> str:
    """The database of the module's webhooks service: the tests that use the service
    share it, each with a tenant and a receiver of its own (a service process and its RQ
    worker take a second or two to start and stop, so they start once)."""
    return own_database(redis_server)


@pytest.fixture(scope="module")
def webhooks_service(webhooks_url: str) -> Iterator[subprocess.Popen[bytes]]:
    """`python -m askgate_webhooks` as a process, stopped with SIGTERM afterwards."""
    env = {**os.environ, "REDIS_URL": webhooks_url, **SERVICE_ENV}
    proc = subprocess.Popen([sys.executable, "-m", "askgate_webhooks"], env=env)
    yield proc
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    assert proc.returncode == 0


@pytest.fixture
def webhooks(webhooks_service: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    """The module's webhooks service, still running."""
    assert webhooks_service.poll() is None, "the webhooks service exited"
    return webhooks_service


@pytest.fixture
def redis_url(request: pytest.FixtureRequest, redis_server: RedisProcess) -> str:
    """The webhooks service's database for the tests that use it, else the test's own."""
    if "webhooks" in request.fixturenames:
        return str(request.getfixturevalue("webhooks_url"))
    return own_database(redis_server)


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    """A client of the test's database (not emptied: the service's one holds its
    consumer group and RQ's keys while the module runs)."""
    client = connect(redis_url, max_connections=64, connect_timeout_s=10)
    yield client
    await client.aclose()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


@pytest.fixture
def sync_redis(redis_url: str) -> Iterator[SyncRedis]:
    client = SyncRedis.from_url(redis_url)
    yield client
    client.close()


async def ask_and_answer(client: httpx.AsyncClient, tenant: Tenant, url: str) -> str:
    r = await client.post("/v1/questions", json=ask_body(callback_url=url), headers=tenant.headers)
    assert r.status_code == 201, r.text
    qid: str = r.json()["id"]
    r = await client.post(
        f"/v1/questions/{qid}/answer",
        json={"answers": {"deploy_target": ["Production"]}},
        headers=tenant.headers,
    )
    assert r.status_code == 200, r.text
    return qid


async def settled_webhook(client: httpx.AsyncClient, tenant: Tenant, qid: str) -> dict[str, Any]:
    """The question's `webhook` once it is delivered or failed (bounded wait)."""

    async def settled() -> dict[str, Any] | None:
        hook = (await client.get(f"/v1/questions/{qid}", headers=tenant.headers)).json()["webhook"]
        return dict(hook) if hook and hook["status"] != "pending" else None

    return dict(await eventually(settled, f"the webhook of {qid} to settle", 30))


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """The README's verification recipe, verbatim."""
    timestamp = headers["x-askgate-timestamp"]
    expected = (
        "v1="
        + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    )
    fresh = abs(time.time() - int(timestamp)) <= 300
    return fresh and hmac.compare_digest(expected, headers["x-askgate-signature"])


@pytest.mark.usefixtures("webhooks")
async def test_result_is_posted_signed(
    app_client: httpx.AsyncClient, tenant: Tenant, receiver: Receiver
) -> None:
    """The final result reaches callback_url with a signature the README recipe verifies."""
    qid = await ask_and_answer(app_client, tenant, receiver.url)
    (req,) = await receiver.wait_for(1)
    assert verify(tenant.webhook_secret, req.headers, req.body)
    assert not verify("whsec_wrong", req.headers, req.body)
    body = req.json()
    assert body["question_id"] == qid
    assert body["status"] == "answered" and body["reason"] is None
    assert body["result"] == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }
    assert body["answers"] == {"deploy_target": ["Production"]}
    assert body["session"] == "s1" and body["run_id"] is None
    assert body["created_at"] and body["resolved_at"]


@pytest.mark.usefixtures("webhooks")
async def test_no_answer_is_posted_with_reason(
    app_client: httpx.AsyncClient, tenant: Tenant, receiver: Receiver
) -> None:
    """A skipped ask is delivered as no_answer with its reason and no answers."""
    r = await app_client.post(
        "/v1/questions", json=ask_body(callback_url=receiver.url), headers=tenant.headers
    )
    qid = r.json()["id"]
    await app_client.post(f"/v1/questions/{qid}/skip", headers=tenant.headers)
    (req,) = await receiver.wait_for(1)
    body = req.json()
    assert (body["status"], body["reason"], body["result"]) == (
        "no_answer",
        "skipped",
        {"status": "no_answer"},
    )
    assert "answers" not in body


@pytest.mark.usefixtures("webhooks")
async def test_server_errors_are_retried_until_delivered(
    app_client: httpx.AsyncClient, tenant: Tenant
) -> None:
    """5xx answers are retried with backoff; every attempt shows on the question."""
    with Receiver([Reply(503), Reply(500)]) as receiver:
        qid = await ask_and_answer(app_client, tenant, receiver.url)
        hook = await settled_webhook(app_client, tenant, qid)
        assert len(receiver.received) == 3
    assert hook["status"] == "delivered" and hook["next_attempt_at"] is None
    assert [a["status_code"] for a in hook["attempts"]] == [503, 500, 200]
    assert all(a["at"] for a in hook["attempts"])


@pytest.mark.usefixtures("webhooks")
async def test_rate_limit_is_retried(app_client: httpx.AsyncClient, tenant: Tenant) -> None:
    """A 429 is retried (after its Retry-After) rather than treated as a refusal."""
    with Receiver([Reply(429, {"Retry-After": "0"})]) as receiver:
        qid = await ask_and_answer(app_client, tenant, receiver.url)
        hook = await settled_webhook(app_client, tenant, qid)
    assert [a["status_code"] for a in hook["attempts"]] == [429, 200]
    assert hook["status"] == "delivered"


@pytest.mark.usefixtures("webhooks")
async def test_client_error_is_not_retried(
    app_client: httpx.AsyncClient, tenant: Tenant, sync_redis: SyncRedis
) -> None:
    """A 4xx ends the delivery at once: one attempt, failed, nothing scheduled."""
    with Receiver(default=Reply(410)) as receiver:
        qid = await ask_and_answer(app_client, tenant, receiver.url)
        hook = await settled_webhook(app_client, tenant, qid)
        assert len(receiver.received) == 1
    assert hook["status"] == "failed" and hook["next_attempt_at"] is None
    assert [a["status_code"] for a in hook["attempts"]] == [410]
    queue = Queue(keys.WEBHOOK_QUEUE, connection=sync_redis)
    waiting = [*queue.scheduled_job_registry.get_job_ids(), *queue.get_job_ids()]
    assert not [j for j in waiting if qid in j]


@pytest.mark.usefixtures("webhooks")
async def test_last_attempt_becomes_a_listed_dead_letter(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Redis, redis_url: str
) -> None:
    """After the last attempt fails the delivery is listed by `askgate-webhooks dead`."""
    with Receiver(default=Reply(502)) as receiver:
        qid = await ask_and_answer(app_client, tenant, receiver.url)
        hook = await settled_webhook(app_client, tenant, qid)
    assert hook["status"] == "failed" and len(hook["attempts"]) == 3
    (dead,) = await list_dead(redis, tenant.id)
    assert (dead["question_id"], dead["url"], dead["attempts"]) == (qid, receiver.url, 3)
    assert dead["last"]["status_code"] == 502
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "askgate_webhooks",
        "dead",
        "--tenant",
        tenant.id,
        env={**os.environ, "REDIS_URL": redis_url},
        stdout=asyncio.subprocess.PIPE,
    )
    stdout, _ = await proc.communicate()
    assert proc.returncode == 0
    assert [orjson.loads(line)["question_id"] for line in stdout.splitlines()] == [qid]


async def test_unreachable_receiver_is_retried(
    app_client: httpx.AsyncClient, tenant: Tenant, sync_redis: SyncRedis, redis_url: str
) -> None:
    """A connection error counts as a failed attempt that is retried, with its error."""
    with Receiver() as closed:
        url = closed.url  # the port is free again once the receiver is closed
    qid = await ask_and_answer(app_client, tenant, url)
    settings = WebhookSettings(redis_url=redis_url, webhook_max_attempts=3, outbound_allow=LOCAL)
    WebhookEnqueuer(sync_redis, settings).start(qid)
    assert await asyncio.to_thread(attempt_delivery, sync_redis, settings, qid, 1) == "retry"
    hook = (await app_client.get(f"/v1/questions/{qid}", headers=tenant.headers)).json()["webhook"]
    assert hook["status"] == "pending" and hook["next_attempt_at"]
    assert hook["attempts"][0]["error"] == "connection failed"


async def test_reprocessed_entry_enqueues_once(
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    sync_redis: SyncRedis,
    redis_url: str,
    receiver: Receiver,
) -> None:
    """Handling the same resolved event twice enqueues one job."""
    qid = await ask_and_answer(app_client, tenant, receiver.url)
    settings = WebhookSettings(redis_url=redis_url, outbound_allow=LOCAL)
    enqueuer = WebhookEnqueuer(sync_redis, settings)
    enqueuer.start(qid)
    enqueuer.start(qid)
    queue = Queue(keys.WEBHOOK_QUEUE, connection=sync_redis)
    assert queue.get_job_ids() == [f"webhook-{qid}-1"]


async def test_attempt_runs_once(
    app_client: httpx.AsyncClient,
    tenant: Tenant,
    sync_redis: SyncRedis,
    redis_url: str,
    receiver: Receiver,
) -> None:
    """A job that RQ runs twice posts once: the second run finds the attempt claimed."""
    qid = await ask_and_answer(app_client, tenant, receiver.url)
    settings = WebhookSettings(redis_url=redis_url, outbound_allow=LOCAL)
    WebhookEnqueuer(sync_redis, settings).start(qid)
    first = await asyncio.to_thread(attempt_delivery, sync_redis, settings, qid, 1)
    second = await asyncio.to_thread(attempt_delivery, sync_redis, settings, qid, 1)
    assert (first, second) == ("delivered", "skipped")
    assert len(receiver.received) == 1


async def test_ask_without_callback_has_no_webhook(
    app_client: httpx.AsyncClient, tenant: Tenant, redis: Redis
) -> None:
    """An ask without callback_url writes nothing to the webhook streams."""
    r = await app_client.post("/v1/questions", json=ask_body(), headers=tenant.headers)
    qid = r.json()["id"]
    await app_client.post(f"/v1/questions/{qid}/skip", headers=tenant.headers)
    assert await redis.xlen(keys.events(keys.shard_of(qid), "webhook")) == 0


@pytest.mark.usefixtures("webhooks")
async def test_a_late_answer_is_posted_as_its_own_event(
    app_client: httpx.AsyncClient, tenant: Tenant, receiver: Receiver, redis: Redis
) -> None:
    """After the no_answer result, an answer that came late is POSTed signed as
    question.late_answer; the result in it is still no_answer, and its delivery shows on
    the late answer."""
    from askgate.settings import Settings
    from askgate.store.store import Store
    from askgate_sweeper.__main__ import sweep_once

    r = await app_client.post(
        "/v1/questions", json=ask_body(callback_url=receiver.url), headers=tenant.headers
    )
    qid = r.json()["id"]
    store = Store(redis, Settings(redis_url="redis://unused"))
    rec = await store.load(qid)
    assert rec is not None
    await sweep_once(store, rec.expires_ms + 1)
    (result,) = await receiver.wait_for(1)
    assert result.json()["status"] == "no_answer"
    r = await app_client.post(
        f"/v1/questions/{qid}/answer",
        headers=tenant.headers,
        json={"answers": {"deploy_target": ["Production"]}},
    )
    assert r.json()["error"]["late_answer_recorded"] is True
    _, late = await receiver.wait_for(2)
    assert verify(tenant.webhook_secret, late.headers, late.body)
    assert late.headers["x-askgate-event"] == "question.late_answer"
    body = late.json()
    assert (body["event"], body["question_id"], body["n"]) == ("question.late_answer", qid, 0)
    assert body["result"] == {"status": "no_answer"} and body["reason"] == "timeout"
    assert body["late_answer"]["answers"] == {"deploy_target": ["Production"]}
    assert body["late_answer"]["responder"] == {"channel": "api"}

    async def delivered() -> bool:
        q = (await app_client.get(f"/v1/questions/{qid}", headers=tenant.headers)).json()
        hook = q["late_answers"][0]["webhook"]
        return bool(hook and hook["status"] == "delivered")

    await eventually(delivered, "the late answer's delivery to be recorded", 30)
