"""Updates from Telegram → answers: one Dispatcher with a router per concern (commands.py,
taps.py, replies.py) over a shared context (context.py).

Both transports (updates.py: webhook or getUpdates) feed this Dispatcher. Every update
is handled once: the kit's dedupe per (bot, update_id) turns Telegram's retries and
replays into no-ops.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from aiogram import Bot, Dispatcher
from aiogram.types import TelegramObject, Update
from askgate.channels import ChannelWorker, Dedupe
from askgate.store.store import Store

from askgate_telegram.adapter import TelegramAdapter
from askgate_telegram.client import CHANNEL, Bots
from askgate_telegram.commands import Commands
from askgate_telegram.context import Context
from askgate_telegram.replies import Replies
from askgate_telegram.taps import Taps

log = structlog.get_logger("askgate.telegram")


class Inbound:
    def __init__(
        self, store: Store, bots: Bots, worker: ChannelWorker, adapter: TelegramAdapter
    ) -> None:
        self.ctx = Context(store, bots, worker, adapter)
        self.dedupe = Dedupe(store.redis, CHANNEL)
        replies = Replies(self.ctx)
        # No FSM: nothing here keeps conversation state in aiogram (a question's state is
        # in Redis), so the FSM middleware's storage look-up per update is skipped.
        self.dispatcher = Dispatcher(disable_fsm=True)
        self.dispatcher.update.outer_middleware(self._once)
        # Commands first: what no command handler takes falls through to the replies.
        self.dispatcher.include_routers(
            Commands(self.ctx, replies).router, Taps(self.ctx).router, replies.router
        )

    async def _once(
        self,
        handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
        event: TelegramObject,
        data: dict[str, Any],
    ) -> Any:
        assert isinstance(event, Update)
        bot: Bot = data["bot"]
        scope, update_id = str(bot.id), str(event.update_id)
        async with self.dedupe.once(scope, update_id) as new:
            if not new:
                log.info("update.duplicate", bot=bot.id, update_id=event.update_id)
                return None
            return await handler(event, data)
