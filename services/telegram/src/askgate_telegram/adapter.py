"""Telegram as a kit adapter: the prompt is a sendMessage with an inline keyboard, its
summary an editMessageText that drops the keyboard.

Telegram has no idempotency key, so a claim left by a worker that died mid-send is
assumed shown (never sent twice); the first tap or reply on that prompt supplies its
message id (inbound), and only then can it be edited into its summary.

Messages sent beside a prompt (tracked by the kit): a prompt shown again by /pending
("copy") becomes the summary too; helper messages (the "Other…" request, notes to the
person) are deleted, so the chat keeps the summary only.
"""

from __future__ import annotations

from typing import Any

from aiogram.types import Message, ReplyParameters
from askgate.channels import ExtraMessage, PermanentError, SentPrompt, StalePolicy
from askgate.domain.models import Target, TelegramTarget
from askgate.domain.signing import session_link
from askgate.domain.timeutil import now_ms
from askgate.store.record import Record

from askgate_telegram import compose, render
from askgate_telegram.client import CHANNEL, Bots, TenantBot, call, not_modified
from askgate_telegram.config import TelegramSettings
from askgate_telegram.render import Picks

COPY = "copy"  # a prompt shown again (/pending): it answers like the prompt


def entities_refused(exc: PermanentError) -> bool:
    # Telegram refusing the formatting ("can't parse entities", ENTITY_BOUNDS_INVALID):
    # nothing was sent, so the same words go again without it.
    text = exc.message.lower()
    return "entit" in text or "url" in text


def gone(exc: PermanentError) -> bool:
    """The message is not there any more (deleted by someone, or by an earlier try)."""
    return "not found" in exc.message or "MESSAGE_ID_INVALID" in exc.message


class TelegramAdapter:
    channel = CHANNEL
    stale_policy = StalePolicy.ASSUME_SHOWN

    def __init__(self, bots: Bots, settings: TelegramSettings) -> None:
        self.bots = bots
        self.settings = settings

    def destination(self, rec: Record, target: Target) -> str:
        assert isinstance(target, TelegramTarget)
        return target.chat_id

    async def bot(self, tenant: str) -> TenantBot:
        tb = await self.bots.get(tenant)
        if tb is None:
            raise PermanentError("no Telegram bot token is configured for this tenant")
        return tb

    def link(self, rec: Record) -> str | None:
        """The signed web page of the question's session (none without a secret key)."""
        s = self.settings
        if not s.secret_key:
            return None
        return session_link(s.web_base_url, s.secret_key, rec.tenant, rec.session, s.web_link_ttl_s)

    async def post_prompt(
        self, tb: TenantBot, rec: Record, index: int, chat_id: str, picks: Picks | None = None
    ) -> Message:
        """Send the question's prompt to a chat (also to show it again)."""
        body = compose.prompt(
            rec, now_ms(), link=self.link(rec), group=not render.private_chat(chat_id)
        )
        markup = render.keyboard(rec.questions, rec.locale, rec.id, index, picks)
        try:
            return await call(
                lambda: tb.bot.send_message(chat_id=chat_id, **body.kwargs(), reply_markup=markup)
            )
        except PermanentError as exc:
            if not entities_refused(exc):
                raise
        return await call(
            lambda: tb.bot.send_message(chat_id=chat_id, text=body.text, reply_markup=markup)
        )

    async def send_prompt(self, rec: Record, index: int, target: Target) -> SentPrompt:
        tb = await self.bot(rec.tenant)
        msg = await self.post_prompt(tb, rec, index, self.destination(rec, target))
        ref = {
            "chat_id": str(msg.chat.id),
            "message_id": msg.message_id,
            "bot": tb.bot_id,
            "chat_type": msg.chat.type,
        }
        return SentPrompt(ref=ref, message=str(msg.message_id), destination=str(msg.chat.id))

    async def finalise(self, rec: Record, index: int, target: Target, ref: dict[str, Any]) -> None:
        if not ref.get("message_id"):
            return  # assumed shown, never tapped: its message id is not known
        await self._summarise(
            rec,
            str(ref["chat_id"]),
            int(ref["message_id"]),
            private=ref.get("chat_type") == "private",
        )

    async def send_reminder(
        self, rec: Record, index: int, target: Target, ref: dict[str, Any], text: str, n: int
    ) -> SentPrompt | None:
        """A reply to the prompt (a plain message when its id is not known): deleted
        when the question ends, like every helper message."""
        tb = await self.bot(rec.tenant)
        chat_id = str(ref.get("chat_id") or self.destination(rec, target))
        reply = (
            ReplyParameters(message_id=int(ref["message_id"]), allow_sending_without_reply=True)
            if ref.get("message_id")
            else None
        )
        msg = await call(
            lambda: tb.bot.send_message(chat_id=chat_id, text=text, reply_parameters=reply)
        )
        return SentPrompt(message=str(msg.message_id), destination=str(msg.chat.id))

    async def finalise_message(self, rec: Record, target: Target, extra: ExtraMessage) -> None:
        if extra.kind == COPY:
            await self._summarise(
                rec,
                extra.destination,
                int(extra.message),
                private=render.private_chat(extra.destination),
            )
            return
        tb = await self.bot(rec.tenant)
        try:
            await call(
                lambda: tb.bot.delete_message(
                    chat_id=extra.destination, message_id=int(extra.message)
                )
            )
        except PermanentError as exc:
            if not gone(exc):
                raise

    async def _summarise(
        self, rec: Record, chat_id: str, message_id: int, *, private: bool
    ) -> None:
        tb = await self.bot(rec.tenant)
        text = render.summary(rec, private_chat=private)
        try:
            await call(
                lambda: tb.bot.edit_message_text(
                    text=text, chat_id=chat_id, message_id=message_id, reply_markup=None
                )
            )
        except PermanentError as exc:
            if not not_modified(exc):
                raise
