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
from askgate import keys
from redis.asyncio import Redis
from redis.exceptions import RedisError

log = structlog.get_logger("askgate.api.waiters")

# After the subscription fails, wait this long before reconnecting so a Redis restart
# is not met with a reconnect storm from every API process at once.
RECONNECT_BACKOFF_S = 0.5


class Hub:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    @property
    def count(self) -> int:
        return sum(len(s) for s in self._waiters.values())

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="askgate-hub")
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
                log.info("hub.subscribed")
                while True:
                    msg = await pubsub.get_message(timeout=30.0)
                    if msg is None or msg["type"] != "pmessage":
                        continue
                    channel: bytes = msg["channel"]
                    self._wake(channel.decode().rsplit(":", 1)[1])
            except (RedisError, OSError) as exc:
                self.ready.clear()
                self._wake_all()
                log.warning("hub.disconnected", error=str(exc))
                await asyncio.sleep(RECONNECT_BACKOFF_S)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
