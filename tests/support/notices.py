"""The public result notices (pub/sub) as a test sees them: how many per question."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter

from askgate.store import keys
from redis.asyncio import Redis

from tests.support.waiting import eventually


class Notifications:
    """Counts result messages per question id on the public result channels."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self.counts: Counter[str] = Counter()
        self.payloads: dict[str, bytes] = {}
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Notifications:
        self.pubsub = self.redis.pubsub()
        await self.pubsub.psubscribe(keys.RESULT_PATTERN)
        await self.pubsub.get_message(timeout=1.0)  # the subscribe confirmation
        self._task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        while True:
            msg = await self.pubsub.get_message(timeout=1.0)
            if msg and msg["type"] == "pmessage":
                qid = msg["channel"].decode().rsplit(":", 1)[1]
                self.counts[qid] += 1
                self.payloads[qid] = msg["data"]

    async def settle(self, expected: int) -> None:
        """Until `expected` notices have arrived; then a moment more, so that a notice
        published twice would be counted before the test looks."""
        await eventually(
            lambda: sum(self.counts.values()) >= expected, f"{expected} result notices", 60
        )
        await asyncio.sleep(0.2)  # not a wait for a condition: room for an extra notice

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self.pubsub.aclose()
        await self.redis.aclose()
