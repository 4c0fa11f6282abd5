"""A local fake Discord REST API (v10): records every call and enforces Discord's limits.

The worker's httpx client talks to it through `ASKGATE_DISCORD_API_BASE`. It keeps each
channel's messages, refuses what Discord refuses (content over 2000 characters, more
than 5 action rows, a row with more than 5 buttons or a select beside anything, a
custom_id outside 1-100 characters or repeated in a message, a label over 80, a select
with more than 25 options; a wrong bot token; an unknown channel or message), honours
`nonce` + `enforce_nonce` (the same nonce in a channel returns the first message), and
can be told to answer 429 with `retry_after`, an HTML 502, to drop the connection after
taking the message, or to hold a create's response (the message is kept first).
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

CONTENT_MAX = 2000
ROWS_MAX = 5
BUTTONS_MAX = 5
CUSTOM_ID_MAX = 100
LABEL_MAX = 80
SELECT_OPTIONS_MAX = 25


@dataclass
class Call:
    method: str
    path: str
    body: dict[str, Any]


@dataclass
class Msg:
    channel_id: str
    id: str
    content: str
    components: list[dict[str, Any]]
    edits: list[dict[str, Any]] = field(default_factory=list)
    sent_components: list[dict[str, Any]] = field(default_factory=list)  # as first posted

    @property
    def raw(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "channel_id": self.channel_id,
            "content": self.content,
            "components": self.components,
            "type": 0,
        }

    def custom_ids(self) -> list[str]:
        return [c["custom_id"] for row in self.components for c in row["components"]]


class DiscordError(Exception):
    def __init__(self, status: int, code: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def check_components(rows: Any) -> None:
    """Discord's component rules for a message (raises DiscordError 400, code 50035)."""

    def bad(why: str) -> DiscordError:
        return DiscordError(400, 50035, f"Invalid Form Body: {why}")

    if not isinstance(rows, list) or len(rows) > ROWS_MAX:
        raise bad("components: at most 5 action rows")
    seen: set[str] = set()
    for row in rows:
        items = row.get("components") or []
        if row.get("type") != 1 or not items:
            raise bad("each top-level component must be a non-empty action row")
        selects = [c for c in items if c.get("type") == 3]
        if selects and len(items) != 1:
            raise bad("a select fills its action row alone")
        if len(items) > BUTTONS_MAX:
            raise bad("at most 5 buttons in a row")
        for c in items:
            cid = c.get("custom_id", "")
            if not 1 <= len(cid) <= CUSTOM_ID_MAX or cid in seen:
                raise bad(f"custom_id {cid!r} must be 1-100 characters and unique")
            seen.add(cid)
            if c.get("type") == 2 and not 1 <= len(c.get("label", "")) <= LABEL_MAX:
                raise bad("a button label is 1-80 characters")
            if c.get("type") == 3:
                options = c.get("options") or []
                if not 1 <= len(options) <= SELECT_OPTIONS_MAX:
                    raise bad("a select has 1-25 options")
                if not 1 <= c.get("min_values", 1) <= c.get("max_values", 1) <= len(options):
                    raise bad("min_values ≤ max_values ≤ options")
                for o in options:
                    if len(o.get("label", "")) > 100 or len(o.get("description", "")) > 100:
                        raise bad("a select option's label and description are ≤ 100")


