"""The Discord worker as a real process, killed (SIGKILL) while Discord holds its post."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import orjson
from askgate.domain.models import QuestionCreate
from askgate.store import keys
from askgate.store.store import Store
from nacl.signing import SigningKey
from redis.asyncio import Redis

from tests.integration.discord.fake_discord import FakeDiscord
from tests.support.asks import SECRET, Tenant, ask_body, make_settings
from tests.support.discord import CHANNEL, configure
from tests.support.waiting import eventually

# A fresh process imports its libraries first: seconds on a busy machine.
PROCESS_WAIT_S = 60.0


async def start_worker(redis_url: str, api_base: str) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "ASKGATE_SECRET_KEY": SECRET,
        "ASKGATE_DISCORD_API_BASE": api_base,
        "ASKGATE_DISCORD_PORT": "0",
        "ASKGATE_CONSUMER_BLOCK_MS": "100",
        "ASKGATE_CONSUMER_CLAIM_IDLE_MS": "300",
        "ASKGATE_CONSUMER_CLAIM_EVERY_S": "0.2",
        "ASKGATE_DELIVERY_LEASE_MS": "300",
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "askgate_discord",
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


async def test_worker_killed_mid_post_shows_exactly_one_prompt(
    redis: Redis, redis_url: str, tenant: Tenant, fake: FakeDiscord
) -> None:
    """Killed while Discord holds the create, restarted: the resend's nonce finds the first
    message, so the channel shows one prompt and the ledger records its id."""
    await configure(redis, tenant.id, SigningKey.generate())
    store = Store(redis, make_settings(redis_url))
    body = ask_body(targets=[{"channel": "discord", "channel_id": CHANNEL}])
    rec, _ = await store.create(tenant.id, QuestionCreate.model_validate(body))
    fake.hold.clear()  # Discord keeps the message; its answer never reaches the worker

    first = await start_worker(redis_url, fake.base)
    try:
        await eventually(lambda: fake.creates(), "the first worker's create", PROCESS_WAIT_S)
        first.kill()
        await first.wait()
    finally:
        await stop_worker(first)
    fake.hold.set()

    second = await start_worker(redis_url, fake.base)
    try:

        async def settled() -> bool:
            return bool(await redis.hget(keys.question(rec.id), "ds:0") == b"delivered")

        await eventually(settled, "the restarted worker to confirm the prompt", PROCESS_WAIT_S)
        [prompt] = fake.messages(CHANNEL)
        doc = orjson.loads(await redis.hget(keys.deliveries(rec.id), "d:0") or b"{}")
        assert doc["ref"] == {"channel_id": CHANNEL, "message_id": prompt.id}
        assert len(fake.creates()) == 2
        assert {c.body["nonce"] for c in fake.creates()} == {f"{rec.id}:0"}
    finally:
        await stop_worker(second)
