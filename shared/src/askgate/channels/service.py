"""One channel worker process, wired once: Redis, the store, the stream consumer running
the `ChannelWorker`, the health beat (and the channel's live key the API and sweeper
read), the worker's own long-running tasks (an inbound server, polling loops), and one
graceful stop.

    service = ChannelService("slack", settings)
    worker = service.use(SlackAdapter(...))      # consumer + ChannelWorker
    service.spawn(serve_events)                  # any task(stop) of the worker's own
    await service.start(); …; await service.close()
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

import structlog
from pydantic import Field
from redis.asyncio import Redis
from redis.exceptions import RedisError

from askgate.channels.adapter import ChannelAdapter
from askgate.channels.worker import ChannelWorker, DeliveryPolicy
from askgate.runtime.consumer import StreamConsumer
from askgate.runtime.health import Problem, beat, beat_forever, instance_name
from askgate.settings import Settings
from askgate.store.conn import consumer_client
from askgate.store.store import Store

log = structlog.get_logger("askgate.channels")

Task = Callable[[asyncio.Event], Coroutine[Any, Any, None]]


class ChannelSettings(Settings):
    """What every channel worker shares, on top of askgate's own settings."""

    # The stream consumer (askgate.runtime.consumer): how long one read blocks, when a dead
    # consumer's entries are reclaimed, and how often to look for them.
    consumer_block_ms: int = Field(2000, ge=10)
    consumer_claim_idle_ms: int = Field(30_000, ge=10)
    consumer_claim_every_s: float = Field(5.0, gt=0)
    # The delivery ledger (askgate.channels.worker.DeliveryPolicy).
    delivery_lease_ms: int = Field(60_000, ge=10)
    delivery_max_claims: int = Field(10, ge=1, le=100)
    delivery_concurrency: int = Field(32, ge=1, le=1024)
    delivery_max_wait_s: float = Field(60.0, gt=0)
    # Quick tries within one handling after a transient failure, the first after
    # delivery_backoff_s and each later one three times as long (at most 10 s).
    delivery_retries: int = Field(2, ge=0, le=10)
    delivery_backoff_s: float = Field(0.5, ge=0)
    # How often tenants' channel credentials are re-read.
    channel_refresh_s: float = Field(30.0, gt=0)

    def delivery_policy(self) -> DeliveryPolicy:
        return DeliveryPolicy(
            lease_ms=self.delivery_lease_ms,
            max_claims=self.delivery_max_claims,
            max_wait_s=self.delivery_max_wait_s,
            concurrency=self.delivery_concurrency,
            retry_delays_s=tuple(
                min(10.0, self.delivery_backoff_s * 3**n) for n in range(self.delivery_retries)
            ),
        )


def consumer_name() -> str:
    """This process in consumer groups and in the ledger's claims (a restart is another)."""
    return f"{instance_name()}-{os.getpid()}"


class ChannelService:
    def __init__(self, name: str, settings: ChannelSettings, redis: Redis | None = None) -> None:
        self.name = name
        self.settings = settings
        self._own_redis = redis is None
        self.redis = redis or consumer_client(
            settings.redis_url, cluster=settings.redis_cluster, block_ms=settings.consumer_block_ms
        )
        self.store = Store(self.redis, settings)
        self.stop = asyncio.Event()
        self.worker: ChannelWorker | None = None
        self.consumer: StreamConsumer | None = None
        self._spawn: list[Task] = []
        self._problems: list[Problem] = []
        self._tasks: list[asyncio.Task[None]] = []

    def use(self, adapter: ChannelAdapter) -> ChannelWorker:
        """Deliver and finalise this channel's prompts with `adapter`."""
        s = self.settings
        self.worker = ChannelWorker(
            adapter,
            self.store,
            owner=consumer_name(),
            policy=s.delivery_policy(),
            keep_s=s.result_ttl_s,
        )
        self.consumer = StreamConsumer(
            self.redis,
            adapter.channel,
            consumer_name(),
            self.worker.handle,
            block_ms=s.consumer_block_ms,
            claim_idle_ms=s.consumer_claim_idle_ms,
            claim_every_s=s.consumer_claim_every_s,
        )
        return self.worker

    def spawn(self, task: Task) -> None:
        """Run `task(stop)` for the life of the service."""
        self._spawn.append(task)

    def watch(self, problem: Problem) -> None:
        """While `problem()` names something wrong, the health key is not refreshed."""
        self._problems.append(problem)

    def problem(self) -> str | None:
        for check in self._problems:
            trouble = check()
            if trouble:
                return trouble
        return None

    async def start(self) -> None:
        """Start every task; once this returns the channel counts as served."""
        channel = self.consumer.channel if self.consumer is not None else None
        try:
            await beat(self.redis, self.name, channel)
        except (RedisError, OSError) as exc:  # the beat loop keeps trying
            log.warning("channel.first_beat_failed", service=self.name, error=str(exc))
        self._tasks = [
            asyncio.create_task(
                beat_forever(
                    self.redis, self.name, self.stop, channel=channel, problem=self.problem
                )
            )
        ]
        if self.consumer is not None:
            self._tasks.append(asyncio.create_task(self.consumer.run(self.stop)))
        self._tasks += [asyncio.create_task(task(self.stop)) for task in self._spawn]
        log.info("channel.started", service=self.name, consumer=consumer_name())

    async def close(self) -> None:
        self.stop.set()
        grace = self.consumer.grace_s if self.consumer is not None else 5.0
        # The consumer gives its handlers in flight `grace` to finish (bounded).
        _, late = await asyncio.wait(self._tasks, timeout=grace + 1) if self._tasks else ((), ())
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        if self._own_redis:
            await self.redis.aclose()
        log.info("channel.stopped", service=self.name)


class Serving(Protocol):
    async def start(self) -> None: ...
    async def close(self) -> None: ...


async def serve_until(service: Serving, stop: asyncio.Event) -> None:
    """A channel service's whole life in `run_service`: start it, serve until `stop`,
    then close it (its consumer's grace and the adapter's own drain)."""
    await service.start()
    try:
        await stop.wait()
    finally:
        await service.close()
