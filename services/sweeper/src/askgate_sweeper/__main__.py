"""`askgate-sweeper`: ends expired questions as no_answer/timeout, fires the reminders and
escalation steps that fall due (`askgate.store.timers`), and fails chat targets that no live
worker of their channel showed in time (the watchdog), so an ask to a channel nobody
serves ends as delivery_failed instead of waiting for its timeout.

Any number of replicas may run: each sweep is one Lua script per shard, so a question
ends once whichever replica gets to it first. A shard that fails (its cluster node down,
a damaged key) is skipped for this pass and tried again on the next; the others are
swept all the same. `--check` is the liveness probe.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog
from askgate.domain.models import CHANNELS
from askgate.domain.timeutil import now_ms
from askgate.runtime import health
from askgate.runtime.runner import worker_main
from askgate.settings import Settings
from askgate.store import keys
from askgate.store.conn import Client, connect, node_of
from askgate.store.store import Store
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

SERVICE = "sweeper"
log = structlog.get_logger("askgate.sweeper")
# After a Redis error, wait before the next tick so an outage is not a busy loop.
ERROR_BACKOFF_S = 1.0
UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)


# One shard's step: (how many it ended or failed, how many entries it took).
Step = Callable[[int], Awaitable[tuple[int, int]]]


async def due_shards(store: Store, zset: Callable[[int], str], now: int | None) -> list[int]:
    """The shards whose `zset` (scored by when each entry falls due) has an entry due by
    `now`: one pipelined look (a round trip per node) instead of a step per shard, most of
    which would find nothing. Every shard when the look fails (a node down): each step
    then works or fails on its own."""
    now = now or now_ms()
    try:
        async with store.redis.pipeline(transaction=False) as pipe:
            for shard in range(keys.SHARDS):
                pipe.zrangebyscore(zset(shard), "-inf", now, 0, 1)
            found = await pipe.execute()
    except (RedisError, OSError):
        return list(range(keys.SHARDS))
    return [shard for shard, due in enumerate(found) if due]


async def over_shards(
    store: Store,
    step: Step,
    zset: Callable[[int], str],
    now: int | None = None,
    stop: asyncio.Event | None = None,
) -> int:
    """Run `step` on every shard with something due in `zset`, and again on those that
    filled a batch, until none did; returns the sum of its counts. Once `stop` is set
    the pass ends after the step at hand (each step is one script: what it did is whole,
    and what is left stays due for the next pass, this process's or another's), so a
    backlog of 100,000 does not hold a SIGTERM for the seconds its pass takes.

    A shard whose step fails is logged and left for the next pass; the others go on.
    On one Redis an unreachable server is raised at once (every shard lives there). On
    a cluster a node found unreachable is passed over for the rest of the pass (each
    command to it costs the client a fresh look at the cluster's layout), and the pass
    raises only when no shard answered, so the caller backs off."""
    total = 0
    shards = await due_shards(store, zset, now)
    one_server = not isinstance(store.redis, RedisCluster)
    down: set[str] = set()
    reached = False
    last_error: RedisError | OSError | None = None
    while shards:
        full = []
        for shard in shards:
            if stop is not None and stop.is_set():
                return total
            node = node_of(store.redis, shard)
            if node and node in down:
                continue
            try:
                count, taken = await step(shard)
            except (RedisError, OSError) as exc:
                last_error = exc
                if not isinstance(exc, UNREACHABLE):
                    log.warning("sweeper.shard_error", shard=shard, error=str(exc))
                    continue
                if one_server:
                    raise
                log.warning("sweeper.node_unreachable", shard=shard, node=node, error=str(exc))
                if node:
                    down.add(node)
                continue
            reached = True
            total += count
            if taken >= store.settings.sweep_batch:
                full.append(shard)
        shards = full
    if last_error is not None and not reached:
        raise last_error
    return total


async def sweep_once(
    store: Store, now: int | None = None, stop: asyncio.Event | None = None
) -> int:
    """End every overdue question (no_answer/timeout); returns how many ended."""

    async def step(shard: int) -> tuple[int, int]:
        ended, taken = await store.sweep_shard(shard, now)
        if ended:
            log.info("sweeper.expired", shard=shard, n=ended)
        return ended, taken

    return await over_shards(store, step, keys.due, now, stop)


async def timers_once(
    store: Store, now: int | None = None, stop: asyncio.Event | None = None
) -> int:
    """Fire every due reminder and escalation step of a pending question; returns how
    many fired (each once, whichever replica pops it)."""

    async def step(shard: int) -> tuple[int, int]:
        fired, taken = await store.followup.fire_timers(shard, now)
        if fired:
            log.info("sweeper.timers", shard=shard, fired=fired)
        return fired, taken

    return await over_shards(store, step, keys.timers, now, stop)


CHAT_CHANNELS = [ch for ch in CHANNELS if ch != "web"]
# The watchdog needs no faster pace: a target gets channel_grace_s (30 s) anyway.
WATCH_EVERY_S = 1.0


async def watch_once(
    store: Store, now: int | None = None, stop: asyncio.Event | None = None
) -> int:
    """Fail the chat targets past their show-by time whose channel has no live worker;
    returns how many failed."""
    live = await health.live_channels(store.redis, CHAT_CHANNELS)

    async def step(shard: int) -> tuple[int, int]:
        failed, ended, taken = await store.sweep_undelivered(shard, live, now)
        if failed:
            log.warning(
                "sweeper.undelivered", shard=shard, failed=failed, ended=ended, live=sorted(live)
            )
        return failed, taken

    return await over_shards(store, step, keys.undelivered, now, stop)


def redis_client(settings: Settings) -> Client:
    """The sweeper's client. On a cluster it does not retry a command (a failed shard is
    tried on the next pass anyway): redis-py's retries, each after a fresh look at the
    cluster's layout, made a pass with one node down take seconds instead of
    milliseconds, and every shard of the other nodes waited for them."""
    return connect(
        settings.redis_url,
        cluster=settings.redis_cluster,
        max_connections=8,
        socket_timeout_s=30.0,
        cluster_retries=0,
    )


async def serve(settings: Settings, stop: asyncio.Event) -> None:
    redis = redis_client(settings)
    store = Store(redis, settings)
    beat = asyncio.create_task(health.beat_forever(redis, SERVICE, stop))
    log.info("sweeper.started", interval_ms=settings.sweep_interval_ms)
    watched = 0.0
    try:
        while not stop.is_set():
            delay = settings.sweep_interval_ms / 1000
            try:
                await sweep_once(store, stop=stop)
                await timers_once(store, stop=stop)
                if time.monotonic() - watched >= WATCH_EVERY_S:
                    watched = time.monotonic()
                    await watch_once(store, stop=stop)
            except (RedisError, OSError) as exc:
                log.warning("sweeper.redis_error", error=str(exc))
                delay = ERROR_BACKOFF_S
            try:
                await asyncio.wait_for(stop.wait(), delay)
            except TimeoutError:
                pass
    finally:
        stop.set()
        await beat  # removes the health key on the way out
        await redis.aclose()
        log.info("sweeper.stopped")


def main(argv: list[str] | None = None) -> None:
    worker_main("askgate-sweeper", SERVICE, Settings, serve, argv, __doc__)


if __name__ == "__main__":
    main()
