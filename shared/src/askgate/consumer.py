"""The one stream consumer loop every channel worker uses (written once).

It creates the consumer group on every shard's stream idempotently, reads new entries
with XREADGROUP (bounded block), reclaims entries a dead consumer left pending with
XAUTOCLAIM, and XACKs an entry only after its handler returned. Entries of one question
are handled in order; different questions concurrently. A worker implements only
`handle(event)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog
from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

from askgate import keys

log = structlog.get_logger("askgate.consumer")

# After a Redis error, pause before reading again: a restarting Redis refuses
# connections for a moment, and spinning on it would only fill the log.
ERROR_BACKOFF_S = 0.5
# An entry delivered this many times without success is acknowledged as dead (logged),
# so one poison entry cannot block its stream forever.
MAX_DELIVERIES = 10


class RetryLater(Exception):
    """Raised by a handler to leave its entry pending without an error log (e.g. a chat
    under a platform rate limit): it is retried later, by the worker or by reclaim."""


@dataclass(frozen=True)
class Event:
    stream: str
    entry_id: str
    type: str
    question_id: str
    fields: dict[str, str]

    @property
    def shard(self) -> int:
        return keys.shard_of(self.question_id)


Handler = Callable[[Event], Awaitable[None]]


class StreamConsumer:
    def __init__(
        self,
        redis: Redis,
        channel: str,
        consumer: str,
        handler: Handler,
        *,
        block_ms: int = 2000,
        count: int = 100,
        claim_idle_ms: int = 30_000,
        claim_every_s: float = 5.0,
        grace_s: float = 10.0,
    ) -> None:
        self.redis = redis
        self.channel = channel
        self.group = keys.group(channel)
        self.consumer = consumer
        self.handler = handler
        self.block_ms = block_ms
        self.count = count
        self.claim_idle_ms = claim_idle_ms
        self.claim_every_s = claim_every_s
        self.grace_s = grace_s
        self.streams = keys.all_events(channel)
        self._last_claim = 0.0

    async def ensure_groups(self) -> None:
        for stream in self.streams:
            try:
                # From the start of the stream: events written before the first worker
                # ever started are still delivered.
                await self.redis.xgroup_create(stream, self.group, id="0", mkstream=True)
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise

    async def run(self, stop: asyncio.Event) -> None:
        log.info("consumer.started", channel=self.channel, consumer=self.consumer)
        groups_ready = False
        while not stop.is_set():
            try:
                if not groups_ready:
                    await self.ensure_groups()
                    groups_ready = True
                if time.monotonic() - self._last_claim >= self.claim_every_s:
                    self._last_claim = time.monotonic()
                    await self.process(await self.reclaim())
                batch = await self.read()
                await self.process(batch)
            except (RedisError, OSError) as exc:
                groups_ready = False
                log.warning("consumer.redis_error", channel=self.channel, error=str(exc))
                await asyncio.sleep(ERROR_BACKOFF_S)
        log.info("consumer.stopped", channel=self.channel, consumer=self.consumer)

    async def read(self) -> list[Event]:
        reply = await self.redis.xreadgroup(
            self.group, self.consumer, dict.fromkeys(self.streams, ">"),
            count=self.count, block=self.block_ms,
        )
        return [
            self._event(stream, entry_id, fields)
            for stream, entries in (reply or [])
            for entry_id, fields in entries
            if fields
        ]

    async def reclaim(self) -> list[Event]:
        """Entries pending longer than claim_idle_ms on any consumer (a dead one)."""
        out: list[Event] = []
        for stream in self.streams:
            start = "0-0"
            while True:
                reply = await self.redis.xautoclaim(
                    stream, self.group, self.consumer, self.claim_idle_ms, start, count=self.count
                )
                start, entries = reply[0], reply[1]
                for entry_id, fields in entries:
                    if not fields:
                        continue  # deleted by trimming: nothing left to do
                    out.append(self._event(stream, entry_id, fields))
                if start in (b"0-0", "0-0") or not entries:
                    break
        if out:
            out = await self._drop_dead(out)
            log.info("consumer.reclaimed", channel=self.channel, n=len(out))
        return out

    async def _drop_dead(self, events: list[Event]) -> list[Event]:
        alive = []
        for ev in events:
            info = await self.redis.xpending_range(
                ev.stream, self.group, min=ev.entry_id, max=ev.entry_id, count=1
            )
            if info and int(info[0]["times_delivered"]) > MAX_DELIVERIES:
                log.error("consumer.dead_entry", channel=self.channel, entry=ev.entry_id,
                          question_id=ev.question_id, type=ev.type)
                await self.redis.xack(ev.stream, self.group, ev.entry_id)
            else:
                alive.append(ev)
        return alive

    async def process(self, events: list[Event]) -> None:
        if not events:
            return
        by_question: dict[str, list[Event]] = {}
        for ev in events:
            by_question.setdefault(ev.question_id, []).append(ev)
        tasks = [asyncio.create_task(self._handle_in_order(evs)) for evs in by_question.values()]
        _done, pending = await asyncio.wait(tasks, timeout=None)
        for t in pending:  # pragma: no cover - wait without timeout leaves none
            t.cancel()

    async def _handle_in_order(self, events: list[Event]) -> None:
        for ev in events:
            try:
                await self.handler(ev)
            except asyncio.CancelledError:
                raise
            except RetryLater as exc:
                log.info("consumer.retry_later", channel=self.channel,
                         question_id=ev.question_id, type=ev.type, why=str(exc))
                return  # left pending; later events of this question wait, in order
            except Exception as exc:  # left pending: reclaimed and retried, in order
                log.exception("consumer.handler_failed", channel=self.channel,
                              question_id=ev.question_id, type=ev.type, error=str(exc))
                return  # later events of this question wait for the retry, in order
            with contextlib.suppress(RedisError, OSError):
                await self.redis.xack(ev.stream, self.group, ev.entry_id)

    def _event(self, stream: bytes | str, entry_id: bytes | str,
               fields: dict[bytes, bytes]) -> Event:
        f = {k.decode(): v.decode() for k, v in fields.items()}
        return Event(
            stream=stream.decode() if isinstance(stream, bytes) else stream,
            entry_id=entry_id.decode() if isinstance(entry_id, bytes) else entry_id,
            type=f.get("type", ""),
            question_id=f.get("id", ""),
            fields=f,
        )
