"""A local fake Telegram Bot API server: records every call and enforces the limits.

The real aiogram Bot talks to it through `TelegramAPIServer.from_base(fake.base)`. It
keeps each chat's messages (text, entities, inline keyboard, reactions; deleted ones
go), refuses what Telegram refuses (text outside 1-4096 characters, entities outside
the text or of an unknown type, callback_data over 64 bytes, answerCallbackQuery text
over 200 characters or answered twice, editing or deleting a missing message, "message
is not modified"), and can be told to answer 429 retry_after, to act as a blocked chat
or a missing chat, to refuse reactions, or to hold sendMessage responses (the message
is recorded first, as Telegram would).

getUpdates keeps Telegram's semantics: an update stays until a getUpdates with a
higher `offset` confirms it (a poller killed before confirming gets it again), and a
newer getUpdates ends an older one that is still waiting (409 Conflict).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

TEXT_MAX = 4096
CALLBACK_DATA_MAX = 64
CALLBACK_TEXT_MAX = 200
ENTITY_TYPES = {
    "mention",
    "hashtag",
    "cashtag",
    "bot_command",
    "url",
    "email",
    "phone_number",
    "bold",
    "italic",
    "underline",
    "strikethrough",
    "spoiler",
    "blockquote",
    "expandable_blockquote",
    "code",
    "pre",
    "text_link",
    "text_mention",
    "custom_emoji",
    "date_time",
}
REACTIONS = {"👍", "👎", "❤", "🔥", "🎉", "👌"}  # a few of Telegram's standard ones


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass
class Call:
    token: str
    method: str
    params: dict[str, Any]


@dataclass
class Msg:
    chat_id: int
    message_id: int
    text: str
    reply_markup: dict[str, Any] | None
    raw: dict[str, Any]
    edits: list[str] = field(default_factory=list)
    entities: list[dict[str, Any]] = field(default_factory=list)
    reactions: list[str] = field(default_factory=list)
    sent_markup: dict[str, Any] | None = None  # the keyboard it was sent with

    @property
    def buttons(self) -> list[list[dict[str, Any]]]:
        buttons: list[list[dict[str, Any]]] = (self.reply_markup or {}).get("inline_keyboard", [])
        return buttons

    def styled(self, kind: str) -> list[str]:
        """The parts of the text an entity of `kind` covers (offsets in UTF-16)."""
        units = self.text.encode("utf-16-le")
        return [
            units[2 * e["offset"] : 2 * (e["offset"] + e["length"])].decode("utf-16-le")
            for e in self.entities
            if e["type"] == kind
        ]

    def entity(self, kind: str) -> dict[str, Any]:
        found = [e for e in self.entities if e["type"] == kind]
        assert len(found) == 1, (kind, self.entities)
        return found[0]


class TelegramError(Exception):
    def __init__(self, code: int, description: str, **parameters: Any) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.parameters = parameters


def user(uid: int, first: str = "Ada", username: str | None = None) -> dict[str, Any]:
    u: dict[str, Any] = {"id": uid, "is_bot": False, "first_name": first}
    if username:
        u["username"] = username
    return u


class FakeBotAPI:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.chats: dict[int, dict[int, Msg]] = {}
        self.blocked: set[int] = set()
        self.missing: set[int] = set()
        self.retry_after: dict[int, list[int]] = {}  # chat → 429s to answer first
        self.hold_send = asyncio.Event()
        self.hold_send.set()  # cleared: sendMessage records, then waits to respond
        self.queries: dict[str, bool] = {}  # callback query id → answered
        self.updates: dict[str, list[dict[str, Any]]] = {}  # token → not yet confirmed
        self.pushed: list[dict[str, Any]] = []  # every update ever pushed
        self.confirmed: dict[str, list[int]] = {}  # token → update ids confirmed
        self._arrived: dict[str, asyncio.Event] = {}
        self._polls: dict[str, int] = {}  # token → the newest getUpdates
        self.created: list[Msg] = []  # every message sendMessage made, deleted or not
        self.callback_answers: dict[str, str] = {}  # callback query id → its text
        self.webhooks: dict[str, dict[str, Any]] = {}
        self.menus: dict[str | None, list[dict[str, Any]]] = {}  # language → commands
        self.deleted: list[tuple[int, int]] = []  # (chat, message)
        self.no_reactions: set[int] = set()  # chats where reactions are turned off
        self.refuse_entities: set[int] = set()  # chats whose formatting Telegram refuses
        # method → faults to answer its next calls with, in order: "html502" (a front
        # end's HTML error page) or "drop" (the connection closed without an answer).
        self.faults: dict[str, list[str]] = {}
        self._ids = itertools.count(1)
        self._update_ids = itertools.count(1000)
        self._runner: web.AppRunner | None = None
        self.base = ""

    # -- server ----------------------------------------------------------------------------

    async def start(self) -> FakeBotAPI:
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        self.hold_send.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        token, method = request.match_info["token"], request.match_info["method"]
        form = await request.post()
        params: dict[str, Any] = {}
        for key, value in form.items():
            text = value if isinstance(value, str) else ""
            try:
                params[key] = json.loads(text) if text[:1] in "[{" else text
            except ValueError:
                params[key] = text
        self.calls.append(Call(token, method, params))
        fault = self.faults.get(method, [None]).pop(0) if self.faults.get(method) else None
        if fault == "html502":
            return web.Response(
                status=502,
                content_type="text/html",
                text="<html><body><h1>502 Bad Gateway</h1></body></html>",
            )
        if fault == "drop":
            assert request.transport is not None
            request.transport.abort()
            return web.Response()
        try:
            handler = getattr(self, f"m_{method}", None)
            if handler is None:
                raise TelegramError(404, "Not Found: method not found")
            result = await handler(token, params)
        except TelegramError as exc:
            body: dict[str, Any] = {
                "ok": False,
                "error_code": exc.code,
                "description": exc.description,
            }
            if exc.parameters:
                body["parameters"] = exc.parameters
            return web.json_response(body, status=exc.code)
        return web.json_response({"ok": True, "result": result})

    # -- helpers -------------------------------------------------------------------------

    @staticmethod
    def bot_user(token: str) -> dict[str, Any]:
        return {
            "id": int(token.split(":")[0]),
            "is_bot": True,
            "first_name": "askgate",
            "username": "askgate_bot",
        }

    @staticmethod
    def chat(chat_id: int) -> dict[str, Any]:
        if chat_id < 0:
            return {"id": chat_id, "type": "supergroup", "title": "Ops"}
        return {"id": chat_id, "type": "private", "first_name": "Ada"}

    def _chat_id(self, params: dict[str, Any]) -> int:
        chat_id = int(params["chat_id"])
        if chat_id in self.missing:
            raise TelegramError(400, "Bad Request: chat not found")
        if chat_id in self.blocked:
            raise TelegramError(403, "Forbidden: bot was blocked by the user")
        queue = self.retry_after.get(chat_id)
        if queue:
            wait = queue.pop(0)
            raise TelegramError(429, f"Too Many Requests: retry after {wait}", retry_after=wait)
        return chat_id

    @staticmethod
    def _check_text(text: str) -> None:
        if not text.strip():
            raise TelegramError(400, "Bad Request: message text is empty")
        if len(text) > TEXT_MAX:
            raise TelegramError(400, "Bad Request: message is too long")

    @staticmethod
    def _check_entities(text: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        if params.get("parse_mode"):
            raise TelegramError(400, "fake: parse_mode is not spoken here; send entities")
        entities = params.get("entities") or []
        size = utf16_len(text)
        for e in entities:
            if e.get("type") not in ENTITY_TYPES:
                raise TelegramError(
                    400,
                    f"Bad Request: can't parse entities: unsupported entity type {e.get('type')!r}",
                )
            offset, length = int(e["offset"]), int(e["length"])
            if offset < 0 or length <= 0 or offset + length > size:
                raise TelegramError(400, "Bad Request: ENTITY_BOUNDS_INVALID")
            if e["type"] == "text_link" and not e.get("url"):
                raise TelegramError(400, "Bad Request: can't parse entities: no url")
            if e["type"] == "date_time" and not isinstance(e.get("unix_time"), int):
                raise TelegramError(400, "Bad Request: can't parse entities: no unix_time")
        return list(entities)

    @staticmethod
    def _check_markup(markup: Any) -> None:
        if not markup or "inline_keyboard" not in markup:
            return
        for row in markup["inline_keyboard"]:
            for button in row:
                data = button.get("callback_data", "")
                if not 1 <= len(data.encode()) <= CALLBACK_DATA_MAX:
                    raise TelegramError(400, "Bad Request: BUTTON_DATA_INVALID")
                if not button.get("text"):
                    raise TelegramError(400, "Bad Request: text buttons are unallowed")

    def _get(self, params: dict[str, Any]) -> Msg:
        chat_id = self._chat_id(params)
        msg = self.chats.get(chat_id, {}).get(int(params.get("message_id", 0)))
        if msg is None:
            raise TelegramError(400, "Bad Request: message to edit not found")
        return msg

    # -- methods ---------------------------------------------------------------------------

    async def m_getMe(self, token: str, params: dict[str, Any]) -> Any:
        return self.bot_user(token)

    async def m_sendMessage(self, token: str, params: dict[str, Any]) -> Any:
        chat_id = self._chat_id(params)
        text = str(params.get("text", ""))
        self._check_text(text)
        entities = self._check_entities(text, params)
        if entities and chat_id in self.refuse_entities:
            raise TelegramError(400, "Bad Request: can't parse entities: unsupported entity")
        markup = params.get("reply_markup")
        self._check_markup(markup)
        message_id = next(self._ids)
        raw: dict[str, Any] = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": self.chat(chat_id),
            "from": self.bot_user(token),
            "text": text,
        }
        if isinstance(markup, dict) and "inline_keyboard" in markup:
            raw["reply_markup"] = markup
        if entities:
            raw["entities"] = entities
        reply_to = (params.get("reply_parameters") or {}).get("message_id")
        if reply_to:
            target = self.chats.get(chat_id, {}).get(int(reply_to))
            if target is not None:
                raw["reply_to_message"] = target.raw
        msg = Msg(
            chat_id,
            message_id,
            text,
            markup if isinstance(markup, dict) else None,
            raw,
            entities=entities,
            sent_markup=markup if isinstance(markup, dict) else None,
        )
        self.chats.setdefault(chat_id, {})[message_id] = msg
        self.created.append(msg)
        await self.hold_send.wait()
        return raw

    async def m_editMessageText(self, token: str, params: dict[str, Any]) -> Any:
        msg = self._get(params)
        text = str(params.get("text", ""))
        self._check_text(text)
        entities = self._check_entities(text, params)
        markup = params.get("reply_markup")
        self._check_markup(markup)
        new_markup = markup if isinstance(markup, dict) and markup.get("inline_keyboard") else None
        if text == msg.text and new_markup == msg.reply_markup:
            raise TelegramError(
                400,
                "Bad Request: message is not modified: specified new "
                "message content and reply markup are exactly the same",
            )
        msg.text, msg.reply_markup, msg.entities = text, new_markup, entities
        msg.edits.append(text)
        msg.raw = {**msg.raw, "text": text}
        msg.raw.pop("reply_markup", None)
        msg.raw.pop("entities", None)
        if new_markup:
            msg.raw["reply_markup"] = new_markup
        return msg.raw

    async def m_editMessageReplyMarkup(self, token: str, params: dict[str, Any]) -> Any:
        msg = self._get(params)
        markup = params.get("reply_markup")
        self._check_markup(markup)
        new_markup = markup if isinstance(markup, dict) and markup.get("inline_keyboard") else None
        if new_markup == msg.reply_markup:
            raise TelegramError(400, "Bad Request: message is not modified")
        msg.reply_markup = new_markup
        msg.raw = {**msg.raw, "reply_markup": new_markup} if new_markup else msg.raw
        return msg.raw

    async def m_deleteMessage(self, token: str, params: dict[str, Any]) -> Any:
        chat_id = self._chat_id(params)
        message_id = int(params.get("message_id", 0))
        if self.chats.get(chat_id, {}).pop(message_id, None) is None:
            raise TelegramError(400, "Bad Request: message to delete not found")
        self.deleted.append((chat_id, message_id))
        return True

    async def m_setMessageReaction(self, token: str, params: dict[str, Any]) -> Any:
        chat_id = self._chat_id(params)
        msg = self.chats.get(chat_id, {}).get(int(params.get("message_id", 0)))
        if msg is None:
            raise TelegramError(400, "Bad Request: message to react not found")
        emojis = [r.get("emoji", "") for r in params.get("reaction") or []]
        if chat_id in self.no_reactions or any(e not in REACTIONS for e in emojis):
            raise TelegramError(400, "Bad Request: REACTION_INVALID")
        msg.reactions = emojis
        return True

    async def m_setMyCommands(self, token: str, params: dict[str, Any]) -> Any:
        self.menus[params.get("language_code")] = list(params.get("commands") or [])
        return True

    async def m_answerCallbackQuery(self, token: str, params: dict[str, Any]) -> Any:
        qid = str(params.get("callback_query_id", ""))
        if qid not in self.queries or self.queries[qid]:
            raise TelegramError(
                400,
                "Bad Request: query is too old and response timeout expired or query ID is invalid",
            )
        if len(str(params.get("text", ""))) > CALLBACK_TEXT_MAX:
            raise TelegramError(400, "Bad Request: MESSAGE_TOO_LONG")
        self.queries[qid] = True
        self.callback_answers[qid] = str(params.get("text", ""))
        return True

    async def m_setWebhook(self, token: str, params: dict[str, Any]) -> Any:
        self.webhooks[token] = params
        return True

    async def m_deleteWebhook(self, token: str, params: dict[str, Any]) -> Any:
        self.webhooks.pop(token, None)
        return True

    async def m_getUpdates(self, token: str, params: dict[str, Any]) -> Any:
        """The updates from `offset` on (all unconfirmed ones without it); those before
        `offset` are confirmed and gone. Waits up to `timeout` seconds for one."""
        pending = self.updates.setdefault(token, [])
        offset = int(params.get("offset") or 0)
        if offset:
            self.confirmed.setdefault(token, []).extend(
                u["update_id"] for u in pending if u["update_id"] < offset
            )
            pending[:] = [u for u in pending if u["update_id"] >= offset]
        poll = self._polls[token] = next(self._ids)
        deadline = time.monotonic() + float(params.get("timeout", 0) or 0.05)
        while not pending:
            arrived = self._arrived.setdefault(token, asyncio.Event())
            try:
                await asyncio.wait_for(arrived.wait(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                break
            if self._polls.get(token) != poll:
                raise TelegramError(
                    409,
                    "Conflict: terminated by other getUpdates request; make sure that only "
                    "one bot instance is running",
                )
        return list(pending[:100])

    def push(self, token: str, update: dict[str, Any]) -> None:
        """An update for the bot: kept until a getUpdates confirms it."""
        self.updates.setdefault(token, []).append(update)
        self.pushed.append(update)
        arrived = self._arrived.pop(token, None)
        if arrived is not None:
            arrived.set()

    # -- what tests look at and send -------------------------------------------------------

    def sent(self, method: str = "sendMessage") -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def messages(self, chat_id: int) -> list[Msg]:
        return list(self.chats.get(chat_id, {}).values())

    def tap(self, msg: Msg, data: str, from_user: dict[str, Any]) -> dict[str, Any]:
        """A callback_query update for tapping the button with `data` on `msg`."""
        query_id = f"cq{next(self._ids)}"
        self.queries[query_id] = False
        return {
            "update_id": next(self._update_ids),
            "callback_query": {
                "id": query_id,
                "from": from_user,
                "chat_instance": "ci",
                "data": data,
                "message": msg.raw,
            },
        }

    def text(
        self,
        chat_id: int,
        text: str,
        from_user: dict[str, Any],
        reply_to: Msg | None = None,
        date: int | None = None,
    ) -> dict[str, Any]:
        """A message update: `from_user` writes `text` in the chat (optionally a reply); a
        leading /command is marked as Telegram marks it."""
        message: dict[str, Any] = {
            "message_id": next(self._ids),
            "date": int(time.time()) if date is None else date,
            "chat": self.chat(chat_id),
            "from": from_user,
            "text": text,
        }
        if text.startswith("/"):
            message["entities"] = [
                {"type": "bot_command", "offset": 0, "length": utf16_len(text.split()[0])}
            ]
        if reply_to is not None:
            message["reply_to_message"] = reply_to.raw
        self.chats.setdefault(chat_id, {})[message["message_id"]] = Msg(
            chat_id, message["message_id"], text, None, message
        )
        return {"update_id": next(self._update_ids), "message": message}

    def edit(self, msg: Msg, text: str) -> dict[str, Any]:
        """An edited_message update: the person changed the text of their message."""
        message = {**msg.raw, "text": text, "edit_date": int(time.time())}
        msg.text, msg.raw = text, message
        msg.edits.append(text)
        return {"update_id": next(self._update_ids), "edited_message": message}
