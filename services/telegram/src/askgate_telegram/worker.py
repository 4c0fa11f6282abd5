"""Consume the Telegram stream: render each new question into its chats, and edit every
prompt into its summary when the question ends (here or on any other channel).

Never two prompts for one target: a target is claimed (pending → sending, with the
attempt's process and start time) before sendMessage and recorded as delivered with the
message id after it; the stream entry is acknowledged only then. An entry re-processed
after a crash finds `delivered` (skip) or a `sending` whose process is gone: that
sendMessage may have reached Telegram, so it is recorded as delivered without a message
id instead of being sent again; the first tap or reply on that prompt supplies the id.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

import orjson
import structlog
from aiogram.exceptions import TelegramAPIError, TelegramNetworkError
from aiogram.types import Message
from aiohttp import web
from askgate import keys
from askgate.consumer import Event, StreamConsumer
from askgate.health import beat_forever, instance_name
from askgate.record import Record
from askgate.status import Status
from askgate.store import Store
from askgate.timeutil import now_ms
from redis.asyncio import Redis
from redis.exceptions import RedisError

from askgate_telegram import render
from askgate_telegram.client import (
    Bots,
    ChatBusy,
    ChatGate,
    InFlight,
    RetryLater,
    TenantBot,
    is_permanent,
    not_modified,
    surely_unsent,
)
from askgate_telegram.config import TelegramSettings
from askgate_telegram.inbound import ALLOWED_UPDATES, Inbound, poll, webhook_app

SERVICE = "telegram"
CHANNEL = "telegram"
# A throttled chat's event is retried in-process this many times before reclaim takes it.
MAX_DEFERRALS = 5
log = structlog.get_logger("askgate.telegram")


def delivery_doc(rec: Record, index: int) -> dict[str, Any]:
    raw = rec.f.get(f"d:{index}")
    return dict(orjson.loads(raw)) if raw else {}


def telegram_targets(rec: Record) -> list[tuple[int, dict[str, Any]]]:
    return [(i, tg) for i, tg in enumerate(rec.targets) if tg.get("channel") == CHANNEL]


class Worker:
    """The stream handler: `question.created` → prompts, `question.resolved` → summaries."""

    def __init__(self, redis: Redis, store: Store, bots: Bots, gate: ChatGate,
                 settings: TelegramSettings) -> None:
        self.redis = redis
        self.store = store
        self.bots = bots
        self.gate = gate
        self.settings = settings
        self.keep_s = settings.result_ttl_s
        # Identifies this process in the claims it writes (a restart is another process).
        self.proc = uuid.uuid4().hex[:12]
        self._deferred: dict[str, asyncio.Task[None]] = {}

    async def handle(self, ev: Event) -> None:
        try:
            await self._handle(ev)
        except ChatBusy as exc:
            self._defer(ev, exc.wait_s)
            raise

    async def _handle(self, ev: Event) -> None:
        if ev.type == "question.created":
            await self.deliver_all(ev.question_id)
        elif ev.type == "question.resolved":
            await self.finalise_all(ev.question_id)

    def _defer(self, ev: Event, wait_s: float) -> None:
        """Retry an event of a throttled chat after its retry_after, here, without
        holding the consumer; its entry stays pending until then (a crash → reclaim)."""
        if ev.entry_id not in self._deferred:
            self._deferred[ev.entry_id] = asyncio.create_task(self._retry(ev, wait_s))

    async def _retry(self, ev: Event, wait_s: float) -> None:
        try:
            for _ in range(MAX_DEFERRALS):
                await asyncio.sleep(wait_s)
                try:
                    await self._handle(ev)
                except ChatBusy as exc:
                    wait_s = exc.wait_s
                    continue
                await self.redis.xack(ev.stream, keys.group(CHANNEL), ev.entry_id)
                return
        except Exception as exc:  # left pending: reclaim retries it
            log.warning("event.retry_failed", question_id=ev.question_id, error=str(exc))
        finally:
            self._deferred.pop(ev.entry_id, None)

    async def close(self) -> None:
        tasks = list(self._deferred.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- delivery --------------------------------------------------------------------------

    async def deliver_all(self, qid: str) -> None:
        rec = await self.store.load(qid)
        if rec is None:
            return
        for index, target in telegram_targets(rec):
            await self.deliver(rec, index, target)
        # The question may have ended while we were sending: its resolved event could
        # have found no message id yet, so make sure our prompts show the summary.
        rec = await self.store.load(qid)
        if rec is not None and rec.status != Status.PENDING:
            await self.finalise_all(qid, rec)

    async def deliver(self, rec: Record, index: int, target: dict[str, Any]) -> None:
        if rec.status != Status.PENDING:
            return
        chat_id = str(target["chat_id"])
        state = rec.f.get(f"ds:{index}", "pending")
        if state in ("delivered", "failed"):
            return
        tb = await self.bots.get(rec.tenant)
        if state == "sending":
            await self._reconcile(rec, index, chat_id, tb)
            return
        if tb is None:
            await self._failed(rec, index, "no Telegram bot token is configured for this tenant")
            return
        # A throttled chat is retried later, before claiming: nothing to undo then.
        await self.gate.ready(chat_id, wait=False)
        attempt = {"chat_id": chat_id, "bot": tb.bot_id, "proc": self.proc,
                   "started": now_ms()}
        ok, cur = await self.store.set_delivery(rec.id, index, "sending", expect="pending",
                                                ref={"attempt": attempt})
        if ok != "ok":
            log.info("prompt.claimed_elsewhere", question_id=rec.id, target=index, state=cur)
            return
        prompt = render.prompt(rec.questions, rec.locale, rec.id, index)
        try:
            msg = await self.gate.call(chat_id, lambda: tb.bot.send_message(
                chat_id=chat_id, text=prompt.text, reply_markup=prompt.markup), wait=False)
        except RetryLater:
            await self.store.set_delivery(rec.id, index, "pending", expect="sending")
            raise
        except TelegramNetworkError as exc:
            if surely_unsent(exc):
                await self.store.set_delivery(rec.id, index, "pending", expect="sending")
                raise RetryLater(str(exc)) from exc
            await self._in_doubt(rec, index, chat_id, tb, str(exc))
            return
        except TelegramAPIError as exc:
            if not is_permanent(exc):
                await self.store.set_delivery(rec.id, index, "pending", expect="sending")
                raise RetryLater(str(exc)) from exc
            await self._failed(rec, index, exc.message, expect="sending")
            return
        await self._delivered(rec, index, tb, msg)

    async def _delivered(self, rec: Record, index: int, tb: TenantBot, msg: Message) -> None:
        chat_id = str(msg.chat.id)
        ref = {"chat_id": chat_id, "message_id": msg.message_id, "bot": tb.bot_id,
               "chat_type": msg.chat.type}
        await self.store.set_delivery(rec.id, index, "delivered", expect="sending", ref=ref)
        await self.remember(rec.tenant, chat_id, msg.message_id, rec.id, index, "prompt")
        log.info("prompt.sent", question_id=rec.id, tenant=rec.tenant, target=index,
                 chat_id=chat_id, message_id=msg.message_id)

    async def _failed(self, rec: Record, index: int, error: str, expect: str = "") -> None:
        _, ended = await self.store.set_delivery(rec.id, index, "failed", expect=expect,
                                                  error=error)
        log.warning("prompt.failed", question_id=rec.id, tenant=rec.tenant, target=index,
                    error=error, question_ended=ended == "1")

    async def _reconcile(self, rec: Record, index: int, chat_id: str,
                         tb: TenantBot | None) -> None:
        """A target left in `sending`: still in flight elsewhere, or a crash's leftover."""
        attempt = (delivery_doc(rec, index).get("ref") or {}).get("attempt") or {}
        age_ms = now_ms() - int(attempt.get("started") or 0)
        if attempt.get("proc") == self.proc or age_ms < self.settings.telegram_send_lease_ms:
            raise InFlight(f"{rec.id} target {index} is being sent")
        await self._in_doubt(rec, index, chat_id, tb, "the sending process stopped")

    async def _in_doubt(self, rec: Record, index: int, chat_id: str, tb: TenantBot | None,
                        why: str) -> None:
        # Telegram has no idempotency key: resending could show the prompt twice, so the
        # prompt counts as shown; a tap or reply on it later supplies its message id.
        ref = {"chat_id": chat_id, "message_id": None, "bot": tb.bot_id if tb else None,
               "chat_type": None, "unconfirmed": True}
        ok, _ = await self.store.set_delivery(rec.id, index, "delivered", expect="sending",
                                              ref=ref)
        if ok == "ok":
            await self.redis.zadd(keys.telegram_chat(rec.tenant, chat_id), {rec.id: now_ms()})
        log.warning("prompt.in_doubt", question_id=rec.id, tenant=rec.tenant, target=index,
                    chat_id=chat_id, why=why)

    async def remember(self, tenant: str, chat_id: str, message_id: int, qid: str,
                       index: int, kind: str) -> None:
        """Map a bot message to its question, and the chat to its pending questions."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.set(keys.telegram_prompt(tenant, chat_id, message_id), f"{qid} {index} {kind}",
                     ex=self.keep_s)
            if kind == "prompt":
                chat = keys.telegram_chat(tenant, chat_id)
                pipe.zadd(chat, {qid: now_ms()})
                pipe.expire(chat, self.keep_s)
            await pipe.execute()

    async def learn_message(self, rec: Record, index: int, chat_id: str, message_id: int,
                            chat_type: str) -> None:
        """An in-doubt prompt was tapped or replied to: record its message id now."""
        doc = delivery_doc(rec, index)
        ref = doc.get("ref") or {}
        if rec.f.get(f"ds:{index}") != "delivered" or ref.get("message_id"):
            return
        ref = {**ref, "chat_id": chat_id, "message_id": message_id, "chat_type": chat_type,
               "unconfirmed": False}
        await self.store.set_delivery(rec.id, index, "delivered", expect="delivered", ref=ref)
        rec.f[f"d:{index}"] = orjson.dumps({**doc, "ref": ref}).decode()
        await self.remember(rec.tenant, chat_id, message_id, rec.id, index, "prompt")

    # -- finalisation ------------------------------------------------------------------------

    async def finalise_all(self, qid: str, rec: Record | None = None) -> None:
        rec = rec or await self.store.load(qid)
        if rec is None or rec.status == Status.PENDING:
            return
        for index, _target in telegram_targets(rec):
            ref = delivery_doc(rec, index).get("ref") or {}
            if rec.f.get(f"ds:{index}") == "delivered" and ref.get("message_id"):
                await self.finalise(rec, str(ref["chat_id"]), int(ref["message_id"]),
                                    ref.get("chat_type") == "private", wait=False)
        async with self.redis.pipeline(transaction=False) as pipe:
            for index, target in telegram_targets(rec):
                pipe.zrem(keys.telegram_chat(rec.tenant, str(target["chat_id"])), qid)
                pipe.delete(keys.telegram_selection(qid, index))
            await pipe.execute()

    async def finalise(self, rec: Record, chat_id: str, message_id: int,
                       private_chat: bool, *, wait: bool) -> None:
        """Edit one prompt into its summary and drop its keyboard (idempotent)."""
        tb = await self.bots.get(rec.tenant)
        if tb is None:
            return
        text = render.summary(rec.f["status"], rec.f.get("reason") or None, rec.result,
                              rec.locale, rec.questions, private_chat=private_chat)
        try:
            await self.gate.call(chat_id, lambda: tb.bot.edit_message_text(
                text=text, chat_id=chat_id, message_id=message_id, reply_markup=None),
                wait=wait)
        except TelegramAPIError as exc:
            if not_modified(exc):
                return
            if not is_permanent(exc):
                raise RetryLater(str(exc)) from exc
            # Deleted message, bot removed from the chat: nothing left to edit.
            log.warning("prompt.edit_failed", question_id=rec.id, chat_id=chat_id,
                        error=exc.message)
            return
        log.info("prompt.finalised", question_id=rec.id, tenant=rec.tenant, chat_id=chat_id,
                 status=rec.f["status"], reason=rec.f.get("reason") or None)


def consumer_name() -> str:
    return f"{instance_name()}-{os.getpid()}"


class TelegramService:
    """The whole worker: stream consumer, bots, inbound (webhook or polling), health."""

    def __init__(self, settings: TelegramSettings, redis: Redis | None = None) -> None:
        self.settings = settings
        self._own_redis = redis is None
        self.redis = redis or Redis.from_url(settings.redis_url, socket_connect_timeout=2.0,
                                             socket_timeout=60.0)
        self.store = Store(self.redis, settings)
        self.bots = Bots(self.redis, settings)
        self.gate = ChatGate(settings.telegram_max_retry_wait_s)
        self.worker = Worker(self.redis, self.store, self.bots, self.gate, settings)
        self.inbound = Inbound(self.redis, self.store, self.bots, self.gate, self.worker)
        self.consumer = StreamConsumer(
            self.redis, CHANNEL, consumer_name(), self.worker.handle,
            block_ms=settings.telegram_block_ms,
            claim_idle_ms=settings.telegram_claim_idle_ms,
            claim_every_s=settings.telegram_claim_every_s,
        )
        self.stop = asyncio.Event()
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._pollers: dict[str, tuple[str, asyncio.Task[None]]] = {}
        self._hooked: dict[str, str] = {}

    async def start(self) -> None:
        s = self.settings
        try:
            await self.bots.refresh()
        except (RedisError, OSError) as exc:
            log.warning("telegram.refresh_failed", error=str(exc))
        if not self.bots.all():
            log.warning("telegram.no_bots", hint="askgate tenant channel TENANT telegram "
                        "bot_token=<token from @BotFather>; questions with Telegram targets "
                        "end as delivery_failed until then")
        if s.telegram_mode == "webhook":
            self._runner = web.AppRunner(webhook_app(self.inbound, self.bots),
                                         handle_signals=False, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, s.telegram_webhook_host, s.telegram_webhook_port)
            await site.start()
            self.port = int(self._runner.addresses[0][1])  # the real one when 0 was asked
            log.info("webhook.listening", host=s.telegram_webhook_host, port=self.port)
        await self._sync_bots()
        self._tasks = [
            asyncio.create_task(self.consumer.run(self.stop)),
            asyncio.create_task(beat_forever(self.redis, SERVICE, self.stop)),
            asyncio.create_task(self._refresh_forever()),
        ]

    async def _refresh_forever(self) -> None:
        while not self.stop.is_set():
            try:
                await asyncio.wait_for(self.stop.wait(), self.settings.telegram_tenant_refresh_s)
                return
            except TimeoutError:
                pass
            try:
                await self.bots.refresh()
                await self._sync_bots()
            except (RedisError, OSError) as exc:
                log.warning("telegram.refresh_failed", error=str(exc))

    async def _sync_bots(self) -> None:
        """Start or stop polling loops (or set webhooks) to match the configured bots."""
        s = self.settings
        current = {tb.tenant: tb for tb in self.bots.all()}
        if s.telegram_mode == "polling":
            for tenant, (token, task) in list(self._pollers.items()):
                if tenant not in current or current[tenant].bot.token != token:
                    task.cancel()
                    del self._pollers[tenant]
            for tenant, tb in current.items():
                if tenant not in self._pollers:
                    task = asyncio.create_task(
                        poll(self.inbound, tb, s.telegram_polling_timeout_s, self.stop))
                    self._pollers[tenant] = (tb.bot.token, task)
        elif s.telegram_webhook_url:
            for tenant, tb in current.items():
                if self._hooked.get(tenant) == tb.bot.token or not tb.webhook_secret:
                    continue
                url = f"{s.telegram_webhook_url.rstrip('/')}/telegram/{tenant}"
                try:
                    await tb.bot.set_webhook(url=url, secret_token=tb.webhook_secret,
                                             allowed_updates=ALLOWED_UPDATES)
                    self._hooked[tenant] = tb.bot.token
                    log.info("webhook.set", tenant=tenant, url=url)
                except TelegramAPIError as exc:
                    log.warning("webhook.set_failed", tenant=tenant, error=exc.message)

    async def close(self) -> None:
        self.stop.set()
        pollers = [task for _, task in self._pollers.values()]
        for task in pollers:
            task.cancel()
        # The consumer finishes its current batch (bounded by its block and handlers).
        _, pending = await asyncio.wait(self._tasks, timeout=self.consumer.grace_s)
        for task in (*pending, *pollers):
            task.cancel()
        await asyncio.gather(*pending, *pollers, return_exceptions=True)
        await self.worker.close()
        if self._runner is not None:
            await self._runner.cleanup()
        await self.bots.close()
        if self._own_redis:
            await self.redis.aclose()


async def serve(settings: TelegramSettings, stop: asyncio.Event) -> None:
    service = TelegramService(settings)
    await service.start()
    try:
        await stop.wait()
    finally:
        await service.close()
