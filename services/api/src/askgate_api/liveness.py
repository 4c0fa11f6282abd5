"""Which chat channels have a live worker, as the API sees them when an ask comes in.

Every channel worker refreshes `keys.channel_live(<channel>)` every few seconds (see
askgate.runtime.health). The API re-reads them at most once a second, so the check costs one
MGET per second per process, not one per ask. A channel that died since is caught by
the sweeper's watchdog within `channel_grace_s`.
"""

from __future__ import annotations

import time

from askgate.domain.models import CHANNELS
from askgate.runtime.health import live_channels
from redis.asyncio import Redis

# Channels whose prompts a worker must deliver (the Control UI can always show a web one).
CHAT_CHANNELS = [ch for ch in CHANNELS if ch != "web"]
MAX_AGE_S = 1.0


class Liveness:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self._live: set[str] = set()
        self._read_at = float("-inf")

    async def live(self) -> set[str]:
        if time.monotonic() - self._read_at >= MAX_AGE_S:
            self._live = await live_channels(self.redis, CHAT_CHANNELS)
            self._read_at = time.monotonic()
        return self._live
