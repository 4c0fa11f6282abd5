"""Long-poll waiters: every waiter in this process shares one pattern subscription.

One connection PSUBSCRIBEs to every question's result channel once; a waiter is just a
future in a dict, so ten thousand waiters cost ten thousand futures, not connections.
The subscription is made before any waiter is served, so a result published after a
waiter registered always reaches it. When the subscription drops, every waiter is woken
to re-read its question (nothing published meanwhile is missed that way).
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog
from askgate.domain.errors import Unavailable
from askgate.domain.status import Status
from askgate.store import keys
from askgate.store.record import Record
from askgate.store.store import Store
from redis.asyncio import Redis
from redis.exceptions import RedisError

log = structlog.get_logger("askgate.api.waiters")

WAIT_MAX_S = 60
# Without a live subscription (Redis restarting) waiters re-read their question this often.
DEGRADED_POLL_S = 1.0

# After the subscription fails, wait this long before reconnecting so a Redis restart
# is not met with a reconnect storm from every API process at once.
RECONNECT_BACKOFF_S = 0.5


class Waiters:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    @property
    def count(self) -> int:
        return sum(len(s) for s in self._waiters.values())

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="askgate-waiters")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.ready.wait(), 2.0)

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._wake_all()

    def register(self, question_id: str) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(question_id, set()).add(fut)
        return fut

    def unregister(self, question_id: str, fut: asyncio.Future[None]) -> None:
        waiting = self._waiters.get(question_id)
        if waiting is not None:
            waiting.discard(fut)
            if not waiting:
                del self._waiters[question_id]

    def _wake(self, question_id: str) -> None:
        for fut in self._waiters.pop(question_id, ()):
            if not fut.done():
                fut.set_result(None)

    def _wake_all(self) -> None:
        for qid in list(self._waiters):
            self._wake(qid)

    async def _run(self) -> None:
        while True:
            pubsub = self._redis.pubsub()
            try:
                await pubsub.psubscribe(keys.RESULT_PATTERN)
                # The subscription is confirmed once its first reply is read.
                while True:
                    msg = await pubsub.get_message(timeout=5.0)
                    if msg and msg["type"] == "psubscribe":
                        break
                self.ready.set()
                self._wake_all()  # anything published while we were away: re-check
                log.info("waiters.subscribed")
                while True:
                    msg = await pubsub.get_message(timeout=30.0)
                    if msg is None or msg["type"] != "pmessage":
                        continue
                    channel: bytes = msg["channel"]
                    self._wake(channel.decode().rsplit(":", 1)[1])
            except (RedisError, OSError) as exc:
                self.ready.clear()
                self._wake_all()
                log.warning("waiters.disconnected", error=str(exc))
                await asyncio.sleep(RECONNECT_BACKOFF_S)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()


def _settle(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def wait_final(
    store: Store, waiters: Waiters, tenant: str, question_id: str, timeout_s: float
) -> Record:
    """The question once it is final, or after timeout_s (at most WAIT_MAX_S) as it is.

    While waiting only the status is re-read, and nothing but a future is held, so a
    process can keep tens of thousands of waiters. A Redis restart inside the window is
    ridden out by polling; if Redis is still away at the end, Unavailable (503)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + min(max(timeout_s, 0.0), WAIT_MAX_S)
    fut = waiters.register(question_id)  # before the read: no result can slip between
    try:
        status = await store.status_of(tenant, question_id)
        redis_down = False
        while status == Status.PENDING:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            if redis_down or not waiters.ready.is_set():
                remaining = min(remaining, DEGRADED_POLL_S)
            timer = loop.call_later(remaining, _settle, fut)
            try:
                await fut
            finally:
                timer.cancel()
            waiters.unregister(question_id, fut)
            fut = waiters.register(question_id)
            try:
                status = await store.status_of(tenant, question_id)
                redis_down = False
            except (RedisError, OSError):
                redis_down = True
        if redis_down:
            raise Unavailable("Redis is unreachable; call wait again shortly.", 1)
    finally:
        waiters.unregister(question_id, fut)
    return await store.get(tenant, question_id)
