"""The event reader: one broadcast read of the `web` streams per process (one per shard
stream on a Redis Cluster), fanned out to the open pages of each session.

Every replica reads every event (plain XREAD from the streams' tails, no consumer group
that would hand an event to one replica only) and wakes the SSE connections of the
event's session (every entry names its tenant and session). A change only tells a page to
re-read its view, so nothing here needs to be exactly-once.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass

import orjson
import structlog
from askgate.domain.events import (
    EventType,
    QuestionCreated,
    QuestionEscalate,
    QuestionResolved,
    parse_event,
)
from askgate.store import keys
from askgate.store.conn import Client, read_groups
from redis.exceptions import RedisError

from askgate_web.config import ERROR_BACKOFF_S, READ_BLOCK_MS, READ_COUNT, SUBSCRIBER_BACKLOG

log = structlog.get_logger("askgate.web")
SessionKey = tuple[str, str]


@dataclass(frozen=True)
class Change:
    """One event of a session's question, as sent to its pages."""

    type: str
    question_id: str
    status: str = ""
    reason: str = ""

    def json(self) -> str:
        return orjson.dumps(
            {
                "type": self.type,
                "id": self.question_id,
                "status": self.status,
                "reason": self.reason,
            }
        ).decode()


Queue = asyncio.Queue[Change | None]


class PageFeed:
    """The SSE connections of this process by (tenant, session), and the reader that
    feeds them. `None` in a queue means the process is stopping: end the stream."""

    def __init__(self) -> None:
        self._subs: dict[SessionKey, set[Queue]] = defaultdict(set)
        self.closing = False
        self.ready = asyncio.Event()
        self._down: set[int] = set()  # readers not reading now

    @property
    def connections(self) -> int:
        return sum(len(queues) for queues in self._subs.values())

    def subscribe(self, tenant: str, session: str) -> Queue:
        queue: Queue = asyncio.Queue(SUBSCRIBER_BACKLOG)
        if self.closing:
            queue.put_nowait(None)
        self._subs[(tenant, session)].add(queue)
        return queue

    def unsubscribe(self, tenant: str, session: str, queue: Queue) -> None:
        queues = self._subs.get((tenant, session))
        if queues is not None:
            queues.discard(queue)
            if not queues:
                del self._subs[(tenant, session)]

    def publish(self, tenant: str, session: str, change: Change) -> int:
        """Wake the session's pages and the tenant's operator pages (subscribed with the
        session ``, which no session is named)."""
        queues = self._subs.get((tenant, session), set()) | self._subs.get((tenant, ""), set())
        for queue in queues:
            if not queue.full():
                queue.put_nowait(change)
        return len(queues)

    def close(self) -> None:
        """End every open stream (called once the server starts stopping)."""
        if self.closing:
            return
        self.closing = True
        for queues in self._subs.values():
            for queue in queues:
                while queue.full():
                    queue.get_nowait()
                queue.put_nowait(None)

    async def run(self, redis: Client) -> None:
        """Read the web streams until cancelled, from their tails at start-up: one
        blocking read of them all on one Redis, one per shard stream on a cluster
        (`conn.read_groups`). Ready while every reader reads."""
        groups = read_groups(redis, keys.all_events("web"))
        self._down = set(range(len(groups)))
        await asyncio.gather(*(self._read(redis, n, group) for n, group in enumerate(groups)))

    async def _read(self, redis: Client, n: int, names: list[str]) -> None:
        last: dict[str, str] = {}
        while not last:
            try:
                last = await self._tails(redis, names)
            except (RedisError, OSError) as exc:
                log.warning("web.redis_error", error=str(exc))
                await asyncio.sleep(ERROR_BACKOFF_S)
        self._up(n)
        log.info("web.reader_started", streams=len(last))
        # Until close(): a cancel that lands while redis-py waits out a blocking read can
        # be taken for a read timeout and retried, so the flag ends the loop for sure.
        while not self.closing:
            try:
                reply = await redis.xread(last, count=READ_COUNT, block=READ_BLOCK_MS)
            except (RedisError, OSError) as exc:
                if self.closing:
                    return
                # Keep the positions: the entries are still in the streams after an outage.
                self._down.add(n)
                self.ready.clear()
                log.warning("web.redis_error", error=str(exc))
                await asyncio.sleep(ERROR_BACKOFF_S)
                continue
            self._up(n)
            for stream, entries in reply or []:
                for entry_id, fields in entries:
                    last[stream.decode()] = entry_id.decode()
                    if self._subs:
                        self._dispatch(fields)

    def _up(self, n: int) -> None:
        self._down.discard(n)
        if not self._down:
            self.ready.set()

    async def _tails(self, redis: Client, names: list[str]) -> dict[str, str]:
        async with redis.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.xrevrange(name, count=1)
            rows = await pipe.execute()
        return {
            name: (row[0][0].decode() if row else "0-0")
            for name, row in zip(names, rows, strict=True)
        }

    def _dispatch(self, fields: dict[bytes, bytes]) -> None:
        event = parse_event({k.decode(): v.decode() for k, v in fields.items()})
        if event is None or not event.tenant:
            return  # a type this version does not know, or an entry of an older writer
        if isinstance(event, QuestionResolved):
            change = Change(
                EventType.RESOLVED,
                event.question_id,
                event.status.value,
                event.reason.value if event.reason else "",
            )
        elif isinstance(event, QuestionCreated):
            change = Change(EventType.CREATED, event.question_id)
        elif isinstance(event, QuestionEscalate):
            change = Change(EventType.ESCALATE, event.question_id)  # more deliveries
        else:
            return
        self.publish(event.tenant, event.session, change)
