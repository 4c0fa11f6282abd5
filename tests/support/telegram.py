"""The Telegram channel's test harness: the chats and people of the tests, the worker's
test settings, and `Harness` (what the `tg` fixture of tests/integration/telegram/conftest.py
yields: the fake Bot API, the running service, the API app)."""

from __future__ import annotations

from typing import Any

import httpx
from askgate_telegram.config import TelegramSettings
from askgate_telegram.service import TelegramService
from redis.asyncio import Redis

from tests.integration.telegram.fake_bot_api import FakeBotAPI, Msg
from tests.support.asks import SECRET, Tenant
from tests.support.channel_harness import AgentSide
from tests.support.http import local_client
from tests.support.waiting import eventually

TOKEN = "123456:TEST-token-abcdefghijklmnopqrstuvwxyz"
WEBHOOK_SECRET = "hook-secret-0123456789"
PRIVATE = 4242  # a private chat with ADA
GROUP = -100777  # a group chat
ADA = {"id": 4242, "is_bot": False, "first_name": "Ada", "username": "ada"}
BOB = {"id": 5151, "is_bot": False, "first_name": "Bob"}


def tg_settings(redis_url: str, api_base: str, **overrides: Any) -> TelegramSettings:
    values: dict[str, Any] = {
        "redis_url": redis_url,
        "secret_key": SECRET,
        "timeout_min_s": 1,
        "telegram_mode": "webhook",
        "telegram_webhook_port": 0,
        "telegram_api_base": api_base,
        "consumer_block_ms": 100,
        "consumer_claim_every_s": 0.2,
        "channel_refresh_s": 0.5,
        "telegram_poll_backoff_s": 0.05,
        **overrides,
    }
    return TelegramSettings(**values)


class Harness(AgentSide):
    def __init__(
        self,
        fake: FakeBotAPI,
        service: TelegramService,
        tenant: Tenant,
        api: httpx.AsyncClient,
        redis: Redis,
    ) -> None:
        self.fake = fake
        self.service = service
        self.tenant = tenant
        self.api = api
        self.redis = redis
        # A harness limit, not a behaviour: a loaded machine can take seconds to answer.
        self.hook = local_client(f"http://127.0.0.1:{service.port}", timeout=30)

    async def ask(
        self,
        *,
        chat_id: int = PRIVATE,
        session: str = "s1",
        target: dict[str, Any] | None = None,
        targets: list[dict[str, Any]] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        tg = {"channel": "telegram", "chat_id": str(chat_id), **(target or {})}
        return await self.ask_to(tg, session, targets, **extra)

    async def prompt(self, chat_id: int = PRIVATE, n: int = 1) -> Msg:
        """The n-th prompt (a bot message with a keyboard) shown in the chat."""

        def find() -> Msg | None:
            prompts = [
                m
                for m in self.fake.messages(chat_id)
                if m.raw.get("from", {}).get("is_bot") and m.raw.get("reply_markup")
            ]
            return prompts[n - 1] if len(prompts) >= n else None

        msg = await eventually(find, f"prompt {n} in chat {chat_id}")
        assert isinstance(msg, Msg)
        return msg

    def bot_messages(self, chat_id: int = PRIVATE) -> list[Msg]:
        """The bot's messages still in the chat (not deleted), oldest first."""
        return [m for m in self.fake.messages(chat_id) if m.raw.get("from", {}).get("is_bot")]

    def said(self, chat_id: int = PRIVATE) -> list[str]:
        return [m.text for m in self.bot_messages(chat_id)]

    def own(self, update: dict[str, Any]) -> Msg:
        """The person's message an update carries, as the fake keeps it."""
        message = update.get("message") or update["edited_message"]
        return self.fake.chats[message["chat"]["id"]][message["message_id"]]

    async def post(
        self,
        update: dict[str, Any],
        secret: str | None = WEBHOOK_SECRET,
        tenant_id: str | None = None,
    ) -> httpx.Response:
        headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret is not None else {}
        return await self.hook.post(
            f"/telegram/{tenant_id or self.tenant.id}", json=update, headers=headers
        )

    async def summary(self, msg: Msg) -> str:
        await eventually(
            lambda: msg.edits and msg.reply_markup is None,
            f"prompt {msg.message_id} edited into its summary",
        )
        return msg.text
