"""Socket Mode: for workspaces without a public URL, the same clicks, modals and events
arrive over a WebSocket (slack_sdk's client against a local fake), each acknowledged
once handled."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from askgate_slack.service import SlackService
from redis.asyncio import Redis

from tests.integration.slack.fake_slack import APP_TOKEN, FakeSlack
from tests.support.asks import Tenant
from tests.support.clock import FakeClock
from tests.support.slack import (
    ADA,
    BOB,
    ROOM,
    Harness,
    configure,
    slack_settings,
)
from tests.support.waiting import eventually


@pytest.fixture
async def sock(
    redis_url: str,
    redis: Redis,
    tenant: Tenant,
    app_client: httpx.AsyncClient,
    fake: FakeSlack,
) -> AsyncIterator[Harness]:
    await configure(redis, tenant, app_token=APP_TOKEN)
    service = SlackService(slack_settings(redis_url, fake.api, slack_mode="socket"))
    await service.start()
    await eventually(lambda: any(not ws.closed for ws in fake.sockets), "a Socket Mode link")
    harness = Harness(fake, service, tenant, app_client, redis, FakeClock())
    yield harness
    await harness.http.aclose()
    await service.close()


async def test_socket_mode_opens_a_link_with_the_app_token(sock: Harness) -> None:
    """The worker asks apps.connections.open (app token) and connects; no HTTP server."""
    assert len(sock.fake.sent("apps.connections.open")) == 1
    assert sock.service.port is None


async def test_click_over_socket_mode_answers_and_is_acknowledged(sock: Harness) -> None:
    """An interactive envelope answers the question; its envelope is acknowledged."""
    q = await sock.ask()
    prompt = await sock.prompt()
    envelope = await sock.fake.envelope("interactive", sock.fake.click(prompt, "o1", ADA))
    body = await sock.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"deploy_target": ["Production"]}
    await eventually(lambda: envelope in sock.fake.acks, "the ack")


async def test_thread_reply_over_socket_mode_answers(sock: Harness) -> None:
    """An events_api envelope with a thread reply is read by the shared parser."""
    q = await sock.ask()
    prompt = await sock.prompt()
    await sock.fake.envelope("events_api", sock.fake.message(ROOM, ADA, "1", prompt.ts))
    body = await sock.wait_result(q["id"])
    assert body["result"]["answers"]["answers"] == {"deploy_target": ["Staging (Recommended)"]}


async def test_refused_modal_over_socket_mode_answers_in_the_ack(sock: Harness) -> None:
    """A modal refused over Socket Mode carries its errors in the envelope's ack."""
    await sock.ask()
    prompt = await sock.prompt()
    await sock.fake.envelope("interactive", sock.fake.click(prompt, "x", ADA))
    await eventually(lambda: sock.fake.views, "views.open")
    envelope = await sock.fake.envelope(
        "interactive", sock.fake.submit(sock.fake.views[0], BOB, "mine")
    )
    await eventually(lambda: envelope in sock.fake.acks, "the ack")
    assert sock.fake.acks[envelope]["payload"] == {
        "response_action": "errors",
        "errors": {"ag_other": "You are not allowed to answer this question."},
    }
