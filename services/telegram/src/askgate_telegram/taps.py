"""Button taps (callback queries): an option, a tick, Done, a pick among several
questions, Submit, Other… and Skip. Every tap is acknowledged at once (Telegram shows a
spinner until then); what the person is told comes from the kit's `Answering`."""

from __future__ import annotations

import structlog
from aiogram import Bot, Router
from aiogram.types import CallbackQuery, ForceReply, User
from askgate.channels import Answering, Outcome, PlatformError
from askgate.domain.i18n import t
from askgate.store.record import Record

from askgate_telegram import compose, render
from askgate_telegram.client import TenantBot, call
from askgate_telegram.context import OTHER, Context, allowed, responder, target_of
from askgate_telegram.render import Tap

log = structlog.get_logger("askgate.telegram")


class Taps:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.router = Router(name="taps")
        self.router.callback_query.register(self.on_callback)

    async def _ack(
        self, query: CallbackQuery, text: str | None = None, alert: bool = False
    ) -> None:
        # Telegram shows a spinner until the query is answered; too old is harmless.
        try:
            await call(lambda: query.answer(text=text, show_alert=alert or None))
        except PlatformError as exc:
            log.info("callback.ack_failed", error=exc.message)

    async def on_callback(self, query: CallbackQuery, bot: Bot) -> None:
        ctx = self.ctx
        tb = ctx.bots.by_bot(bot.id)
        try:
            tap = Tap.unpack(query.data or "")
        except (ValueError, TypeError):
            await self._ack(query)
            return
        rec = await ctx.store.load(tap.q)
        target = target_of(rec, tap.t) if rec is not None else None
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
            rec = await ctx.learn(rec, tap.t, chat_id, msg.message_id, msg.chat.type)
        if not rec.pending:
            delivery = rec.delivery(tap.t)
            if msg is not None and delivery.ref.get("message_id") == msg.message_id:
                await ctx.worker.finalise_prompt(rec, tap.t, target, delivery.ref)
            if tap.a[:1] != "o":  # only an option is an answer: it may be kept as late
                await self._ack(query, Answering.ended(rec).text)
                return
        await self._tap(query, tb, rec, tap, chat_id, private)

    async def _tap(
        self,
        query: CallbackQuery,
        tb: TenantBot,
        rec: Record,
        tap: Tap,
        chat_id: str,
        private: bool,
    ) -> None:
        ctx = self.ctx
        q, act = rec.questions[0], tap.a
        who = responder(query.from_user)
        option = int(act[1:]) if act[1:].isdigit() else -1
        outcome: Outcome | None = None
        if act[:1] == "o" and 0 <= option < len(q.options):
            outcome = await ctx.answering.answer(rec, {q.id: [q.options[option].label]}, who, tap.t)
        elif act == "s":
            outcome = await ctx.answering.skip(rec, who, tap.t)
        elif act == "x":
            await self._ack(query)
            await self._ask_other(tb, rec, tap.t, chat_id, private, query.from_user)
            return
        elif act[:1] == "t" and 0 <= option < len(q.options):
            await ctx.selections.toggle(rec.id, tap.t, option)
            await self._ack(query)
            await self._redraw(query, tb, rec, tap.t, chat_id)
            return
        elif act[:1] == "p":
            await self._pick(query, tb, rec, tap, chat_id)
            return
        elif act in ("d", "g"):
            outcome = await self._submit(query, rec, tap.t)
            if outcome is None:
                return
        if outcome is None:
            await self._ack(query)
            return
        await self._ack(query, outcome.text)
        log.info("question.tap", question_id=rec.id, outcome=outcome.kind, user_id=who.user_id)

    async def _pick(
        self, query: CallbackQuery, tb: TenantBot, rec: Record, tap: Tap, chat_id: str
    ) -> None:
        """One question's option among several: chosen (or ticked, multi-select)."""
        part, _, opt = tap.a[1:].partition(".")
        if not (
            part.isdigit()
            and opt.isdigit()
            and int(part) < len(rec.questions)
            and int(opt) < len(rec.questions[int(part)].options)
        ):
            await self._ack(query)
            return
        qi, oi = int(part), int(opt)
        if rec.questions[qi].multiSelect:
            await self.ctx.selections.toggle(rec.id, tap.t, oi, part=qi)
        else:
            await self.ctx.selections.put(rec.id, tap.t, [oi], part=qi)
        await self._ack(query)
        await self._redraw(query, tb, rec, tap.t, chat_id)

    async def _submit(self, query: CallbackQuery, rec: Record, index: int) -> Outcome | None:
        """Done (one multi-select question) or Submit (several): the picks so far."""
        picks = await self.ctx.selections.all(rec.id, index)
        if not picks:
            await self._ack(query, t(rec.locale, "pick_missing"))
            return None
        answers = {
            q.id: [o.label for oi, o in enumerate(q.options) if oi in picks[qi]]
            for qi, q in enumerate(rec.questions)
            if qi in picks
        }
        return await self.ctx.answering.answer(rec, answers, responder(query.from_user), index)

    async def _redraw(
        self, query: CallbackQuery, tb: TenantBot, rec: Record, index: int, chat_id: str
    ) -> None:
        """Show the picks (✓, and Submit once every question has one) on the tapped
        message."""
        msg = query.message
        if msg is None:
            return
        picks = await self.ctx.selections.all(rec.id, index)
        markup = render.keyboard(rec.questions, rec.locale, rec.id, index, picks)
        await self.ctx.call(
            chat_id,
            lambda: tb.bot.edit_message_reply_markup(
                chat_id=chat_id, message_id=msg.message_id, reply_markup=markup
            ),
        )

    async def _ask_other(
        self, tb: TenantBot, rec: Record, index: int, chat_id: str, private: bool, user: User
    ) -> None:
        body = compose.other_prompt(rec.locale, user, private_chat=private)
        sent = await self.ctx.call(
            chat_id,
            lambda: tb.bot.send_message(
                chat_id=chat_id, **body.kwargs(), reply_markup=ForceReply(selective=True)
            ),
        )
        if sent is not None:
            await self.ctx.worker.track(rec, index, chat_id, str(sent.message_id), OTHER)
