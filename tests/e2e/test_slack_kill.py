"""The Slack worker as a real process, killed (SIGKILL) while Slack holds its
chat.postMessage, then restarted: one prompt, ever, and its ts known."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator

import orjson
import pytest
from askgate.domain.models import QuestionCreate
from askgate.store import keys
from askgate.store.store import Store
from redis.asyncio import Redis

from tests.integration.slack.fake_slack import FakeSlack
from tests.support.asks import SECRET, Tenant, ask_body, make_settings
from tests.support.slack import ROOM, configure
from tests.support.waiting import eventually

# A fresh process imports slack_sdk and aiohttp first: seconds on a busy machine.
PROCESS_WAIT_S = 60.0


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    server = await FakeSlack().start()
    yield server
    await server.stop()


async def start_worker(redis_url: str, api: str) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "ASKGATE_SECRET_KEY": SECRET,
        "ASKGATE_SLACK_API_BASE": api,
        "ASKGATE_SLACK_PORT": "0",
        "ASKGATE_CONSUMER_BLOCK_MS": "100",
        "ASKGATE_CONSUMER_CLAIM_IDLE_MS": "300",
        "ASKGATE_CONSUMER_CLAIM_EVERY_S": "0.2",
        "ASKGATE_DELIVERY_LEASE_MS": "300",
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "askgate_slack",
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )


async def stop_worker(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 15)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def test_worker_killed_mid_post_leaves_exactly_one_prompt(
    redis: Redis, redis_url: str, tenant: Tenant, fake: FakeSlack
) -> None:
    """SIGKILL while chat.postMessage is in flight, then a restart: the new worker finds
    the prompt by its metadata, confirms it with its ts, and posts nothing again."""
    await configure(redis, tenant)
    store = Store(redis, make_settings(redis_url))
    body = ask_body(targets=[{"channel": "slack", "channel_id": ROOM}])
    rec, _ = await store.create(tenant.id, QuestionCreate.model_validate(body))
    fake.hold_post.clear()  # Slack has the message; its answer never reaches the worker

    first = await start_worker(redis_url, fake.api)
    try:
        await eventually(lambda: fake.sent(), "the first worker's chat.postMessage", PROCESS_WAIT_S)
        first.kill()
        await first.wait()
    finally:
        await stop_worker(first)
    fake.hold_post.set()

    second = await start_worker(redis_url, fake.api)
    try:

        async def settled() -> bool:
            return bool(await redis.hget(keys.question(rec.id), "ds:0") == b"delivered")

        await eventually(settled, "the restarted worker to settle the prompt", PROCESS_WAIT_S)
        doc = orjson.loads(await redis.hget(keys.deliveries(rec.id), "d:0") or b"{}")
        assert doc["ref"]["ts"] == fake.messages(ROOM)[0].ts
        assert len(fake.sent()) == 1 and len(fake.messages(ROOM)) == 1
        assert len(fake.sent("conversations.history")) == 1
        assert (await store.load(rec.id)).status == "pending"  # type: ignore[union-attr]
    finally:
        await stop_worker(second)
