"""Liveness for long-running processes: a health key with a TTL, and `--check`.

A process refreshes `askgate:health:<service>:<host>` every HEALTH_EVERY_S; the key
expires after HEALTH_TTL_S, so a hung process disappears. `check()` is what a container
liveness probe runs (`askgate-sweeper --check`): exit 0 only when this host's key is fresh.
"""

from __future__ import annotations

import asyncio
import os
import socket

import orjson
from redis.asyncio import Redis

from askgate import keys
from askgate.timeutil import now_ms

HEALTH_EVERY_S = 5.0
HEALTH_TTL_S = 20


def instance_name() -> str:
    return os.environ.get("ASKGATE_INSTANCE") or socket.gethostname()


async def beat(redis: Redis, service: str, **info: object) -> None:
    doc = orjson.dumps({"pid": os.getpid(), "at": now_ms(), **info})
    await redis.set(keys.health(service, instance_name()), doc, ex=HEALTH_TTL_S)


async def beat_forever(redis: Redis, service: str, stop: asyncio.Event) -> None:
    """Refresh the health key until `stop`, then remove it (a clean stop is not alive)."""
    while not stop.is_set():
        try:
            await beat(redis, service)
        except Exception:  # a missed beat shows as an expired key
            pass
        try:
            await asyncio.wait_for(stop.wait(), HEALTH_EVERY_S)
        except TimeoutError:
            pass
    try:
        await redis.delete(keys.health(service, instance_name()))
    except Exception:  # the key expires by itself anyway
        pass


async def check(redis_url: str, service: str) -> int:
    redis = Redis.from_url(redis_url, socket_connect_timeout=2.0)
    try:
        return 0 if await redis.exists(keys.health(service, instance_name())) else 1
    except Exception:  # an unreachable Redis means not healthy
        return 1
    finally:
        await redis.aclose()
