"""How updates arrive: a webhook at `POST /telegram/{tenant_id}` (the tenant's
`webhook_secret` checked in constant time, 401 otherwise) or one getUpdates loop per
bot. Both feed the same Dispatcher (inbound.py).

A polling loop survives whatever the Bot API or the network does (an HTML error page,
a reset connection, a timeout, a 409 from a second poller): it backs off and tries
again, and while it keeps failing the worker stops refreshing its health key, so
`--check` shows it.
"""

from __future__ import annotations

import asyncio
import secrets
import time

import structlog
from aiogram import Bot, Dispatcher
from aiogram.types import Update
from aiogram.webhook.aiohttp_server import BaseRequestHandler
from aiohttp import web
from askgate.channels import PlatformError

from askgate_telegram.client import Bots, TenantBot, call

log = structlog.get_logger("askgate.telegram")

ALLOWED_UPDATES = ["message", "edited_message", "callback_query"]
# After a failed getUpdates, wait before the next one (ASKGATE_TELEGRAM_POLL_BACKOFF_S),
# doubling up to the maximum: an outage is not a busy loop, and a short blip costs
# seconds, not minutes.
POLL_BACKOFF_MAX_S = 30.0
# An update whose handling keeps failing is skipped after this many tries (logged).
POLL_MAX_TRIES = 3


class TenantWebhook(BaseRequestHandler):
    """aiogram's webhook handler, one route for every tenant: `/telegram/{tenant}`."""

    def __init__(self, dispatcher: Dispatcher, bots: Bots) -> None:
        super().__init__(dispatcher, handle_in_background=False)
        self.bots = bots

    async def resolve_bot(self, request: web.Request) -> Bot:
        tb = await self.bots.get(request.match_info.get("tenant", ""))
        if tb is None:
            raise web.HTTPUnauthorized(text="Unauthorized")
        return tb.bot

    def verify_secret(self, telegram_secret_token: str, bot: Bot) -> bool:
        tb = self.bots.by_bot(bot.id)
        if tb is None or not tb.webhook_secret:
            return False  # a tenant without a webhook secret gets no webhook
        return secrets.compare_digest(telegram_secret_token.encode(), tb.webhook_secret.encode())

    async def close(self) -> None:
        return None


def webhook_app(dispatcher: Dispatcher, bots: Bots) -> web.Application:
    app = web.Application()
    TenantWebhook(dispatcher, bots).register(app, path="/telegram/{tenant}")

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app.router.add_get("/healthz", healthz)
    return app


class PollHealth:
    """Per bot, since when its getUpdates has been failing (and why)."""

    def __init__(self, unhealthy_s: float) -> None:
        self.unhealthy_s = unhealthy_s  # failing this long makes the worker unhealthy
        self._failing: dict[str, tuple[float, str]] = {}

    def ok(self, tenant: str) -> None:
        self._failing.pop(tenant, None)

    def failed(self, tenant: str, error: str) -> None:
        since = self._failing.get(tenant, (time.monotonic(), ""))[0]
        self._failing[tenant] = (since, error)

    def forget(self, tenant: str) -> None:
        self._failing.pop(tenant, None)

    def problem(self) -> str | None:
        now = time.monotonic()
        for tenant, (since, error) in self._failing.items():
            if now - since > self.unhealthy_s:
                return f"getUpdates for tenant {tenant} failing for {now - since:.0f}s: {error}"
        return None


async def poll(
    dispatcher: Dispatcher,
    tb: TenantBot,
    timeout_s: int,
    stop: asyncio.Event,
    health: PollHealth,
    backoff_s: float = 1.0,
) -> None:
    """One bot's getUpdates loop; the offset moves past an update once it is handled.
    A failure waits `backoff_s` before the next call, doubling while it lasts."""
    bot = tb.bot
    try:
        await call(lambda: bot.delete_webhook(drop_pending_updates=False))
    except PlatformError as exc:
        log.info("polling.delete_webhook_failed", tenant=tb.tenant, error=exc.message)
    offset: int | None = None
    tries = 0
    backoff = backoff_s
    log.info("polling.started", tenant=tb.tenant, bot=tb.bot_id)
    while not stop.is_set():
        try:
            updates = await call(
                lambda at=offset: bot.get_updates(  # type: ignore[misc]
                    offset=at,
                    timeout=timeout_s,
                    allowed_updates=ALLOWED_UPDATES,
                    request_timeout=int(bot.session.timeout + timeout_s),
                )
            )
        except PlatformError as exc:
            # A 409 (another poller, or a webhook set elsewhere) lands here too.
            health.failed(tb.tenant, exc.message)
            log.warning("polling.failed", tenant=tb.tenant, error=exc.message, retry_in_s=backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, POLL_BACKOFF_MAX_S)
            continue
        health.ok(tb.tenant)
        backoff = backoff_s
        if not updates:
            continue
        failed = await handle_batch(dispatcher, bot, updates, tb.tenant)
        if failed is None:
            tries = 0
            offset = updates[-1].update_id + 1
            continue
        tries += 1
        if tries < POLL_MAX_TRIES:
            # Fetch again from the first failure; what was handled since is deduped.
            offset = failed
            await asyncio.sleep(backoff_s)
        else:
            log.error("update.skipped", tenant=tb.tenant, update_id=failed, tries=tries)
            tries = 0
            offset = updates[-1].update_id + 1


def chat_of(update: Update) -> int | None:
    event = update.message or update.edited_message
    if event is not None:
        return event.chat.id
    query = update.callback_query
    if query is not None and query.message is not None:
        return query.message.chat.id
    return None


async def handle_batch(
    dispatcher: Dispatcher, bot: Bot, updates: list[Update], tenant: str
) -> int | None:
    """Handle one getUpdates batch: each chat's updates in order, chats concurrently (a
    busy group does not hold taps elsewhere). Returns the first update id that failed
    (later ones of its chat were not tried), or None."""
    by_chat: dict[int | None, list[Update]] = {}
    for update in updates:
        by_chat.setdefault(chat_of(update), []).append(update)

    async def one_chat(batch: list[Update]) -> int | None:
        for update in batch:
            try:
                await dispatcher.feed_update(bot, update)
            except Exception as exc:  # fetched and tried again, then skipped (logged)
                log.exception(
                    "update.failed", tenant=tenant, update_id=update.update_id, error=str(exc)
                )
                return update.update_id
        return None

    failed = [
        f for f in await asyncio.gather(*(one_chat(b) for b in by_chat.values())) if f is not None
    ]
    return min(failed) if failed else None
