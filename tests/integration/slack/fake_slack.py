"""A local fake Slack Web API (and Socket Mode server): records every call and enforces
Block Kit's limits.

The real `AsyncWebClient` talks to it through `base_url=fake.api`. It keeps each
conversation's messages (text, blocks, metadata, edits) and the ephemeral messages,
refuses what Slack refuses (no `text`, more than 50 blocks, more than 25 elements in an
actions block, a button text over 75 characters or a value over 2000, an action_id over
255 or repeated in its block, more than 10 checkboxes, a section text over 3000; an
unknown token, channel or trigger), and can be told to answer 429 with Retry-After,
to answer an HTML 502, to drop the connection (before or after the call took effect),
or to hold chat.postMessage responses
(the message is recorded first, as Slack would). It also builds the payloads Slack
sends (clicks, modal submissions, message events) and serves Socket Mode over a local
WebSocket.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from aiohttp import WSMsgType, web

TOKEN = "xoxb-test-token"
APP_TOKEN = "xapp-test-token"
TEAM = "T0ACME"


class SlackError(Exception):
    def __init__(self, error: str, status: int = 200) -> None:
        super().__init__(error)
        self.error = error
        self.status = status


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


@dataclass
class Msg:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None = None
    metadata: dict[str, Any] | None = None
    user: str | None = None  # a person's message; None: the bot's
    edits: list[str] = field(default_factory=list)

    @property
    def actions(self) -> list[dict[str, Any]]:
        """Every interactive element, in order."""
        return [e for b in self.blocks if b["type"] == "actions" for e in b["elements"]]

    def action(self, suffix: str) -> dict[str, Any]:
        return next(e for e in self.actions if e["action_id"].endswith(":" + suffix))

    def raw(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": "message",
            "ts": self.ts,
            "text": self.text,
            "blocks": self.blocks,
        }
        if self.user:
            data["user"] = self.user
        else:
            data["bot_id"] = "B0BOT"
        return data


def check_blocks(blocks: Any) -> None:
    """Block Kit's limits, as Slack enforces them (invalid_blocks otherwise)."""
    if not isinstance(blocks, list) or not 1 <= len(blocks) <= 50:
        raise SlackError("invalid_blocks")
    for block in blocks:
        if block.get("type") == "section" and len(block.get("text", {}).get("text", "")) > 3000:
            raise SlackError("invalid_blocks")
        if len(block.get("block_id", "")) > 255:
            raise SlackError("invalid_blocks")
        if block.get("type") != "actions":
            continue
        elements = block.get("elements", [])
        ids = [e.get("action_id", "") for e in elements]
        if not 1 <= len(elements) <= 25 or len(ids) != len(set(ids)):
            raise SlackError("invalid_blocks")
        for e in elements:
            if len(e.get("action_id", "")) > 255:
                raise SlackError("invalid_blocks")
            if e["type"] == "button" and (
                len(e["text"]["text"]) > 75 or len(e.get("value", "")) > 2000
            ):
                raise SlackError("invalid_blocks")
            if e["type"] in ("checkboxes", "radio_buttons") and not 1 <= len(e["options"]) <= 10:
                raise SlackError("invalid_blocks")


