"""The sweeper's timer pass at a chosen time: reminders and escalation steps fall due
without waiting (the store and the sweeper take `now`)."""

from __future__ import annotations

from typing import Any

from askgate.settings import Settings
from askgate.store.store import Store
from askgate_sweeper.__main__ import timers_once
from redis.asyncio import Redis

from tests.support.asks import SECRET


async def fire_timers(redis: Redis, at_ms: int, **overrides: Any) -> int:
    """What a sweeper's pass fires at `at_ms` (ms since the epoch); how many fired."""
    settings = Settings(redis_url="redis://unused", secret_key=SECRET, **overrides)
    return await timers_once(Store(redis, settings), at_ms)


def created_ms(resource: dict[str, Any]) -> int:
    """The ask's creation time (ms) from its resource: what its timers count from."""
    from datetime import datetime

    return int(
        datetime.fromisoformat(resource["created_at"].replace("Z", "+00:00")).timestamp() * 1000
    )
