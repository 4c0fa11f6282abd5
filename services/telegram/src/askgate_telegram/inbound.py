"""Updates from Telegram → answers: button taps, "Other…" free text, text replies.

Both inbound modes feed the same aiogram Dispatcher: a webhook at
`POST /telegram/{tenant_id}` (the tenant's `webhook_secret` checked in constant time,
401 otherwise) or one getUpdates loop per bot. Every update is handled once: a marker
per (bot, update_id) turns Telegram's retries and replays into no-ops.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog
from aiogram import Bot, Dispatcher
from aiogram.exceptions import TelegramAPIError, TelegramConflictError
from aiogram.types import (
    CallbackQuery,
    ForceReply,
    Message,
    ReplyParameters,
    TelegramObject,
    Update,
    User,
)
from aiogram.webhook.aiohttp_server import BaseRequestHandler
from aiohttp import web
from askgate import keys
from askgate.answers import ended_message
from askgate.errors import AlreadyFinal, IncompleteAnswer, ValidationFailed
from askgate.i18n import t
from askgate.models import Responder
from askgate.record import Record
from askgate.status import Reason, Status
from askgate.store import Store
from redis.asyncio import Redis

from askgate_telegram import render
from askgate_telegram.client import Bots, ChatGate, TenantBot
from askgate_telegram.render import Tap

if TYPE_CHECKING:
    from askgate_telegram.worker import Worker

log = structlog.get_logger("askgate.telegram")

UPDATE_DEDUPE_S = 86_400  # Telegram gives up redelivering an update well within a day
ALLOWED_UPDATES = ["message", "callback_query"]
# After a failed getUpdates, wait before the next one (an outage is not a busy loop).
POLL_BACKOFF_S = 2.0
# An update whose handling keeps failing is skipped after this many tries (polling).
POLL_MAX_TRIES = 3


def may_answer(tb: TenantBot, target: dict[str, Any], chat_id: str, private: bool,
               user_id: int) -> bool:
    """Per target `allowed_user_ids`; without one anyone in a private chat and the
    tenant's configured list in a group. Only the target's own chat counts."""
    want = str(target.get("chat_id", ""))
    if want.lstrip("-").isdigit() and want != chat_id:
        return False
    ids = target.get("allowed_user_ids")
    if ids is not None:
        return user_id in {int(x) for x in ids}
    return private or user_id in tb.allowed_user_ids


def responder(user: User) -> Responder:
    return Responder(channel="telegram", user_id=str(user.id), name=user.full_name)


class Inbound:
    def __init__(self, redis: Redis, store: Store, bots: Bots, gate: ChatGate,
                 worker: Worker) -> None:
        self.redis = redis
        self.store = store
        self.bots = bots
        self.gate = gate
        self.worker = worker
        self.dispatcher = Dispatcher()
        self.dispatcher.update.outer_middleware(self._once)
        self.dispatcher.callback_query.register(self.on_callback)
        self.dispatcher.message.register(self.on_message)

    async def _once(self, handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
                    event: TelegramObject, data: dict[str, Any]) -> Any:
        assert isinstance(event, Update)
        bot: Bot = data["bot"]
        key = keys.telegram_update(bot.id, event.update_id)
        if not await self.redis.set(key, b"1", nx=True, ex=UPDATE_DEDUPE_S):
            log.info("update.duplicate", bot=bot.id, update_id=event.update_id)
            return None
        try:
            return await handler(event, data)
        except BaseException:
            # Not handled after all: let Telegram's retry (or the next poll) run it again.
            await self.redis.delete(key)
            raise

    # -- taps --------------------------------------------------------------------------

    async def _ack(self, query: CallbackQuery, text: str | None = None,
                   alert: bool = False) -> None:
        try:
            await query.answer(text=text, show_alert=alert or None)
        except TelegramAPIError as exc:  # too old: the tap still counted
            log.info("callback.ack_failed", error=exc.message)

    async def on_callback(self, query: CallbackQuery, bot: Bot) -> None:
        tb = self.bots.by_bot(bot.id)
        try:
            tap = Tap.unpack(query.data or "")
        except (ValueError, TypeError):
            await self._ack(query)
            return
        rec = await self.store.load(tap.q)
        if (tb is None or rec is None or rec.tenant != tb.tenant
                or not 0 <= tap.t < len(rec.targets)
                or rec.targets[tap.t].get("channel") != "telegram"):
            await self._ack(query, t(rec.locale if rec else "en", "expired"))
            return
        locale = rec.locale
        msg = query.message
        chat_id = str(msg.chat.id) if msg else str(rec.targets[tap.t]["chat_id"])
        private = msg is not None and msg.chat.type == "private"
        user = query.from_user
        if not may_answer(tb, rec.targets[tap.t], chat_id, private, user.id):
            log.info("callback.refused", question_id=rec.id, user_id=user.id, chat_id=chat_id)
            await self._ack(query, t(locale, "not_allowed"), alert=True)
            return
        if msg is not None:
            await self.worker.learn_message(rec, tap.t, chat_id, msg.message_id, msg.chat.type)
        if rec.status != Status.PENDING:
            await self._ack(query, ended_message(rec.f["status"], rec.f.get("reason"), locale))
            if msg is not None:
                await self.worker.finalise(rec, chat_id, msg.message_id, private, wait=True)
            return
        try:
            await self._tap(query, tb, rec, tap, chat_id, private)
        except AlreadyFinal as exc:
            await self._ack(query, exc.message)

    async def _tap(self, query: CallbackQuery, tb: TenantBot, rec: Record, tap: Tap,
                   chat_id: str, private: bool) -> None:
        locale, q, act = rec.locale, rec.questions[0], tap.a
        who = responder(query.from_user)
        if act[:1] == "o" and act[1:].isdigit() and int(act[1:]) < len(q.options):
            label = q.options[int(act[1:])].label
            await self.store.answer(rec.tenant, rec.id, {q.id: [label]}, who)
            await self._ack(query, t(locale, "submitted"))
            log.info("question.answered", question_id=rec.id, via="tap", user_id=who.user_id)
        elif act == "s":
            await self.store.end(rec.tenant, rec.id, Reason.SKIPPED, who)
            await self._ack(query, t(locale, "summary_skipped"))
        elif act == "x":
            await self._ack(query)
            await self._ask_other(tb, rec, tap.t, chat_id, private, query.from_user)
        elif act[:1] == "t" and act[1:].isdigit() and int(act[1:]) < len(q.options):
            await self._toggle(query, tb, rec, tap.t, int(act[1:]), chat_id)
        elif act == "d":
            picked = await self._selected(rec.id, tap.t)
            if not picked:
                await self._ack(query, t(locale, "pick_missing"))
                return
            labels = [o.label for i, o in enumerate(q.options) if i in picked]
            await self.store.answer(rec.tenant, rec.id, {q.id: labels}, who)
            await self._ack(query, t(locale, "submitted"))
        else:
            await self._ack(query)

    async def _selected(self, qid: str, index: int) -> set[int]:
        raw = await self.redis.smembers(keys.telegram_selection(qid, index))
        return {int(x) for x in raw}

    async def _toggle(self, query: CallbackQuery, tb: TenantBot, rec: Record, index: int,
                      option: int, chat_id: str) -> None:
        key = keys.telegram_selection(rec.id, index)
        if not await self.redis.srem(key, option):
            await self.redis.sadd(key, option)
        await self.redis.expire(key, self.worker.keep_s)
        await self._ack(query)
        picked = await self._selected(rec.id, index)
        markup = render.keyboard(rec.questions, rec.locale, rec.id, index, picked)
        msg = query.message
        if msg is None:
            return
        try:
            await self.gate.call(chat_id, lambda: tb.bot.edit_message_reply_markup(
                chat_id=chat_id, message_id=msg.message_id, reply_markup=markup), wait=True)
        except TelegramAPIError as exc:
            log.info("prompt.toggle_edit_failed", question_id=rec.id, error=exc.message)

    async def _ask_other(self, tb: TenantBot, rec: Record, index: int, chat_id: str,
                         private: bool, user: User) -> None:
        text, entities = render.other_prompt(rec.locale, user, private_chat=private)
        sent = await self.gate.call(chat_id, lambda: tb.bot.send_message(
            chat_id=chat_id, text=text, entities=entities or None,
            reply_markup=ForceReply(selective=True)), wait=True)
        await self.worker.remember(rec.tenant, chat_id, sent.message_id, rec.id, index, "other")

    # -- text ----------------------------------------------------------------------------

    async def _reply(self, message: Message, tb: TenantBot, text: str) -> None:
        chat_id = str(message.chat.id)
        try:
            await self.gate.call(chat_id, lambda: tb.bot.send_message(
                chat_id=chat_id, text=text,
                reply_parameters=ReplyParameters(message_id=message.message_id)), wait=True)
        except TelegramAPIError as exc:
            log.info("reply.failed", chat_id=chat_id, error=exc.message)

    async def _find(self, tb: TenantBot, message: Message) -> tuple[Record, int, str, bool] | None:
        """The question a message answers: the prompt it replies to, else the newest
        question still pending in the chat. (record, target index, kind, direct)."""
        chat_id = str(message.chat.id)
        reply_to = message.reply_to_message
        if reply_to is not None:
            raw = await self.redis.get(keys.telegram_prompt(tb.tenant, chat_id,
                                                            reply_to.message_id))
            if raw is not None:
                qid, index, kind = raw.decode().split()
                rec = await self.store.load(qid)
                return (rec, int(index), kind, True) if rec is not None else None
        chat = keys.telegram_chat(tb.tenant, chat_id)
        for qid_b in await self.redis.zrevrange(chat, 0, 9):
            qid = qid_b.decode()
            rec = await self.store.load(qid)
            if rec is None or rec.status != Status.PENDING:
                await self.redis.zrem(chat, qid)
                continue
            for i, target in enumerate(rec.targets):
                if target.get("channel") == "telegram" and str(target["chat_id"]) == chat_id:
                    return rec, i, "prompt", False
        return None

    async def on_message(self, message: Message, bot: Bot) -> None:
        tb = self.bots.by_bot(bot.id)
        user = message.from_user
        text = (message.text or "").strip()
        if tb is None or user is None or user.is_bot or not text:
            return
        if text.startswith("/") and text.split("@")[0] != "/skip":
            return  # bot commands (/start …) are not answers
        found = await self._find(tb, message)
        if found is None:
            return
        rec, index, kind, direct = found
        if rec.tenant != tb.tenant:
            return
        chat_id = str(message.chat.id)
        private = message.chat.type == "private"
        locale = rec.locale
        if not may_answer(tb, rec.targets[index], chat_id, private, user.id):
            if direct:  # a reply to the prompt is told why; room chatter is not ours
                await self._reply(message, tb, t(locale, "not_allowed"))
            return
        if kind == "prompt" and message.reply_to_message is not None:
            await self.worker.learn_message(rec, index, chat_id,
                                            message.reply_to_message.message_id,
                                            message.chat.type)
        if rec.status != Status.PENDING:
            if direct:
                await self._reply(message, tb, ended_message(rec.f["status"],
                                                             rec.f.get("reason"), locale))
            return
        who = responder(user)
        try:
            if kind == "other":
                q = rec.questions[0]
                picked = await self._selected(rec.id, index) if q.multiSelect else set()
                values = [o.label for i, o in enumerate(q.options) if i in picked] + [text]
                await self.store.answer(rec.tenant, rec.id, {q.id: values}, who)
                ack = t(locale, "submitted")
            else:
                rec, parsed = await self.store.apply_reply(rec, text, who)
                if parsed.kind == "incomplete":
                    await self._reply(message, tb, parsed.message or t(locale, "ended"))
                    return
                ack = t(locale, "summary_skipped" if parsed.kind == "skip" else "submitted")
        except AlreadyFinal as exc:
            ack = exc.message
        except (ValidationFailed, IncompleteAnswer) as exc:
            ack = exc.message
        log.info("question.reply", question_id=rec.id, kind=kind, user_id=user.id)
        await self._reply(message, tb, ack)


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


def webhook_app(inbound: Inbound, bots: Bots) -> web.Application:
    app = web.Application()
    TenantWebhook(inbound.dispatcher, bots).register(app, path="/telegram/{tenant}")

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app.router.add_get("/healthz", healthz)
    return app


async def poll(inbound: Inbound, tb: TenantBot, timeout_s: int, stop: asyncio.Event) -> None:
    """One bot's getUpdates loop; the offset moves past an update once it is handled."""
    bot = tb.bot
    with contextlib.suppress(TelegramAPIError):
        await bot.delete_webhook(drop_pending_updates=False)
    offset: int | None = None
    tries = 0
    log.info("polling.started", tenant=tb.tenant, bot=tb.bot_id)
    while not stop.is_set():
        try:
            updates = await bot.get_updates(
                offset=offset, timeout=timeout_s, allowed_updates=ALLOWED_UPDATES,
                request_timeout=int(bot.session.timeout + timeout_s))
        except TelegramConflictError as exc:
            log.warning("polling.conflict", tenant=tb.tenant, error=exc.message)
            await asyncio.sleep(POLL_BACKOFF_S)
            continue
        except TelegramAPIError as exc:
            log.warning("polling.failed", tenant=tb.tenant, error=exc.message)
            await asyncio.sleep(POLL_BACKOFF_S)
            continue
        for update in updates:
            try:
                await inbound.dispatcher.feed_update(bot, update)
            except Exception as exc:  # retried, then skipped (logged)
                tries += 1
                log.exception("update.failed", tenant=tb.tenant, update_id=update.update_id,
                              tries=tries, error=str(exc))
                if tries < POLL_MAX_TRIES:
                    await asyncio.sleep(POLL_BACKOFF_S)
                    break
            tries = 0
            offset = update.update_id + 1