class FakeSlack:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.conversations: dict[str, list[Msg]] = {}
        self.ephemeral: list[dict[str, Any]] = []
        self.views: list[dict[str, Any]] = []
        self.deleted: list[tuple[str, str]] = []  # (channel, ts) chat.delete took
        self.missing: set[str] = set()  # channel_not_found
        self.not_in: set[str] = set()  # not_in_channel
        self.ratelimit: dict[str, list[int]] = {}  # channel → 429 Retry-After values
        self.html_502: dict[str, int] = {}  # method → how many HTML 502s first
        self.drop: dict[str, int] = {}  # method → how many dropped connections first
        self.lose: dict[str, int] = {}  # method → how many take effect, then drop
        self.hold_post = asyncio.Event()
        self.hold_post.set()  # cleared: chat.postMessage records, then waits to respond
        self.triggers: set[str] = set()  # trigger ids handed out and not yet used
        self.sockets: list[web.WebSocketResponse] = []
        self.acks: dict[str, dict[str, Any]] = {}  # envelope id → the app's ack
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.base = ""

    # -- server ----------------------------------------------------------------------------

    @property
    def api(self) -> str:
        return self.base + "/api/"

    async def start(self) -> FakeSlack:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._handle)
        app.router.add_get("/socket", self._socket)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.base = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def stop(self) -> None:
        self.hold_post.set()
        for ws in self.sockets:
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query)
        body = await request.read()
        if request.content_type == "application/json" and body:
            params.update(json.loads(body))
        elif body:
            for key, values in parse_qs(body.decode()).items():
                value = values[0]
                params[key] = json.loads(value) if value[:1] in "[{" else value
        return params

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        params = await self._params(request)
        self.calls.append(Call(method, params))
        if self.drop.get(method):
            self.drop[method] -= 1
            assert request.transport is not None
            request.transport.abort()
            return web.Response()
        if self.html_502.get(method):
            self.html_502[method] -= 1
            return web.Response(
                status=502,
                content_type="text/html",
                text="<html><body><h1>502 Bad Gateway</h1></body></html>",
            )
        try:
            auth = request.headers.get("Authorization", "")
            want = APP_TOKEN if method == "apps.connections.open" else TOKEN
            if auth != f"Bearer {want}":
                raise SlackError("invalid_auth")
            handler = getattr(self, "m_" + method.replace(".", "_"), None)
            if handler is None:
                raise SlackError("unknown_method", 404)
            result = await handler(params)
            if self.lose.get(method):
                self.lose[method] -= 1
                assert request.transport is not None
                request.transport.abort()
                return web.Response()
        except SlackError as exc:
            headers = {}
            if exc.error == "ratelimited":
                headers["Retry-After"] = str(exc.status)
                exc.status = 429
            return web.json_response(
                {"ok": False, "error": exc.error}, status=exc.status, headers=headers
            )
        return web.json_response({"ok": True, **result})

    # -- helpers -------------------------------------------------------------------------

    def _ts(self) -> str:
        return f"{time.time():.0f}.{next(self._ids):06d}"

    def _channel(self, params: dict[str, Any]) -> str:
        channel = str(params.get("channel", ""))
        if channel in self.missing:
            raise SlackError("channel_not_found")
        if channel in self.not_in:
            raise SlackError("not_in_channel")
        waits = self.ratelimit.get(channel)
        if waits:
            raise SlackError("ratelimited", waits.pop(0))
        return "D" + channel[1:] if channel[:1] == "U" else channel

    @staticmethod
    def _check(params: dict[str, Any]) -> None:
        if not str(params.get("text") or "").strip():
            raise SlackError("no_text")
        if "blocks" in params:
            check_blocks(params["blocks"])

    def find(self, channel: str, ts: str) -> Msg:
        for msg in self.conversations.get(channel, []):
            if msg.ts == ts:
                return msg
        raise SlackError("message_not_found")

    # -- methods ---------------------------------------------------------------------------

    async def m_auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "team": "Acme",
            "team_id": TEAM,
            "user": "askgate",
            "user_id": "U0BOT",
            "bot_id": "B0BOT",
        }

    async def m_chat_postMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(params)
        self._check(params)
        msg = Msg(
            channel,
            self._ts(),
            str(params["text"]),
            params.get("blocks") or [],
            params.get("thread_ts"),
            params.get("metadata"),
        )
        self.conversations.setdefault(channel, []).append(msg)
        await self.hold_post.wait()
        return {"channel": channel, "ts": msg.ts, "message": msg.raw()}

    async def m_chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(params)
        self._check(params)
        msg = self.find(channel, str(params.get("ts")))
        msg.text, msg.blocks = str(params["text"]), params.get("blocks") or []
        msg.edits.append(msg.text)
        return {"channel": channel, "ts": msg.ts, "text": msg.text}

    async def m_chat_delete(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(params)
        msg = self.find(channel, str(params.get("ts")))
        self.conversations[channel].remove(msg)
        self.deleted.append((channel, msg.ts))
        return {"channel": channel, "ts": msg.ts}

    async def m_chat_postEphemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(params)
        self._check(params)
        self.ephemeral.append(
            {
                "channel": channel,
                "user": params["user"],
                "text": params["text"],
                "thread_ts": params.get("thread_ts"),
            }
        )
        return {"message_ts": self._ts()}

    async def m_views_open(self, params: dict[str, Any]) -> dict[str, Any]:
        trigger = str(params.get("trigger_id", ""))
        if trigger not in self.triggers:
            raise SlackError("expired_trigger_id")
        self.triggers.discard(trigger)
        view = params["view"]
        if not 1 <= len(view.get("title", {}).get("text", "")) <= 24:
            raise SlackError("invalid_arguments")
        self.views.append(view)
        return {"view": {"id": f"V{next(self._ids)}", **view}}

    async def m_conversations_open(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"channel": {"id": "D" + str(params["users"])[1:]}}

    def _history(
        self, msgs: list[Msg], params: dict[str, Any], newest_first: bool = True
    ) -> dict[str, Any]:
        oldest = float(params.get("oldest") or 0)
        out = []
        # conversations.history answers newest first; conversations.replies the parent
        # first, then its replies oldest first.
        for msg in reversed(msgs) if newest_first else msgs:
            if float(msg.ts) > oldest:
                raw = msg.raw()
                if msg.metadata and params.get("include_all_metadata") in (True, "1", "true"):
                    raw["metadata"] = msg.metadata
                out.append(raw)
        return {"messages": out, "has_more": False}

    async def m_conversations_history(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(params)
        top = [m for m in self.conversations.get(channel, []) if not m.thread_ts]
        return self._history(top, params)

    async def m_conversations_replies(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(params)
        thread = str(params.get("ts"))
        msgs = [
            m
            for m in self.conversations.get(channel, [])
            if m.ts == thread or m.thread_ts == thread
        ]
        return self._history(msgs, params, newest_first=False)

    async def m_apps_connections_open(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"url": self.base.replace("http://", "ws://") + "/socket"}

    # -- Socket Mode -----------------------------------------------------------------------

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self.sockets.append(ws)
        await ws.send_json({"type": "hello", "num_connections": 1})
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                data = json.loads(message.data)
                self.acks[str(data.get("envelope_id"))] = data
        return ws

    async def envelope(self, kind: str, payload: dict[str, Any]) -> str:
        """Send an envelope over every open Socket Mode link; its id."""
        envelope_id = f"env-{next(self._ids)}"
        for ws in self.sockets:
            if not ws.closed:
                await ws.send_json(
                    {
                        "envelope_id": envelope_id,
                        "type": kind,
                        "payload": payload,
                        "accepts_response_payload": kind == "interactive",
                    }
                )
        return envelope_id

    # -- what tests look at and send -------------------------------------------------------

    def sent(self, method: str = "chat.postMessage") -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def messages(self, channel: str) -> list[Msg]:
        return list(self.conversations.get(channel, []))

    def told(self, user: str) -> list[str]:
        """The ephemeral messages `user` was shown."""
        return [e["text"] for e in self.ephemeral if e["user"] == user]

    def click(
        self, msg: Msg, suffix: str, user: str, ticks: dict[str, list[int]] | None = None
    ) -> dict[str, Any]:
        """A block_actions payload: `user` clicks the element whose action id ends with
        `suffix` on `msg`, with `ticks` (block id suffix → ticked option values) in the
        message's state, as Slack sends it."""
        trigger = f"{next(self._ids)}.{int(time.time())}.trigger"
        self.triggers.add(trigger)
        element = msg.action(suffix)
        block = next(b for b in msg.blocks if element in b.get("elements", []))
        values: dict[str, Any] = {}
        for b in msg.blocks:
            for e in b.get("elements", []) if b["type"] == "actions" else []:
                if e["type"] not in ("checkboxes", "radio_buttons"):
                    continue
                chosen = [
                    o
                    for o in e["options"]
                    if int(o["value"]) in (ticks or {}).get(b["block_id"].split(":")[-1], [])
                ]
                key = "selected_options" if e["type"] == "checkboxes" else "selected_option"
                values.setdefault(b["block_id"], {})[e["action_id"]] = {
                    "type": e["type"],
                    key: chosen if e["type"] == "checkboxes" else (chosen[0] if chosen else None),
                }
        return {
            "type": "block_actions",
            "trigger_id": trigger,
            "api_app_id": "A0APP",
            "team": {"id": TEAM, "domain": "acme"},
            "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM},
            "container": {
                "type": "message",
                "message_ts": msg.ts,
                "channel_id": msg.channel,
                "is_ephemeral": False,
            },
            "channel": {"id": msg.channel, "name": "room"},
            "message": msg.raw(),
            "state": {"values": values},
            "response_url": self.base + "/hooks/response",
            "actions": [
                {
                    "action_id": element["action_id"],
                    "block_id": block["block_id"],
                    "type": element["type"],
                    "value": element.get("value"),
                    "action_ts": f"{time.time():.6f}",
                }
            ],
        }

    @staticmethod
    def submit(view: dict[str, Any], user: str, text: str) -> dict[str, Any]:
        """A view_submission payload: `user` typed `text` into the modal and submitted."""
        return {
            "type": "view_submission",
            "team": {"id": TEAM},
            "user": {"id": user},
            "trigger_id": f"{time.time():.6f}.submit",
            "view": {
                **view,
                "id": "V1",
                "state": {
                    "values": {
                        "ag_other": {"ag_other": {"type": "plain_text_input", "value": text}}
                    }
                },
            },
        }

    def message(
        self, channel: str, user: str, text: str, thread_ts: str | None = None
    ) -> dict[str, Any]:
        """An event_callback: `user` writes `text` in the channel (or in a thread)."""
        msg = Msg(channel, self._ts(), text, [], thread_ts, user=user)
        self.conversations.setdefault(channel, []).append(msg)
        event: dict[str, Any] = {
            "type": "message",
            "channel": channel,
            "user": user,
            "text": text,
            "ts": msg.ts,
            "channel_type": "im" if channel[:1] == "D" else "channel",
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
        return {
            "type": "event_callback",
            "team_id": TEAM,
            "api_app_id": "A0APP",
            "event": event,
            "event_id": f"Ev{next(self._ids):08d}",
            "event_time": int(time.time()),
        }
