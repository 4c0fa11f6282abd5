"""The Telegram worker as a real process, killed (SIGKILL) while sending a prompt, and
the worker that takes over after it."""

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
from askgate.store.tenants import set_channel_config
from askgate_telegram.service import TelegramService
from redis.asyncio import Redis

from tests.integration.telegram.fake_bot_api import FakeBotAPI
from tests.support.asks import SECRET, Tenant, ask_body, make_settings
from tests.support.telegram import PRIVATE, TOKEN, WEBHOOK_SECRET, tg_settings
from tests.support.waiting import eventually

# A fresh process imports aiogram first: seconds on a busy machine.
PROCESS_WAIT_S = 60.0


@pytest.fixture
async def fake() -> AsyncIterator[FakeBotAPI]:
    server = await FakeBotAPI().start()
    yield server
    await server.stop()


async def start_worker(redis_url: str, api_base: str) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "ASKGATE_SECRET_KEY": SECRET,
        "ASKGATE_TELEGRAM_MODE": "polling",
        "ASKGATE_TELEGRAM_API_BASE": api_base,
        "ASKGATE_TELEGRAM_POLLING_TIMEOUT_S": "1",
        "ASKGATE_CONSUMER_BLOCK_MS": "100",
        "ASKGATE_CONSUMER_CLAIM_IDLE_MS": "300",
        "ASKGATE_CONSUMER_CLAIM_EVERY_S": "0.2",
        "ASKGATE_DELIVERY_LEASE_MS": "300",
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "askgate_telegram",
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


async def test_worker_killed_mid_render_posts_exactly_one_prompt(
    redis: Redis, redis_url: str, tenant: Tenant, fake: FakeBotAPI
) -> None:
    """A worker killed while sendMessage is in flight, then restarted: one prompt, ever."""
    await set_channel_config(
        redis, tenant.id, "telegram", {"bot_token": TOKEN, "webhook_secret": WEBHOOK_SECRET}
    )
    store = Store(redis, make_settings(redis_url))
    body = ask_body(targets=[{"channel": "telegram", "chat_id": str(PRIVATE)}])
    rec, _ = await store.create(tenant.id, QuestionCreate.model_validate(body))
    fake.hold_send.clear()  # Telegram got the message; its answer never reaches the worker

    first = await start_worker(redis_url, fake.base)
    try:
        await eventually(lambda: fake.sent(), "the first worker's sendMessage", PROCESS_WAIT_S)
        first.kill()
        await first.wait()
    finally:
        await stop_worker(first)

    # The restart runs the same worker in this process: the kill -9 is what needs a
    # process of its own, and a second one would import aiogram again (seconds of CPU).
    second = TelegramService(
        tg_settings(
            redis_url,
            fake.base,
            telegram_mode="polling",
            telegram_polling_timeout_s=1,
            consumer_claim_idle_ms=300,
            delivery_lease_ms=300,
        )
    )
    await second.start()
    try:

        async def settled() -> bool:
            return bool(await redis.hget(keys.question(rec.id), "ds:0") == b"delivered")

        await eventually(
            settled, "the restarted worker to settle the in-doubt prompt", PROCESS_WAIT_S
        )
        doc = orjson.loads(await redis.hget(keys.deliveries(rec.id), "d:0") or b"{}")
        assert doc["ref"]["unconfirmed"] is True
        assert len(fake.sent()) == 1
        assert (await store.load(rec.id)).status == "pending"  # type: ignore[union-attr]
    finally:
        fake.hold_send.set()
        await second.close()
