"""Bot commands: /start and /help (this chat's id and how to answer, in the person's
language), /pending (the chat's waiting questions shown again) and /skip. In a group a
command picked from the menu reads `/cmd@<bot>`; one addressed to another bot is not
ours (aiogram's `Command` checks the mention against getMe)."""

from __future__ import annotations

import structlog
from aiogram import Bot, Router
from aiogram.filters import Command
from aiogram.types import BotCommand, Message
from askgate.domain.i18n import MESSAGES, locale_of, t

from askgate_telegram import compose
from askgate_telegram.adapter import COPY
from askgate_telegram.client import TenantBot, call
from askgate_telegram.compose import Body
from askgate_telegram.context import Context
from askgate_telegram.replies import Replies

log = structlog.get_logger("askgate.telegram")

MENU = ("pending", "skip", "help")
# At most this many waiting questions are shown again by one /pending.
PENDING_MAX = 3


class Commands:
    def __init__(self, ctx: Context, replies: Replies) -> None:
        self.ctx = ctx
        self.replies = replies
        self.router = Router(name="commands")
        self.router.message.register(self.on_help, Command("start", "help"))
        self.router.message.register(self.on_pending, Command("pending"))
        self.router.message.register(self.on_skip, Command("skip"))

    async def on_help(self, message: Message, bot: Bot) -> None:
        tb = self.ctx.bots.by_bot(bot.id)
        if tb is None:
            return
        locale = locale_of(message.from_user.language_code if message.from_user else None)
        chat_id = str(message.chat.id)
        body = compose.help_text(chat_id, locale, group=message.chat.type != "private")
        await self.ctx.reply(message, tb, body)

    async def on_skip(self, message: Message, bot: Bot) -> None:
        """`/skip`, `/skip@<bot>`: the skip word, for the question it replies to or the
        one waiting in the chat."""
        await self.replies.handle(message, bot, "/skip", skip=True)

    async def on_pending(self, message: Message, bot: Bot) -> None:
        """The chat's waiting questions again, each as a new prompt (oldest first, so the
        newest is nearest): its taps and replies count like the prompt's, and it turns
        into the summary too. The ledger keeps the prompt it delivered."""
        ctx = self.ctx
        tb = ctx.bots.by_bot(bot.id)
        if tb is None:
            return
        chat_id = str(message.chat.id)
        waiting = (await ctx.waiting(tb, chat_id))[:PENDING_MAX]
        if not waiting:
            locale = locale_of(message.from_user.language_code if message.from_user else None)
            await ctx.reply(message, tb, Body.of(t(locale, "no_pending")))
            return
        for rec, index, _ in reversed(waiting):
            picks = await ctx.selections.all(rec.id, index)
            sent = await ctx.call(
                chat_id,
                lambda rec=rec, index=index, picks=picks: (  # type: ignore[misc]
                    ctx.adapter.post_prompt(tb, rec, index, chat_id, picks)
                ),
            )
            if sent is not None:
                await ctx.worker.track(rec, index, chat_id, str(sent.message_id), COPY)
                log.info("prompt.shown_again", question_id=rec.id, chat_id=chat_id)


async def set_menu(tb: TenantBot) -> None:
    """The bot's command menu, in each of askgate's languages (en as the default)."""
    for locale in MESSAGES:
        commands = [BotCommand(command=c, description=t(locale, f"cmd_{c}")) for c in MENU]
        await call(
            lambda commands=commands, locale=locale: tb.bot.set_my_commands(  # type: ignore[misc]
                commands=commands, language_code=None if locale == "en" else locale
            )
        )
