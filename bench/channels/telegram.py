"""Telegram: the tests' fake Bot API (`tests/integration/telegram/fake_bot_api.py`) and
the real worker, `python -m askgate_telegram` in polling mode pointed at it.

Every ask goes to its own private chat (so anyone there may answer); the human taps the
prompt's first button, which reaches the worker as a callback query through getUpdates,
as Telegram delivers it to a polling bot.
"""

from __future__ import annotations

import contextvars
import sys
import time
from typing import Any

from askgate.store.tenants import set_channel_config
from redis.asyncio import Redis

from bench.channels.base import Hooks, Platform, Prompt, Worker

TOKEN = "7000000001:BENCH-token-abcdefghijklmnopqrstuvwxyz01"
CHAT_BASE = 10_000_000
HUMAN = {"id": 4242, "is_bot": False, "first_name": "Ada"}


class TelegramSpec:
    name = "telegram"

    def conv(self, i: int) -> str:
        return str(CHAT_BASE + i)

    def target(self, i: int) -> dict[str, Any]:
        return {"channel": "telegram", "chat_id": self.conv(i)}

    async def configure(self, redis: Redis, tenant_id: str) -> None:
        await set_channel_config(
            redis,
            tenant_id,
            "telegram",
            {"bot_token": TOKEN, "webhook_secret": "bench-hook-secret"},
        )

    def worker(self, base: str, worker: Worker) -> tuple[list[str], dict[str, str]]:
        return [sys.executable, "-m", "askgate_telegram"], {
            "ASKGATE_TELEGRAM_MODE": "polling",
            "ASKGATE_TELEGRAM_API_BASE": base,
        }

    def platform(self, hooks: Hooks, worker: Worker) -> Platform:
        return _platform(hooks)


def _platform(hooks: Hooks) -> Platform:
    from tests.integration.telegram.fake_bot_api import FakeBotAPI, Msg

    arrived: contextvars.ContextVar[float] = contextvars.ContextVar("arrived")

    class FakeTelegram(FakeBotAPI):
        """The fake Bot API, telling the hooks what the worker sends."""

        polled = False

        async def _handle(self, request: Any) -> Any:
            arrived.set(time.monotonic())  # before the form is parsed
            return await super()._handle(request)

        async def m_getUpdates(self, token: str, params: dict[str, Any]) -> Any:
            if not self.polled:
                self.polled = True
                hooks.ready()
            return await super().m_getUpdates(token, params)

        async def m_sendMessage(self, token: str, params: dict[str, Any]) -> Any:
            t = arrived.get()
            raw = await super().m_sendMessage(token, params)
            msg = self.chats[int(params["chat_id"])][raw["message_id"]]
            if msg.buttons:
                hooks.prompt(Prompt(str(msg.chat_id), t, (token, msg)))
            return raw

        async def m_editMessageText(self, token: str, params: dict[str, Any]) -> Any:
            t = arrived.get()
            raw = await super().m_editMessageText(token, params)
            if not raw.get("reply_markup"):
                hooks.summary(str(params["chat_id"]), t)
            return raw

    class TelegramPlatform:
        def __init__(self) -> None:
            self.fake = FakeTelegram()

        async def start(self) -> str:
            await self.fake.start()
            return self.fake.base

        async def stop(self) -> None:
            await self.fake.stop()

        def answer(self, prompt: Prompt) -> None:
            token, msg = prompt.handle
            assert isinstance(msg, Msg)
            update = self.fake.tap(msg, msg.buttons[0][0]["callback_data"], HUMAN)
            hooks.answered(prompt.conv, time.monotonic())
            self.fake.push(token, update)

    return TelegramPlatform()


SPEC = TelegramSpec()
