"""Liveness for long-running processes: a health key with a TTL, and `--check`.

A process refreshes `askgate:health:<service>:<host>` every HEALTH_EVERY_S; the key
expires after HEALTH_TTL_S, so a hung process disappears. `check()` is what a container
liveness probe runs (`askgate-sweeper --check`): exit 0 only when this host's key is fresh.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable

import orjson
import structlog
from redis.asyncio import Redis

from askgate.domain.timeutil import now_ms
from askgate.store import keys
from askgate.store.conn import connect

HEALTH_EVERY_S = 5.0
HEALTH_TTL_S = 20
# A channel counts as served while a worker refreshed its live key this recently.
CHANNEL_LIVE_TTL_MS = 15_000

log = structlog.get_logger("askgate.health")

# A process's own view of itself: None when well, else what is wrong (e.g. an inbound
# loop that keeps failing). While it is unwell it stops beating, so `--check` fails.
Problem = Callable[[], str | None]


def instance_name() -> str:
    return os.environ.get("ASKGATE_INSTANCE") or socket.gethostname()


async def beat(redis: Redis, service: str, channel: str | None = None) -> None:
    """This process is alive (and, for a channel worker, its channel is served)."""
    doc = orjson.dumps({"pid": os.getpid(), "at": now_ms()})
    async with redis.pipeline(transaction=False) as pipe:
        pipe.set(keys.health(service, instance_name()), doc, ex=HEALTH_TTL_S)
        if channel is not None:
            pipe.set(keys.channel_live(channel), now_ms(), px=CHANNEL_LIVE_TTL_MS)
        await pipe.execute()


async def beat_forever(
    redis: Redis,
    service: str,
    stop: asyncio.Event,
    *,
    channel: str | None = None,
    problem: Problem | None = None,
) -> None:
    """Refresh the health key (and, for a channel worker, the channel's live key) until
    `stop`, then remove the health key (a clean stop is not alive)."""
    while not stop.is_set():
        trouble = problem() if problem is not None else None
        try:
            if trouble is None:
                await beat(redis, service, channel)
            else:
                log.warning("health.unwell", service=service, problem=trouble)
        except Exception as exc:  # a missed beat shows as an expired key
            log.warning("health.beat_failed", service=service, error=str(exc))
        try:
            await asyncio.wait_for(stop.wait(), HEALTH_EVERY_S)
        except TimeoutError:
            pass
    try:
        await redis.delete(keys.health(service, instance_name()))
    except Exception as exc:  # the key expires by itself anyway
        log.info("health.unregister_failed", service=service, error=str(exc))


async def live_channels(redis: Redis, channels: list[str]) -> set[str]:
    """The channels some worker beat for within CHANNEL_LIVE_TTL_MS."""
    values = await redis.mget([keys.channel_live(ch) for ch in channels])
    return {ch for ch, v in zip(channels, values, strict=True) if v is not None}


async def check(redis_url: str, service: str, *, cluster: bool = False) -> int:
    redis = connect(redis_url, cluster=cluster, max_connections=2, connect_timeout_s=2.0)
    try:
        return 0 if await redis.exists(keys.health(service, instance_name())) else 1
    except Exception:  # an unreachable Redis means not healthy
        return 1
    finally:
        await redis.aclose()
