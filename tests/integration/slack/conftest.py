"""The Slack worker in-process against the fake Slack Web API, with the real API app.

`sl` starts the fake, gives the test tenant a bot token, a signing secret and an
allow-list, and runs the real SlackService (HTTP mode on a free port, a settable clock
for signatures); clicks and events are POSTed to its real endpoints, signed the way
Slack signs them (the harness: tests/support/slack.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from askgate_slack.service import SlackService
from redis.asyncio import Redis

from tests.integration.slack.fake_slack import FakeSlack
from tests.support.asks import Tenant
from tests.support.clock import FakeClock
from tests.support.slack import (
    Harness,
    configure,
    slack_settings,
)


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    server = await FakeSlack().start()
    yield server
    await server.stop()


@pytest.fixture
async def sl(
    redis_url: str,
    redis: Redis,
    tenant: Tenant,
    app_client: httpx.AsyncClient,
    fake: FakeSlack,
) -> AsyncIterator[Harness]:
    await configure(redis, tenant)
    clock = FakeClock()
    service = SlackService(slack_settings(redis_url, fake.api), clock=clock)
    await service.start()
    harness = Harness(fake, service, tenant, app_client, redis, clock)
    yield harness
    await harness.http.aclose()
    await service.close()
