"""Typed answers: a reply to a prompt (or to its copy, or to the "Other…" request), a
plain message while one question waits in the chat, and an edit of either while its
question is still pending.

With two or more questions waiting, a plain message answers none of them: the person is
asked to reply to the prompt they mean. An answer that counted gets a 👍 (the prompt
becomes the summary); a correction or a refusal is a note that goes when the question
ends.
"""

from __future__ import annotations

import structlog
from aiogram import Bot, Router
from aiogram.types import Message
from askgate.channels import Answering
from askgate.store.record import Record

from askgate_telegram import compose
from askgate_telegram.adapter import COPY
from askgate_telegram.client import TenantBot
from askgate_telegram.compose import Body
from askgate_telegram.context import OTHER, Context, allowed, responder, target_of
from askgate_telegram.render import Tap

log = structlog.get_logger("askgate.telegram")


def _sent_before(message: Message, rec: Record) -> bool:
    """The message was written before the question was asked (Telegram dates are whole
    seconds): an edit of it is not an answer."""
    return int(message.date.timestamp()) < rec.created_ms // 1000


class Replies:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.router = Router(name="replies")
        self.router.message.register(self.on_message)
        self.router.edited_message.register(self.on_edited)

    async def on_message(self, message: Message, bot: Bot) -> None:
        text = (message.text or "").strip()
        if text.startswith("/"):
            return  # commands are commands.py's; one for another bot is not an answer
        await self.handle(message, bot, text)

    async def on_edited(self, edited: Message, bot: Bot) -> None:
        """An edited reply counts as the answer while its question is pending."""
        text = (edited.text or "").strip()
        if not text.startswith("/"):
            await self.handle(edited, bot, text, edited=True)

    async def _direct(self, tb: TenantBot, message: Message) -> tuple[Record, int, str] | None:
        """The question a reply is about: the prompt (or its copy, or the "Other…"
        request) it replies to. A reply to a note is read as a plain message."""
        reply_to = message.reply_to_message
        if reply_to is None:
            return None
        ref = await self.ctx.prompts.lookup(
            tb.tenant, str(message.chat.id), str(reply_to.message_id)
        )
        if ref is None:
            return await self._by_keyboard(tb, reply_to)
        if ref.kind not in ("prompt", COPY, OTHER):
            return None
        rec = await self.ctx.store.load(ref.question_id)
        return (rec, ref.index, ref.kind) if rec is not None else None

    async def _by_keyboard(
        self, tb: TenantBot, reply_to: Message
    ) -> tuple[Record, int, str] | None:
        """A reply to one of this bot's prompts that the worker has not recorded yet (the
        person was quicker than the confirm that follows the send, or the worker died
        before it): the prompt's buttons name its question and target."""
        user = reply_to.from_user
        markup = reply_to.reply_markup
        if user is None or user.id != tb.bot_id or markup is None:
            return None
        for row in markup.inline_keyboard:
            for button in row:
                try:
                    tap = Tap.unpack(button.callback_data or "")
                except (ValueError, TypeError):
                    continue
                rec = await self.ctx.store.load(tap.q)
                return (rec, tap.t, "prompt") if rec is not None else None
        return None

    async def handle(
        self, message: Message, bot: Bot, text: str, *, edited: bool = False, skip: bool = False
    ) -> None:
        """`text` answers the question the message is about; `skip` (the /skip command)
        skips it, even where typed text would be free text."""
        ctx = self.ctx
        tb = ctx.bots.by_bot(bot.id)
        user = message.from_user
        if tb is None or user is None or user.is_bot or not text:
            return
        chat_id = str(message.chat.id)
        private = message.chat.type == "private"
        direct = await self._direct(tb, message)
        if direct is None:
            waiting = [
                (rec, i)
                for rec, i, target in await ctx.waiting(tb, chat_id)
                if allowed(tb, target, chat_id, private, user.id)
                and not (edited and _sent_before(message, rec))
            ]
            if len(waiting) > 1:
                # Two sessions ask in one chat: which one this answers is the person's call.
                await ctx.reply(
                    message, tb, compose.which([rec for rec, _ in waiting]), about=waiting
                )
                log.info(
                    "question.reply_ambiguous",
                    chat_id=chat_id,
                    questions=[rec.id for rec, _ in waiting],
                )
                return
            if not waiting:
                return  # room chatter, or nothing asked here
            (rec, index), kind = waiting[0], "prompt"
        else:
            rec, index, kind = direct
            target = target_of(rec, index)
            if rec.tenant != tb.tenant or target is None:
                return
            if not allowed(tb, target, chat_id, private, user.id):
                # A reply to the prompt is told why; room chatter is not ours.
                await ctx.reply(
                    message,
                    tb,
                    Body.of(Answering.refused(rec).text),
                    about=[(rec, index)] if rec.pending else (),
                )
                return
            if kind == "prompt" and message.reply_to_message is not None:
                rec = await ctx.learn(
                    rec, index, chat_id, message.reply_to_message.message_id, message.chat.type
                )
            if not rec.pending and (skip or edited):
                # A skip or an edit after the end is no answer; a reply may be a late one.
                await ctx.reply(message, tb, Body.of(Answering.ended(rec).text))
                return
        await self._answer(message, tb, rec, index, kind, text, skip)

    async def _answer(
        self,
        message: Message,
        tb: TenantBot,
        rec: Record,
        index: int,
        kind: str,
        text: str,
        skip: bool,
    ) -> None:
        ctx = self.ctx
        assert message.from_user is not None
        who = responder(message.from_user)
        if skip:
            outcome = await ctx.answering.skip(rec, who, index)
        elif kind == OTHER:
            q = rec.questions[0]
            picked = await ctx.selections.get(rec.id, index) if q.multiSelect else set()
            values = [o.label for i, o in enumerate(q.options) if i in picked] + [text]
            outcome = await ctx.answering.answer(rec, {q.id: values}, who, index)
        else:
            outcome = await ctx.answering.reply(rec, text, who, index)
        log.info(
            "question.reply",
            question_id=rec.id,
            kind=kind,
            outcome=outcome.kind,
            user_id=who.user_id,
        )
        if outcome.accepted:
            await ctx.accepted(message, tb, outcome.text)
        elif outcome.kind in ("ended", "late"):
            await ctx.reply(message, tb, Body.of(outcome.text))
        else:  # a correction: it goes when the question ends
            await ctx.reply(message, tb, Body.of(outcome.text), about=[(rec, index)])
