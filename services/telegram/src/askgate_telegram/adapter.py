"""Telegram as a kit adapter: the prompt is a sendMessage with an inline keyboard, its
summary an editMessageText that drops the keyboard.

Telegram has no idempotency key, so a claim left by a worker that died mid-send is
assumed shown (never sent twice); the first tap or reply on that prompt supplies its
message id (inbound.py), and only then can it be edited into its summary.
"""

from __future__ import annotations

from typing import Any

from askgate.channels import PermanentError, SentPrompt, StalePolicy
from askgate.models import Target, TelegramTarget
from askgate.record import Record

from askgate_telegram import render
from askgate_telegram.client import CHANNEL, Bots, TenantBot, call, not_modified


class TelegramAdapter:
    channel = CHANNEL
    stale_policy = StalePolicy.ASSUME_SHOWN

    def __init__(self, bots: Bots) -> None:
        self.bots = bots

    def destination(self, rec: Record, target: Target) -> str:
        assert isinstance(target, TelegramTarget)
        return target.chat_id

    async def _bot(self, tenant: str) -> TenantBot:
        tb = await self.bots.get(tenant)
        if tb is None:
            raise PermanentError("no Telegram bot token is configured for this tenant")
        return tb

    async def send_prompt(self, rec: Record, index: int, target: Target) -> SentPrompt:
        tb = await self._bot(rec.tenant)
        chat_id = self.destination(rec, target)
        prompt = render.prompt(rec.questions, rec.locale, rec.id, index)
        msg = await call(lambda: tb.bot.send_message(chat_id=chat_id, text=prompt.text,
                                                     reply_markup=prompt.markup))
        ref = {"chat_id": str(msg.chat.id), "message_id": msg.message_id, "bot": tb.bot_id,
               "chat_type": msg.chat.type}
        return SentPrompt(ref=ref, message=str(msg.message_id), destination=str(msg.chat.id))

    async def finalise(self, rec: Record, index: int, target: Target,
                       ref: dict[str, Any]) -> None:
        if not ref.get("message_id"):
            return  # assumed shown, never tapped: its message id is not known
        tb = await self._bot(rec.tenant)
        text = render.summary(rec, private_chat=ref.get("chat_type") == "private")
        chat_id, message_id = str(ref["chat_id"]), int(ref["message_id"])
        try:
            await call(lambda: tb.bot.edit_message_text(
                text=text, chat_id=chat_id, message_id=message_id, reply_markup=None))
        except PermanentError as exc:
            if not not_modified(exc):
                raise
