"""What the inbound handlers (taps, replies, commands) share: the kit's helpers, calls made
for a person (rate-gated, failures logged), notes that go when their question ends, and
which questions wait in a chat."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import structlog
from aiogram.types import Message, ReactionTypeEmoji, ReplyParameters, User
from askgate.channels import (
    Answering,
    ChannelWorker,
    may_answer,
)
from askgate.domain.models import Responder, TelegramTarget
from askgate.domain.status import DeliveryState
from askgate.store.record import Record
from askgate.store.store import Store

from askgate_telegram.adapter import TelegramAdapter
from askgate_telegram.client import CHANNEL, Bots, TenantBot, call
from askgate_telegram.compose import Body

log = structlog.get_logger("askgate.telegram")
T = TypeVar("T")

# 429s in a row one call made for a person absorbs before it is dropped (logged).
# Kinds of the messages sent about a question besides its prompt (the kit tracks them).
NOTE = "note"  # a message to the person about a question: deleted when it ends
OTHER = "other"  # the "Other…" request for free text: its reply is the answer
ACCEPTED = "👍"  # the reaction on a typed answer that counted (the prompt shows the rest)


def responder(user: User) -> Responder:
    return Responder(channel=CHANNEL, user_id=str(user.id), name=user.full_name)


def target_of(rec: Record, index: int) -> TelegramTarget | None:
    if not 0 <= index < len(rec.targets):
        return None
    target = rec.targets[index]
    return target if isinstance(target, TelegramTarget) else None


def shown_in(target: TelegramTarget, chat_id: str) -> bool:
    """The target names this chat (an @name target is whichever chat the prompt is in)."""
    want = target.chat_id
    return want == chat_id or not want.lstrip("-").isdigit()


def allowed(
    tb: TenantBot, target: TelegramTarget, chat_id: str, private: bool, user_id: int
) -> bool:
    """Only the target's own chat counts; then the kit's rule (the target's allow-list,
    else anyone in a private chat and the tenant's list in a group)."""
    if not shown_in(target, chat_id):
        return False
    target_ids = (
        [str(x) for x in target.allowed_user_ids] if target.allowed_user_ids is not None else None
    )
    return may_answer(
        str(user_id), target_allowed=target_ids, tenant_allowed=tb.allowed_user_ids, private=private
    )


class Context:
    def __init__(
        self, store: Store, bots: Bots, worker: ChannelWorker, adapter: TelegramAdapter
    ) -> None:
        self.store = store
        self.bots = bots
        self.worker = worker
        self.adapter = adapter
        self.prompts = worker.prompts
        self.selections = worker.selections
        self.answering = Answering(store)

    async def call(self, chat_id: str, fn: Callable[[], Awaitable[T]]) -> T | None:
        """A call made for a person (an ack, a reply), through the kit's rate gate."""
        return await self.worker.call_for_person(chat_id, lambda: call(fn))

    async def reply(
        self, message: Message, tb: TenantBot, body: Body, about: Sequence[tuple[Record, int]] = ()
    ) -> Message | None:
        """Answer a person's message; a note `about` pending questions is deleted when
        the first of them ends (it is about them only)."""
        chat_id = str(message.chat.id)
        sent = await self.call(
            chat_id,
            lambda: tb.bot.send_message(
                chat_id=chat_id,
                **body.kwargs(),
                reply_parameters=ReplyParameters(
                    message_id=message.message_id, allow_sending_without_reply=True
                ),
            ),
        )
        if sent is not None:
            for rec, index in about:
                await self.worker.track(rec, index, chat_id, str(sent.message_id), NOTE)
        return sent

    async def accepted(self, message: Message, tb: TenantBot, text: str) -> None:
        """A typed answer counted: a 👍 on it, since the prompt turns into the summary (a
        chat where reactions are off gets the words instead)."""
        chat_id = str(message.chat.id)
        done = await self.call(
            chat_id,
            lambda: tb.bot.set_message_reaction(
                chat_id=chat_id,
                message_id=message.message_id,
                reaction=[ReactionTypeEmoji(emoji=ACCEPTED)],
            ),
        )
        if not done:
            await self.reply(message, tb, Body.of(text))

    async def waiting(
        self, tb: TenantBot, chat_id: str
    ) -> list[tuple[Record, int, TelegramTarget]]:
        """Questions still pending whose prompt is shown in the chat, newest first, with
        their target there."""
        found: list[tuple[Record, int, TelegramTarget]] = []
        for qid in await self.prompts.shown_at(tb.tenant, chat_id):
            rec = await self.store.load(qid)
            if rec is None or rec.tenant != tb.tenant or not rec.pending:
                await self.prompts.forget(tb.tenant, chat_id, qid)
                continue
            for i, target in rec.targets_of(CHANNEL):
                assert isinstance(target, TelegramTarget)
                if shown_in(target, chat_id):
                    found.append((rec, i, target))
                    break
        return found

    async def learn(
        self, rec: Record, index: int, chat_id: str, message_id: int, chat_type: str
    ) -> Record:
        """A prompt assumed shown was tapped or replied to: record its message id now,
        so it can be edited into its summary. (Never a copy shown by /pending: the ledger
        keeps the prompt it delivered.)"""
        delivery = rec.delivery(index)
        if delivery.state != DeliveryState.DELIVERED or delivery.ref.get("message_id"):
            return rec
        known = await self.prompts.lookup(rec.tenant, chat_id, str(message_id))
        if known is not None and known.kind != "prompt":
            return rec
        ref = {
            **delivery.ref,
            "chat_id": chat_id,
            "message_id": message_id,
            "chat_type": chat_type,
            "unconfirmed": False,
        }
        await self.store.ledger.update_ref(rec, index, ref)
        await self.prompts.remember(rec.tenant, chat_id, rec.id, index, str(message_id))
        return await self.store.load(rec.id) or rec
