"""Updates from Telegram → answers: button taps, "Other…" free text, text replies.

Both transports (updates.py: webhook or getUpdates) feed this Dispatcher. Every update
is handled once: the kit's dedupe per (bot, update_id) turns Telegram's retries and
replays into no-ops. What the person is told comes from the kit's `Answering`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import structlog
from aiogram import Bot, Dispatcher
from aiogram.types import (
    CallbackQuery,
    ForceReply,
    Message,
    ReplyParameters,
    TelegramObject,
    Update,
    User,
)
from askgate.channels import (
    Answering,
    ChannelWorker,
    Dedupe,
    Outcome,
    PlatformError,
    ThrottledError,
    may_answer,
)
from askgate.i18n import t
from askgate.models import Responder, TelegramTarget
from askgate.record import Record
from askgate.status import DeliveryState
from askgate.store import Store

from askgate_telegram import render
from askgate_telegram.client import CHANNEL, Bots, TenantBot, call
from askgate_telegram.render import Tap

log = structlog.get_logger("askgate.telegram")
T = TypeVar("T")

# 429s in a row one reply to a person absorbs before it is dropped (logged).
MAX_THROTTLES = 5


def responder(user: User) -> Responder:
    return Responder(channel=CHANNEL, user_id=str(user.id), name=user.full_name)


def allowed(tb: TenantBot, target: TelegramTarget, chat_id: str, private: bool,
            user_id: int) -> bool:
    """Only the target's own chat counts; then the kit's rule (the target's allow-list,
    else anyone in a private chat and the tenant's list in a group)."""
    want = target.chat_id
    if want.lstrip("-").isdigit() and want != chat_id:
        return False
    target_ids = [str(x) for x in target.allowed_user_ids] if target.allowed_user_ids \
        is not None else None
    return may_answer(str(user_id), target_allowed=target_ids,
                      tenant_allowed=tb.allowed_user_ids, private=private)


class Inbound:
    def __init__(self, store: Store, bots: Bots, worker: ChannelWorker) -> None:
        self.store = store
        self.bots = bots
        self.worker = worker
        self.prompts = worker.prompts
        self.selections = worker.selections
        self.answering = Answering(store)
        self.dedupe = Dedupe(store.redis, CHANNEL)
        self.dispatcher = Dispatcher()
        self.dispatcher.update.outer_middleware(self._once)
        self.dispatcher.callback_query.register(self.on_callback)
        self.dispatcher.message.register(self.on_message)

    async def _once(self, handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
                    event: TelegramObject, data: dict[str, Any]) -> Any:
        assert isinstance(event, Update)
        bot: Bot = data["bot"]
        scope, update_id = str(bot.id), str(event.update_id)
        if not await self.dedupe.first(scope, update_id):
            log.info("update.duplicate", bot=bot.id, update_id=event.update_id)
            return None
        try:
            return await handler(event, data)
        except BaseException:
            await self.dedupe.forget(scope, update_id)
            raise

    async def _call(self, chat_id: str, fn: Callable[[], Awaitable[T]]) -> T | None:
        """A call made for a person (an ack, a reply): it waits out the chat's 429, and a
        failure is logged, not raised (the answer itself already counted)."""
        gate = self.worker.gate
        for _ in range(MAX_THROTTLES):
            wait = gate.wait_s(chat_id)
            if wait > self.worker.policy.max_wait_s:
                break
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                return await call(fn)
            except ThrottledError as exc:
                gate.block(chat_id, exc.retry_after_s or 1.0)
            except PlatformError as exc:
                log.info("telegram.call_failed", chat_id=chat_id, error=exc.message)
                return None
        log.warning("telegram.call_dropped", chat_id=chat_id, why="rate limited")
        return None

    # -- taps --------------------------------------------------------------------------

    async def _ack(self, query: CallbackQuery, text: str | None = None,
                   alert: bool = False) -> None:
        # Telegram shows a spinner until the query is answered; too old is harmless.
        try:
            await call(lambda: query.answer(text=text, show_alert=alert or None))
        except PlatformError as exc:
            log.info("callback.ack_failed", error=exc.message)

    async def on_callback(self, query: CallbackQuery, bot: Bot) -> None:
        tb = self.bots.by_bot(bot.id)
        try:
            tap = Tap.unpack(query.data or "")
        except (ValueError, TypeError):
            await self._ack(query)
            return
        rec = await self.store.load(tap.q)
        target = _target(rec, tap.t) if rec is not None else None
        if tb is None or rec is None or rec.tenant != tb.tenant or target is None:
            await self._ack(query, t(rec.locale if rec else "en", "expired"))
            return
        msg = query.message
        chat_id = str(msg.chat.id) if msg else target.chat_id
        private = msg is not None and msg.chat.type == "private"
        user = query.from_user
        if not allowed(tb, target, chat_id, private, user.id):
            log.info("callback.refused", question_id=rec.id, user_id=user.id, chat_id=chat_id)
            await self._ack(query, Answering.refused(rec).text, alert=True)
            return
        if msg is not None:
            rec = await self._learn(rec, tap.t, chat_id, msg.message_id, msg.chat.type)
        if not rec.pending:
            await self._ack(query, Answering.ended(rec).text)
            delivery = rec.delivery(tap.t)
            if delivery.ref.get("message_id"):
                await self.worker.finalise_prompt(rec, tap.t, target, delivery.ref)
            return
        await self._tap(query, tb, rec, tap, chat_id, private)

    async def _tap(self, query: CallbackQuery, tb: TenantBot, rec: Record, tap: Tap,
                   chat_id: str, private: bool) -> None:
        q, act = rec.questions[0], tap.a
        who = responder(query.from_user)
        option = int(act[1:]) if act[1:].isdigit() else -1
        outcome: Outcome | None = None
        if act[:1] == "o" and 0 <= option < len(q.options):
            outcome = await self.answering.answer(rec, {q.id: [q.options[option].label]}, who)
        elif act == "s":
            outcome = await self.answering.skip(rec, who)
        elif act == "x":
            await self._ack(query)
            await self._ask_other(tb, rec, tap.t, chat_id, private, query.from_user)
            return
        elif act[:1] == "t" and 0 <= option < len(q.options):
            await self._toggle(query, tb, rec, tap.t, option, chat_id)
            return
        elif act == "d":
            picked = await self.selections.get(rec.id, tap.t)
            if not picked:
                await self._ack(query, t(rec.locale, "pick_missing"))
                return
            labels = [o.label for i, o in enumerate(q.options) if i in picked]
            outcome = await self.answering.answer(rec, {q.id: labels}, who)
        if outcome is None:
            await self._ack(query)
            return
        await self._ack(query, outcome.text)
        log.info("question.tap", question_id=rec.id, outcome=outcome.kind, user_id=who.user_id)

    async def _toggle(self, query: CallbackQuery, tb: TenantBot, rec: Record, index: int,
                      option: int, chat_id: str) -> None:
        picked = await self.selections.toggle(rec.id, index, option)
        await self._ack(query)
        markup = render.keyboard(rec.questions, rec.locale, rec.id, index, picked)
        msg = query.message
        if msg is not None:
            await self._call(chat_id, lambda: tb.bot.edit_message_reply_markup(
                chat_id=chat_id, message_id=msg.message_id, reply_markup=markup))

    async def _ask_other(self, tb: TenantBot, rec: Record, index: int, chat_id: str,
                         private: bool, user: User) -> None:
        text, entities = render.other_prompt(rec.locale, user, private_chat=private)
        sent = await self._call(chat_id, lambda: tb.bot.send_message(
            chat_id=chat_id, text=text, entities=entities or None,
            reply_markup=ForceReply(selective=True)))
        if sent is not None:
            await self.prompts.remember(rec.tenant, chat_id, rec.id, index,
                                        str(sent.message_id), kind="other")

    async def _learn(self, rec: Record, index: int, chat_id: str, message_id: int,
                     chat_type: str) -> Record:
        """A prompt assumed shown was tapped or replied to: record its message id now,
        so it can be edited into its summary."""
        delivery = rec.delivery(index)
        if delivery.state != DeliveryState.DELIVERED or delivery.ref.get("message_id"):
            return rec
        ref = {**delivery.ref, "chat_id": chat_id, "message_id": message_id,
               "chat_type": chat_type, "unconfirmed": False}
        await self.store.ledger.update_ref(rec, index, ref)
        await self.prompts.remember(rec.tenant, chat_id, rec.id, index, str(message_id))
        return await self.store.load(rec.id) or rec

    # -- text ----------------------------------------------------------------------------

    async def _reply(self, message: Message, tb: TenantBot, text: str) -> None:
        chat_id = str(message.chat.id)
        await self._call(chat_id, lambda: tb.bot.send_message(
            chat_id=chat_id, text=text,
            reply_parameters=ReplyParameters(message_id=message.message_id)))

    async def _find(self, tb: TenantBot, message: Message
                    ) -> tuple[Record, int, str, bool] | None:
        """The question a message answers: the prompt it replies to, else the newest
        question still pending in the chat. (record, target index, kind, direct)."""
        chat_id = str(message.chat.id)
        reply_to = message.reply_to_message
        if reply_to is not None:
            ref = await self.prompts.lookup(tb.tenant, chat_id, str(reply_to.message_id))
            if ref is not None:
                rec = await self.store.load(ref.question_id)
                return (rec, ref.index, ref.kind, True) if rec is not None else None
        for qid in await self.prompts.shown_at(tb.tenant, chat_id):
            rec = await self.store.load(qid)
            if rec is None or not rec.pending:
                await self.prompts.forget(tb.tenant, chat_id, qid)
                continue
            for i, target in rec.targets_of(CHANNEL):
                assert isinstance(target, TelegramTarget)
                if target.chat_id == chat_id:
                    return rec, i, "prompt", False
        return None

    async def on_message(self, message: Message, bot: Bot) -> None:
        tb = self.bots.by_bot(bot.id)
        user = message.from_user
        text = (message.text or "").strip()
        if tb is None or user is None or user.is_bot or not text:
            return
        if text.startswith("/"):
            command = text.split()[0].split("@")[0]
            if command != "/skip":
                return  # other bot commands (/start …) are not answers
            text = "skip"  # `/skip` or `/skip@<bot>` (a command picked from the menu)
        found = await self._find(tb, message)
        if found is None:
            return
        rec, index, kind, direct = found
        target = _target(rec, index)
        if rec.tenant != tb.tenant or target is None:
            return
        chat_id = str(message.chat.id)
        private = message.chat.type == "private"
        if not allowed(tb, target, chat_id, private, user.id):
            if direct:  # a reply to the prompt is told why; room chatter is not ours
                await self._reply(message, tb, Answering.refused(rec).text)
            return
        if kind == "prompt" and message.reply_to_message is not None:
            rec = await self._learn(rec, index, chat_id, message.reply_to_message.message_id,
                                    message.chat.type)
        if not rec.pending:
            if direct:
                await self._reply(message, tb, Answering.ended(rec).text)
            return
        who = responder(user)
        if kind == "other":
            q = rec.questions[0]
            picked = await self.selections.get(rec.id, index) if q.multiSelect else set()
            values = [o.label for i, o in enumerate(q.options) if i in picked] + [text]
            outcome = await self.answering.answer(rec, {q.id: values}, who)
        else:
            outcome = await self.answering.reply(rec, text, who)
        log.info("question.reply", question_id=rec.id, kind=kind, outcome=outcome.kind,
                 user_id=user.id)
        await self._reply(message, tb, outcome.text)


def _target(rec: Record, index: int) -> TelegramTarget | None:
    if not 0 <= index < len(rec.targets):
        return None
    target = rec.targets[index]
    return target if isinstance(target, TelegramTarget) else None
