"""The Discord worker in-process against the fake REST API, with the real API app.

`dc` starts the fake, gives the test tenant a Discord application (a bot token, the
public key of a PyNaCl SigningKey made here, an application id) and runs the real
DiscordService with its interactions endpoint on a free port. Interactions are POSTed to
it signed with that key, the way Discord sends them (the harness: tests/support/discord.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from askgate_discord.service import DiscordService
from nacl.signing import SigningKey
from redis.asyncio import Redis

from tests.integration.discord.fake_discord import FakeDiscord
from tests.support.asks import Tenant
from tests.support.discord import (
    ADA,
    TOKEN,
    Harness,
    configure,
    dc_settings,
)


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    server = await FakeDiscord(TOKEN).start()
    yield server
    await server.stop()


@pytest.fixture
async def dc(
    redis_url: str,
    redis: Redis,
    tenant: Tenant,
    app_client: httpx.AsyncClient,
    fake: FakeDiscord,
) -> AsyncIterator[Harness]:
    key = SigningKey.generate()
    await configure(redis, tenant.id, key, allowed_user_ids=ADA["id"])
    service = DiscordService(dc_settings(redis_url, fake.base))
    await service.start()  # marks the channel live: the API takes Discord targets from now
    harness = Harness(fake, service, tenant, app_client, redis, key)
    yield harness
    await harness.http.aclose()
    await service.close()
