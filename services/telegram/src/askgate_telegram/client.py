"""Telegram access: one aiogram Bot per tenant, the per-chat 429 gate, error classes.

All bots share one aiohttp session pointed at `telegram_api_base` (Telegram's, a
self-hosted Bot API server, or the tests' fake). A tenant's bot comes from its channel
config `telegram.bot_token` (`askgate tenant channel T telegram bot_token=…`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp
import structlog
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import (
    TelegramAPIError,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.utils.token import TokenValidationError, validate_token
from askgate import consumer, keys
from askgate.tenants import Tenant, load_tenant
from redis.asyncio import Redis

from askgate_telegram.config import TelegramSettings

log = structlog.get_logger("askgate.telegram")
T = TypeVar("T")

# How many 429s in a row one call absorbs before giving up for a later retry.
MAX_RETRY_AFTERS = 5


class TelegramError(Exception):
    """Root of the worker's own errors."""


class RetryLater(TelegramError, consumer.RetryLater):
    """Nothing happened; try again later (the stream entry stays pending)."""


class ChatBusy(RetryLater):
    """The chat is under a 429 retry_after for `wait_s` more seconds."""

    def __init__(self, chat: str, wait_s: float) -> None:
        super().__init__(f"chat {chat} is rate limited for {wait_s:.1f}s")
        self.chat = chat
        self.wait_s = wait_s


class InFlight(RetryLater):
    """Another process is sending this prompt right now."""


class InDoubt(TelegramError):
    """The request may have reached Telegram (a timeout after sending): never resend."""


def is_permanent(exc: TelegramAPIError) -> bool:
    """Bot blocked, chat not found, bad token, a request Telegram refuses: retrying the
    same call cannot succeed. 5xx and network errors are worth another try."""
    return not isinstance(exc, TelegramServerError | TelegramNetworkError | TelegramRetryAfter)


def surely_unsent(exc: TelegramNetworkError) -> bool:
    """True when the connection never carried the request (refused, DNS, TLS)."""
    return isinstance(exc.__cause__, aiohttp.ClientConnectorError)


def not_modified(exc: TelegramAPIError) -> bool:
    # Editing a message into identical content is a 400 (double taps, replays).
    return "message is not modified" in exc.message


@dataclass(frozen=True)
class TenantBot:
    tenant: str
    bot: Bot
    webhook_secret: str
    allowed_user_ids: frozenset[int]

    @property
    def bot_id(self) -> int:
        return self.bot.id


def _ids(raw: Any) -> frozenset[int]:
    """allowed_user_ids from channel config: a list, or "1,2,3" as the CLI stores it."""
    if raw is None or raw == "":
        return frozenset()
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    return frozenset(int(str(x).strip()) for x in items if str(x).strip())


class Bots:
    """The bots of every tenant with a Telegram bot token, refreshed from Redis."""

    def __init__(self, redis: Redis, settings: TelegramSettings) -> None:
        self.redis = redis
        self.settings = settings
        self.session = AiohttpSession(
            api=TelegramAPIServer.from_base(settings.telegram_api_base),
            timeout=settings.telegram_request_timeout_s,
        )
        self._by_tenant: dict[str, TenantBot] = {}
        self._by_bot: dict[int, TenantBot] = {}

    def _build(self, tenant: Tenant) -> TenantBot | None:
        conf = (tenant.channels or {}).get("telegram") or {}
        token = str(conf.get("bot_token") or "")
        if not token:
            return None
        try:
            validate_token(token)
            ids = _ids(conf.get("allowed_user_ids"))
        except (TokenValidationError, ValueError) as exc:
            log.error("telegram.bad_config", tenant=tenant.id, error=str(exc))
            return None
        cur = self._by_tenant.get(tenant.id)
        bot = cur.bot if cur is not None and cur.bot.token == token else Bot(
            token, session=self.session)
        return TenantBot(tenant.id, bot, str(conf.get("webhook_secret") or ""), ids)

    def _store(self, tenant_id: str, tb: TenantBot | None) -> None:
        old = self._by_tenant.pop(tenant_id, None)
        if old is not None:
            self._by_bot.pop(old.bot_id, None)
        if tb is not None:
            self._by_tenant[tenant_id] = tb
            self._by_bot[tb.bot_id] = tb

    async def refresh(self) -> list[TenantBot]:
        """Re-read every tenant's Telegram config; returns the bots now configured."""
        ids = sorted(x.decode() for x in await self.redis.smembers(keys.TENANTS))
        seen: set[str] = set()
        for tenant_id in ids:
            tenant = await load_tenant(self.redis, tenant_id)
            tb = self._build(tenant) if tenant is not None else None
            if tb is not None:
                seen.add(tenant_id)
            self._store(tenant_id, tb)
        for gone in set(self._by_tenant) - seen:
            self._store(gone, None)
        return self.all()

    async def get(self, tenant_id: str) -> TenantBot | None:
        """The tenant's bot; a tenant configured since the last refresh is loaded now."""
        tb = self._by_tenant.get(tenant_id)
        if tb is None:
            tenant = await load_tenant(self.redis, tenant_id)
            tb = self._build(tenant) if tenant is not None else None
            if tb is not None:
                self._store(tenant_id, tb)
        return tb

    def by_bot(self, bot_id: int) -> TenantBot | None:
        return self._by_bot.get(bot_id)

    def all(self) -> list[TenantBot]:
        return list(self._by_tenant.values())

    async def close(self) -> None:
        await self.session.close()


class ChatGate:
    """Honours 429 retry_after per chat: a chat told to wait holds only its own calls.

    With wait=False (the stream handler) a throttled chat raises ChatBusy at once, so the
    worker retries that event later while other chats' events go on; with wait=True
    (answering an update) the call sleeps out the wait, up to max_wait_s."""

    def __init__(self, max_wait_s: float) -> None:
        self.max_wait_s = max_wait_s
        self._not_before: dict[str, float] = {}

    def wait_s(self, chat: str) -> float:
        return max(0.0, self._not_before.get(chat, 0.0) - time.monotonic())

    async def ready(self, chat: str, *, wait: bool) -> None:
        left = self.wait_s(chat)
        if left > 0 and (not wait or left > self.max_wait_s):
            raise ChatBusy(chat, left)
        if left > 0:
            await asyncio.sleep(left)

    async def call(self, chat: str, fn: Callable[[], Awaitable[T]], *, wait: bool) -> T:
        for _ in range(MAX_RETRY_AFTERS):
            await self.ready(chat, wait=wait)
            try:
                return await fn()
            except TelegramRetryAfter as exc:
                # A 429 means the request was refused, so repeating it is safe.
                self._not_before[chat] = time.monotonic() + exc.retry_after
                log.warning("telegram.retry_after", chat_id=chat, retry_after_s=exc.retry_after)
        raise RetryLater(f"chat {chat} keeps answering 429")
