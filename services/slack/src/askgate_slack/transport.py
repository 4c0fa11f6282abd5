"""How Slack's input arrives: signed HTTP requests at `POST /slack/<tenant>/interactivity`
and `POST /slack/<tenant>/events`, or one Socket Mode connection per tenant with an
app_token. Both hand payloads to `Inbound`.

Over HTTP the signature (`X-Slack-Signature`: v0, an HMAC of the raw body with the
tenant's signing secret, at most five minutes old) is checked on the raw body before
anything is parsed: 401 otherwise, and nothing changes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import structlog
from aiohttp import web
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from askgate_slack.client import Workspace, Workspaces
from askgate_slack.inbound import Inbound

log = structlog.get_logger("askgate.slack")

# A Socket Mode link down for this long makes the worker unhealthy (`--check`).
SOCKET_UNHEALTHY_S = 60.0
Listener = Callable[[AsyncBaseSocketModeClient, SocketModeRequest], Awaitable[None]]


def http_app(inbound: Inbound, workspaces: Workspaces) -> web.Application:
    async def verified(request: web.Request) -> tuple[Workspace, bytes]:
        body = await request.read()
        tenant = request.match_info["tenant"]
        ws = await workspaces.get(tenant)
        if (
            ws is None
            or ws.verifier is None
            or not ws.verifier.is_valid_request(body, dict(request.headers))
        ):
            log.info("request.unauthorized", tenant=tenant, path=request.path)
            raise web.HTTPUnauthorized(text="invalid or stale X-Slack-Signature")
        return ws, body

    async def interactivity(request: web.Request) -> web.Response:
        ws, body = await verified(request)
        try:
            payload = json.loads(parse_qs(body.decode())["payload"][0])
        except (KeyError, ValueError, UnicodeDecodeError) as exc:
            raise web.HTTPBadRequest(text="expected the form field payload=<json>") from exc
        reply = await inbound.interaction(ws, payload)
        return web.json_response(reply) if reply else web.Response()

    async def events(request: web.Request) -> web.Response:
        ws, body = await verified(request)
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise web.HTTPBadRequest(text="expected a JSON body") from exc
        if data.get("type") == "url_verification":
            return web.json_response({"challenge": str(data.get("challenge") or "")})
        await inbound.event(ws, data)
        return web.Response()

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/slack/{tenant}/interactivity", interactivity)
    app.router.add_post("/slack/{tenant}/events", events)
    app.router.add_get("/healthz", healthz)
    return app


class SocketLinks:
    """One Socket Mode client per tenant with an app_token, kept in step with the configs;
    each acknowledges an envelope once it is handled (Slack redelivers one that is not)."""

    def __init__(self, inbound: Inbound) -> None:
        self.inbound = inbound
        self.clients: dict[str, tuple[str, SocketModeClient]] = {}
        self._down_since: dict[str, float] = {}
        # Set by close(): a refresh still under way then opens no new link.
        self.closed = False

    def _listener(self, ws: Workspace) -> Listener:
        async def on_request(client: AsyncBaseSocketModeClient, req: SocketModeRequest) -> None:
            # The tenant's settings as they are now (an allow-list may have changed).
            now = await self.inbound.workspaces.get(ws.tenant) or ws
            reply: dict[str, Any] | None = None
            if req.type == "events_api":
                await self.inbound.event(now, req.payload)
            elif req.type == "interactive":
                reply = await self.inbound.interaction(now, req.payload)
            await client.send_socket_mode_response(
                SocketModeResponse(envelope_id=req.envelope_id, payload=reply)
            )

        return on_request

    async def sync(self, workspaces: list[Workspace]) -> None:
        want = {ws.tenant: ws for ws in workspaces if ws.app_token}
        for tenant, (token, client) in list(self.clients.items()):
            if tenant not in want or want[tenant].app_token != token:
                await client.close()
                del self.clients[tenant]
                self._down_since.pop(tenant, None)
        for tenant, ws in want.items():
            if tenant in self.clients or self.closed:
                continue
            client = SocketModeClient(app_token=ws.app_token, web_client=ws.client)
            client.socket_mode_request_listeners.append(self._listener(ws))
            self.clients[tenant] = (ws.app_token, client)
            # connect() retries on its own until the link is up.
            self.inbound.later(client.connect())
            log.info("socket.started", tenant=tenant)

    async def check(self) -> None:
        now = time.monotonic()
        for tenant, (_, client) in self.clients.items():
            if await client.is_connected():
                self._down_since.pop(tenant, None)
            else:
                self._down_since.setdefault(tenant, now)

    def problem(self) -> str | None:
        now = time.monotonic()
        for tenant, since in self._down_since.items():
            if now - since > SOCKET_UNHEALTHY_S:
                return f"Socket Mode for tenant {tenant} down for {now - since:.0f}s"
        return None

    async def close(self) -> None:
        self.closed = True
        for _, client in self.clients.values():
            await client.close()
        self.clients.clear()