class FakeDiscord:
    def __init__(self, token: str) -> None:
        self.token = token
        self.calls: list[Call] = []
        self.channels: dict[str, dict[str, Msg]] = {}
        self.refuse: dict[str, tuple[int, int, str]] = {}  # channel → (status, code, message)
        self.retry_after: dict[str, list[float]] = {}  # channel → 429s to answer first
        self.faults: dict[str, list[str]] = {}  # channel → "html502" / "drop" for creates
        self.hold = asyncio.Event()
        self.hold.set()  # cleared: a create keeps the message, then waits to respond
        self._nonces: dict[tuple[str, str], str] = {}
        self.deleted: list[tuple[str, str]] = []  # (channel, message id)
        self._ids = itertools.count(900_000_000_000_000_001)
        self._runner: web.AppRunner | None = None
        self.base = ""

    async def start(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_post("/api/v10/channels/{channel}/messages", self._create)
        app.router.add_patch("/api/v10/channels/{channel}/messages/{message}", self._edit)
        app.router.add_delete("/api/v10/channels/{channel}/messages/{message}", self._delete)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.base = f"http://127.0.0.1:{self._runner.addresses[0][1]}/api/v10"
        return self

    async def stop(self) -> None:
        self.hold.set()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- handlers --------------------------------------------------------------------------

    async def _call(self, request: web.Request) -> tuple[str, dict[str, Any]]:
        body = await request.json()
        self.calls.append(Call(request.method, request.path, body))
        if request.headers.get("Authorization") != f"Bot {self.token}":
            raise DiscordError(401, 0, "401: Unauthorized")
        channel = request.match_info["channel"]
        if channel in self.refuse:
            raise DiscordError(*self.refuse[channel])
        waits = self.retry_after.get(channel)
        if waits:
            raise DiscordError(
                429, 0, "You are being rate limited.", retry_after=waits.pop(0), **{"global": False}
            )
        if "content" in body and len(body["content"]) > CONTENT_MAX:
            raise DiscordError(400, 50035, "Invalid Form Body: content is over 2000")
        if "components" in body:
            check_components(body["components"])
        return channel, body

    @staticmethod
    def _refused(exc: DiscordError) -> web.Response:
        return web.json_response(
            {"message": exc.message, "code": exc.code, **exc.extra}, status=exc.status
        )

    async def _create(self, request: web.Request) -> web.StreamResponse:
        try:
            channel, body = await self._call(request)
        except DiscordError as exc:
            return self._refused(exc)
        nonce = str(body.get("nonce") or "")
        known = self._nonces.get((channel, nonce)) if body.get("enforce_nonce") else None
        if known is not None:
            return web.json_response(self.channels[channel][known].raw)
        rows = body.get("components") or []
        content = body.get("content", "")
        msg = Msg(channel, str(next(self._ids)), content, rows, sent_components=rows)
        self.channels.setdefault(channel, {})[msg.id] = msg
        if nonce:
            self._nonces[(channel, nonce)] = msg.id
        queue = self.faults.get(channel)
        fault = queue.pop(0) if queue else None
        if fault == "html502":
            return web.Response(
                status=502,
                text="<html><body>502 Bad Gateway</body></html>",
                content_type="text/html",
            )
        if fault == "drop":
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        await self.hold.wait()
        return web.json_response(msg.raw)

    async def _delete(self, request: web.Request) -> web.Response:
        self.calls.append(Call(request.method, request.path, {}))
        if request.headers.get("Authorization") != f"Bot {self.token}":
            return self._refused(DiscordError(401, 0, "401: Unauthorized"))
        channel = request.match_info["channel"]
        msg = self.channels.get(channel, {}).pop(request.match_info["message"], None)
        if msg is None:
            return self._refused(DiscordError(404, 10008, "Unknown Message"))
        self.deleted.append((channel, msg.id))
        return web.Response(status=204)

    async def _edit(self, request: web.Request) -> web.Response:
        try:
            channel, body = await self._call(request)
        except DiscordError as exc:
            return self._refused(exc)
        msg = self.channels.get(channel, {}).get(request.match_info["message"])
        if msg is None:
            return self._refused(DiscordError(404, 10008, "Unknown Message"))
        msg.content = body.get("content", msg.content)
        msg.components = body.get("components", msg.components)
        msg.edits.append(body)
        return web.json_response(msg.raw)

    # -- what tests look at ------------------------------------------------------------------

    def creates(self) -> list[Call]:
        return [c for c in self.calls if c.method == "POST"]

    def messages(self, channel: str) -> list[Msg]:
        return list(self.channels.get(channel, {}).values())
