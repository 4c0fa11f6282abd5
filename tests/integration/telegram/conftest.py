"""The Telegram worker in-process against the fake Bot API, with the real API app.

`tg` starts the fake server, gives the test tenant a bot token and a webhook secret,
and runs the real TelegramService (webhook mode on a free port); updates are POSTed to
its real webhook handler the way Telegram would (the harness: tests/support/telegram.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from askgate.store.tenants import set_channel_config
from askgate_telegram.service import TelegramService
from redis.asyncio import Redis

from tests.integration.telegram.fake_bot_api import FakeBotAPI
from tests.support.asks import Tenant
from tests.support.telegram import (
    ADA,
    TOKEN,
    WEBHOOK_SECRET,
    Harness,
    tg_settings,
)


@pytest.fixture
async def fake() -> AsyncIterator[FakeBotAPI]:
    server = await FakeBotAPI().start()
    yield server
    await server.stop()


@pytest.fixture
async def tg(
    redis_url: str,
    redis: Redis,
    tenant: Tenant,
    app_client: httpx.AsyncClient,
    fake: FakeBotAPI,
) -> AsyncIterator[Harness]:
    await set_channel_config(
        redis,
        tenant.id,
        "telegram",
        {"bot_token": TOKEN, "webhook_secret": WEBHOOK_SECRET, "allowed_user_ids": str(ADA["id"])},
    )
    service = TelegramService(tg_settings(redis_url, fake.base))
    await service.start()
    harness = Harness(fake, service, tenant, app_client, redis)
    yield harness
    await harness.hook.aclose()
    await service.close()
