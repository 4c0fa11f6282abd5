"""The one stream consumer loop every channel worker uses (written once).

It creates the consumer group on every shard's stream idempotently, reads new entries
with XREADGROUP (bounded block), reclaims entries a dead consumer left pending with
XAUTOCLAIM (every stream of a node in one pipeline: `conn.node_groups`), and XACKs an
entry only after its handler returned (the entries finished meanwhile in one round
trip). On one Redis one blocking read covers every shard's stream; on a Redis Cluster,
where a command's keys must share a slot, there is one reader per shard stream
(`conn.read_groups`), each holding one connection while it blocks, so a consumer holds
at most SHARDS connections for reading.
Entries of one question are handled in order; different questions concurrently, up to
`max_in_flight` at once, and the readers keep reading while handlers run: one slow
handler holds only its own question's entries. A worker implements only `handle(event)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

from askgate.domain.events import QuestionEvent, parse_event
from askgate.store import keys
from askgate.store.conn import node_groups, read_groups, unblock_reads, warm

log = structlog.get_logger("askgate.consumer")

# After a Redis error, pause before reading again: a restarting Redis refuses
# connections for a moment, and spinning on it would only fill the log.
ERROR_BACKOFF_S = 0.5
# An entry delivered this many times without success is acknowledged as dead (logged),
# so one poison entry cannot block its stream forever.
MAX_DELIVERIES = 10
# A stopping consumer ends its readers' blocking reads, and again after this long for a
# reader that was between two reads (the next one blocks).
UNBLOCK_AGAIN_S = 0.05


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

    @property
    def payload(self) -> QuestionEvent | None:
        """The typed event (None for a type this version does not know)."""
        return parse_event(self.fields)


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
        max_in_flight: int = 256,
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
        self.max_in_flight = max_in_flight
        self.streams = keys.all_events(channel)
        self._last_claim = 0.0
        # Per question: its entries not yet handled, in order, and the task handling them.
        self._queues: dict[str, list[Event]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        # (stream, entry id) taken and not yet done: ids repeat across streams (two shards
        # may each get `<ms>-0` in the same millisecond).
        self._in_flight: set[tuple[str, str]] = set()
        # Entries handled and not yet acknowledged, by stream, and the task sending them.
        self._acks: dict[str, list[str]] = {}
        self._acking: asyncio.Task[None] | None = None

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    async def ensure_groups(self, streams: list[str] | None = None) -> None:
        """The group on each of `streams` (all of the consumer's by default), made where
        it is missing: one round trip for the streams of a node."""
        for group in node_groups(self.redis, self.streams if streams is None else streams):
            async with self.redis.pipeline(transaction=False) as pipe:
                for stream in group:
                    # From the start of the stream: events written before the first
                    # worker ever started are still delivered.
                    pipe.xgroup_create(stream, self.group, id="0", mkstream=True)
                replies = await pipe.execute(raise_on_error=False)
            for reply in replies:
                if isinstance(reply, ResponseError) and "BUSYGROUP" in str(reply):
                    continue
                if isinstance(reply, Exception):
                    raise reply

    async def run(self, stop: asyncio.Event) -> None:
        """Read (one task per read group) and reclaim every claim_every_s until `stop`,
        then drain the handlers in flight."""
        log.info("consumer.started", channel=self.channel, consumer=self.consumer)
        await warm(self.redis)  # before the readers start at once
        readers = [
            asyncio.create_task(self._read_loop(group, stop))
            for group in read_groups(self.redis, self.streams)
        ]
        try:
            while not stop.is_set():
                if time.monotonic() - self._last_claim >= self.claim_every_s:
                    self._last_claim = time.monotonic()
                    try:
                        await self.touch_in_flight()
                        self.dispatch(await self.reclaim())
                    except (RedisError, OSError) as exc:
                        log.warning("consumer.redis_error", channel=self.channel, error=str(exc))
                    except Exception:  # the next round tries again, as after a Redis error
                        log.exception("consumer.reclaim_failed", channel=self.channel)
                wait = self.claim_every_s - (time.monotonic() - self._last_claim)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), max(wait, 0.01))
        finally:
            await self._end_reads(readers)
            await asyncio.gather(*readers, return_exceptions=True)
            await self.drain()
            await self.acked()
        log.info("consumer.stopped", channel=self.channel, consumer=self.consumer)

    async def _end_reads(self, readers: list[asyncio.Task[None]]) -> None:
        """Each reader ends after its current read: at once where this consumer's client
        may end its blocking reads (`conn.unblock_reads`), else within block_ms. A reader
        between two reads when asked blocks in the next one, so this asks again until
        every reader has ended."""
        pending = {reader for reader in readers if not reader.done()}
        while pending:
            try:
                await unblock_reads(self.redis)
            except (RedisError, OSError) as exc:
                log.info("consumer.reads_not_unblocked", channel=self.channel, error=str(exc))
                return
            _, pending = await asyncio.wait(pending, timeout=UNBLOCK_AGAIN_S)

    async def _read_loop(self, streams: list[str], stop: asyncio.Event) -> None:
        """Read new entries of `streams` (one blocking read at a time) until `stop`. An
        error pauses this reader only: on a cluster the other shards' go on."""
        groups_ready = False
        while not stop.is_set():
            try:
                if not groups_ready:
                    await self.ensure_groups(streams)
                    groups_ready = True
                room = self.max_in_flight - len(self._in_flight)
                if room <= 0:
                    await self._wait_for_room()
                    continue
                self.dispatch(await self.read(min(self.count, room), streams))
            except (RedisError, OSError) as exc:
                groups_ready = False
                log.warning("consumer.redis_error", channel=self.channel, error=str(exc))
                await asyncio.sleep(ERROR_BACKOFF_S)
            except Exception:
                # Anything else too: a reader that ended would leave its shards' new
                # entries unread for good (nobody reclaims an entry never delivered).
                groups_ready = False
                log.exception("consumer.read_failed", channel=self.channel)
                await asyncio.sleep(ERROR_BACKOFF_S)

    async def _wait_for_room(self) -> None:
        tasks = list(self._tasks.values())
        if tasks:
            await asyncio.wait(
                tasks, timeout=self.block_ms / 1000, return_when=asyncio.FIRST_COMPLETED
            )

    async def drain(self) -> None:
        """Give the handlers in flight `grace_s` to finish, then cancel them: their
        entries stay pending and another consumer reclaims them."""
        tasks = list(self._tasks.values())
        if not tasks:
            return
        _, late = await asyncio.wait(tasks, timeout=self.grace_s)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)

    def dispatch(self, events: list[Event]) -> None:
        """Start handling `events`: in order per question, concurrently across them."""
        for ev in events:
            if (ev.stream, ev.entry_id) in self._in_flight:
                continue  # reclaimed from ourselves while still being handled
            self._in_flight.add((ev.stream, ev.entry_id))
            self._queues.setdefault(ev.question_id, []).append(ev)
            if ev.question_id not in self._tasks:
                self._tasks[ev.question_id] = asyncio.create_task(
                    self._handle_question(ev.question_id)
                )

    async def process(self, events: list[Event]) -> None:
        """Handle `events` and wait until they are done (tests and one-shot callers)."""
        self.dispatch(events)
        tasks = [self._tasks[q] for q in {ev.question_id for ev in events} if q in self._tasks]
        if tasks:
            await asyncio.wait(tasks)
        await self.acked()

    async def read(self, count: int | None = None, streams: list[str] | None = None) -> list[Event]:
        """New entries of `streams` (default: every shard's, which on a cluster only one
        stream per call may be), waiting up to block_ms for one."""
        reply = await self.redis.xreadgroup(
            self.group,
            self.consumer,
            dict.fromkeys(self.streams if streams is None else streams, ">"),
            count=count or self.count,
            block=self.block_ms,
        )
        return [
            self._event(stream, entry_id, fields)
            for stream, entries in (reply or [])
            for entry_id, fields in entries
            if fields
        ]

    async def touch_in_flight(self) -> None:
        """Reset the idle time of the entries this consumer is still handling (XCLAIM
        JUSTID does not count a delivery), so that nobody reclaims them, and so a long
        handling is not taken for a dead one."""
        by_stream: dict[str, list[str]] = {}
        for stream, entry_id in self._in_flight:
            by_stream.setdefault(stream, []).append(entry_id)
        for stream, ids in by_stream.items():
            await self.redis.xclaim(stream, self.group, self.consumer, 0, ids, justid=True)

    async def reclaim(self) -> list[Event]:
        """Entries pending longer than claim_idle_ms on any consumer (a dead one). One
        XAUTOCLAIM per stream, pipelined: a round trip per node rather than one per
        stream (a round of 64 streams: 34 -> 3-4 ms of CPU on one Redis, 17-19 -> 3.5-3.8
        on a 3-master cluster)."""
        groups = node_groups(self.redis, self.streams)
        failed: list[BaseException] = []  # each stream's own error
        replies = await asyncio.gather(
            *(self._reclaim_group(group, failed) for group in groups), return_exceptions=True
        )
        out: list[Event] = []
        reached = -len(failed)
        for group, reply in zip(groups, replies, strict=True):
            if isinstance(reply, RedisError | OSError):
                failed.append(reply)  # its node is down: the others go on
            elif isinstance(reply, BaseException):
                raise reply
            else:
                out += reply
                reached += len(group)
        if failed:
            if reached <= 0:
                raise failed[0]
            log.warning("consumer.reclaim_error", channel=self.channel, error=str(failed[0]))
        if out:
            out = await self._drop_dead(out)
            log.info("consumer.reclaimed", channel=self.channel, n=len(out))
        return out

    async def _reclaim_group(self, streams: list[str], failed: list[BaseException]) -> list[Event]:
        """The first page of every stream of `streams` in one pipeline; a stream with more
        than `count` entries to claim goes on page by page. A stream's own error goes to
        `failed` and the others go on; a node that is down fails them all (raised)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for stream in streams:
                pipe.xautoclaim(
                    stream, self.group, self.consumer, self.claim_idle_ms, "0-0", count=self.count
                )
            replies = await pipe.execute(raise_on_error=False)
        out: list[Event] = []
        for stream, reply in zip(streams, replies, strict=True):
            if isinstance(reply, ResponseError) and "NOGROUP" in str(reply):
                continue  # its reader has not created the group yet: nothing pending
            if isinstance(reply, RedisError | OSError):
                failed.append(reply)
                continue
            if isinstance(reply, BaseException):
                raise reply
            start, more = self._claimed(stream, reply, out)
            while more:
                reply = await self.redis.xautoclaim(
                    stream, self.group, self.consumer, self.claim_idle_ms, start, count=self.count
                )
                start, more = self._claimed(stream, reply, out)
        return out

    def _claimed(self, stream: str, reply: list[Any], out: list[Event]) -> tuple[Any, bool]:
        """Adds the events of one XAUTOCLAIM reply to `out`; its next start, and whether
        there is more to claim after it."""
        start, entries = reply[0], reply[1]
        for entry_id, fields in entries:
            if fields:  # an entry deleted by trimming has nothing left to do
                out.append(self._event(stream, entry_id, fields))
        return start, bool(entries) and start not in (b"0-0", "0-0")

    async def _drop_dead(self, events: list[Event]) -> list[Event]:
        alive = []
        for ev in events:
            info = await self.redis.xpending_range(
                ev.stream, self.group, min=ev.entry_id, max=ev.entry_id, count=1
            )
            if info and int(info[0]["times_delivered"]) > MAX_DELIVERIES:
                log.error(
                    "consumer.dead_entry",
                    channel=self.channel,
                    entry=ev.entry_id,
                    question_id=ev.question_id,
                    type=ev.type,
                )
                await self.redis.xack(ev.stream, self.group, ev.entry_id)
            else:
                alive.append(ev)
        return alive

    async def _handle_question(self, question_id: str) -> None:
        queue = self._queues[question_id]
        try:
            while queue:
                ev = queue[0]
                if not await self._handle(ev):
                    # Left pending: it and this question's later entries are retried
                    # together, in order, when reclaimed.
                    break
                queue.pop(0)
                self._in_flight.discard((ev.stream, ev.entry_id))
        finally:
            for ev in queue:
                self._in_flight.discard((ev.stream, ev.entry_id))
            del self._queues[question_id]
            del self._tasks[question_id]

    async def _handle(self, ev: Event) -> bool:
        """Run the handler; XACK on success. False when the entry stays pending."""
        try:
            await self.handler(ev)
        except asyncio.CancelledError:
            raise
        except RetryLater as exc:
            log.info(
                "consumer.retry_later",
                channel=self.channel,
                question_id=ev.question_id,
                type=ev.type,
                why=str(exc),
            )
            return False
        except Exception as exc:  # left pending: reclaimed and retried, in order
            log.exception(
                "consumer.handler_failed",
                channel=self.channel,
                question_id=ev.question_id,
                type=ev.type,
                error=str(exc),
            )
            return False
        self._acks.setdefault(ev.stream, []).append(ev.entry_id)
        if self._acking is None:
            self._acking = asyncio.create_task(self._send_acks())
        return True

    async def _send_acks(self) -> None:
        """XACK what the handlers finished, in one round trip: what finishes while one is
        on its way goes in the next (a round trip costs the worker more CPU than most of
        a handler's own work). An ack that fails leaves its entry pending: reclaimed and
        handled again, as when the process dies before acking."""
        try:
            while self._acks:
                acks, self._acks = self._acks, {}
                with contextlib.suppress(RedisError, OSError):
                    if len(acks) == 1:  # the usual case: a pipeline of one costs 25-40 µs more
                        [(stream, ids)] = acks.items()
                        await self.redis.xack(stream, self.group, *ids)
                    else:
                        pipe = self.redis.pipeline(transaction=False)
                        for stream, ids in acks.items():
                            pipe.xack(stream, self.group, *ids)
                        await pipe.execute()
        finally:
            self._acking = None

    async def acked(self) -> None:
        """Until every handled entry's XACK has been sent."""
        while self._acking is not None:
            await asyncio.shield(self._acking)

    def _event(
        self, stream: bytes | str, entry_id: bytes | str, fields: dict[bytes, bytes]
    ) -> Event:
        f = {k.decode(): v.decode() for k, v in fields.items()}
        return Event(
            stream=stream.decode() if isinstance(stream, bytes) else stream,
            entry_id=entry_id.decode() if isinstance(entry_id, bytes) else entry_id,
            type=f.get("type", ""),
            question_id=f.get("id", ""),
            fields=f,
        )
