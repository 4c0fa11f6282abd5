"""The Telegram worker process: the kit's ChannelService with the Telegram adapter, the
inbound transport (webhook server or one polling loop per bot), and bots kept in step
with the tenants' configs (each bot's command menu set once)."""

from __future__ import annotations

import asyncio

import structlog
from aiohttp import web
from askgate.channels import ChannelService, PlatformError
from askgate.channels.service import serve_until
from redis.asyncio import Redis
from redis.exceptions import RedisError

from askgate_telegram.adapter import TelegramAdapter
from askgate_telegram.client import Bots, call
from askgate_telegram.commands import set_menu
from askgate_telegram.config import SERVICE, TelegramSettings
from askgate_telegram.inbound import Inbound
from askgate_telegram.updates import ALLOWED_UPDATES, PollHealth, poll, webhook_app

log = structlog.get_logger("askgate.telegram")


class TelegramService:
    def __init__(self, settings: TelegramSettings, redis: Redis | None = None) -> None:
        self.settings = settings
        self.channel = ChannelService(SERVICE, settings, redis)
        self.redis = self.channel.redis
        self.bots = Bots(self.redis, settings)
        self.adapter = TelegramAdapter(self.bots, settings)
        self.worker = self.channel.use(self.adapter)
        self.inbound = Inbound(self.channel.store, self.bots, self.worker, self.adapter)
        self.polling = PollHealth(settings.telegram_poll_unhealthy_s)
        self.channel.watch(self.polling.problem)
        self.channel.spawn(self._refresh_forever)
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        self._pollers: dict[str, tuple[str, asyncio.Task[None]]] = {}
        self._hooked: dict[str, str] = {}
        self._menus: dict[str, str] = {}

    async def start(self) -> None:
        s = self.settings
        try:
            await self.bots.refresh()
        except (RedisError, OSError) as exc:
            log.warning("telegram.refresh_failed", error=str(exc))
        if not self.bots.all():
            log.warning(
                "telegram.no_bots",
                hint="askgate tenant channel TENANT telegram "
                "bot_token=<token from @BotFather>; questions with Telegram targets "
                "end as delivery_failed until then",
            )
        if s.telegram_mode == "webhook":
            self._runner = web.AppRunner(
                webhook_app(self.inbound.dispatcher, self.bots),
                handle_signals=False,
                access_log=None,
            )
            await self._runner.setup()
            site = web.TCPSite(self._runner, s.telegram_webhook_host, s.telegram_webhook_port)
            await site.start()
            self.port = int(self._runner.addresses[0][1])  # the real one when 0 was asked
            log.info("webhook.listening", host=s.telegram_webhook_host, port=self.port)
        await self._sync_bots()
        await self.channel.start()

    async def _refresh_forever(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), self.settings.channel_refresh_s)
                return
            except TimeoutError:
                pass
            try:
                await self.bots.refresh()
                await self._sync_bots()
            except (RedisError, OSError) as exc:
                log.warning("telegram.refresh_failed", error=str(exc))

    async def _sync_bots(self) -> None:
        """Start or stop polling loops (or set webhooks) to match the configured bots; a
        loop that ended on its own is started again."""
        s = self.settings
        current = {tb.tenant: tb for tb in self.bots.all()}
        for tenant, tb in current.items():
            if self._menus.get(tenant) != tb.bot.token:
                try:
                    await set_menu(tb)
                    self._menus[tenant] = tb.bot.token
                except PlatformError as exc:
                    log.warning("telegram.menu_failed", tenant=tenant, error=exc.message)
        if s.telegram_mode == "polling":
            for tenant, (token, task) in list(self._pollers.items()):
                if tenant not in current or current[tenant].bot.token != token or task.done():
                    task.cancel()
                    del self._pollers[tenant]
                    self.polling.forget(tenant)
            for tenant, tb in current.items():
                if tenant not in self._pollers:
                    task = asyncio.create_task(
                        poll(
                            self.inbound.dispatcher,
                            tb,
                            s.telegram_polling_timeout_s,
                            self.channel.stop,
                            self.polling,
                            s.telegram_poll_backoff_s,
                        )
                    )
                    self._pollers[tenant] = (tb.bot.token, task)
        elif s.telegram_webhook_url:
            for tenant, tb in current.items():
                if self._hooked.get(tenant) == tb.bot.token or not tb.webhook_secret:
                    continue
                url = f"{s.telegram_webhook_url.rstrip('/')}/telegram/{tenant}"
                try:
                    await call(
                        lambda tb=tb, url=url: tb.bot.set_webhook(  # type: ignore[misc]
                            url=url, secret_token=tb.webhook_secret, allowed_updates=ALLOWED_UPDATES
                        )
                    )
                    self._hooked[tenant] = tb.bot.token
                    log.info("webhook.set", tenant=tenant, url=url)
                except PlatformError as exc:
                    log.warning("webhook.set_failed", tenant=tenant, error=exc.message)

    async def close(self) -> None:
        pollers = [task for _, task in self._pollers.values()]
        for task in pollers:
            task.cancel()
        await asyncio.gather(*pollers, return_exceptions=True)
        await self.channel.close()
        if self._runner is not None:
            await self._runner.cleanup()
        await self.bots.close()


async def serve(settings: TelegramSettings, stop: asyncio.Event) -> None:
    await serve_until(TelegramService(settings), stop)
