"""Long-poll waiters: every waiter in this process shares one subscription.

The script that ends a question SPUBLISHes its id on its shard's `done` channel
(`keys.done_channel`; a sweep publishes the ids of its whole batch in one message,
space-separated). On one Redis 7, one connection SSUBSCRIBEs to the 64 done channels
once; on an older Redis (no sharded pub/sub) it PSUBSCRIBEs to every question's result
channel instead. A waiter is just a future in a dict, so ten thousand waiters cost ten
thousand futures, not connections. The subscription is made before any waiter is served,
so an end after a waiter registered always reaches it. When the subscription drops, every
waiter is woken to re-read its question (nothing published meanwhile is missed that way).

Listening on the done channels rather than on a pattern keeps the public result
`PUBLISH` cheap for Redis: with no pattern subscriber in any API process, a result channel
nobody SUBSCRIBEs to costs Redis a dictionary miss, and a sweep of thousands of questions
reaches each API process as a few messages instead of one per question.

On a Redis Cluster (`ShardedWaiters`) one listener per master SSUBSCRIBEs to the done
channels of the shards it serves, so each end is sent to the one node that holds it
instead of over the cluster bus to all. The listeners follow the topology: when a slot
moves away (the node says `sunsubscribe`), a node fails, or the slot map differs at the
periodic look, the affected listeners are re-armed on the node that serves the shard
now, and the waiters of their shards woken to re-read.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog
from askgate.domain.errors import Unavailable
from askgate.domain.status import Status
from askgate.store import keys
from askgate.store.conn import node_client
from askgate.store.record import Record
from askgate.store.store import Store
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot
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
        # A list, not a set: nearly every question has one waiter, and a set of one
        # costs 216 B more than a list of one (times ten thousand waiters).
        self._waiters: dict[str, list[asyncio.Future[bool]]] = {}
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

    def waiting(self, question_id: str) -> bool:
        """Whether a waiter of `question_id` is parked here now."""
        return bool(self._waiters.get(question_id))

    def register(self, question_id: str) -> asyncio.Future[bool]:
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(question_id, []).append(fut)
        return fut

    def unregister(self, question_id: str, fut: asyncio.Future[bool]) -> None:
        waiting = self._waiters.get(question_id)
        if waiting is not None and fut in waiting:
            waiting.remove(fut)
            if not waiting:
                del self._waiters[question_id]

    def _wake(self, question_id: str, final: bool = False) -> None:
        """Wake the waiters of `question_id`: `final` when Redis said it ended (a waiter
        then reads the question once, without re-reading its status first), else to
        re-read it (the subscription was away, a slot moved)."""
        for fut in self._waiters.pop(question_id, ()):
            if not fut.done():
                fut.set_result(final)

    def _wake_ids(self, data: bytes) -> None:
        """Wake the waiters of the ids in a done message (one id, or a sweep's batch)."""
        for qid in data.decode().split(" "):
            if qid in self._waiters:
                self._wake(qid, final=True)

    def _wake_all(self) -> None:
        for qid in list(self._waiters):
            self._wake(qid)

    async def _run(self) -> None:
        while True:
            pubsub = self._redis.pubsub()
            try:
                sharded = await _has_sharded_pubsub(self._redis)
                if sharded:
                    channels = [keys.done_channel(shard) for shard in range(keys.SHARDS)]
                    await pubsub.ssubscribe(*channels)
                    want, kind = len(channels), "ssubscribe"
                else:
                    await pubsub.psubscribe(keys.RESULT_PATTERN)
                    want, kind = 1, "psubscribe"
                # The subscription is confirmed once its replies are read.
                while want:
                    msg = await pubsub.get_message(timeout=5.0)
                    if msg and msg["type"] == kind:
                        want -= 1
                self.ready.set()
                self._wake_all()  # anything published while we were away: re-check
                log.info("waiters.subscribed", sharded=sharded)
                while True:
                    msg = await pubsub.get_message(timeout=30.0)
                    if msg is None:
                        continue
                    if msg["type"] == "smessage":
                        self._wake_ids(msg["data"])
                    elif msg["type"] == "pmessage":
                        channel: bytes = msg["channel"]
                        self._wake(channel.decode().rsplit(":", 1)[1], final=True)
            except (RedisError, OSError) as exc:
                self.ready.clear()
                self._wake_all()
                log.warning("waiters.disconnected", error=str(exc))
                await asyncio.sleep(RECONNECT_BACKOFF_S)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()


async def _has_sharded_pubsub(redis: Redis) -> bool:
    """Whether the server has sharded pub/sub (SSUBSCRIBE, SPUBLISH): Redis 7 and later."""
    version = str((await redis.info("server"))["redis_version"])
    return int(version.split(".", 1)[0]) >= 7


# How often a ShardedWaiters re-reads the cluster's slot map (a moved slot is also told by
# its old node at once; this catches a failover whose old node said nothing).
TOPOLOGY_CHECK_S = 5.0

Node = tuple[str, int]


class SlotMoved(Exception):
    """A node dropped a shard channel of ours: its slot is served elsewhere now."""


class ShardedWaiters(Waiters):
    """The waiters of a process on a Redis Cluster: one SSUBSCRIBE listener per master
    on the `done` channels of its shards (see the module's doc). `cluster` is a client
    of its own, used to read the slot map."""

    def __init__(self, cluster: RedisCluster, check_every_s: float = TOPOLOGY_CHECK_S) -> None:
        super().__init__(cluster)
        self._cluster = cluster
        self._check_every_s = check_every_s
        self._listeners: dict[Node, tuple[frozenset[int], asyncio.Task[None]]] = {}
        self._up: set[Node] = set()
        self._moved = asyncio.Event()

    async def stop(self) -> None:
        await super().stop()
        await self._stop_listeners(list(self._listeners))

    def listening(self) -> dict[Node, frozenset[int]]:
        """The shards of each node whose listener is subscribed now."""
        return {node: shards for node, (shards, _) in self._listeners.items() if node in self._up}

    async def _layout(self) -> dict[Node, frozenset[int]]:
        """The shards each master serves, from a fresh CLUSTER SLOTS of the first node
        that answers (the client's own slot cache is left alone)."""
        await self._cluster.initialize()
        slots: dict[tuple[int, int], dict[str, Any]] | None = None
        failure: Exception = ConnectionError("no cluster node known")
        for node in self._cluster.get_nodes():
            try:
                slots = await self._cluster.cluster_slots(target_nodes=node)
                break
            except (RedisError, OSError) as exc:
                failure = exc
        if slots is None:
            raise failure
        by_node: dict[Node, set[int]] = {}
        for shard in range(keys.SHARDS):
            slot = key_slot(keys.done_channel(shard).encode())
            for (first, last), served in slots.items():
                if first <= slot <= last:
                    host, port = served["primary"][:2]
                    host = host.decode() if isinstance(host, bytes) else str(host)
                    by_node.setdefault((host, int(port)), set()).add(shard)
        return {node: frozenset(shards) for node, shards in by_node.items()}

    async def _run(self) -> None:
        while True:
            try:
                layout = await self._layout()
            except (RedisError, OSError) as exc:
                log.warning("waiters.topology_error", error=str(exc))
                self._set_ready()
                await asyncio.sleep(RECONNECT_BACKOFF_S)
                continue
            stale = [n for n, (shards, _) in self._listeners.items() if layout.get(n) != shards]
            await self._stop_listeners(stale)
            for node, shards in layout.items():
                if node not in self._listeners:
                    task = asyncio.create_task(self._listen(node, shards), name=f"waiters-{node}")
                    self._listeners[node] = (shards, task)
            self._set_ready()
            self._moved.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._moved.wait(), self._check_every_s)

    async def _stop_listeners(self, nodes: list[Node]) -> None:
        for node in nodes:
            shards, task = self._listeners.pop(node)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            self._up.discard(node)
            self._wake_shards(shards)

    def _set_ready(self) -> None:
        if self._listeners and set(self._listeners) <= self._up:
            self.ready.set()
        else:
            self.ready.clear()

    def _wake_shards(self, shards: frozenset[int]) -> None:
        for qid in [q for q in self._waiters if keys.shard_of(q) in shards]:
            self._wake(qid)

    async def _listen(self, node: Node, shards: frozenset[int]) -> None:
        """SSUBSCRIBE on `node` to the done channels of `shards` (one command per slot)
        until the node drops one (its slot moved: the supervisor re-reads the map) or
        fails (retried here after a pause, and the map re-read too)."""
        while True:
            client = node_client(
                node[0], node[1], max_connections=2, socket_timeout_s=None, subscriber=True
            )
            pubsub = client.pubsub()
            try:
                for shard in sorted(shards):
                    await pubsub.ssubscribe(keys.done_channel(shard))
                confirmed = 0
                while confirmed < len(shards):
                    msg = await pubsub.get_message(timeout=5.0)
                    if msg is None:
                        raise TimeoutError(f"no SSUBSCRIBE reply from {node}")
                    confirmed += msg["type"] == "ssubscribe"
                self._up.add(node)
                self._set_ready()
                self._wake_shards(shards)  # anything that ended while we were away
                log.info("waiters.subscribed", node=f"{node[0]}:{node[1]}", shards=len(shards))
                while True:
                    msg = await pubsub.get_message(timeout=30.0)
                    if msg is None:
                        continue
                    if msg["type"] == "smessage":
                        self._wake_ids(msg["data"])
                    elif msg["type"] == "sunsubscribe":
                        raise SlotMoved(f"{msg['channel']!r} moved away")
            except (RedisError, OSError, TimeoutError, SlotMoved) as exc:
                self._up.discard(node)
                self._set_ready()
                self._wake_shards(shards)
                self._moved.set()
                log.warning("waiters.disconnected", node=f"{node[0]}:{node[1]}", error=str(exc))
                await asyncio.sleep(RECONNECT_BACKOFF_S)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                with contextlib.suppress(Exception):
                    await client.aclose()


def _settle(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(False)


async def wait_final(
    store: Store, waiters: Waiters, tenant: str, question_id: str, timeout_s: float
) -> Record:
    """The question once it is final, or after timeout_s (at most WAIT_MAX_S) as it is.

    While waiting nothing but a future is held, so a process can keep tens of thousands
    of waiters; woken by the question's end it is read once, woken otherwise (the
    subscription was away) only its status is re-read. A Redis restart inside the window is
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
                final = await fut
            finally:
                timer.cancel()
            waiters.unregister(question_id, fut)
            if final:  # Redis published its end: read it once, below
                break
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
