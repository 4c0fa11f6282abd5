"""The Discord worker process: the kit's ChannelService with the Discord adapter, the
interactions endpoint (`POST /discord/<tenant id>/interactions`), and tenants'
applications kept in step with their configs.

Every interaction is checked before its body is parsed: an Ed25519 signature by the
tenant's application key over `X-Signature-Timestamp + raw body`, and a timestamp no
older than `SIGNATURE_MAX_AGE_S`. Anything else is a 401: Discord probes the endpoint
with bad signatures and removes an endpoint that accepts one.
"""

from __future__ import annotations

import asyncio
import time

import orjson
import structlog
from aiohttp import web
from askgate.channels import ChannelService, TenantConfigs
from askgate.channels.service import serve_until
from nacl.exceptions import CryptoError
from nacl.signing import VerifyKey
from redis.asyncio import Redis
from redis.exceptions import RedisError

from askgate_discord.adapter import DiscordAdapter
from askgate_discord.client import CHANNEL, DiscordApp, DiscordClient, build_app
from askgate_discord.config import SERVICE, DiscordSettings
from askgate_discord.inbound import Inbound

log = structlog.get_logger("askgate.discord")

# Discord signs an interaction as it sends it; one older than this is a replay.
SIGNATURE_MAX_AGE_S = 300


def verified(
    key: VerifyKey, signature: str, timestamp: str, body: bytes, now: float | None = None
) -> bool:
    """The signature is the application's over timestamp + body, and the timestamp fresh."""
    try:
        sig = bytes.fromhex(signature)
        age = abs((time.time() if now is None else now) - int(timestamp))
    except ValueError:
        return False
    if age > SIGNATURE_MAX_AGE_S:
        return False
    try:
        key.verify(timestamp.encode() + body, sig)
    except (CryptoError, ValueError):  # BadSignatureError; a signature of the wrong length
        return False
    return True


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


def interactions_app(apps: TenantConfigs[DiscordApp], inbound: Inbound) -> web.Application:
    async def interactions(request: web.Request) -> web.Response:
        tenant = request.match_info["tenant"]
        body = await request.read()
        app = await apps.get(tenant)
        if app is None or not verified(
            app.verify_key,
            request.headers.get("X-Signature-Ed25519", ""),
            request.headers.get("X-Signature-Timestamp", ""),
            body,
        ):
            log.info("interaction.unauthorized", tenant=tenant, configured=app is not None)
            return _error(401, "unauthorized", "invalid request signature")
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            payload = None
        if not isinstance(payload, dict):
            return _error(400, "bad_request", "the body must be an interaction (JSON object)")
        response = await inbound.handle(app, payload)
        return web.Response(body=orjson.dumps(response), content_type="application/json")

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    web_app = web.Application()
    web_app.router.add_post("/discord/{tenant}/interactions", interactions)
    web_app.router.add_get("/healthz", healthz)
    return web_app


class DiscordService:
    def __init__(self, settings: DiscordSettings, redis: Redis | None = None) -> None:
        self.settings = settings
        self.channel = ChannelService(SERVICE, settings, redis)
        self.client = DiscordClient(settings)
        self.apps: TenantConfigs[DiscordApp] = TenantConfigs(self.channel.redis, CHANNEL, build_app)
        self.worker = self.channel.use(DiscordAdapter(self.apps, self.client))
        self.inbound = Inbound(self.channel.store, self.worker)
        self.port: int | None = None  # the bound one (ASKGATE_DISCORD_PORT=0: a free port)
        self._bound: asyncio.Future[int] | None = None
        self.channel.spawn(self._serve)
        self.channel.spawn(self._refresh_forever)

    async def start(self) -> None:
        try:
            configured = await self.apps.refresh()
        except (RedisError, OSError) as exc:
            log.warning("discord.refresh_failed", error=str(exc))
            configured = {}
        if not configured:
            log.warning(
                "discord.no_tenants",
                hint="askgate tenant channel TENANT discord "
                "bot_token=… public_key=… application_id=…; until then this worker "
                "idles and questions with Discord targets end as delivery_failed",
            )
        self._bound = asyncio.get_running_loop().create_future()
        await self.channel.start()
        self.port = await self._bound

    async def _serve(self, stop: asyncio.Event) -> None:
        assert self._bound is not None
        s = self.settings
        runner = web.AppRunner(
            interactions_app(self.apps, self.inbound), handle_signals=False, access_log=None
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, s.discord_host, s.discord_port).start()
        except OSError as exc:  # the port is taken: start() fails with it
            self._bound.set_exception(exc)
            await runner.cleanup()
            return
        port = int(runner.addresses[0][1])
        self._bound.set_result(port)
        log.info(
            "interactions.listening",
            host=s.discord_host,
            port=port,
            path="/discord/<tenant id>/interactions",
        )
        try:
            await stop.wait()
        finally:
            await self.inbound.close()
            await runner.cleanup()

    async def _refresh_forever(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), self.settings.channel_refresh_s)
                return
            except TimeoutError:
                pass
            try:
                await self.apps.refresh()
            except (RedisError, OSError) as exc:
                log.warning("discord.refresh_failed", error=str(exc))

    async def close(self) -> None:
        await self.channel.close()
        await self.client.aclose()


async def serve(settings: DiscordSettings, stop: asyncio.Event) -> None:
    await serve_until(DiscordService(settings), stop)
