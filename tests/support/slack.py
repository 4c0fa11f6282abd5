"""The Slack channel's test harness: the rooms and people of the tests, the worker's test
settings, request signing, the tenant's Slack configuration, and `Harness` (what the
`sl` fixture of tests/integration/slack/conftest.py yields)."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlencode

import httpx
import orjson
from askgate.store.tenants import set_channel_config
from askgate_slack.config import SlackSettings
from askgate_slack.service import SlackService
from redis.asyncio import Redis
from slack_sdk.signature import SignatureVerifier

from tests.integration.slack.fake_slack import TOKEN, FakeSlack, Msg
from tests.support.asks import SECRET, Tenant
from tests.support.channel_harness import AgentSide
from tests.support.clock import FakeClock
from tests.support.http import local_client
from tests.support.waiting import eventually

SIGNING_SECRET = "signing-secret-0123456789abcdef"
ROOM = "C0ROOM"  # a shared channel
DM = "D0ADA"  # Ada's direct messages with the bot
ADA = "U0ADA"  # allowed
BOB = "U0BOB"  # not on the tenant's allow-list


def slack_settings(redis_url: str, api: str, **overrides: Any) -> SlackSettings:
    values: dict[str, Any] = {
        "redis_url": redis_url,
        "secret_key": SECRET,
        "timeout_min_s": 1,
        "slack_mode": "http",
        "slack_port": 0,
        "slack_api_base": api,
        "consumer_block_ms": 50,
        "consumer_claim_every_s": 0.2,
        "delivery_backoff_s": 0.01,
        "channel_refresh_s": 0.5,
        **overrides,
    }
    return SlackSettings(**values)


def signed(body: bytes, *, at: float | None = None, secret: str = SIGNING_SECRET) -> dict[str, str]:
    ts = str(int(at if at is not None else time.time()))
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    assert signature is not None
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}


class Harness(AgentSide):
    def __init__(
        self,
        fake: FakeSlack,
        service: SlackService,
        tenant: Tenant,
        api: httpx.AsyncClient,
        redis: Redis,
        clock: FakeClock,
    ) -> None:
        self.fake = fake
        self.service = service
        self.tenant = tenant
        self.api = api
        self.redis = redis
        self.clock = clock
        # Socket Mode runs no HTTP server.
        port = service.port if service.port is not None else 9
        # A harness limit, not a behaviour: a loaded machine can take seconds to answer.
        self.http = local_client(f"http://127.0.0.1:{port}", timeout=30)

    async def ask(
        self,
        *,
        channel_id: str = ROOM,
        session: str = "s1",
        target: dict[str, Any] | None = None,
        targets: list[dict[str, Any]] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        slack = {"channel": "slack", "channel_id": channel_id, **(target or {})}
        return await self.ask_to(slack, session, targets, **extra)

    async def prompt(self, channel: str = ROOM, n: int = 1) -> Msg:
        """The n-th prompt (a bot message with controls) in the conversation."""

        def find() -> Msg | None:
            prompts = [m for m in self.fake.messages(channel) if m.user is None and m.metadata]
            return prompts[n - 1] if len(prompts) >= n else None

        msg = await eventually(find, f"prompt {n} in {channel}")
        assert isinstance(msg, Msg)
        return msg

    async def interact(self, payload: dict[str, Any], **sign: Any) -> httpx.Response:
        body = urlencode({"payload": orjson.dumps(payload).decode()}).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded", **signed(body, **sign)}
        return await self.http.post(
            f"/slack/{self.tenant.id}/interactivity", content=body, headers=headers
        )

    async def event(
        self, body: dict[str, Any], retry: int | None = None, **sign: Any
    ) -> httpx.Response:
        raw = orjson.dumps(body)
        headers = {"Content-Type": "application/json", **signed(raw, **sign)}
        if retry is not None:
            headers["X-Slack-Retry-Num"] = str(retry)
            headers["X-Slack-Retry-Reason"] = "http_timeout"
        return await self.http.post(f"/slack/{self.tenant.id}/events", content=raw, headers=headers)

    async def summary(self, msg: Msg) -> str:
        await eventually(
            lambda: msg.edits and not msg.actions, f"prompt {msg.ts} edited into its summary"
        )
        return msg.text

    async def told(self, user: str, n: int = 1) -> list[str]:
        """The first n ephemeral messages `user` was shown (waits for them)."""
        await eventually(lambda: len(self.fake.told(user)) >= n, f"{n} message(s) to {user}")
        return self.fake.told(user)

    async def said(self, channel: str, thread_ts: str | None, n: int = 1) -> list[str]:
        """The bot's plain messages (not prompts) in a thread or conversation."""

        def replies() -> list[str]:
            return [
                m.text
                for m in self.fake.messages(channel)
                if m.user is None and not m.metadata and m.thread_ts == thread_ts
            ]

        await eventually(lambda: len(replies()) >= n, f"{n} bot repl(ies) in {channel}")
        return replies()


async def configure(redis: Redis, tenant: Tenant, **extra: str) -> None:
    await set_channel_config(
        redis,
        tenant.id,
        "slack",
        {"bot_token": TOKEN, "signing_secret": SIGNING_SECRET, "allowed_user_ids": ADA, **extra},
    )
