"""Slack: the tests' fake Slack Web API (`tests/integration/slack/fake_slack.py`) and
the real worker, `python -m askgate_slack` in HTTP mode pointed at it.

Every ask goes to its own direct message; the human clicks the prompt's first option,
which reaches the worker as a signed block_actions POST to its interactivity endpoint,
as Slack sends it.
"""

from __future__ import annotations

import contextvars
import sys
import time
from typing import Any
from urllib.parse import urlencode

import orjson
from askgate.store.tenants import set_channel_config
from redis.asyncio import Redis

from bench.channels.base import Hooks, Platform, Prompt, Worker

SIGNING_SECRET = "bench-signing-secret-0123456789ab"
PERSON = "U0BENCH01"


class SlackSpec:
    name = "slack"

    def conv(self, i: int) -> str:
        return f"D{i:010d}"

    def target(self, i: int) -> dict[str, Any]:
        return {"channel": "slack", "channel_id": self.conv(i)}

    async def configure(self, redis: Redis, tenant_id: str) -> None:
        from tests.integration.slack.fake_slack import TOKEN

        await set_channel_config(
            redis, tenant_id, "slack", {"bot_token": TOKEN, "signing_secret": SIGNING_SECRET}
        )

    def worker(self, base: str, worker: Worker) -> tuple[list[str], dict[str, str]]:
        return [sys.executable, "-m", "askgate_slack"], {
            "ASKGATE_SLACK_MODE": "http",
            "ASKGATE_SLACK_PORT": str(worker.port),
            "ASKGATE_SLACK_API_BASE": base,
        }

    def platform(self, hooks: Hooks, worker: Worker) -> Platform:
        return _platform(hooks, worker)


def _platform(hooks: Hooks, worker: Worker) -> Platform:
    from aiohttp import web
    from slack_sdk.signature import SignatureVerifier

    from bench.channels.http_clicks import Clicker
    from tests.integration.slack.fake_slack import FakeSlack, Msg

    arrived: contextvars.ContextVar[float] = contextvars.ContextVar("arrived")

    class BenchSlack(FakeSlack):
        """The fake Slack Web API, telling the hooks what the worker sends."""

        async def _handle(self, request: web.Request) -> web.StreamResponse:
            arrived.set(time.monotonic())  # before the body is parsed
            return await super()._handle(request)

        async def m_chat_postMessage(self, params: dict[str, Any]) -> dict[str, Any]:
            t = arrived.get()
            raw = await super().m_chat_postMessage(params)
            msg = self.find(raw["channel"], raw["ts"])
            if msg.actions:
                hooks.prompt(Prompt(msg.channel, t, msg))
            return raw

        async def m_chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
            t = arrived.get()
            raw = await super().m_chat_update(params)
            if not self.find(raw["channel"], raw["ts"]).actions:
                hooks.summary(raw["channel"], t)
            return raw

    signer = SignatureVerifier(SIGNING_SECRET)

    class SlackPlatform:
        def __init__(self) -> None:
            self.fake = BenchSlack()
            self.clicker = Clicker(hooks, worker)

        async def start(self) -> str:
            await self.fake.start()
            self.clicker.start()
            return self.fake.api

        async def stop(self) -> None:
            await self.clicker.stop()
            await self.fake.stop()

        def answer(self, prompt: Prompt) -> None:
            msg = prompt.handle
            assert isinstance(msg, Msg)

            def build() -> tuple[bytes, dict[str, str]]:
                payload = self.fake.click(msg, "o0", PERSON)
                body = urlencode({"payload": orjson.dumps(payload).decode()}).encode()
                at = str(int(time.time()))
                return body, {
                    "Content-Type": "application/x-www-form-urlencoded",
                    "X-Slack-Request-Timestamp": at,
                    "X-Slack-Signature": signer.generate_signature(timestamp=at, body=body) or "",
                }

            self.clicker.click(prompt.conv, "/slack/{tenant}/interactivity", build)

    return SlackPlatform()


SPEC = SlackSpec()
