"""Telegram access: one aiogram Bot per tenant, and every Bot API failure as the kit's
errors.

All bots share one aiohttp session pointed at `telegram_api_base` (Telegram's, a
self-hosted Bot API server, or the tests' fake). A tenant's bot comes from its channel
config `telegram.bot_token` (`askgate tenant channel T telegram bot_token=…`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import aiogram.methods
import aiohttp
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import (
    ClientDecodeError,
    TelegramAPIError,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.methods.base import Response, TelegramMethod
from aiogram.utils.token import TokenValidationError, validate_token
from askgate.channels import (
    PermanentError,
    TenantConfigs,
    ThrottledError,
    TransientError,
    id_list,
)
from askgate.store.tenants import Tenant
from redis.asyncio import Redis

from askgate_telegram.config import TelegramSettings

T = TypeVar("T")
CHANNEL = "telegram"


def _response_types() -> tuple[type[Response[Any]], ...]:
    """aiogram parses every Bot API answer into `Response[<the method's type>]`, a
    generic pydantic model that pydantic caches only weakly: each garbage collection can
    drop it, and rebuilding it costs milliseconds (a sixth of the worker's CPU at 50
    asks/s, measured). Holding one of each for the process keeps them built."""
    methods = (getattr(aiogram.methods, name) for name in aiogram.methods.__all__)
    returns = {
        m.__returning__
        for m in methods
        if isinstance(m, type) and issubclass(m, TelegramMethod) and m is not TelegramMethod
    }
    return tuple(Response[r] for r in returns)  # type: ignore[valid-type]


RESPONSE_TYPES = _response_types()


def surely_unsent(exc: TelegramNetworkError) -> bool:
    """True when the connection never carried the request (refused, DNS, TLS)."""
    return isinstance(exc.__cause__, aiohttp.ClientConnectorError)


def not_modified(exc: PermanentError) -> bool:
    # Editing a message into identical content is a 400 (double taps, replays).
    return "message is not modified" in exc.message


async def call(fn: Callable[[], Awaitable[T]]) -> T:
    """One Bot API call. A 429 is ThrottledError; 5xx, a non-JSON answer (a proxy's
    HTML error page), a dropped connection or a timeout is TransientError (maybe_sent
    when the request may have reached Telegram); anything else Telegram refuses (chat
    not found, bot blocked, bad token) is PermanentError."""
    try:
        return await fn()
    except TelegramRetryAfter as exc:
        raise ThrottledError(exc.message, float(exc.retry_after)) from exc
    except TelegramNetworkError as exc:
        raise TransientError(exc.message, maybe_sent=not surely_unsent(exc)) from exc
    except TelegramServerError as exc:
        raise TransientError(exc.message) from exc
    except TelegramAPIError as exc:
        raise PermanentError(exc.message) from exc
    except ClientDecodeError as exc:
        # A front end's error page instead of the Bot API's JSON: the call did not reach
        # the Bot API, so a retry shows nothing twice.
        raise TransientError("Telegram answered with an error page, not JSON") from exc
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise TransientError(f"{type(exc).__name__}: {exc}", maybe_sent=True) from exc


class Session(AiohttpSession):
    """aiogram's session; closing it waits 250 ms only when TLS connections may need it
    (aiohttp's graceful shutdown advice), not for a plain-HTTP Bot API base such as a
    self-hosted server next to the worker (or the tests' fake)."""

    def __init__(self, api_base: str, timeout: float) -> None:
        super().__init__(api=TelegramAPIServer.from_base(api_base), timeout=timeout)
        self.tls = api_base.startswith("https://")

    async def close(self) -> None:
        if self.tls:
            await super().close()
        elif self._session is not None and not self._session.closed:
            await self._session.close()


@dataclass(frozen=True)
class TenantBot:
    tenant: str
    bot: Bot
    webhook_secret: str
    allowed_user_ids: frozenset[str]

    @property
    def bot_id(self) -> int:
        return self.bot.id


class Bots:
    """The bots of every tenant with a Telegram bot token, refreshed from Redis."""

    def __init__(self, redis: Redis, settings: TelegramSettings) -> None:
        self.session = Session(settings.telegram_api_base, settings.telegram_request_timeout_s)
        self.configs: TenantConfigs[TenantBot] = TenantConfigs(redis, CHANNEL, self._build)
        self._by_bot: dict[int, TenantBot] = {}

    def _build(
        self, tenant: Tenant, conf: dict[str, Any], prev: TenantBot | None
    ) -> TenantBot | None:
        token = str(conf.get("bot_token") or "")
        if not token:
            return None
        try:
            validate_token(token)
        except TokenValidationError as exc:
            raise ValueError(f"bot_token: {exc}") from exc
        bot = (
            prev.bot
            if prev is not None and prev.bot.token == token
            else Bot(token, session=self.session)
        )
        return TenantBot(
            tenant.id,
            bot,
            str(conf.get("webhook_secret") or ""),
            id_list(conf.get("allowed_user_ids")),
        )

    async def refresh(self) -> list[TenantBot]:
        """Re-read every tenant's Telegram config; returns the bots now configured."""
        bots = list((await self.configs.refresh()).values())
        self._by_bot = {tb.bot_id: tb for tb in bots}
        return bots

    async def get(self, tenant_id: str) -> TenantBot | None:
        """The tenant's bot; a tenant configured since the last refresh is loaded now."""
        tb = await self.configs.get(tenant_id)
        if tb is not None:
            self._by_bot[tb.bot_id] = tb
        return tb

    def by_bot(self, bot_id: int) -> TenantBot | None:
        return self._by_bot.get(bot_id)

    def all(self) -> list[TenantBot]:
        return list(self.configs.all().values())

    async def close(self) -> None:
        await self.session.close()
