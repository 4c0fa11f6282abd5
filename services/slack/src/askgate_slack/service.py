"""The Slack worker process: the kit's ChannelService with the Slack adapter, the inbound
transport (the signed HTTP endpoints, or Socket Mode links), and workspaces kept in step
with the tenants' configs."""

from __future__ import annotations

import asyncio

import structlog
from aiohttp import web
from askgate.channels import ChannelService, PlatformError
from askgate.channels.service import serve_until
from redis.asyncio import Redis
from redis.exceptions import RedisError
from slack_sdk.signature import Clock

from askgate_slack.adapter import SlackAdapter
from askgate_slack.client import Workspace, Workspaces
from askgate_slack.config import SERVICE, SlackSettings
from askgate_slack.inbound import Inbound
from askgate_slack.transport import SocketLinks, http_app

log = structlog.get_logger("askgate.slack")
# What is being sent to people (outcomes, thread replies) gets this long at a stop.
DRAIN_S = 5.0


class SlackService:
    def __init__(
        self, settings: SlackSettings, redis: Redis | None = None, clock: Clock | None = None
    ) -> None:
        self.settings = settings
        self.channel = ChannelService(SERVICE, settings, redis)
        self.workspaces = Workspaces(self.channel.redis, settings, clock)
        self.worker = self.channel.use(SlackAdapter(self.workspaces))
        self.inbound = Inbound(self.channel.store, self.workspaces, self.worker)
        self.sockets = SocketLinks(self.inbound)
        self.channel.watch(self.sockets.problem)
        self.channel.spawn(self._refresh_forever)
        if settings.slack_mode == "http":
            self.channel.spawn(self._serve_http)
        self.port: int | None = None  # the HTTP port (the real one when 0 was asked)
        self._listening = asyncio.Event()
        self._known: set[str] = set()

    async def start(self) -> None:
        await self._refresh()
        if not self.workspaces.all():
            log.warning(
                "slack.no_workspaces",
                hint="askgate tenant channel TENANT slack "
                "bot_token=xoxb-… signing_secret=…; questions with Slack targets end "
                "as delivery_failed until then",
            )
        await self.channel.start()
        if self.settings.slack_mode == "http":
            await self._listening.wait()

    async def _serve_http(self, stop: asyncio.Event) -> None:
        s = self.settings
        runner = web.AppRunner(
            http_app(self.inbound, self.workspaces), handle_signals=False, access_log=None
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, s.slack_host, s.slack_port).start()
            self.port = int(runner.addresses[0][1])
            log.info(
                "http.listening",
                host=s.slack_host,
                port=self.port,
                interactivity="/slack/<tenant>/interactivity",
                events="/slack/<tenant>/events",
            )
            self._listening.set()
            await stop.wait()
        finally:
            self._listening.set()
            await runner.cleanup()

    async def _identify(self, ws: Workspace) -> None:
        """auth.test once per bot token: a wrong token shows in the log at once."""
        try:
            me = await self.workspaces.identity(ws)
        except PlatformError as exc:
            log.warning("slack.auth_failed", tenant=ws.tenant, error=exc.message)
            return
        self._known.add(ws.bot_token)
        log.info(
            "slack.workspace",
            tenant=ws.tenant,
            team=me.get("team"),
            bot_user=me.get("user_id"),
            signed=ws.verifier is not None,
        )

    async def _refresh(self) -> None:
        try:
            current = await self.workspaces.refresh()
        except (RedisError, OSError) as exc:
            log.warning("slack.refresh_failed", error=str(exc))
            return
        for ws in current:
            if ws.bot_token not in self._known:
                await self._identify(ws)
        if self.settings.slack_mode == "socket":
            await self.sockets.sync(current)
            await self.sockets.check()

    async def _refresh_forever(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), self.settings.channel_refresh_s)
                return
            except TimeoutError:
                await self._refresh()

    async def close(self) -> None:
        await self.sockets.close()
        # Outcomes still being sent to people finish alongside the consumer's grace, so
        # the whole stop stays within the kit's (deploy/k8s/services.yaml drain_s).
        await asyncio.gather(self.channel.close(), self.inbound.drain(DRAIN_S))
        await self.workspaces.close()


async def serve(settings: SlackSettings, stop: asyncio.Event) -> None:
    await serve_until(SlackService(settings), stop)
